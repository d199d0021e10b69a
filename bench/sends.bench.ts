import Sqlite from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { markDomainActive, openStore } from './product.js';
import { createTestDatabase } from '../test/helpers/database.js';
import { compare, inTurn, load, startBareKoa, startBenchMailroom } from './lib.js';
import { servedBy, servedMedians, type Nodes, type PostgresCluster } from './postgres.js';

/** The email of the sends benchmarks. */
export const EMAIL = {
  from: 'Bench <bench@bench.example>',
  to: ['someone@example.net'],
  subject: 'Your receipt',
  html: '<p>Thanks for your order. ' + 'Lorem ipsum dolor sit amet. '.repeat(20) + '</p>',
  tags: ['receipt'],
};

/**
 * The storage ceiling: raw better-sqlite3 inserts of an email-sized row with
 * the same durability (WAL, synchronous=FULL), one commit per row and 100
 * rows per commit (what group commit can reach at best).
 */
export function rawSqliteInserts(seconds = 2): { perRowCommit: number; grouped: number } {
  const dir = mkdtempSync(join(tmpdir(), 'mailroom-bench-raw-'));
  const db = new Sqlite(join(dir, 'raw.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('create table t (pos integer primary key autoincrement, id text unique, body text, created_at integer)');
  const insert = db.prepare('insert into t (id, body, created_at) values (?, ?, ?)');
  const body = JSON.stringify(EMAIL);
  let n = 0;
  const rate = (fn: () => void) => {
    const start = performance.now();
    let count = 0;
    while (performance.now() - start < seconds * 1000 && count < 5_000_000) count += (fn(), 1);
    return count / ((performance.now() - start) / 1000);
  };
  const perRowCommit = rate(() => insert.run(`r${n++}`, body, Date.now()));
  const many = db.transaction(() => { for (let i = 0; i < 100; i++) insert.run(`r${n++}`, body, Date.now()); });
  const grouped = rate(many) * 100;
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return { perRowCommit, grouped };
}

/** A bare Koa route that reads the JSON body, parses it and answers 201 with `answer(parsed, text)`. */
function startJsonPost(answer: (parsed: { subject: string }, text: string) => Promise<{ id: string }> | { id: string }) {
  return startBareKoa(async (ctx) => {
    const chunks: Buffer[] = [];
    for await (const c of ctx.req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const parsed = JSON.parse(text) as { subject: string };
    const { id } = await answer(parsed, text);
    ctx.status = 201;
    ctx.body = { id, object: 'email', subject: parsed.subject };
  });
}

/**
 * Mailroom ready to take sends from bench.example with a live key; the send
 * delay keeps the delivery worker out of a measurement of acceptance.
 */
export async function startBenchSender() {
  const mailroom = await startBenchMailroom({ MAILROOM_SEND_DELAY: '3600' });
  const { services } = mailroom;
  const ws = await services.workspaces.ensureDefault();
  const domain = await services.domains.create(ws.id, { name: 'bench.example' });
  await services.store.write((tx) => markDomainActive(tx, ws.id, domain.id, Date.now()));
  const { token } = await services.apiKeys.create({ workspaceId: ws.id, name: 'bench' });
  return { mailroom, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' } };
}

/**
 * POST /v1/emails, answered 201 only after the row is committed, against a
 * bare Koa route parsing the same JSON; and, to read the gap by, the least a
 * durable send can do: that route committing the body as one row through
 * Mailroom's store (group commit, fsync before the 201).
 */
export async function benchAcceptedSends(rounds: number) {
  const bare = await startJsonPost(() => ({ id: 'em_x' }));
  const dir = mkdtempSync(join(tmpdir(), 'mailroom-bench-row-'));
  const store = openStore(`sqlite:${join(dir, 'row.db')}`);
  await sql`create table sends (pos integer primary key autoincrement, id text unique, body text, created_at integer)`.execute(store.db);
  let n = 0;
  const oneRow = await startJsonPost(async (_parsed, text) => {
    const id = `em_${n++}`;
    await store.write((tx) => sql`insert into sends (id, body, created_at) values (${id}, ${text}, ${Date.now()})`.execute(tx));
    return { id };
  });
  const { mailroom, headers } = await startBenchSender();
  try {
    const request = { method: 'POST', body: JSON.stringify(EMAIL), headers, connections: 64 };
    return await compare('accepted sends: POST /v1/emails (durable 201) vs bare Koa JSON POST', rounds,
      () => load({ ...request, url: `${bare.url}/v1/emails` }),
      () => load({ ...request, url: `${mailroom.httpUrl}/v1/emails` }),
      { label: 'the least a durable send can do (that Koa route committing the body as one row through the store)', run: () => load({ ...request, url: `${oneRow.url}/v1/emails` }) });
  } finally {
    await mailroom.close();
    bare.close();
    oneRow.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * POST /v1/emails on PostgreSQL, with one node and with two on one database
 * (the same 64 connections spread over both APIs), against the least a
 * durable send can do there: the Koa route committing the body as one row
 * through Mailroom's store on the same server. Each deployment has a
 * database of its own, so the second node's engines do no work for the
 * first.
 */
export async function benchPostgresSends(rounds: number, cluster: PostgresCluster) {
  const database = await createTestDatabase(cluster.url);
  const store = openStore(database.url);
  await sql`create table sends (pos bigint generated always as identity primary key, id text unique, body text, created_at bigint)`.execute(store.db);
  let n = 0;
  const oneRow = await startJsonPost(async (_parsed, text) => {
    const id = `em_${n++}`;
    await store.write((tx) => sql`insert into sends (id, body, created_at) values (${id}, ${text}, ${Date.now()})`.execute(tx));
    return { id };
  });
  const deployments: Nodes[] = [];
  try {
    // The send delay keeps the delivery worker out of a measurement of acceptance.
    const start = (count: number) => cluster.startNodes(count, { env: { MAILROOM_DELIVERY: 'sink', MAILROOM_SEND_DELAY: '3600' }, domain: 'bench.example' });
    deployments.push(await start(1));
    deployments.push(await start(2));
    const request = { method: 'POST', body: JSON.stringify(EMAIL), connections: 64 };
    const sendTo = (nodes: Nodes) => () => servedBy(cluster, nodes.pids, () => load({
      ...request, url: nodes.urls.map((u) => `${u}/v1/emails`), headers: { Authorization: `Bearer ${nodes.token}`, 'Content-Type': 'application/json' },
    }));
    const [ceiling, one, two] = await inTurn(rounds, [
      () => servedBy(cluster, [], () => load({ ...request, url: `${oneRow.url}/v1/emails`, headers: { 'Content-Type': 'application/json' } })),
      sendTo(deployments[0]),
      sendTo(deployments[1]),
    ]);
    return { ceiling: servedMedians(ceiling), one: servedMedians(one), two: servedMedians(two) };
  } finally {
    for (const nodes of deployments) await nodes.stop();
    oneRow.close();
    await store.close();
  }
}

export const BATCH_SIZE = 100;

/** The body of a batch request of the batch bench: 100 emails, each to its own recipient. */
export const batchBody = () => JSON.stringify({ emails: Array.from({ length: BATCH_SIZE }, (_, i) => ({ ...EMAIL, to: [`reader${i}@example.net`] })) });

/**
 * POST /v1/emails/batch of 100 emails, each to its own recipient, answered
 * only after the commit; against a bare Koa route parsing the same JSON. The
 * figure that counts is emails accepted per second: request rate times 100.
 */
export async function benchBatchSends(rounds: number) {
  const bare = await startJsonPost(() => ({ id: 'em_x' }));
  const { mailroom, headers } = await startBenchSender();
  try {
    const request = { method: 'POST', body: batchBody(), headers, connections: 8 };
    // A batch answers 200 even when items fail; the bench counts only batches taken whole.
    const probe = await fetch(`${mailroom.httpUrl}/v1/emails/batch`, { method: 'POST', headers, body: request.body });
    const { data } = await probe.json() as { data: Array<{ id?: string }> };
    if (!probe.ok || data.length !== BATCH_SIZE || data.some((item) => !item.id)) throw new Error(`batch bench: a batch was not taken whole (${probe.status})`);
    return await compare(`accepted batch sends: POST /v1/emails/batch of ${BATCH_SIZE} (durable 200) vs bare Koa JSON POST`, rounds,
      () => load({ ...request, url: `${bare.url}/v1/emails/batch` }),
      () => load({ ...request, url: `${mailroom.httpUrl}/v1/emails/batch` }));
  } finally {
    await mailroom.close();
    bare.close();
  }
}
