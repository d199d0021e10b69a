import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import pino from 'pino';
import { createTestDatabase } from '../test/helpers/database.js';

// Delivery outcomes of one broadcast recorded by many writers at once on
// PostgreSQL: the case the broadcast's stats counters serialised when they
// were one row. Run by hand against a cluster, once for each checkout to
// compare (its root is the first argument: the code measured is that
// checkout's), alternating the two:
//
//   eval "$(bash scripts/postgres-cluster.sh start --durable)"
//   npx tsx bench/stats-writers.ts <checkout> "$MAILROOM_TEST_DATABASE_URL" [writers] [outcomes]
//   bash scripts/postgres-cluster.sh stop
//
// Two nodes (two pools of writers/2 connections, as two processes would
// have) make one broadcast's emails, then record one delivery outcome each,
// `writers` transactions side by side; it prints the outcomes a second, how
// many writers waited on a lock, on average, while they ran, and the time
// the stats trigger of an outcome took in the server (its plpgsql function's
// own time, from pg_stat_user_functions: with one writer, its cost; with
// many, waits for locks as well).

const [root, clusterUrl, writersArg = '16', outcomesArg = '3000'] = process.argv.slice(2);
if (!root || !clusterUrl) throw new Error('usage: stats-writers.ts <checkout> <cluster url> [writers] [outcomes]');
const writers = Number(writersArg);
const outcomes = Number(outcomesArg);
const from = (path: string) => import(pathToFileURL(join(resolve(root), path)).href);
const { openServices } = await from('src/main.ts');
const { loadConfig } = await from('src/config.ts');
const { markSent, listRecipients } = await from('src/emails/emails.repo.ts');
const { recordRecipientOutcomes } = await from('src/emails/outcomes.ts');

const database = await createTestDatabase(clusterUrl);
const admin = new pg.Client({ connectionString: database.url });
await admin.connect();
await admin.query(`ALTER DATABASE ${new URL(database.url).pathname.slice(1)} SET track_functions = 'pl'`);
const dirs: string[] = [];
const open = async (poolSize: number) => {
  const dir = mkdtempSync(join(tmpdir(), 'mailroom-stats-bench-'));
  dirs.push(dir);
  return openServices(loadConfig({
    MAILROOM_DATA_DIR: dir, MAILROOM_SECRET: 'stats-bench-secret-'.padEnd(48, 'x'), MAILROOM_LOG_LEVEL: 'silent',
    MAILROOM_DELIVERY: 'sink', MAILROOM_DATABASE_URL: database.url, MAILROOM_DATABASE_POOL_SIZE: String(poolSize),
  }), undefined, pino({ level: 'silent' }));
};
const a = await open(Math.max(1, Math.ceil(writers / 2)));
const b = writers > 1 ? await open(Math.floor(writers / 2)) : a;
const nodes = writers > 1 ? [a, b] : [a];
try {
  const { id: ws } = await a.workspaces.ensureDefault();
  const sender = { workspaceId: ws, plan: 'default', mode: 'test' };
  const { id: broadcastId } = await a.broadcasts.create(ws, { name: 'Bench', from: 'ann@acme.test', subject: 'News', text: 'Hello.' });
  const contacts: Array<{ id: string; email: string }> = [];
  await Promise.all(Array.from({ length: 16 }, async (_, w) => {
    for (let i = w; i < outcomes; i += 16) contacts.push(await a.contacts.create(ws, { email: `c${i}@rcpt.test` }));
  }));
  for (let i = 0; i < contacts.length; i += 500) {
    await a.emails.sendForBroadcast(sender, broadcastId, contacts.slice(i, i + 500)
      .map((c) => ({ contactId: c.id, body: { from: 'ann@acme.test', to: [c.email], subject: 'News', text: 'Hello.' } })), async () => undefined);
  }
  const emails: Array<{ id: string }> = await a.store.db.selectFrom('emails').select('id').where('broadcast_id', '=', broadcastId).execute();
  await a.store.write((tx: unknown) => markSent(tx, emails.map((e) => e.id), Date.now()));
  const work = await Promise.all(emails.map(async (e) => ({ emailId: e.id, recipient: (await listRecipients(a.store.db, e.id))[0] })));

  // Writers waiting on a lock, sampled every 20 ms from a connection of its own.
  const watcher = new pg.Client({ connectionString: database.url });
  await watcher.connect();
  const waiting: number[] = [];
  let running = true;
  const watching = (async () => {
    while (running) {
      const { rows } = await watcher.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
      waiting.push(rows[0].n);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: writers }, async (_, w) => {
    const node = nodes[w % nodes.length];
    for (let i = next++; i < work.length; i = next++) {
      const { emailId, recipient } = work[i];
      await node.store.write((tx: unknown) => recordRecipientOutcomes(tx, node.suppressions, [{ emailId, outcomes: [{
        kind: 'delivered', recipientId: recipient.id, address: recipient.email, smtpCode: 250, mxHost: 'mx.rcpt.test', response: '250 ok' }] }], Date.now()));
    }
  }));
  const seconds = (performance.now() - started) / 1000;
  running = false;
  await watching;
  await watcher.end();
  const stats = (await b.broadcasts.get(ws, broadcastId)).stats;
  if (stats.delivered !== work.length) throw new Error(`delivered counted ${stats.delivered}, ${work.length} recorded`);
  const meanWaiting = waiting.reduce((s, n) => s + n, 0) / Math.max(1, waiting.length);
  // A backend's function statistics reach the view when it ends.
  for (const node of new Set(nodes)) await node.store.close();
  await admin.query('SELECT pg_stat_clear_snapshot()');
  const { rows: [trigger] } = await admin.query(`SELECT calls, self_time FROM pg_stat_user_functions WHERE funcname = 'broadcast_stats_recipient_moved'`);
  console.log(`${root}: ${writers} writers, ${work.length} outcomes in ${seconds.toFixed(2)} s: ${(work.length / seconds).toFixed(0)} outcomes/s, ` +
    `${meanWaiting.toFixed(1)} writers waiting on a lock, the trigger ${(1000 * trigger.self_time / trigger.calls).toFixed(1)} µs an outcome (${trigger.calls} calls)`);
} finally {
  for (const node of new Set(nodes)) await node.store.close();
  await admin.end();
  await database.drop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}
