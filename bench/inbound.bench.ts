import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { startMailroom } from '../src/main.js';
import { markDomainActive } from '../src/domains/domains.repo.js';
import { median } from './lib.js';

const run = promisify(execFile);
const SMTP_SOURCE = '/usr/sbin/smtp-source';
const SMTP_SINK = '/usr/sbin/smtp-sink';

export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return port;
}

export interface SourceOptions { sessions: number; messages: number; bytes: number }

/** Postfix's smtp-source: parallel sessions, connections reused (-d), messages of `bytes` payload. Returns messages/s. */
export async function smtpSource(port: number, o: SourceOptions): Promise<number> {
  const start = performance.now();
  await run(SMTP_SOURCE, ['-d', '-s', String(o.sessions), '-m', String(o.messages), '-l', String(o.bytes),
    '-f', 'sender@remote.example', '-t', 'inbox@in.bench.example', `127.0.0.1:${port}`], { timeout: 120_000 });
  return o.messages / ((performance.now() - start) / 1000);
}

/** Starts Postfix's smtp-sink (accept and discard) on a loopback port; resolves once it answers. */
export async function startSmtpSink(port: number): Promise<ChildProcess> {
  const sink: ChildProcess = spawn(SMTP_SINK, ['-u', 'nobody', `127.0.0.1:${port}`, '256'], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    if (await run(SMTP_SOURCE, ['-m', '1', `127.0.0.1:${port}`], { timeout: 2000 }).then(() => true, () => false)) return sink;
    await sleep(20);
  }
  sink.kill('SIGTERM');
  throw new Error('smtp-sink did not start');
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

/** Inbound messages stored durably per second over SMTP, and parsed + authenticated per second, against smtp-sink. */
export async function benchInbound(rounds: number, o: SourceOptions = { sessions: 50, messages: 3000, bytes: 2048 }) {
  const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-bench-in-'));
  const smtpPort = await freePort();
  const mailroom = await startMailroom(loadConfig({
    MAILROOM_DATA_DIR: dataDir, MAILROOM_HTTP_PORT: '0', MAILROOM_SMTP_HOST: '127.0.0.1', MAILROOM_SMTP_PORT: String(smtpPort),
    MAILROOM_SUBMISSION_PORT: '0', MAILROOM_DELIVERY: 'sink', MAILROOM_LOG_LEVEL: 'silent', MAILROOM_HOSTNAME: 'mx.bench.example',
    // Nothing answers DNS here: SPF/DKIM checks fail fast instead of waiting on a real resolver.
    MAILROOM_DNS_SERVERS: `127.0.0.1:${await freePort()}`,
  }), { logger: pino({ level: 'silent' }) });
  const ceiling: number[] = [];
  const stored: number[] = [];
  const processed: number[] = [];
  try {
    const { services } = mailroom;
    const ws = await services.workspaces.ensureDefault();
    const domain = await services.domains.create(ws.id, { name: 'in.bench.example', inboundEnabled: true });
    await services.store.write((tx) => markDomainActive(tx, ws.id, domain.id, Date.now()));
    // The listener caches which domains take mail for a few seconds.
    await sleep(5_500);
    const pending = async () => Number((await services.store.db.selectFrom('inbound_messages')
      .select((eb) => eb.fn.countAll().as('n')).where('status', '=', 'pending').executeTakeFirstOrThrow()).n);
    for (let i = 0; i < rounds; i++) {
      ceiling.push(await sinkRate(o));
      const start = performance.now();
      stored.push(await smtpSource(mailroom.smtp.mxPort!, o));
      for (const deadline = Date.now() + 120_000; Date.now() < deadline && (await pending()) > 0;) await sleep(50);
      processed.push(o.messages / ((performance.now() - start) / 1000));
    }
  } finally {
    await mailroom.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return { ceiling: median(ceiling), stored: median(stored), processed: median(processed), options: o };
}
