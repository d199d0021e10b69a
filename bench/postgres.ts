import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { postgresPool } from './product.js';
import { startChildServer, type ChildServer } from '../test/helpers/child-server.js';
import { createTestDatabase } from '../test/helpers/database.js';
import { median, processCpuMs, type LoadResult } from './lib.js';

// PostgreSQL for the bench: a private cluster, durable as a real install is
// (a commit the server confirms has survived power loss, as a SQLite commit
// Mailroom waits for has), and Mailroom nodes in child processes on its
// databases, several on one database as behind a load balancer.

const run = promisify(execFile);
const CLUSTER_SCRIPT = fileURLToPath(new URL('../scripts/postgres-cluster.sh', import.meta.url));
const DURABILITY_SETTINGS = ['fsync', 'synchronous_commit', 'full_page_writes'];

export interface PostgresCluster {
  /** A URL of the cluster's own role, which may create databases. */
  url: string;
  /** The postmaster's PID: with its backends, the database server whose CPU the figures count. */
  pid: number;
  /** The master secret every node of the bench shares. */
  secret: string;
  /** Bytes of WAL the server has written so far (its insert position). */
  walPosition(): Promise<number>;
  /**
   * `count` Mailroom nodes on one new database, or on `databaseUrl`,
   * started as the several-nodes test starts them: the first sets the
   * database up (with `domain` active, when given), the others join it.
   * Each listens on loopback ports, silent, on the unlimited plan; `env`
   * adds to that.
   */
  startNodes(count: number, o: { env: Record<string, string>; domain?: string; databaseUrl?: string }): Promise<Nodes>;
  /** Kills the nodes still running, then stops the server and removes its directory. */
  stop(): void;
}

export interface Nodes {
  /** Each node's HTTP base URL. */
  urls: string[];
  /** A full-access key of the default workspace, good on every node. */
  token: string;
  pids: number[];
  databaseUrl: string;
  /** Kills the nodes and removes their data dirs. */
  stop(): Promise<void>;
}

/**
 * Starts a cluster with scripts/postgres-cluster.sh, durable, and checks that
 * it is. It is stopped by `stop`, and also when this process exits or is
 * interrupted first, so no server outlives the bench.
 */
export async function startPostgresCluster(): Promise<PostgresCluster> {
  const { stdout } = await run('bash', [CLUSTER_SCRIPT, 'start', '--durable'], { timeout: 120_000 });
  const settings = new Map(stdout.trim().split('\n').map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]));
  const dir = settings.get('PG_CLUSTER_DIR')!;
  const running = new Set<ChildServer>();
  /** The nodes' data dirs, a node's from before it starts. */
  const dataDirs = new Set<string>();
  const admin = postgresPool(settings.get('MAILROOM_TEST_DATABASE_URL')!, { poolSize: 1, preparedStatements: false });
  let stopped = false;
  // Exiting, rather than dying of the signal, runs the other exit hooks (the DNS helper's).
  const onSignal = (signal: NodeJS.Signals) => process.exit(signal === 'SIGINT' ? 130 : 143);
  function stop(): void {
    if (stopped) return;
    stopped = true;
    process.off('exit', stop);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    for (const node of running) node.child.kill('SIGKILL');
    for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
    // The server's stop ends the pool's connection; the pool's error listener takes that.
    void admin.end();
    execFileSync('bash', [CLUSTER_SCRIPT, 'stop', dir], { stdio: 'ignore', timeout: 60_000 });
  }
  process.once('exit', stop);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const cluster: PostgresCluster = {
    url: settings.get('MAILROOM_TEST_DATABASE_URL')!,
    pid: Number(settings.get('PG_CLUSTER_PID')),
    secret: randomBytes(24).toString('hex'),
    stop,
    async walPosition() {
      const { rows } = await admin.query<{ bytes: number }>(`SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0') AS bytes`);
      return rows[0].bytes;
    },
    async startNodes(count, o) {
      const databaseUrl = o.databaseUrl ?? (await createTestDatabase(cluster.url)).url;
      const dirs: string[] = [];
      const nodes: ChildServer[] = [];
      const startNode = async (seed: boolean) => {
        const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-bench-node-'));
        dirs.push(dataDir);
        dataDirs.add(dataDir);
        const node = await startChildServer({
          MAILROOM_DATABASE_URL: databaseUrl, MAILROOM_SECRET: cluster.secret, MAILROOM_DATA_DIR: dataDir,
          MAILROOM_HTTP_HOST: '127.0.0.1', MAILROOM_HTTP_PORT: '0', MAILROOM_SMTP_PORT: '0', MAILROOM_SUBMISSION_PORT: '0',
          MAILROOM_DEFAULT_PLAN: 'unlimited', MAILROOM_LOG_LEVEL: 'silent', ...o.env,
        }, o.domain ?? '', { seed, compiled: true });
        running.add(node);
        nodes.push(node);
        return node;
      };
      const stopNodes = async () => {
        await Promise.all(nodes.map(async (node) => {
          await node.kill();
          running.delete(node);
        }));
        for (const dir of dirs) {
          rmSync(dir, { recursive: true, force: true });
          dataDirs.delete(dir);
        }
      };
      try {
        const first = await startNode(o.domain !== undefined);
        const others = await Promise.all(Array.from({ length: count - 1 }, () => startNode(false)));
        return { urls: [first, ...others].map((n) => n.url), token: first.token, pids: [first, ...others].map((n) => n.child.pid!), databaseUrl, stop: stopNodes };
      } catch (err) {
        await stopNodes();
        throw err;
      }
    },
  };
  try {
    const { rows } = await admin.query<{ name: string; setting: string }>('SELECT name, setting FROM pg_settings WHERE name = ANY($1)', [DURABILITY_SETTINGS]);
    const off = rows.filter((r) => r.setting !== 'on').map((r) => r.name);
    if (rows.length !== DURABILITY_SETTINGS.length || off.length > 0) throw new Error(`the bench's PostgreSQL is not durable: ${off.join(', ')} off`);
  } catch (err) {
    stop();
    throw err;
  }
  return cluster;
}

/**
 * What the servers of a measurement spent: the CPU of each Mailroom node and
 * of the database server (with its backends), and the WAL the server wrote.
 * The WAL stands for what is written to disk: the kernel's count of bytes a
 * process wrote (/proc/PID/io) can be far off for PostgreSQL, whose WAL
 * writes dirty the same large page-cache folios again and again.
 */
export interface ServerUsage { nodesCpuMs: number[]; databaseCpuMs: number; walBytes: number }

/** Starts counting what the nodes `pids` and the cluster's server spend; the function returned gives what they spent since. */
export async function meterServers(cluster: PostgresCluster, pids: number[]): Promise<() => Promise<ServerUsage>> {
  const read = async () => ({ nodes: pids.map(processCpuMs), database: processCpuMs(cluster.pid), wal: await cluster.walPosition() });
  const before = await read();
  return async () => {
    const after = await read();
    return { nodesCpuMs: after.nodes.map((n, i) => n - before.nodes[i]), databaseCpuMs: after.database - before.database, walBytes: after.wal - before.wal };
  };
}

/** A load result with the cost of the servers that served it, per request. */
export interface ServedLoad extends LoadResult {
  /** CPU of each Mailroom node a request (their sum is cpuMsPerRequest); empty when the server is a route of this process. */
  nodesCpuMsPerRequest: number[];
  databaseCpuMsPerRequest: number;
  walBytesPerRequest: number;
}

/**
 * Runs `load` and counts what the nodes `pids` and the database server spent
 * on it. With no nodes, the server is a route of this process, whose CPU load
 * measures itself.
 */
export async function servedBy(cluster: PostgresCluster, pids: number[], load: () => Promise<LoadResult>): Promise<ServedLoad> {
  const spent = await meterServers(cluster, pids);
  const result = await load();
  const usage = await spent();
  const perRequest = (x: number) => x / Math.max(1, result.requests);
  const nodesCpuMsPerRequest = usage.nodesCpuMs.map(perRequest);
  return {
    ...result, nodesCpuMsPerRequest, databaseCpuMsPerRequest: perRequest(usage.databaseCpuMs), walBytesPerRequest: perRequest(usage.walBytes),
    cpuMsPerRequest: pids.length ? nodesCpuMsPerRequest.reduce((a, b) => a + b, 0) : result.cpuMsPerRequest,
  };
}

/** The medians of one side's rounds. */
export function servedMedians(results: ServedLoad[]) {
  const bad = results.find((r) => r.errors > 0);
  if (bad) throw new Error(`load saw errors ${JSON.stringify(bad.statuses)}`);
  const of = (pick: (r: ServedLoad) => number) => median(results.map(pick));
  return {
    rps: of((r) => r.rps), p50: of((r) => r.p50), p99: of((r) => r.p99), cpuMs: of((r) => r.cpuMsPerRequest),
    nodesCpuMs: results[0].nodesCpuMsPerRequest.map((_, i) => of((r) => r.nodesCpuMsPerRequest[i])),
    databaseCpuMs: of((r) => r.databaseCpuMsPerRequest), walBytes: of((r) => r.walBytesPerRequest), loadCpuMs: of((r) => r.loadCpuMsPerRequest),
  };
}
