import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import type { Mailroom } from '../src/main.js';
import { loadConfig, markDomainActive, startMailroom } from './product.js';
import { startDns } from '../test/helpers/dns.js';
import { startPostfix, waitForSmtp, type PostfixInstance } from '../test/helpers/postfix.js';
import { freePort } from '../test/helpers/ports.js';
import { median } from './lib.js';

const run = promisify(execFile);
const SMTP_SOURCE = '/usr/sbin/smtp-source';
const SMTP_SINK = '/usr/sbin/smtp-sink';
/** The domain every bench message is addressed to. */
const BENCH_DOMAIN = 'in.bench.example';
/** The envelope sender's domain, with SPF and DMARC records in the bench's DNS. */
const SENDER_DOMAIN = 'remote.example';

export interface SourceOptions { sessions: number; messages: number; bytes: number; to?: string }

/** Postfix's smtp-source: parallel sessions, connections reused (-d), messages of `bytes` payload. Returns messages/s. */
export async function smtpSource(port: number, o: SourceOptions): Promise<number> {
  const start = performance.now();
  await run(SMTP_SOURCE, ['-d', '-s', String(o.sessions), '-m', String(o.messages), '-l', String(o.bytes),
    '-f', `sender@${SENDER_DOMAIN}`, '-t', o.to ?? `inbox@${BENCH_DOMAIN}`, `127.0.0.1:${port}`], { timeout: 120_000 });
  return o.messages / ((performance.now() - start) / 1000);
}

/** smtp-sinks still running, killed if this process exits without stopping them (as on an interrupt of the PostgreSQL rows). */
const sinks = new Set<ChildProcess>();
process.on('exit', () => {
  for (const sink of sinks) sink.kill('SIGTERM');
});

/** Starts Postfix's smtp-sink (accept and discard) on a loopback port; resolves once it answers. */
export async function startSmtpSink(port: number): Promise<ChildProcess> {
  const sink: ChildProcess = spawn(SMTP_SINK, ['-u', 'nobody', `127.0.0.1:${port}`, '256'], { stdio: 'ignore' });
  sinks.add(sink);
  sink.once('exit', () => sinks.delete(sink));
  try {
    await waitForSmtp(port, 'smtp-sink');
  } catch (err) {
    sink.kill('SIGTERM');
    throw err;
  }
  return sink;
}

/** The ceiling: smtp-source into smtp-sink, messages/s. */
export async function sinkRate(o: SourceOptions): Promise<number> {
  const port = await freePort();
  const sink = await startSmtpSink(port);
  try {
    return await smtpSource(port, o);
  } finally {
    sink.kill('SIGTERM');
  }
}

/**
 * `measure` run against a private Postfix (test/helpers/postfix.ts): its smtpd
 * accepting into its queue (cleanup writes and fsyncs each message before
 * the 250, as we do), then discarding the bench's mail, or with `relayTo`
 * holding what it accepts, to relay it to that port once released.
 */
export async function withPostfix<T>(measure: (port: number, instance: PostfixInstance) => Promise<T>, o: { relayTo?: number } = {}): Promise<T> {
  const postfix = await startPostfix({ domains: [BENCH_DOMAIN], ...(o.relayTo !== undefined && { relayTo: o.relayTo, hold: true }) });
  try {
    return await measure(postfix.port, postfix);
  } finally {
    await postfix.stop();
  }
}

/**
 * Postfix relaying to smtp-sink on `sinkPort`, messages/s: the messages are
 * accepted into its hold queue, then released at once and timed until the
 * queue is empty (as the delivery bench times Mailroom's queue from the
 * moment all of it falls due). Postfix signs nothing.
 */
export async function postfixRelayRate(sinkPort: number, o: SourceOptions): Promise<number> {
  return withPostfix(async (port, postfix) => {
    await smtpSource(port, o);
    for (const deadline = Date.now() + 60_000; postfix.queued() < o.messages && Date.now() < deadline;) await sleep(20);
    const start = performance.now();
    await postfix.command(['/usr/sbin/postsuper', '-H', 'ALL']);
    await postfix.command(['/usr/sbin/postqueue', '-f']);
    // Released mail waits in the deferred queue for a flush; one that reaches the
    // queue manager before all of it is released leaves the rest there: while
    // nothing moves for a second, the queue is flushed again.
    let lastSeen = { queued: postfix.queued(), at: Date.now() };
    for (const deadline = Date.now() + 180_000; lastSeen.queued > 0;) {
      if (Date.now() > deadline) throw new Error(`Postfix still holds ${lastSeen.queued} messages; its log ends:\n${postfix.log()}`);
      await sleep(20);
      const queued = postfix.queued();
      if (queued < lastSeen.queued) lastSeen = { queued, at: Date.now() };
      else if (Date.now() - lastSeen.at > 1_000) {
        await postfix.command(['/usr/sbin/postqueue', '-f']);
        lastSeen = { queued, at: Date.now() };
      }
    }
    const rate = o.messages / ((performance.now() - start) / 1000);
    if (postfix.delivered() < o.messages) throw new Error(`Postfix relayed ${postfix.delivered()} of ${o.messages} messages`);
    return rate;
  }, { relayTo: sinkPort });
}

/**
 * Inbound messages stored durably per second over SMTP, and parsed +
 * authenticated per second, against smtp-sink (the ceiling) and Postfix
 * accepting into its own queue, in alternating rounds after a warm-up round
 * each that is not counted (both are long-running servers, measured warm).
 * `postfix` is undefined when Postfix could not be started here, and
 * `postfixError` says why.
 */
export async function benchInbound(rounds: number, o: SourceOptions = { sessions: 50, messages: 3000, bytes: 2048 }) {
  const postfix: number[] = [];
  let postfixError: string | undefined;
  const mailroom = await withPostfix(async (port) => {
    await smtpSource(port, o);
    return benchMailroom(rounds, o, async () => { postfix.push(await smtpSource(port, o)); });
  })
    .catch(async (err: unknown) => {
      if (!String((err as Error).message).startsWith('Postfix did not start')) throw err;
      postfixError = (err as Error).message;
      return benchMailroom(rounds, o, async () => undefined);
    });
  return { ...mailroom, postfix: postfix.length > 0 ? median(postfix) : undefined, postfixError, options: o };
}

/** Throws unless the last message stored was checked against the bench's records: SPF pass, DMARC evaluated. */
async function checkedAsExpected(store: Mailroom['services']['store']): Promise<void> {
  const last = await store.db.selectFrom('inbound_messages').select('auth').orderBy('pos', 'desc').limit(1).executeTakeFirstOrThrow();
  const auth = JSON.parse(last.auth ?? '{}') as { spf?: { result: string }; dmarc?: { result: string } };
  if (auth.spf?.result !== 'pass' || auth.dmarc?.result !== 'pass') {
    throw new Error(`inbound bench: the checks did not see the bench's DNS records: ${last.auth}`);
  }
}

async function benchMailroom(rounds: number, o: SourceOptions, eachRound: () => Promise<void>) {
  const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-bench-in-'));
  const smtpPort = await freePort();
  // The checks ask a real resolver: the sender's SPF allows loopback, and it publishes a DMARC policy.
  const dns = await startDns([
    { type: 'TXT', name: SENDER_DOMAIN, value: 'v=spf1 ip4:127.0.0.0/8 -all' },
    { type: 'TXT', name: `_dmarc.${SENDER_DOMAIN}`, value: 'v=DMARC1; p=reject' },
  ]);
  const mailroom = await startMailroom(loadConfig({
    MAILROOM_DATA_DIR: dataDir, MAILROOM_HTTP_PORT: '0', MAILROOM_SMTP_HOST: '127.0.0.1', MAILROOM_SMTP_PORT: String(smtpPort),
    MAILROOM_SUBMISSION_PORT: '0', MAILROOM_DELIVERY: 'sink', MAILROOM_LOG_LEVEL: 'silent', MAILROOM_HOSTNAME: 'mx.bench.example',
    MAILROOM_DNS_SERVERS: dns.server,
  }), { logger: pino({ level: 'silent' }) }).catch(async (err: unknown) => {
    await dns.stop();
    throw err;
  });
  const ceiling: number[] = [];
  const stored: number[] = [];
  const processed: number[] = [];
  try {
    const { services } = mailroom;
    const ws = await services.workspaces.ensureDefault();
    const domain = await services.domains.create(ws.id, { name: BENCH_DOMAIN, inboundEnabled: true });
    await services.store.write((tx) => markDomainActive(tx, ws.id, domain.id, Date.now()));
    // The listener caches which domains take mail for a few seconds.
    await sleep(5_500);
    const pending = async () => Number((await services.store.db.selectFrom('inbound_messages')
      .select((eb) => eb.fn.countAll().as('n')).where('status', '=', 'pending').executeTakeFirstOrThrow()).n);
    const processing = async () => {
      for (const deadline = Date.now() + 120_000; Date.now() < deadline && (await pending()) > 0;) await sleep(10);
    };
    await smtpSource(mailroom.smtp.mxPort!, o);
    await processing();
    for (let i = 0; i < rounds; i++) {
      ceiling.push(await sinkRate(o));
      await eachRound();
      const start = performance.now();
      stored.push(await smtpSource(mailroom.smtp.mxPort!, o));
      await processing();
      processed.push(o.messages / ((performance.now() - start) / 1000));
    }
    await checkedAsExpected(mailroom.services.store);
  } finally {
    await mailroom.close();
    await dns.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return { ceiling: median(ceiling), stored: median(stored), processed: median(processed) };
}
