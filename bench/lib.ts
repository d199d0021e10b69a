import Koa from 'koa';
import type { AddressInfo } from 'node:net';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { Mailroom } from '../src/main.js';
import { loadConfig, startMailroom } from './product.js';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const run = promisify(execFile);
const loadScript = fileURLToPath(new URL('./load.ts', import.meta.url));

export interface LoadResult {
  requests: number; errors: number; statuses: Record<string, number>; rps: number; p50: number; p99: number;
  /** CPU time of this process (every thread) per request while the load ran: the server's cost, noise aside. */
  cpuMsPerRequest: number;
  /** Bytes this process wrote to storage per request while the load ran (NaN where the kernel does not say). */
  bytesWrittenPerRequest: number;
  /** CPU time the load generator itself spent per request: it shares the machine's cores with the server. */
  loadCpuMsPerRequest: number;
}

/** `url` may list the nodes of one deployment: the load generator spreads its connections over them. */
export interface LoadOptions { url: string | string[]; connections?: number; seconds?: number; maxRequests?: number; headers?: Record<string, string>; method?: string; body?: string }

/**
 * Runs the load generator in a child process against a URL served by this
 * process, and measures what serving it cost this process in CPU.
 */
export async function load(o: LoadOptions): Promise<LoadResult> {
  const args = { connections: 32, seconds: 3, maxRequests: 500_000, headers: {}, method: 'GET', ...o };
  const cpu = process.cpuUsage();
  const written = bytesWritten();
  const { stdout } = await run(process.execPath, ['--import', 'tsx', loadScript, JSON.stringify(args)], { timeout: (args.seconds + 30) * 1000 });
  const { cpuMsPerRequest: loadCpuMsPerRequest, ...result } = JSON.parse(stdout.trim().split('\n').at(-1)!) as
    Omit<LoadResult, 'bytesWrittenPerRequest' | 'loadCpuMsPerRequest'>;
  const requests = Math.max(1, result.requests);
  return {
    ...result, cpuMsPerRequest: cpuMs(process.cpuUsage(cpu)) / requests, bytesWrittenPerRequest: (bytesWritten() - written) / requests,
    loadCpuMsPerRequest,
  };
}

/**
 * Bytes this process has had written to storage so far (Linux's
 * /proc/self/io write_bytes: the WAL, and the database file at checkpoints),
 * or NaN elsewhere.
 */
export function bytesWritten(): number {
  try {
    return Number(/^write_bytes: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

/** Linux's clock ticks per second in /proc/PID/stat (USER_HZ, 100 on every architecture Node runs on). */
const CLOCK_TICKS_PER_SECOND = 100;

/** The parent and the CPU times of /proc/PID/stat, in ms; undefined once the process is gone. */
function procStat(pid: number): { ppid: number; ownMs: number; reapedMs: number } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name, in parentheses, may hold spaces: the fields are counted from its end (state is field 3).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ms = (field: number) => (Number(fields[field - 3]) * 1000) / CLOCK_TICKS_PER_SECOND;
  return { ppid: Number(fields[1]), ownMs: ms(14) + ms(15), reapedMs: ms(16) + ms(17) };
}

/**
 * CPU in ms (every thread) spent so far by a server in another process and
 * its children, running or exited, from Linux's /proc (NaN elsewhere): a
 * Mailroom node, or the PostgreSQL server, whose postmaster starts a backend
 * a connection (an exited child's CPU is added to its parent's when reaped).
 */
export function processCpuMs(pid: number): number {
  const server = procStat(pid);
  if (!server) return NaN;
  let total = server.ownMs + server.reapedMs;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const child = procStat(Number(entry));
    if (child?.ppid === pid) total += child.ownMs + child.reapedMs;
  }
  return total;
}

/** Milliseconds of CPU in a process.cpuUsage() difference (user and system, every thread). */
export const cpuMs = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / 1000;

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

export const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/**
 * Runs each side `warmUps` times in turn, not counted (servers are measured
 * warm), then `rounds` times in turn, so a noisy neighbour hits all alike;
 * returns each side's counted results.
 */
export async function inTurn<T extends unknown[]>(rounds: number, sides: [...{ [K in keyof T]: () => Promise<T[K]> }], warmUps = 1): Promise<{ [K in keyof T]: Array<T[K]> }> {
  const results: unknown[][] = sides.map(() => []);
  for (let i = 0; i < warmUps; i++) {
    for (const side of sides) await side();
  }
  for (let i = 0; i < rounds; i++) {
    for (const [j, side] of sides.entries()) results[j].push(await side());
  }
  return results as { [K in keyof T]: Array<T[K]> };
}

/**
 * Measures `subject` and `ceiling` (and `reference`, when given: a third
 * figure to read them by) in alternating rounds, so a noisy neighbour hits
 * all alike, and reports medians and the subject's ratio to the ceiling. One
 * round of each comes first and is not counted: servers are measured warm.
 */
export async function compare(name: string, rounds: number, ceiling: () => Promise<LoadResult>, subject: () => Promise<LoadResult>,
  reference?: { label: string; run: () => Promise<LoadResult> }) {
  const results = await inTurn(rounds, [ceiling, subject, ...(reference ? [reference.run] : [])]);
  const bad = results.flat().find((r) => r.errors > 0);
  if (bad) throw new Error(`${name}: load saw errors ${JSON.stringify(bad.statuses)}`);
  const [c, s, ref] = results.map((rs) => ({
    rps: median(rs.map((r) => r.rps)), p99: median(rs.map((r) => r.p99)), cpu: median(rs.map((r) => r.cpuMsPerRequest)),
    written: median(rs.map((r) => r.bytesWrittenPerRequest)), loadCpu: median(rs.map((r) => r.loadCpuMsPerRequest)),
  }));
  const row = {
    name,
    ceiling_rps: c.rps,
    ceiling_p99_ms: c.p99,
    ceiling_cpu_ms: c.cpu,
    ceiling_load_cpu_ms: c.loadCpu,
    rps: s.rps,
    p99_ms: s.p99,
    cpu_ms: s.cpu,
    written_bytes: s.written,
    load_cpu_ms: s.loadCpu,
    reference: reference && { label: reference.label, ...ref },
  };
  return { ...row, ratio: row.rps / row.ceiling_rps };
}

/** A bare Koa app answering with `handler` on a loopback port: the ceiling of the HTTP benchmarks. */
export async function startBareKoa(handler: Koa.Middleware): Promise<{ url: string; close(): void }> {
  const app = new Koa();
  app.use(handler);
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

/**
 * Mailroom on loopback ports, with a data dir of its own, silent, on the
 * unlimited plan, sinking outbound mail; `env` adds to that. `close` stops it
 * and removes the data dir.
 */
export async function startBenchMailroom(env: Record<string, string> = {}): Promise<Mailroom & { close(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-bench-'));
  const mailroom = await startMailroom(loadConfig({
    MAILROOM_DATA_DIR: dataDir, MAILROOM_HTTP_PORT: '0', MAILROOM_SMTP_PORT: '0', MAILROOM_SUBMISSION_PORT: '0',
    MAILROOM_DELIVERY: 'sink', MAILROOM_DEFAULT_PLAN: 'unlimited', MAILROOM_LOG_LEVEL: 'silent', ...env,
  }), { logger: pino({ level: 'silent' }) });
  const stop = mailroom.close.bind(mailroom);
  return Object.assign(mailroom, {
    async close() {
      await stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  });
}
