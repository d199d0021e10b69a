import { execFile, fork } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { apiClient, startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDatabase, onPostgres, type TestDatabase } from '../helpers/database.js';
import { startPgBouncer, type TestPgBouncer } from '../helpers/pgbouncer.js';

// What an operator relies on: health endpoints a load balancer can ask, and
// a backup taken while the server works that restores into a server serving
// the same emails, keys and cursors.

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));

describe('health', () => {
  it('answers /healthz and /readyz without a key or a rate limit, and /readyz 503 with the reasons when the store is behind', async () => {
    await using t = await startTestApp({ env: { MAILROOM_DEFAULT_PLAN: 'free' } });
    for (let i = 0; i < 15; i++) {
      const live = await fetch(`${t.url}/healthz`);
      expect(live.status).toBe(200);
      expect(live.headers.get('ratelimit-limit')).toBeNull();
    }
    expect(await (await fetch(`${t.url}/healthz`)).json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${t.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready' });
    expect((await fetch(`${t.url}/readyz`, { method: 'POST' })).status).toBe(405);

    // As if the database had been put back from before the latest migration.
    const { db } = t.mailroom.services.store;
    const latest = await db.selectFrom('kysely_migration' as never).select('name' as never).orderBy('name' as never, 'desc').limit(1)
      .executeTakeFirstOrThrow() as { name: string };
    await db.deleteFrom('kysely_migration' as never).where('name' as never, '=', latest.name as never).execute();
    const behind = await fetch(`${t.url}/readyz`);
    expect(behind.status).toBe(503);
    expect(await behind.json()).toEqual({ status: 'not_ready', problems: [`migrations not run: ${latest.name}`] });
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
  });
  it('checks the store once for the /readyz asks that come while a check runs, each a write transaction otherwise', async () => {
    await using t = await startTestApp();
    const { store } = t.mailroom.services;
    const checkWritable = store.checkWritable.bind(store);
    let checks = 0;
    store.checkWritable = async () => {
      checks++;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      return checkWritable();
    };
    const answers = await Promise.all(Array.from({ length: 20 }, () => fetch(`${t.url}/readyz`)));
    expect(answers.map((r) => r.status)).toEqual(new Array(20).fill(200));
    expect(checks).toBe(1);
    // The next ask, after it, checks again.
    expect((await fetch(`${t.url}/readyz`)).status).toBe(200);
    expect(checks).toBe(2);
  });

  it('answers /readyz 503 on a store that does not answer, within the time the Dockerfile\'s health check waits', async () => {
    const dockerfile = readFileSync(join(root, 'deploy/Dockerfile'), 'utf8');
    const healthCheckTimeoutMs = Number(/^HEALTHCHECK .*--timeout=(\d+)s /m.exec(dockerfile)?.[1]) * 1000;
    expect(healthCheckTimeoutMs).toBeGreaterThan(0);
    // A PostgreSQL server that stops answering (its pooler stopped: connections are taken, nothing is said), or
    // another process holding the SQLite file's write lock.
    let database: TestDatabase | undefined;
    let bouncer: TestPgBouncer | undefined;
    let t: TestApp | undefined;
    let holder: ReturnType<typeof fork> | undefined;
    try {
      if (onPostgres) {
        database = await createTestDatabase();
        bouncer = await startPgBouncer(database.url, 4);
        t = await startTestApp({ env: { MAILROOM_DATABASE_URL: bouncer.url, MAILROOM_DATABASE_PREPARED_STATEMENTS: 'false' } });
        expect((await fetch(`${t.url}/readyz`)).status).toBe(200);
        bouncer.freeze();
      } else {
        t = await startTestApp();
        expect((await fetch(`${t.url}/readyz`)).status).toBe(200);
        holder = fork(join(root, 'test/helpers/sqlite-lock-holder.ts'), [t.databaseUrl.replace(/^sqlite:/, ''), '30000'], { execArgv: ['--import', 'tsx'], stdio: 'ignore' });
        await new Promise((resolve) => holder!.once('message', resolve));
      }
      const started = performance.now();
      const frozen = await fetch(`${t.url}/readyz`);
      // The health check's own process needs a moment to start and ask.
      expect(performance.now() - started).toBeLessThan(healthCheckTimeoutMs - 1_500);
      expect(frozen.status).toBe(503);
      expect(await frozen.json()).toEqual({ status: 'not_ready', problems: ['the store did not answer within 2 s'] });
    } finally {
      bouncer?.thaw();
      if (holder) {
        const exited = new Promise((resolve) => holder!.once('exit', resolve));
        holder.kill();
        await exited;
      }
      await t?.close();
      await bouncer?.stop();
      await database?.drop();
    }
  });
});

describe('metrics', () => {
  /** The samples of one family, scraped and parsed as Prometheus would. */
  const scrape = async (url: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${url}/metrics`, { headers });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const families = parsePrometheusTextFormat(await res.text());
    return (name: string) => families.find((f) => f.name === name)?.metrics ?? [];
  };
  const value = (samples: Array<{ value?: string; labels?: Record<string, string> }>, labels: Record<string, string>) =>
    Number(samples.find((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v))?.value ?? 0);

  it('are scraped in the Prometheus format, and move with a send and its delivery', async () => {
    await using t = await startTestApp();
    await t.seed.activeDomain('acme.test');
    const before = await scrape(t.url);
    const sentBefore = value(before('mailroom_http_requests_total'), { operation: 'createEmail', status: '201' });
    const deliveredBefore = value(before('mailroom_delivery_attempts_total'), { result: 'delivered', provider: 'other' });
    expect(before('mailroom_outbound_queue_rows').map((s) => s.labels?.state).sort()).toEqual(['deferred', 'leased', 'queued']);
    expect(before('mailroom_process_nodejs_eventloop_lag_seconds').length).toBe(1);
    // The size of the SQLite file; a store on PostgreSQL has no file of its own.
    if (!onPostgres) {
      expect(Number(before('mailroom_store_bytes').find((s) => s.labels?.file === 'database')?.value)).toBeGreaterThan(0);
      // The pages a large deletion leaves free, as mailroom store compact would give back.
      const freeBefore = value(before('mailroom_store_free_bytes'), {});
      const { db } = t.mailroom.services.store;
      await sql`CREATE TABLE filler (b BLOB)`.execute(db);
      await sql`INSERT INTO filler SELECT randomblob(65536) FROM (SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4)`.execute(db);
      await sql`DROP TABLE filler`.execute(db);
      expect(value((await scrape(t.url))('mailroom_store_free_bytes'), {})).toBeGreaterThanOrEqual(freeBefore + 4 * 65536);
    } else expect(before('mailroom_store_free_bytes')).toEqual([]);

    expect((await t.api.post('/v1/emails', { from: 'ann@acme.test', to: 'bo@example.org', subject: 'Hi', text: 'x' })).status).toBe(201);
    expect((await t.api.get('/v1/emails/em_nope')).status).toBe(404);
    await t.mailroom.delivery.drain();

    const after = await scrape(t.url);
    expect(value(after('mailroom_http_requests_total'), { operation: 'createEmail', status: '201' })).toBe(sentBefore + 1);
    expect(value(after('mailroom_http_requests_total'), { operation: 'getEmail', status: '404' })).toBe(1);
    expect(value(after('mailroom_delivery_attempts_total'), { result: 'delivered', provider: 'other' })).toBe(deliveredBefore + 1);
    const latency = after('mailroom_delivery_latency_seconds')[0];
    expect(Number(latency.count)).toBe(1);
    // The parser keeps no labels of a labelled histogram's samples; the text says it plainly.
    const text = await (await fetch(`${t.url}/metrics`)).text();
    expect(text).toMatch(/^mailroom_http_request_duration_seconds_count\{operation="createEmail"\} 1$/m);
  });

  it('count webhook attempts by result', async () => {
    const receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(req.url === '/down' ? 503 : 204).end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      await using t = await startTestApp({ env: { MAILROOM_WEBHOOK_ALLOW_PRIVATE: 'true' } });
      const base = `http://127.0.0.1:${(receiver.address() as net.AddressInfo).port}`;
      const up = (await t.api.post('/v1/webhooks', { url: `${base}/up`, event_types: ['email.sent'] })).body;
      const down = (await t.api.post('/v1/webhooks', { url: `${base}/down`, event_types: ['email.sent'] })).body;
      expect((await t.api.post(`/v1/webhooks/${up.id}/test`)).status).toBeLessThan(300);
      await t.seed.activeDomain('acme.test');
      expect((await t.api.post('/v1/emails', { from: 'ann@acme.test', to: 'bo@example.org', subject: 'Hi', text: 'x' })).status).toBe(201);
      await t.mailroom.delivery.drain();
      await t.mailroom.services.webhookDispatcher.drain();
      const series = await scrape(t.url);
      const attempts = series('mailroom_webhook_attempts_total');
      expect(value(attempts, { result: 'test' })).toBe(1);
      expect(value(attempts, { result: 'succeeded' })).toBeGreaterThanOrEqual(1);
      expect(value(attempts, { result: 'retrying' })).toBeGreaterThanOrEqual(1);
      expect(down.id).toMatch(/^wh_/);
    } finally {
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });

  it('without a token, answer this machine but not a client a proxy on it forwards', async () => {
    await using t = await startTestApp();
    expect((await fetch(`${t.url}/metrics`)).status).toBe(200);
    for (const [name, value] of [['X-Forwarded-For', '203.0.113.9'], ['Forwarded', 'for=203.0.113.9;proto=https'], ['X-Real-IP', '203.0.113.9']]) {
      const proxied = await fetch(`${t.url}/metrics`, { headers: { [name]: value } });
      expect(proxied.status).toBe(403);
      expect(((await proxied.json()) as { error: { code: string; message: string } }).error).toMatchObject({
        code: 'forbidden',
        message: `Without MAILROOM_METRICS_TOKEN the metrics answer only this machine, and this request came through a proxy (its ${name} header says so): set MAILROOM_METRICS_TOKEN to scrape through one.`,
      });
    }
  });

  it('ask for MAILROOM_METRICS_TOKEN as a bearer when one is set', async () => {
    await using t = await startTestApp({ env: { MAILROOM_METRICS_TOKEN: 'scrape-me-please' } });
    const none = await fetch(`${t.url}/metrics`);
    expect(none.status).toBe(401);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    expect((await fetch(`${t.url}/metrics`, { headers: { Authorization: 'Bearer scrape-me-not' } })).status).toBe(401);
    // An API key is not the metrics token.
    expect((await fetch(`${t.url}/metrics`, { headers: { Authorization: `Bearer ${t.token}` } })).status).toBe(401);
    const series = await scrape(t.url, { Authorization: 'Bearer scrape-me-please' });
    expect(series('mailroom_outbound_queue_oldest_seconds')).toEqual([{ value: '0' }]);
  });
});

describe('backup and restore', () => {
  // `mailroom backup` copies a SQLite database; PostgreSQL is backed up with pg_dump.
  it.skipIf(onPostgres)('copies the store while it takes writes, and a server on the copy serves the same emails, keys and cursors', async () => {
    const t = await startTestApp();
    const restoredDir = mkdtempSync(join(tmpdir(), 'mailroom-restored-'));
    let restored: Awaited<ReturnType<typeof startTestApp>> | undefined;
    try {
      await t.seed.activeDomain('acme.test');
      const send = (i: number) => t.api.post('/v1/emails', { from: 'ann@acme.test', to: `r${i}@example.org`, subject: `Note ${i}`, text: 'x' });
      const early: Array<{ id: string; subject: string }> = [];
      for (let i = 0; i < 30; i++) {
        const res = await send(i);
        expect(res.status).toBe(201);
        early.push(res.body);
      }
      const firstPage = (await t.api.get('/v1/emails?limit=10')).body;

      // Sends go on while the backup runs.
      let writing = true;
      let sent = 30;
      const load = (async () => {
        while (writing && sent < 2_000) if ((await send(sent++)).status !== 201) throw new Error('a send failed during the backup');
      })();
      const backupFile = join(restoredDir, 'backup.db');
      const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'backup', backupFile], {
        cwd: root, env: { ...process.env, MAILROOM_DATA_DIR: t.dataDir, MAILROOM_LOG_LEVEL: 'silent' }, timeout: 30_000,
      });
      writing = false;
      await load;
      expect(stdout).toContain(`Backed up the database to ${backupFile}`);
      expect(stdout).toContain(join(t.dataDir, 'master.key'));
      // It holds what the database holds: readable by its owner only.
      expect(statSync(backupFile).mode & 0o777).toBe(0o600);
      // A second backup to the same file is refused in one line rather than overwriting it; so is one to a directory that is not there.
      const refused = (file: string) => run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'backup', file], {
        cwd: root, env: { ...process.env, MAILROOM_DATA_DIR: t.dataDir, MAILROOM_LOG_LEVEL: 'silent' }, timeout: 30_000,
      }).then(() => undefined, (e: { code: number; stderr: string }) => ({ code: e.code, lines: e.stderr.trim().split('\n') }));
      const [again, nowhere] = await Promise.all([refused(backupFile), refused(join(restoredDir, 'no-such-dir', 'backup.db'))]);
      expect(again).toEqual({ code: 1, lines: [`mailroom: ${backupFile} exists already; give a new file`] });
      expect(nowhere).toEqual({ code: 1, lines: [expect.stringMatching(/^mailroom: cannot write .*no-such-dir\/backup\.db: ENOENT/)] });

      // Restore as the README says: the master secret in place, then `mailroom restore`.
      copyFileSync(join(t.dataDir, 'master.key'), join(restoredDir, 'master.key'));
      await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'restore', backupFile], {
        cwd: root, env: { ...process.env, MAILROOM_DATA_DIR: restoredDir, MAILROOM_LOG_LEVEL: 'silent' }, timeout: 30_000,
      });
      restored = await startTestApp({ env: { MAILROOM_DATA_DIR: restoredDir } });
      // The harness key of the first server works on the second: its hash and the master secret came along.
      const api = apiClient(restored.url, t.token);
      for (const e of early) expect((await api.get(`/v1/emails/${e.id}`)).body.subject).toBe(e.subject);
      // A cursor minted by the first server pages the copy the same way.
      const next = await api.get(`/v1/emails?limit=10&starting_after=${encodeURIComponent(firstPage.next_cursor)}`);
      expect(next.status).toBe(200);
      const original = await t.api.get(`/v1/emails?limit=10&starting_after=${encodeURIComponent(firstPage.next_cursor)}`);
      expect(next.body.data.map((e: { id: string }) => e.id)).toEqual(original.body.data.map((e: { id: string }) => e.id));
      expect((await api.get(`/v1/emails/${firstPage.data[0].id}`)).body.subject).toBe(firstPage.data[0].subject);
    } finally {
      await restored?.close();
      await t.close();
      rmSync(restoredDir, { recursive: true, force: true });
    }
  }, 60_000);
});
