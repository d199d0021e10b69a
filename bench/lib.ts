import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const run = promisify(execFile);
const loadScript = fileURLToPath(new URL('./load.ts', import.meta.url));

export interface LoadResult { requests: number; errors: number; statuses: Record<string, number>; rps: number; p50: number; p99: number }

export interface LoadOptions { url: string; connections?: number; seconds?: number; maxRequests?: number; headers?: Record<string, string>; method?: string; body?: string }

/** Runs the load generator in a child process against a URL. */
export async function load(o: LoadOptions): Promise<LoadResult> {
  const args = { connections: 32, seconds: 3, maxRequests: 500_000, headers: {}, method: 'GET', ...o };
  const { stdout } = await run(process.execPath, ['--import', 'tsx', loadScript, JSON.stringify(args)], { timeout: (args.seconds + 30) * 1000 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as LoadResult;
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

export const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/**
 * Measures `subject` and `ceiling` in alternating rounds (so a noisy
 * neighbour hits both alike) and reports medians and their ratio.
 */
export async function compare(name: string, rounds: number, ceiling: () => Promise<LoadResult>, subject: () => Promise<LoadResult>) {
  const c: LoadResult[] = [];
  const s: LoadResult[] = [];
  for (let i = 0; i < rounds; i++) {
    c.push(await ceiling());
    s.push(await subject());
  }
  const bad = s.find((r) => r.errors > 0) ?? c.find((r) => r.errors > 0);
  if (bad) throw new Error(`${name}: load saw errors ${JSON.stringify(bad.statuses)}`);
  const row = {
    name,
    ceiling_rps: median(c.map((r) => r.rps)),
    ceiling_p99_ms: median(c.map((r) => r.p99)),
    rps: median(s.map((r) => r.rps)),
    p99_ms: median(s.map((r) => r.p99)),
  };
  return { ...row, ratio: row.rps / row.ceiling_rps };
}
