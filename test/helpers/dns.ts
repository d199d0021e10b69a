// A real DNS server for tests: dnsmasq on 127.0.0.1 and a free high port,
// answering from the records a test gives it and nothing else. It runs with no
// upstream (--no-resolv) and `local=` for every zone the records touch, so an
// unknown name gets NXDOMAIN and no query ever leaves the machine.
//
// Records go to dnsmasq as command-line options rather than a config file:
// dnsmasq reads config files through a 1 KiB line buffer, which cuts off TXT
// records (DKIM keys, long SPF) well before DNS itself would. Options on the
// command line have no such limit and need no file to clean up.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { promises as dns } from 'node:dns';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { createServer, isIP, isIPv4, isIPv6 } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';

// An A or AAAA record also answers the reverse lookup of the first address of
// its name, pointing back at it (dnsmasq's --host-record), unless a PTR record
// names that address or the record says `reverse: false`. Such a record is
// served raw, and its name then answers NXDOMAIN, not NODATA, for other types.
export type DnsRecord =
  | { type: 'A'; name: string; address: string; reverse?: false }
  | { type: 'AAAA'; name: string; address: string; reverse?: false }
  | { type: 'MX'; name: string; exchange: string; priority: number } // exchange '.' = null MX (RFC 7505)
  | { type: 'TXT'; name: string; value: string | string[] } // string[] = one TXT record split in chunks
  | { type: 'CNAME'; name: string; target: string }
  | { type: 'PTR'; name: string; target: string }; // name: an IPv4 or IPv6 address, published under in-addr.arpa or ip6.arpa

export interface TestDns {
  host: '127.0.0.1';
  port: number;
  /** "127.0.0.1:PORT", the form MAILROOM_DNS_SERVERS takes */
  server: string;
  /** Replace the whole record set (takes effect before the promise resolves). */
  set(records: DnsRecord[]): Promise<void>;
  /** Add records to the current set. */
  add(...records: DnsRecord[]): Promise<void>;
  /**
   * Names under this suffix answer SERVFAIL (a temporary DNS failure).
   * Stays in force across set(); applies to UDP queries, which is what
   * resolvers send (over TCP dnsmasq drops the connection instead).
   */
  servfail(suffix: string): Promise<void>;
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

const DNSMASQ = '/usr/sbin/dnsmasq';
const HOST = '127.0.0.1';
/** Zones that are always answered locally, whatever the records say. */
const BASE_ZONES = ['test', 'example'];
/**
 * Each dnsmasq start serves a fresh random token here; seeing it proves the
 * port is answered by this very process with this very configuration (and not
 * by a previous instance or by whoever else may hold the port).
 */
const READY_NAME = 'ready.dns-rig.test';
const START_DEADLINE_MS = 5_000;
const STOP_GRACE_MS = 2_000;
const PORT_ATTEMPTS = 20;

/** dnsmasq processes still running, killed if the test process exits without stop(). */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export async function startDns(records: DnsRecord[] = []): Promise<TestDns> {
  try {
    await access(DNSMASQ, constants.X_OK);
  } catch {
    throw new Error(
      `test DNS: ${DNSMASQ} not found; install the Debian package dnsmasq-base ` +
        '(apt-get install dnsmasq-base, as .ci/run does)',
    );
  }
  const rig = new DnsmasqRig(records);
  await rig.start();
  return rig;
}

class DnsmasqRig implements TestDns {
  readonly host = HOST;
  port = 0;
  server = '';
  private records: DnsRecord[] = [];
  private readonly zones = new Set(BASE_ZONES);
  private readonly servfailSuffixes = new Set<string>();
  private responder: ServfailResponder | undefined;
  private child: ChildProcess | undefined;
  private stopped = false;
  /** Operations run one at a time, so each restart sees the state it was asked for. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(records: DnsRecord[]) {
    this.accept(records);
    this.records = [...records];
  }

  async start(): Promise<void> {
    let lastClash: number | undefined;
    for (let attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
      const port = await freePort();
      try {
        this.child = await launch(port, this.options());
      } catch (err) {
        if (err instanceof PortClash) {
          lastClash = err.port;
          continue;
        }
        throw err;
      }
      this.port = port;
      this.server = `${HOST}:${port}`;
      return;
    }
    throw new Error(`test DNS: no free port after ${PORT_ATTEMPTS} attempts (last clash on ${lastClash})`);
  }

  set(records: DnsRecord[]): Promise<void> {
    return this.run(async () => {
      this.assertRunning();
      this.accept(records);
      this.records = [...records];
      await this.restart();
    });
  }

  add(...records: DnsRecord[]): Promise<void> {
    return this.run(async () => {
      this.assertRunning();
      this.accept(records);
      this.records.push(...records);
      await this.restart();
    });
  }

  servfail(suffix: string): Promise<void> {
    return this.run(async () => {
      this.assertRunning();
      this.servfailSuffixes.add(dnsName(suffix, 'servfail suffix'));
      this.responder ??= await ServfailResponder.start();
      await this.restart();
    });
  }

  stop(): Promise<void> {
    return this.run(async () => {
      if (this.stopped) return;
      this.stopped = true;
      if (this.child) await terminate(this.child);
      await this.responder?.close();
    });
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  private run(op: () => Promise<void>): Promise<void> {
    const result = this.queue.then(op);
    this.queue = result.catch(() => undefined);
    return result;
  }

  private assertRunning(): void {
    if (this.stopped) throw new Error('test DNS: already stopped');
  }

  /**
   * Validates records (throwing before anything changes) and remembers their
   * zones. Zones are never forgotten, so a name dropped by set() answers
   * NXDOMAIN rather than REFUSED.
   */
  private accept(records: DnsRecord[]): void {
    for (const record of records) recordOption(record);
    for (const record of records) {
      for (const name of namesIn(record)) this.zones.add(zoneOf(name));
    }
  }

  /**
   * dnsmasq reads its options only at startup (SIGHUP reloads hosts files,
   * not MX/TXT/CNAME), so a change means a restart on the same port.
   */
  private async restart(): Promise<void> {
    if (this.child) await terminate(this.child);
    try {
      this.child = await launch(this.port, this.options());
    } catch (err) {
      if (err instanceof PortClash) {
        throw new Error(`test DNS: port ${this.port} was taken by another process while dnsmasq restarted`);
      }
      throw err;
    }
  }

  private options(): string[] {
    const responderPort = this.responder?.port;
    return [
      ...[...this.zones].map((zone) => `--local=/${zone}/`),
      // A more specific server= wins over local=, so these suffixes go to the
      // responder even inside a local zone.
      ...[...this.servfailSuffixes].map((suffix) => `--server=/${suffix}/${HOST}#${responderPort}`),
      ...this.records.map(recordOption),
    ];
  }
}

class PortClash extends Error {
  constructor(readonly port: number) {
    super(`port ${port} in use`);
  }
}

/** Starts dnsmasq on the port and resolves once it answers with this start's token. */
async function launch(port: number, options: string[]): Promise<ChildProcess> {
  const token = randomBytes(8).toString('hex');
  const child = spawn(
    DNSMASQ,
    [
      '--keep-in-foreground',
      // Never read /etc/dnsmasq.conf or /etc/hosts: only what the test gives.
      '--conf-file=/dev/null',
      '--no-hosts',
      '--no-resolv',
      '--bind-interfaces',
      `--listen-address=${HOST}`,
      `--port=${port}`,
      '--pid-file=',
      // No cache, so nothing outlives a change of records or a SERVFAIL.
      '--cache-size=0',
      // Startup lines go to stderr, kept only to explain a failure.
      '--log-facility=-',
      ...options,
      `--dns-rr=${READY_NAME},16,${txtRdata(token).toString('hex')}`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  running.add(child);
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4_000);
  });
  child.once('exit', () => running.delete(child));
  // 'close' rather than 'exit': it comes once stderr is fully read.
  const exited = new Promise<'exited'>((resolve) => child.once('close', () => resolve('exited')));

  const deadline = Date.now() + START_DEADLINE_MS;
  for (;;) {
    const outcome = await Promise.race([servesToken(port, token), exited]);
    if (outcome === true) return child;
    if (outcome === 'exited') {
      if (stderr.includes('Address already in use')) throw new PortClash(port);
      throw new Error(
        `test DNS: dnsmasq exited during startup (code ${child.exitCode}, signal ${child.signalCode}):\n${stderr.trim()}`,
      );
    }
    if (Date.now() > deadline) {
      await terminate(child);
      throw new Error(`test DNS: dnsmasq did not answer on ${HOST}:${port} within ${START_DEADLINE_MS} ms:\n${stderr.trim()}`);
    }
    await delay(10);
  }
}

async function servesToken(port: number, token: string): Promise<boolean> {
  const resolver = new dns.Resolver({ timeout: 200, tries: 1 });
  resolver.setServers([`${HOST}:${port}`]);
  try {
    const txt = await resolver.resolveTxt(READY_NAME);
    return txt.some((chunks) => chunks.join('') === token);
  } catch {
    return false;
  }
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const force = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  await exited;
  clearTimeout(force);
}

/** A high port the kernel considers free for UDP, checked free for TCP too. */
async function freePort(): Promise<number> {
  for (;;) {
    const udp = createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(0, HOST, resolve);
    });
    const { port } = udp.address();
    const tcpFree = await new Promise<boolean>((resolve) => {
      const tcp = createServer();
      tcp.once('error', () => resolve(false));
      tcp.listen(port, HOST, () => tcp.close(() => resolve(true)));
    });
    await new Promise<void>((resolve) => udp.close(resolve));
    if (tcpFree) return port;
  }
}

/**
 * The upstream dnsmasq forwards servfail() suffixes to: a UDP socket that
 * answers every query with SERVFAIL, which dnsmasq passes on to the client.
 * (A closed port instead makes clients wait for a timeout; a server= with no
 * usable address makes dnsmasq answer REFUSED.)
 */
class ServfailResponder {
  private constructor(
    private readonly socket: UdpSocket,
    readonly port: number,
  ) {}

  static async start(): Promise<ServfailResponder> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, HOST, resolve);
    });
    socket.on('message', (query, from) => {
      const reply = servfailReply(query);
      if (reply) socket.send(reply, from.port, from.address);
    });
    return new ServfailResponder(socket, socket.address().port);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.socket.close(resolve));
  }
}

/** The query's header and question, turned into a SERVFAIL response. */
function servfailReply(query: Buffer): Buffer | undefined {
  const HEADER = 12;
  let end = HEADER;
  while (end < query.length && query[end] !== 0) {
    // Questions are not compressed; a pointer here means a malformed query.
    if (query[end] >= 0xc0) return undefined;
    end += query[end] + 1;
  }
  end += 5; // root label, QTYPE, QCLASS
  if (end > query.length) return undefined;
  const reply = Buffer.from(query.subarray(0, end));
  reply[2] = (reply[2] & 0x79) | 0x80; // QR set; AA and TC clear; opcode and RD kept
  reply[3] = 0x80 | 2; // RA, RCODE 2 = SERVFAIL
  reply.writeUInt16BE(1, 4); // the one question copied
  reply.writeUInt16BE(0, 6);
  reply.writeUInt16BE(0, 8);
  reply.writeUInt16BE(0, 10);
  return reply;
}

/** The dnsmasq option serving one record; throws on a malformed record. */
function recordOption(record: DnsRecord): string {
  const name = dnsName(ownerName(record), `${record.type} record name`);
  switch (record.type) {
    case 'A':
      if (!isIPv4(record.address)) throw new Error(`test DNS: A record ${name}: not an IPv4 address: ${record.address}`);
      if (record.reverse === false) return `--dns-rr=${name},1,${Buffer.from(record.address.split('.').map(Number)).toString('hex')}`;
      return `--host-record=${name},${record.address}`;
    case 'AAAA':
      if (!isIPv6(record.address)) throw new Error(`test DNS: AAAA record ${name}: not an IPv6 address: ${record.address}`);
      if (record.reverse === false) return `--dns-rr=${name},28,${ipv6Bytes(record.address).toString('hex')}`;
      return `--host-record=${name},${record.address}`;
    case 'PTR':
      return `--ptr-record=${name},${dnsName(record.target, 'PTR target')}`;
    case 'MX': {
      const { priority } = record;
      if (!Number.isInteger(priority) || priority < 0 || priority > 0xffff) {
        throw new Error(`test DNS: MX record ${name}: priority must be 0..65535, got ${priority}`);
      }
      const exchange = record.exchange === '.' ? '.' : dnsName(record.exchange, 'MX exchange');
      return `--mx-host=${name},${exchange},${priority}`;
    }
    case 'TXT':
      // dns-rr takes raw RDATA in hex, which needs no quoting whatever the text holds.
      return `--dns-rr=${name},16,${txtRdata(record.value, name).toString('hex')}`;
    case 'CNAME':
      return `--cname=${name},${dnsName(record.target, 'CNAME target')}`;
  }
}

/** The name a record is published at: for PTR, the address's name under in-addr.arpa or ip6.arpa. */
function ownerName(record: DnsRecord): string {
  if (record.type !== 'PTR') return record.name;
  if (isIPv4(record.name)) return `${record.name.split('.').reverse().join('.')}.in-addr.arpa`;
  if (isIPv6(record.name)) return `${[...ipv6Bytes(record.name).toString('hex')].reverse().join('.')}.ip6.arpa`;
  throw new Error(`test DNS: PTR record: not an IP address: ${record.name}`);
}

/** The 16 bytes of an IPv6 address, however it is written (:: and a dotted IPv4 tail included). */
function ipv6Bytes(address: string): Buffer {
  const [head, tail = ''] = address.includes('::') ? address.split('::') : [address, undefined];
  const groups = (part: string | undefined) => (part ? part.split(':').flatMap((g) => (isIP(g) === 4 ? ipv4Groups(g) : [g])) : []);
  const left = groups(head);
  const right = groups(tail);
  const all = address.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  return Buffer.from(all.map((g) => g.padStart(4, '0')).join(''), 'hex');
}

function ipv4Groups(address: string): string[] {
  const hex = Buffer.from(address.split('.').map(Number)).toString('hex');
  return [hex.slice(0, 4), hex.slice(4)];
}

function namesIn(record: DnsRecord): string[] {
  switch (record.type) {
    case 'PTR':
      return [ownerName(record), record.target];
    case 'MX':
      return record.exchange === '.' ? [record.name] : [record.name, record.exchange];
    case 'CNAME':
      return [record.name, record.target];
    default:
      return [record.name];
  }
}

/**
 * The top-level label: claiming the whole TLD keeps every name near the
 * test's records local, without guessing where a registrable domain starts.
 */
function zoneOf(name: string): string {
  return dnsName(name, 'name').split('.').pop() as string;
}

const LABEL = /^[a-z0-9_-]{1,63}$/i;

/** A name in the form dnsmasq options take it (no trailing dot), or a clear error. */
function dnsName(name: string, what: string): string {
  const bare = name.endsWith('.') ? name.slice(0, -1) : name;
  if (bare.length === 0 || bare.length > 253 || !bare.split('.').every((label) => LABEL.test(label))) {
    throw new Error(`test DNS: invalid ${what}: ${JSON.stringify(name)}`);
  }
  return bare.toLowerCase();
}

/**
 * TXT RDATA: length-prefixed character strings of at most 255 bytes. A plain
 * string is split by the rig, at character boundaries because resolvers decode
 * each chunk on its own.
 */
function txtRdata(value: string | string[], name = READY_NAME): Buffer {
  const chunks: Buffer[] = [];
  if (typeof value === 'string') {
    const bytes = Buffer.from(value, 'utf8');
    let start = 0;
    do {
      let end = Math.min(start + 255, bytes.length);
      while (end < bytes.length && (bytes[end] & 0xc0) === 0x80) end--;
      chunks.push(bytes.subarray(start, end));
      start = end;
    } while (start < bytes.length);
  } else {
    if (value.length === 0) throw new Error(`test DNS: TXT record ${name}: no chunks`);
    for (const chunk of value) {
      const bytes = Buffer.from(chunk, 'utf8');
      if (bytes.length > 255) throw new Error(`test DNS: TXT record ${name}: chunk longer than 255 bytes`);
      chunks.push(bytes);
    }
  }
  return Buffer.concat(chunks.flatMap((chunk) => [Buffer.from([chunk.length]), chunk]));
}

/** A resolver that asks this test DNS server only (as a verifier at the receiving end would). */
export function resolverOf(testDns: TestDns): dns.Resolver {
  const resolver = new dns.Resolver({ timeout: 1000, tries: 1 });
  resolver.setServers([testDns.server]);
  return resolver;
}

/** Publishes a domain's DKIM key where verifiers look for it. */
export async function publishDkim(testDns: TestDns, domain: { records: Array<{ record: string; name: string; value: string }> }): Promise<void> {
  await testDns.add(...domain.records.filter((r) => r.record === 'DKIM').map((r): DnsRecord => ({ type: 'TXT', name: r.name, value: r.value })));
}
