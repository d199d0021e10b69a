import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

// A Mailroom in a child process, for tests that kill it with SIGKILL: it
// starts on the environment given, makes a full-access key and (unless it
// joins a database another node set up) an active domain, and prints how to
// reach it once ready.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A module of Mailroom: its source, or as `npm run build` compiled it into dist/. */
const moduleOf = (path: string, compiled: boolean) => JSON.stringify(join(ROOT, compiled ? `dist/${path}.js` : `src/${path}.ts`));

const script = (domain: string, seed: boolean, compiled: boolean) => `
import { loadConfig } from ${moduleOf('config', compiled)};
import { startMailroom } from ${moduleOf('main', compiled)};
import { markDomainActive } from ${moduleOf('domains/domains.repo', compiled)};
const m = await startMailroom(loadConfig(process.env));
const ws = await m.services.workspaces.ensureDefault();
const key = await m.services.apiKeys.create({ workspaceId: ws.id, name: 'child server' });
if (${seed}) {
  const domain = await m.services.domains.create(ws.id, { name: ${JSON.stringify(domain)} });
  await m.services.store.write((tx) => markDomainActive(tx, ws.id, domain.id, Date.now()));
}
process.stdout.write(JSON.stringify({ url: m.httpUrl, token: key.token }) + '\\n');
`;

export interface ChildServer {
  child: ChildProcess;
  url: string;
  token: string;
  /** SIGKILL, and wait for the process to be gone. */
  kill(): Promise<void>;
}

/**
 * Starts the child on `env` (MAILROOM_DATA_DIR among it, where its script is
 * written too), with `domain` active; `seed: false` for a node joining a
 * database that has the domain already; `compiled` to run dist/ (as `npm
 * start` does) rather than the sources.
 */
export function startChildServer(env: Record<string, string>, domain: string, o: { seed?: boolean; compiled?: boolean } = {}): Promise<ChildServer> {
  const file = join(env.MAILROOM_DATA_DIR, 'child-server.mts');
  writeFileSync(file, script(domain, o.seed ?? true, o.compiled ?? false));
  const child = spawn(process.execPath, ['--import', 'tsx', file], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`child did not start: ${err}`)), 20_000);
    child.stderr!.on('data', (c: Buffer) => (err += c));
    child.stdout!.on('data', (c: Buffer) => {
      out += c;
      if (out.includes('\n')) {
        clearTimeout(timer);
        resolve({ child, kill, ...JSON.parse(out.split('\n')[0]) });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`child exited (${code}): ${err}`));
    });
  });
}

/** Polls `check` every 25 ms until it gives a value other than undefined or false. */
export async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(25);
  }
}
