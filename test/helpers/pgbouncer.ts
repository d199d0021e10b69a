// A real PgBouncer in front of the test cluster, in transaction mode: each
// transaction (each statement outside one) gets whichever server connection
// is free, and the Debian package's 1.18 keeps no prepared statements across
// them, as poolers before 1.21 (or without max_prepared_statements) do not.
// It listens on 127.0.0.1 and a free port, and runs as the cluster's OS user
// when the tests run as root (it refuses root).
import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { freePort } from './ports.js';

const PGBOUNCER = '/usr/sbin/pgbouncer';
const OS_USER = 'postgres';
const START_DEADLINE_MS = 10_000;

export interface TestPgBouncer {
  /** The database of `databaseUrl`, through the pooler. */
  url: string;
  /** Stops the pooler at once (its clients' connections drop), keeping its settings for up(). */
  down(): Promise<void>;
  /** Starts the pooler again on the same port; resolves once it answers. */
  up(): Promise<void>;
  /**
   * Stops the pooler's process (SIGSTOP) without closing anything: its
   * kernel still takes connections and data, and nothing is answered, as a
   * hung server or a partition behaves.
   */
  freeze(): void;
  /** Lets a frozen pooler go on (SIGCONT). */
  thaw(): void;
  stop(): Promise<void>;
}

/** PgBouncer for the database of `databaseUrl`, with `serverConnections` connections to the server at most. */
export async function startPgBouncer(databaseUrl: string, serverConnections: number): Promise<TestPgBouncer> {
  const target = new URL(databaseUrl);
  const dir = mkdtempSync(join(tmpdir(), 'mailroom-pgbouncer-'));
  const port = await freePort();
  const asRoot = userInfo().uid === 0;
  writeFileSync(join(dir, 'pgbouncer.ini'), [
    '[databases]',
    `* = host=${target.hostname} port=${target.port} user=${decodeURIComponent(target.username)} password=${decodeURIComponent(target.password)}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    // Clients are not checked: the server logs in as the user above.
    'auth_type = any',
    'pool_mode = transaction',
    `default_pool_size = ${serverConnections}`,
    'max_client_conn = 100',
    `logfile = ${join(dir, 'pgbouncer.log')}`,
    `pidfile = ${join(dir, 'pgbouncer.pid')}`,
    '',
  ].join('\n'), { mode: 0o600 });
  if (asRoot) for (const file of ['', 'pgbouncer.ini']) chownSync(join(dir, file), ...ownerOf(OS_USER));
  const url = new URL(databaseUrl);
  url.host = `127.0.0.1:${port}`;

  let running: { child: ChildProcess; exited: Promise<unknown> } | undefined;
  let frozen = false;
  /** PgBouncer's own pid: runuser, when the tests run as root, is its parent. */
  const pgbouncerPid = () => {
    const pid = Number(readIfThere(join(dir, 'pgbouncer.pid')));
    if (!running || !(pid > 0)) throw new Error('PgBouncer is not running');
    return pid;
  };
  const freeze = () => {
    process.kill(pgbouncerPid(), 'SIGSTOP');
    frozen = true;
  };
  // runuser stops itself when its child stops, and must be continued too.
  const thaw = () => {
    if (!frozen) return;
    frozen = false;
    process.kill(pgbouncerPid(), 'SIGCONT');
    running?.child.kill('SIGCONT');
  };
  const down = async () => {
    if (!running) return;
    // A frozen pooler would take SIGTERM only once continued.
    thaw();
    const { child, exited } = running;
    running = undefined;
    // PgBouncer itself, by its pid; runuser then exits with it (signalled, it
    // would wait two seconds before passing the signal on). SIGTERM is its
    // immediate shutdown: client connections are closed under their queries.
    const pid = Number(readIfThere(join(dir, 'pgbouncer.pid')));
    if (pid > 0 && child.exitCode === null) process.kill(pid, 'SIGTERM');
    else if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  };
  const stop = async () => {
    await down();
    rmSync(dir, { recursive: true, force: true });
  };
  const up = async () => {
    if (running) return;
    const child: ChildProcess = asRoot
      ? spawn('runuser', ['-u', OS_USER, '--', PGBOUNCER, join(dir, 'pgbouncer.ini')], { stdio: 'ignore' })
      : spawn(PGBOUNCER, [join(dir, 'pgbouncer.ini')], { stdio: 'ignore' });
    running = { child, exited: new Promise((resolve) => child.once('exit', resolve)) };
    await answering(url.toString(), () => child.exitCode !== null).catch(async (err: unknown) => {
      const log = readIfThere(join(dir, 'pgbouncer.log'));
      await down();
      throw new Error(`PgBouncer did not start: ${(err as Error).message}\n${log}`);
    });
  };

  try {
    await up();
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return { url: url.toString(), down, up, freeze, thaw, stop };
}

/** Resolves once the pooler at `url` runs a query; rejects past the start deadline or once `gone()`. */
async function answering(url: string, gone: () => boolean): Promise<void> {
  for (const deadline = Date.now() + START_DEADLINE_MS; ;) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return;
    } catch (err) {
      if (Date.now() > deadline || gone()) throw err;
      await delay(50);
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}

function ownerOf(user: string): [number, number] {
  const line = readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith(`${user}:`));
  if (!line) throw new Error(`no OS user ${user}`);
  const [, , uid, gid] = line.split(':');
  return [Number(uid), Number(gid)];
}

function readIfThere(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return '';
  }
}
