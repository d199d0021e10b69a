import { fork } from 'node:child_process';
import { resolve } from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { loadContract } from '../../src/contract/contract.js';
import pg from 'pg';
import { startTestApp, type ApiResponse, type TestApp } from '../helpers/app.js';
import { createTestDatabase, onPostgres } from '../helpers/database.js';
import { publishDkim, startDns } from '../helpers/dns.js';
import { directDeliveryEnv, startScriptedMx } from '../helpers/mx.js';
import { startPgBouncer } from '../helpers/pgbouncer.js';
import { eventually, sendRaw, startSmtpTestApp, type SmtpTestApp } from '../helpers/smtp-app.js';

// A store that cannot be reached for a while (PostgreSQL or its pooler
// restarting, or stopped and answering nothing; a SQLite file locked by
// another process) refuses requests with a retryable 503 and SMTP 451, within
// the store's bounds rather than hanging, and the delivery worker holds the outcomes of
// messages the remote already took until it can write them: nothing is lost,
// and nothing goes out twice.

const MX_HOST = '127.0.0.2';
const contract = loadContract();

function expectStoreUnavailable(res: ApiResponse, operationId: string): void {
  expect(res.status).toBe(503);
  expect(res.headers.get('retry-after')).toBe('5');
  expect(res.body.error).toMatchObject({ code: 'store_unavailable', message: expect.stringMatching(/cannot be reached right now: nothing of this request was kept/) });
  expect(contract.checkResponse(operationId, 503, res.body)).toBeUndefined();
}

describe.skipIf(!onPostgres)('a node whose PostgreSQL pooler stops for a few seconds', () => {
  it('answers 503 store_unavailable and SMTP 451 meanwhile, and delivers every message in flight exactly once', async () => {
    const database = await createTestDatabase();
    const bouncer = await startPgBouncer(database.url, 4);
    const testDns = await startDns([{ type: 'MX', name: 'rcpt.test', exchange: 'mx.rcpt.test', priority: 10 }, { type: 'A', name: 'mx.rcpt.test', address: MX_HOST }]);
    let releaseHeld!: () => void;
    const held = new Promise<void>((r) => (releaseHeld = r));
    let atMx = 0;
    // Each message waits at the MX, its DATA unanswered, until the pooler is down.
    const mx = await startScriptedMx({
      host: MX_HOST,
      hold: async (stage) => {
        if (stage !== 'data') return;
        atMx++;
        await held;
      },
    });
    let t: SmtpTestApp | undefined;
    try {
      t = await startSmtpTestApp({ env: { MAILROOM_DATABASE_URL: bouncer.url, MAILROOM_DATABASE_PREPARED_STATEMENTS: 'false', ...directDeliveryEnv(testDns.server, mx.port) } });
      const app = t;
      await publishDkim(testDns, await app.seed.activeDomain('acme.test'));
      const send = (to: string) => app.api.post('/v1/emails', { from: 'ann@acme.test', to, subject: 'While the store goes away', text: 'Hello.' });
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await send(`r${i}@rcpt.test`);
        expect(res.status).toBe(201);
        ids.push(res.body.id);
      }
      await eventually(async () => (atMx === ids.length ? true : undefined), 10_000, 'every message at the MX');

      await bouncer.down();
      releaseHeld();
      await mx.waitFor(ids.length);
      expectStoreUnavailable(await app.api.get(`/v1/emails/${ids[0]}`), 'getEmail');
      expectStoreUnavailable(await send('late@rcpt.test'), 'createEmail');
      await expect(sendRaw(app.submissionPort, { from: 'ann@acme.test', to: ['r9@rcpt.test'] }, 'From: ann@acme.test\r\nTo: r9@rcpt.test\r\nSubject: x\r\n\r\nx\r\n', { user: 'apikey', pass: app.token }))
        .rejects.toMatchObject({ responseCode: 451, response: expect.stringMatching(/^451 4\.3\.0 /) });
      await expect(sendRaw(app.mxPort, { from: 'someone@outside.test', to: ['desk@acme.test'] }, 'From: someone@outside.test\r\nTo: desk@acme.test\r\nSubject: x\r\n\r\nx\r\n'))
        .rejects.toMatchObject({ responseCode: 451, response: expect.stringMatching(/^451 4\.3\.0 /) });
      // The metrics still answer meanwhile, the 503s counted and the store said to be unreadable.
      const scrape = await fetch(`${app.url}/metrics`);
      expect(scrape.status).toBe(200);
      const metrics = await scrape.text();
      expect(metrics).toMatch(/^mailroom_store_readable 0$/m);
      expect(metrics).toMatch(/^mailroom_http_requests_total\{operation="createEmail",status="503"\} 1$/m);
      // Past the worker's retry of a held outcome, and a claim or two.
      await new Promise((r) => setTimeout(r, 3_000));
      await bouncer.up();

      for (const id of ids) {
        await eventually(async () => ((await app.api.get(`/v1/emails/${id}`)).body.status === 'delivered' ? true : undefined), 15_000, `${id} delivered`);
      }
      const after = await send('after@rcpt.test');
      expect(after.status).toBe(201);
      await mx.waitFor(ids.length + 1, 10_000);
      await eventually(async () => ((await app.api.get(`/v1/emails/${after.body.id}`)).body.status === 'delivered' ? true : undefined), 10_000, 'the send after delivered');
      // Held outcomes were written once the store was back: no row is left to go out again.
      const { rows: [{ n }] } = await sql<{ n: number }>`SELECT count(*) AS n FROM outbound_queue`.execute(app.mailroom.services.store.db);
      expect(Number(n)).toBe(0);
      const received = mx.received.flatMap((m) => m.rcptTo).sort();
      expect(received).toEqual([...ids.map((_, i) => `r${i}@rcpt.test`), 'after@rcpt.test'].sort());
    } finally {
      releaseHeld();
      await bouncer.up().catch(() => undefined);
      await t?.close();
      await mx.stop();
      await testDns.stop();
      await bouncer.stop();
      await database.drop();
    }
  });
});

describe.skipIf(!onPostgres)('a node whose PostgreSQL pooler stops answering (SIGSTOP) for a few seconds', () => {
  it('answers 503 store_unavailable and SMTP 451 within its bounds, not a hang, and serves again once the pooler goes on', async () => {
    const database = await createTestDatabase();
    const bouncer = await startPgBouncer(database.url, 4);
    let t: SmtpTestApp | undefined;
    try {
      t = await startSmtpTestApp({
        env: {
          MAILROOM_DATABASE_URL: bouncer.url,
          MAILROOM_DATABASE_PREPARED_STATEMENTS: 'false',
          MAILROOM_DATABASE_CONNECT_TIMEOUT: '1',
          MAILROOM_DATABASE_QUERY_TIMEOUT: '1',
        },
      });
      const app = t;
      await app.seed.activeDomain('acme.test');
      const send = (to: string) => app.api.post('/v1/emails', { from: 'ann@acme.test', to, subject: 'While the store hangs', text: 'Hello.' });
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await send(`r${i}@rcpt.test`);
        expect(res.status).toBe(201);
        ids.push(res.body.id);
      }

      bouncer.freeze();
      // A wait for a free connection, then a connection or a statement: two bounds of a second at most.
      const within = async <T>(work: () => Promise<T>): Promise<T> => {
        const started = performance.now();
        const result = await work();
        expect(performance.now() - started).toBeLessThan(2_000 + 1_500);
        return result;
      };
      expectStoreUnavailable(await within(() => send('late@rcpt.test')), 'createEmail');
      expectStoreUnavailable(await within(() => app.api.get(`/v1/emails/${ids[0]}`)), 'getEmail');
      const submitted = await within(() => sendRaw(app.submissionPort, { from: 'ann@acme.test', to: ['r9@rcpt.test'] }, 'From: ann@acme.test\r\nTo: r9@rcpt.test\r\nSubject: x\r\n\r\nx\r\n', { user: 'apikey', pass: app.token })
        .catch((err: unknown) => err));
      expect(submitted).toMatchObject({ responseCode: 451, response: expect.stringMatching(/^451 4\.3\.0 /) });
      expectStoreUnavailable(await within(() => send('later@rcpt.test')), 'createEmail');
      bouncer.thaw();

      // The same node, not restarted, takes and keeps mail again; what it took before is all there.
      const after = await eventually(async () => {
        const res = await send('after@rcpt.test');
        return res.status === 201 ? res : undefined;
      }, 10_000, 'a send taken after the pooler went on');
      ids.push(after.body.id);
      for (const id of ids) {
        await eventually(async () => ((await app.api.get(`/v1/emails/${id}`)).body.status === 'delivered' ? true : undefined), 10_000, `${id} delivered`);
      }
      // Nothing refused was kept either.
      const { rows } = await sql<{ id: string }>`SELECT id FROM emails`.execute(app.mailroom.services.store.db);
      expect(rows.map((r) => r.id).sort()).toEqual([...ids].sort());
    } finally {
      bouncer.thaw();
      await t?.close();
      await bouncer.stop();
      await database.drop();
    }
  });
});

describe.skipIf(!onPostgres)('a node on a PostgreSQL database whose settings cut long statements short', () => {
  // A managed database often has these set for every role; a statement they
  // cancel was rolled back, like one the node gave up on itself.
  for (const [setting, code] of [['statement_timeout', '57014'], ['lock_timeout', '55P03']] as const) {
    it(`answers 503 store_unavailable when ${setting} cancels a statement (${code}), and serves once the wait is over`, async () => {
      const database = await createTestDatabase();
      const name = new URL(database.url).pathname.slice(1);
      const admin = new pg.Client({ connectionString: database.url });
      await admin.connect();
      let t: TestApp | undefined;
      try {
        await admin.query(`ALTER DATABASE ${name} SET ${setting} = '300ms'`);
        t = await startTestApp({ env: { MAILROOM_DATABASE_URL: database.url } });
        expect((await t.api.post('/v1/domains', { name: 'before.test' })).status).toBe(201);
        // Another session holds the table for longer than the setting allows a wait.
        await admin.query('BEGIN');
        await admin.query('LOCK TABLE domains IN ACCESS EXCLUSIVE MODE');
        expectStoreUnavailable(await t.api.post('/v1/domains', { name: 'held.test' }), 'createDomain');
        expectStoreUnavailable(await t.api.get('/v1/domains'), 'listDomains');
        await admin.query('ROLLBACK');
        expect((await t.api.post('/v1/domains', { name: 'held.test' })).status).toBe(201);
        expect((await t.api.get('/v1/domains')).body.data.map((d: { name: string }) => d.name).sort()).toEqual(['before.test', 'held.test']);
      } finally {
        await t?.close();
        await admin.end();
        await database.drop();
      }
    });
  }
});

const SECOND_WRITER_LOCK = resolve(import.meta.dirname, '../helpers/sqlite-lock-holder.ts');

describe.skipIf(onPostgres)('a SQLite store whose write lock another process holds past busy_timeout', () => {
  it('answers 503 store_unavailable, and takes the same request once the lock is let go', async () => {
    await using t = await startTestApp();
    const file = t.databaseUrl.replace(/^sqlite:/, '');
    const holder = fork(SECOND_WRITER_LOCK, [file, '30000'], { execArgv: ['--import', 'tsx'], stdio: 'ignore' });
    const exited = new Promise((r) => holder.once('exit', r));
    try {
      await new Promise<void>((resolve, reject) => {
        holder.once('message', () => resolve());
        holder.once('exit', (code) => reject(new Error(`the lock holder exited (${code}) before it held the lock`)));
      });
      // Every write unit waits out busy_timeout (5 s) first; background work queued meanwhile may take its turn before this one.
      const refused = await t.api.post('/v1/domains', { name: 'locked.test' });
      expectStoreUnavailable(refused, 'createDomain');
    } finally {
      holder.kill();
      await exited;
    }
    expect((await t.api.post('/v1/domains', { name: 'locked.test' })).status).toBe(201);
  });

  it('waits for a lock held a moment without holding up the event loop, then writes', async () => {
    await using t = await startTestApp();
    const file = t.databaseUrl.replace(/^sqlite:/, '');
    const holder = fork(SECOND_WRITER_LOCK, [file, '1500'], { execArgv: ['--import', 'tsx'], stdio: 'ignore' });
    const exited = new Promise((r) => holder.once('exit', r));
    await new Promise<void>((resolve, reject) => {
      holder.once('message', () => resolve());
      holder.once('exit', (code) => reject(new Error(`the lock holder exited (${code}) before it held the lock`)));
    });
    // The server runs in this process: a wait inside SQLite would stop this timer too.
    let longestGap = 0;
    let last = performance.now();
    const ticks = setInterval(() => {
      const now = performance.now();
      longestGap = Math.max(longestGap, now - last);
      last = now;
    }, 10);
    try {
      const started = performance.now();
      const created = await t.api.post('/v1/domains', { name: 'waited.test' });
      expect(created.status).toBe(201);
      expect(performance.now() - started).toBeGreaterThan(1_000);
    } finally {
      clearInterval(ticks);
      await exited;
    }
    expect(longestGap).toBeLessThan(500);
  });
});
