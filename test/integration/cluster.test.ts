import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient } from '../helpers/app.js';
import { startChildServer, until, type ChildServer } from '../helpers/child-server.js';
import { createTestDatabase, testDatabaseUrl, type TestDatabase } from '../helpers/database.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { startScriptedMx, type ScriptedMx } from '../helpers/mx.js';

// Three Mailroom processes on one PostgreSQL database, each with its API, its
// SMTP listeners and its engines, as behind a load balancer: what is sent
// through any of them is delivered once, a node killed mid-delivery loses
// nothing, a scheduled email falls due once, and a workspace's rate limit is
// one limit whichever node a request reaches.

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MX_HOST = '127.0.0.5';
const EMAILS = 3000;
const SECRET = 'cluster-test-secret-'.padEnd(48, 'x');
const messageIdOf = (raw: Buffer) => /^Message-ID:\s*(<[^>\r\n]+>)/im.exec(raw.toString('latin1'))?.[1];

describe.skipIf(testDatabaseUrl === undefined)('several nodes on one PostgreSQL', () => {
  let database: TestDatabase;
  let dns: TestDns;
  let mx: ScriptedMx;
  const dirs: string[] = [];
  const nodes: Array<ChildServer | undefined> = [];
  let apis: ApiClient[] = [];

  const envOf = (dataDir: string): Record<string, string> => ({
    MAILROOM_DATABASE_URL: database.url, MAILROOM_SECRET: SECRET, MAILROOM_DATA_DIR: dataDir,
    MAILROOM_HTTP_HOST: '127.0.0.1', MAILROOM_HTTP_PORT: '0', MAILROOM_SMTP_PORT: '0', MAILROOM_SUBMISSION_PORT: '0',
    MAILROOM_DELIVERY: 'direct', MAILROOM_DNS_SERVERS: dns.server, MAILROOM_ALLOW_PRIVATE_MX: 'true', MAILROOM_OUTBOUND_PORT: String(mx.port),
    MAILROOM_SEND_DELAY: '0', MAILROOM_LOG_LEVEL: 'silent', MAILROOM_HOSTNAME: 'mx.cluster.test', MAILROOM_DEFAULT_PLAN: 'unlimited',
    MAILROOM_PLANS: JSON.stringify({ tight: { requestsPerSecond: 0.01, burst: 10, testRequestsPerSecond: 0.01, testBurst: 10 } }),
  });

  async function startNode(i: number, seed: boolean): Promise<ChildServer> {
    dirs[i] ??= mkdtempSync(join(tmpdir(), `mailroom-node${i}-`));
    const node = await startChildServer(envOf(dirs[i]), 'acme.test', { seed });
    nodes[i] = node;
    apis[i] = apiClient(node.url, node.token);
    return node;
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    dns = await startDns([{ type: 'MX', name: 'rcpt.test', exchange: 'mx.rcpt.test', priority: 10 }, { type: 'A', name: 'mx.rcpt.test', address: MX_HOST }]);
    mx = await startScriptedMx({ host: MX_HOST });
    // The first node sets the database up (and the domain); the others join it.
    await startNode(0, true);
    await Promise.all([startNode(1, false), startNode(2, false)]);
    apis = apis.slice(0, 3);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n?.kill()));
    await mx?.stop();
    await dns?.stop();
    await database?.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  /** Sends `count` emails round-robin through the nodes, 32 at a time; returns their ids. */
  async function sendRoundRobin(count: number, tag: string): Promise<string[]> {
    const ids: string[] = [];
    let next = 0;
    await Promise.all(Array.from({ length: 32 }, async () => {
      for (let i = next++; i < count; i = next++) {
        const res = await apis[i % apis.length].post('/v1/emails', { from: 'ann@acme.test', to: `reader${i}@rcpt.test`, subject: `${tag} ${i}`, text: 'Hello.' });
        expect(res.status).toBe(201);
        ids.push(res.body.id);
      }
    }));
    return ids;
  }

  /** How often the MX received each Message-ID among those whose subject starts with `tag`. */
  function copiesOf(tag: string): Map<string, number> {
    const copies = new Map<string, number>();
    for (const m of mx.received) {
      if (!m.raw.toString('latin1').includes(`Subject: ${tag} `)) continue;
      const id = messageIdOf(m.raw)!;
      copies.set(id, (copies.get(id) ?? 0) + 1);
    }
    return copies;
  }

  /** The Message-IDs of the emails whose subject starts with `tag` that the database has as delivered. */
  async function deliveredMessageIds(tag: string): Promise<Set<string>> {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ message_id: string }>(
        `SELECT message_id FROM emails WHERE subject LIKE $1 AND status = 'delivered'`, [`${tag} %`]);
      return new Set(rows.map((r) => r.message_id));
    } finally {
      await client.end();
    }
  }

  it('delivers 3,000 emails sent round-robin through three APIs exactly once each', async () => {
    const ids = await sendRoundRobin(EMAILS, 'First');
    expect(new Set(ids).size).toBe(EMAILS);
    await until('every email at the MX', () => copiesOf('First').size === EMAILS, 120_000);
    // Every node answers for every email, whichever took it.
    const copies = copiesOf('First');
    expect([...copies.values()].every((n) => n === 1)).toBe(true);
    for (const [i, id] of [ids[0], ids[1], ids[2]].entries()) {
      expect((await apis[(i + 1) % 3].get(`/v1/emails/${id}`)).body.status).toBe('delivered');
    }
  }, 180_000);

  it('delivers every email when a node is killed mid-delivery, twice only what was on the wire at the kill', async () => {
    // In batches, round-robin, due a moment ahead: all are queued when delivery starts, and the kill comes amid it.
    const at = new Date(Date.now() + 4_000).toISOString();
    for (let b = 0; b < EMAILS / 100; b++) {
      const res = await apis[b % 3].post('/v1/emails/batch', {
        emails: Array.from({ length: 100 }, (_, i) => ({
          from: 'ann@acme.test', to: `reader${b * 100 + i}@rcpt.test`, subject: `Second ${b * 100 + i}`, text: 'Hello.', scheduled_at: at,
        })),
      });
      expect(res.status).toBe(200);
    }
    await until('a third of them at the MX', () => copiesOf('Second').size >= EMAILS / 3, 60_000);
    await nodes[2]!.kill();
    // A moment for a last reply of the MX to the dead node to land.
    await new Promise((r) => setTimeout(r, 200));
    const atKill = [...copiesOf('Second').keys()];
    // What the MX had taken and no node had recorded as delivered: the dead
    // node's messages on the wire (taken, their outcome not committed), and
    // whatever the living nodes were about to record.
    const recorded = await deliveredMessageIds('Second');
    const onTheWire = new Set(atKill.filter((id) => !recorded.has(id)));
    expect(onTheWire.size).toBeLessThan(atKill.length / 2);
    // A node started in the dead one's place frees what it held at once (the others would take it when its leases ran out).
    await startNode(2, false);
    await until('every email at the MX after the kill', () => copiesOf('Second').size === EMAILS, 180_000);
    const copies = copiesOf('Second');
    const twice = [...copies].filter(([, n]) => n > 1).map(([id]) => id);
    // Only what was on the wire at the kill goes out again, and only once more.
    expect(twice.filter((id) => !onTheWire.has(id))).toEqual([]);
    expect(Math.max(...copies.values())).toBeLessThanOrEqual(2);
    console.log(`killed one of three nodes with ${atKill.length} of ${EMAILS} emails at the MX, ${onTheWire.size} of them not recorded yet; ${twice.length} sent twice`);
  }, 300_000);

  it('falls due once for a scheduled email, and holds one workspace to one rate limit across the nodes', async () => {
    const at = new Date(Date.now() + 2_000).toISOString();
    const scheduled = await apis[0].post('/v1/emails', { from: 'ann@acme.test', to: 'later@rcpt.test', subject: 'Later 0', text: 'x', scheduled_at: at });
    expect(scheduled.status).toBe(201);
    await until('the scheduled email delivered', async () => (await apis[1].get(`/v1/emails/${scheduled.body.id}`)).body.status === 'delivered', 20_000);
    // Every node's poller looked for it; one sent it.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect([...copiesOf('Later').values()]).toEqual([1]);

    // A workspace on a plan of 10 requests in a burst, through three nodes.
    const env = { ...process.env, ...envOf(dirs[0]) };
    const cli = (args: string[]) => run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { cwd: ROOT, env, timeout: 30_000 });
    await cli(['workspaces', 'create', '--name', 'tight', '--plan', 'tight']);
    const { stdout } = await cli(['keys', 'create', '--name', 'rate', '--workspace', 'tight', '--json']);
    const token = JSON.parse(stdout).token as string;
    const statuses: number[] = [];
    for (let i = 0; i < 15; i++) statuses.push((await apiClient(nodes[i % 3]!.url, token).get('/v1/emails?limit=1')).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(5);
  }, 120_000);
});
