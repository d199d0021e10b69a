import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import type { Db } from '../src/store/db.js';
import { DkimSigner, loadConfig, markDomainActive, openStore, startMailroom } from './product.js';
import { startDns, type DnsRecord } from '../test/helpers/dns.js';
import { postfixRelayRate, sinkRate, startSmtpSink } from './inbound.bench.js';
import { freePort } from '../test/helpers/ports.js';
import { bytesWritten, cpuMs, inTurn, median } from './lib.js';
import { meterServers, type Nodes, type PostgresCluster, type ServerUsage } from './postgres.js';

const SEND_DELAY_S = 60;

/**
 * What signing alone allows: messages of the benchmark's size signed with an
 * RSA-2048 and an Ed25519 key, as every delivered message is, by the signer
 * the delivery worker uses (a worker thread per core), 64 at a time.
 */
export async function signingRate(messages: number): Promise<number> {
  const signer = new DkimSigner();
  const keys = (['rsa', 'ed25519'] as const).map((type, i) => ({
    domain: 'send.bench.example', selector: `s${i}`,
    privateKey: (type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ed25519')).privateKey,
  }));
  const raw = Buffer.from('From: Bench <bench@send.bench.example>\r\nTo: reader@rcpt.bench.example\r\nSubject: Receipt\r\n' +
    'Message-ID: <bench@send.bench.example>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\n' + `${'x'.repeat(76)}\r\n`.repeat(27));
  const signOne = () => signer.signatureHeaders(raw, keys);
  try {
    for (let i = 0; i < 50; i++) await signOne(); // starts the workers
    let next = 0;
    const start = performance.now();
    await Promise.all(Array.from({ length: 64 }, async () => {
      while (next++ < messages) await signOne();
    }));
    return messages / ((performance.now() - start) / 1000);
  } finally {
    await signer.close();
  }
}

/** RSA-2048 SHA-256 signatures per second on this thread: the machine's speed at the one costly step of DKIM. */
function rsaSignaturesPerCore(seconds = 1): number {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const data = Buffer.alloc(512, 'x');
  for (let i = 0; i < 50; i++) sign('sha256', data, privateKey);
  let count = 0;
  const start = performance.now();
  while (performance.now() - start < seconds * 1000) count += (sign('sha256', data, privateKey), 1);
  return count / ((performance.now() - start) / 1000);
}

/**
 * Rounds of a delivery bench run before those counted. A round delivers a
 * few thousand messages in a second or two, and V8 was still optimizing
 * (and deoptimizing) the delivery path through the second and third: CPU a
 * message fell from round to round until the fourth (bench/README.md, "What
 * changed, and what each change bought"). A server that has run for a
 * while is what is measured, and the ceilings get as many rounds.
 */
export const DELIVERY_WARM_UP_ROUNDS = 3;

/**
 * Delivered messages per second from the queue to Postfix's smtp-sink, found
 * through a real DNS server (MX -> 127.0.0.1), DKIM-signed, against
 * smtp-source -> smtp-sink with the same message size in the same run. The
 * emails are accepted first; then the clock jumps past the send delay, making
 * them all due at once, and runs on from there as time does (ids, positions
 * and timestamps keep their usual order).
 * The first DELIVERY_WARM_UP_ROUNDS rounds of each are not counted. Beside
 * the rate: the CPU the process spent and the bytes it wrote to storage per
 * delivered message, and (with `signing`) the rate at which the same
 * signatures alone can be made on every core, RSA-2048 signatures per second
 * on one core, and Postfix relaying the same messages (unsigned) into the
 * same sink.
 */
export async function benchDelivery(rounds: number,
  o: { messages: number; content: 'text' | 'html'; bytes: number; signing: boolean; destinations?: number }) {
  const { messages } = o;
  const targets = await startDeliveryTargets(o.destinations ?? 1);
  const ceiling: number[] = [];
  const delivered: number[] = [];
  const cpuPerMessage: number[] = [];
  const writtenPerMessage: number[] = [];
  const signing: number[] = [];
  const rsaPerCore: number[] = [];
  const postfixRelay: number[] = [];
  try {
    for (let round = 1 - DELIVERY_WARM_UP_ROUNDS; round <= rounds; round++) {
      const counted = round > 0;
      const sinkRound = await sinkRate({ sessions: 20, messages, bytes: o.bytes });
      const signingRound = o.signing ? await signingRate(messages) : NaN;
      const rsaRound = o.signing ? rsaSignaturesPerCore() : NaN;
      // The same messages relayed by Postfix into the same sink (unsigned), beside the signed ones.
      const relayRound = o.signing ? await postfixRelayRate(targets.sinkPort, { sessions: 20, messages, bytes: o.bytes, to: 'reader@rcpt.bench.example' }) : NaN;
      const mailroomRound = await deliverRound(targets, o);
      if (counted) {
        ceiling.push(sinkRound);
        signing.push(signingRound);
        rsaPerCore.push(rsaRound);
        postfixRelay.push(relayRound);
        delivered.push(messages / mailroomRound.seconds);
        cpuPerMessage.push(mailroomRound.cpuMs / messages);
        writtenPerMessage.push(mailroomRound.bytesWritten / messages);
      }
    }
  } finally {
    await targets.stop();
  }
  return {
    ...o, ceiling: median(ceiling), delivered: median(delivered), cpuMsPerMessage: median(cpuPerMessage),
    bytesWrittenPerMessage: median(writtenPerMessage), signingRate: median(signing),
    rsaPerCore: median(rsaPerCore), postfixRelay: median(postfixRelay),
  };
}

/**
 * Where a delivery round delivers: a real DNS server (MX of each recipient
 * domain -> 127.0.0.1) and Postfix's smtp-sink. `stop` ends both.
 */
export async function startDeliveryTargets(destinations: number) {
  const rcptDomains = Array.from({ length: destinations }, (_, i) => (i === 0 ? 'rcpt.bench.example' : `rcpt${i}.bench.example`));
  const dns = await startDns([
    ...rcptDomains.map((name): DnsRecord => ({ type: 'MX', name, exchange: 'mx.rcpt.bench.example', priority: 10 })),
    { type: 'A', name: 'mx.rcpt.bench.example', address: '127.0.0.1' },
  ]);
  let sinkPort: number;
  let sink: Awaited<ReturnType<typeof startSmtpSink>>;
  try {
    sinkPort = await freePort();
    sink = await startSmtpSink(sinkPort);
  } catch (err) {
    await dns.stop();
    throw err;
  }
  return {
    rcptDomains, dnsServer: dns.server, sinkPort,
    async stop() {
      sink.kill('SIGTERM');
      await dns.stop();
    },
  };
}

/**
 * One Mailroom round of the delivery bench: a fresh Mailroom with a data dir
 * of its own accepts the emails (one recipient at each of the targets'
 * domains: a message per domain), then its clock jumps past the send delay,
 * making them all due at once, and the round is timed until every email is
 * delivered. `around` wraps the timed part (a profiler, say). Returns the
 * seconds it took, and the CPU (every thread) and bytes written to storage
 * by this process meanwhile.
 */
export async function deliverRound(targets: Awaited<ReturnType<typeof startDeliveryTargets>>,
  o: { messages: number; content: 'text' | 'html'; bytes: number },
  around: (timed: () => Promise<void>) => Promise<void> = (timed) => timed()) {
  const emails = o.messages / targets.rcptDomains.length;
  const content = o.content === 'text'
    ? { text: 'x'.repeat(o.bytes) }
    : { html: `<p>${'Lorem ipsum dolor sit amet, <a href="https://shop.example/p">consectetur</a>. '.repeat(Math.ceil(o.bytes / 80))}</p>` };
  let skewMs = 0;
  const clock = { now: () => Date.now() + skewMs };
  const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-bench-out-'));
  const mailroom = await startMailroom(loadConfig({
    MAILROOM_DATA_DIR: dataDir, MAILROOM_HTTP_PORT: '0', MAILROOM_SMTP_PORT: '0', MAILROOM_SUBMISSION_PORT: '0',
    MAILROOM_DELIVERY: 'direct', MAILROOM_DNS_SERVERS: targets.dnsServer, MAILROOM_OUTBOUND_PORT: String(targets.sinkPort),
    MAILROOM_ALLOW_PRIVATE_MX: 'true', MAILROOM_SEND_DELAY: String(SEND_DELAY_S), MAILROOM_DEFAULT_PLAN: 'unlimited',
    MAILROOM_LOG_LEVEL: 'silent', MAILROOM_HOSTNAME: 'mta.bench.example',
  }), { clock, logger: pino({ level: 'silent' }) });
  try {
    const { services } = mailroom;
    const ws = await services.workspaces.ensureDefault();
    const domain = await services.domains.create(ws.id, { name: 'send.bench.example' });
    await services.store.write((tx) => markDomainActive(tx, ws.id, domain.id, clock.now()));
    const sender = { workspaceId: ws.id, plan: 'unlimited', mode: 'live' as const };
    const body = { from: 'Bench <bench@send.bench.example>', to: targets.rcptDomains.map((d) => `reader@${d}`), subject: 'Receipt', ...content };
    for (let i = 0; i < emails; i += 100) {
      await Promise.all(Array.from({ length: Math.min(100, emails - i) }, () => services.emails.create(sender, body)));
    }
    let result = { seconds: NaN, cpuMs: NaN, bytesWritten: NaN };
    await around(async () => {
      const start = performance.now();
      const cpu = process.cpuUsage();
      const written = bytesWritten();
      skewMs = SEND_DELAY_S * 1000 + 1;
      for (const deadline = Date.now() + 180_000; Date.now() < deadline && !(await queueIsEmpty(services.store.db));) await sleep(50);
      result = { seconds: (performance.now() - start) / 1000, cpuMs: cpuMs(process.cpuUsage(cpu)), bytesWritten: bytesWritten() - written };
      const done = await countDelivered(services.store.db);
      if (done < emails) throw new Error(`only ${done} of ${emails} emails delivered in time`);
    });
    return result;
  } finally {
    await mailroom.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

// A round ends when the queue is empty: a read of its first row, which the
// database pays for at every poll, where counting the emails delivered would
// walk them all. Whether they were all delivered is counted once, at the end.
const queueIsEmpty = async (db: Db) => (await db.selectFrom('outbound_queue').select('id').limit(1).execute()).length === 0;
const countDelivered = async (db: Db) => Number((await db.selectFrom('emails')
  .select((eb) => eb.fn.countAll().as('n')).where('status', '=', 'delivered').executeTakeFirstOrThrow()).n);

/** Emails a batch request of the PostgreSQL delivery bench queues. */
const QUEUED_PER_REQUEST = 100;

/**
 * Delivered messages per second on PostgreSQL, with one node and with two
 * on one database delivering from its one queue, from the queue to smtp-sink
 * as above: 2 KB of text, DKIM-signed, MX found through dnsmasq. The nodes
 * run as processes of their own, so their clock cannot jump: the emails are
 * queued through the API (POST /v1/emails/batch, spread over the nodes)
 * while the destination is held (POST /v1/queue/hold), then released at
 * once, and timed from the release until the last one is delivered. Next to
 * each round, the same ceilings as above: smtp-source -> smtp-sink, and the
 * signatures alone. The first DELIVERY_WARM_UP_ROUNDS rounds of each warm up
 * and are not counted.
 */
export async function benchPostgresDelivery(rounds: number, cluster: PostgresCluster, o: { messages: number; bytes: number }) {
  const rcptDomain = 'rcpt.bench.example';
  const dns = await startDns([
    { type: 'MX', name: rcptDomain, exchange: 'mx.rcpt.bench.example', priority: 10 },
    { type: 'A', name: 'mx.rcpt.bench.example', address: '127.0.0.1' },
  ]);
  const sinkPort = await freePort();
  const sink = await startSmtpSink(sinkPort);
  const deployments: Array<{ nodes: Nodes; store: ReturnType<typeof openStore> }> = [];
  try {
    for (const count of [1, 2]) {
      const nodes = await cluster.startNodes(count, {
        env: {
          MAILROOM_DELIVERY: 'direct', MAILROOM_DNS_SERVERS: dns.server, MAILROOM_OUTBOUND_PORT: String(sinkPort),
          MAILROOM_ALLOW_PRIVATE_MX: 'true', MAILROOM_SEND_DELAY: '0', MAILROOM_HOSTNAME: 'mta.bench.example',
        },
        domain: 'send.bench.example',
      });
      deployments.push({ nodes, store: openStore(nodes.databaseUrl, { poolSize: 1 }) });
    }
    const email = { from: 'Bench <bench@send.bench.example>', to: [`reader@${rcptDomain}`], subject: 'Receipt', text: 'x'.repeat(o.bytes) };

    async function deliverRound({ nodes, store }: (typeof deployments)[number]) {
      const api = async (node: number, path: string, body: unknown) => {
        const res = await fetch(`${nodes.urls[node]}${path}`, {
          method: 'POST', headers: { Authorization: `Bearer ${nodes.token}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body),
        });
        if (!res.ok) throw new Error(`delivery bench: ${path} answered ${res.status}: ${await res.text()}`);
        return res.json() as Promise<{ data?: Array<{ id?: string }> }>;
      };
      await api(0, '/v1/queue/hold', { domain: rcptDomain });
      for (let i = 0; i < o.messages / QUEUED_PER_REQUEST; i++) {
        const { data } = await api(i % nodes.urls.length, '/v1/emails/batch', { emails: Array.from({ length: QUEUED_PER_REQUEST }, () => email) });
        if (data?.length !== QUEUED_PER_REQUEST || data.some((e) => !e.id)) throw new Error('delivery bench: a batch was not taken whole');
      }
      const target = (await countDelivered(store.db)) + o.messages;
      const spent = await meterServers(cluster, nodes.pids);
      const start = performance.now();
      await api(0, '/v1/queue/release', { domain: rcptDomain });
      for (const deadline = Date.now() + 180_000; Date.now() < deadline && !(await queueIsEmpty(store.db));) await sleep(50);
      const seconds = (performance.now() - start) / 1000;
      const usage = await spent();
      const missing = target - (await countDelivered(store.db));
      if (missing > 0) throw new Error(`only ${o.messages - missing} of ${o.messages} emails delivered in time`);
      return { delivered: o.messages / seconds, usage };
    }

    const [ceiling, signing, one, two] = await inTurn(rounds, [
      () => sinkRate({ sessions: 20, messages: o.messages, bytes: o.bytes }),
      () => signingRate(o.messages),
      () => deliverRound(deployments[0]),
      () => deliverRound(deployments[1]),
    ], DELIVERY_WARM_UP_ROUNDS);
    const summary = (results: Array<{ delivered: number; usage: ServerUsage }>) => {
      const perMessage = (pick: (u: ServerUsage) => number) => median(results.map((r) => pick(r.usage) / o.messages));
      return {
        delivered: median(results.map((r) => r.delivered)),
        nodesCpuMs: results[0].usage.nodesCpuMs.map((_, i) => perMessage((u) => u.nodesCpuMs[i])),
        databaseCpuMs: perMessage((u) => u.databaseCpuMs), walBytes: perMessage((u) => u.walBytes),
      };
    };
    return { ...o, ceiling: median(ceiling), signingRate: median(signing), one: summary(one), two: summary(two) };
  } finally {
    for (const { nodes, store } of deployments) {
      await store.close();
      await nodes.stop();
    }
    sink.kill('SIGTERM');
    await dns.stop();
  }
}
