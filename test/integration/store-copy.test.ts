import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startTestApp } from '../helpers/app.js';
import { createTestDatabase, testDatabaseUrl } from '../helpers/database.js';
import { eventually } from '../helpers/smtp-app.js';

// Moving an install from SQLite to PostgreSQL: `mailroom store copy` takes
// every table across with its ids and positions, so the same keys, cursors
// and ids answer on the new database, and new rows sort after the old ones.

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SECRET = 'store-copy-test-secret-'.padEnd(48, 'y');

describe.skipIf(testDatabaseUrl === undefined)('mailroom store copy', () => {
  it('copies a SQLite store into an empty PostgreSQL database that then answers as the SQLite one did', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailroom-copy-'));
    const sqliteUrl = `sqlite:${join(dir, 'mailroom.db')}`;
    const target = await createTestDatabase();
    try {
      const before = await (async () => {
        await using t = await startTestApp({ env: { MAILROOM_DATABASE_URL: sqliteUrl, MAILROOM_SECRET: SECRET } });
        await t.seed.activeDomain('acme.test');
        const sent = await t.api.post('/v1/emails/batch', {
          emails: Array.from({ length: 30 }, (_, i) => ({ from: 'ann@acme.test', to: `r${i}@example.org`, subject: `Note ${i}`, text: 'Hello.' })),
        });
        expect(sent.status).toBe(200);
        expect((await t.api.post('/v1/contacts', { email: 'cleo@example.org', name: 'Cleo' })).status).toBe(201);
        const first = await t.api.get('/v1/emails?limit=10');
        const cursor = first.body.next_cursor as string;
        const second = await t.api.get(`/v1/emails?limit=10&starting_after=${cursor}`);
        // A broadcast to Cleo, delivered: its counters are copied as they are, not counted again by the target's triggers.
        const b = (await t.api.post('/v1/broadcasts', { name: 'Moved', from: 'ann@acme.test', subject: 'Hi', text: 'Hello' })).body;
        await t.api.post(`/v1/broadcasts/${b.id}/send`, {});
        const broadcast = await eventually(async () => {
          const got = (await t.api.get(`/v1/broadcasts/${b.id}`)).body;
          return got.status === 'sent' && got.stats.delivered === 1 ? got : undefined;
        }, 10_000, 'the broadcast delivered');
        const r7 = sent.body.data[7].id as string;
        // The events so far in the side indexes, as a running store has them a few seconds on.
        await t.mailroom.services.events.indexEvents();
        const r7Events = (await t.api.get('/v1/events?to=r7@example.org')).body.data.map((e: { id: string }) => e.id);
        expect(r7Events.length).toBeGreaterThan(0);
        return { r7Events, token: t.token, cursorPage: second.body.data.map((e: { id: string }) => e.id), cursor, broadcast, r7 };
      })();

      const cli = (args: string[]) => run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
        cwd: ROOT, timeout: 60_000,
        env: { ...process.env, MAILROOM_DATA_DIR: dir, MAILROOM_DATABASE_URL: sqliteUrl, MAILROOM_SECRET: SECRET, MAILROOM_LOG_LEVEL: 'silent' },
      });
      const { stdout } = await cli(['store', 'copy', '--to', target.url]);
      expect(stdout).toMatch(/^Copied \d+ tables, \d+ rows, into postgres:\/\/.*every table's count matches/m);
      expect(stdout).toMatch(/^ {2}emails: 31 rows$/m);
      expect(stdout).toMatch(/^ {2}broadcast_stats: 1 rows$/m);
      expect(stdout).not.toContain(new URL(target.url).password);
      // A second copy into the same database is refused: it is no longer empty.
      await expect(cli(['store', 'copy', '--to', target.url])).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('the target database is not empty: it holds a workspace') });

      await using moved = await startTestApp({ env: { MAILROOM_DATABASE_URL: target.url, MAILROOM_SECRET: SECRET } });
      const api = moved.api.as(before.token);
      // The key made on SQLite signs in, and the cursor made there pages the same rows.
      const page = await api.get(`/v1/emails?limit=10&starting_after=${before.cursor}`);
      expect(page.status).toBe(200);
      expect(page.body.data.map((e: { id: string }) => e.id)).toEqual(before.cursorPage);
      // The copied emails are found by their text.
      expect((await api.get('/v1/emails?to=R7@example')).body.data.map((e: { id: string }) => e.id)).toEqual([before.r7]);
      expect((await api.get('/v1/emails?subject=note%201')).body.data).toHaveLength(11);
      // And their events, indexed on SQLite before the copy, by the address they are about.
      expect((await api.get('/v1/events?to=r7@example.org')).body.data.map((e: { id: string }) => e.id)).toEqual(before.r7Events);
      expect((await api.get('/v1/contacts?limit=10')).body.data.map((c: { email: string }) => c.email)).toEqual(['cleo@example.org']);
      expect((await api.get(`/v1/broadcasts/${before.broadcast.id}`)).body.stats).toEqual(before.broadcast.stats);
      // A new email sorts after every copied one.
      const fresh = await api.post('/v1/emails', { from: 'ann@acme.test', to: 'new@example.org', subject: 'After the move', text: 'x' });
      expect(fresh.status).toBe(201);
      expect((await api.get('/v1/emails?limit=1')).body.data[0].id).toBe(fresh.body.id);
    } finally {
      await target.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

// The README's backup of a PostgreSQL store, with PostgreSQL's own tools,
// taken while a node runs and restored into a new database.
describe.skipIf(testDatabaseUrl === undefined)('a PostgreSQL store backed up with pg_dump and pg_restore', () => {
  it('restores into a new database that answers as the old one did, under the same secret', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailroom-pgdump-'));
    const source = await createTestDatabase();
    const restored = await createTestDatabase();
    const dump = join(dir, 'mailroom.dump');
    try {
      const before = await (async () => {
        await using t = await startTestApp({ env: { MAILROOM_DATABASE_URL: source.url, MAILROOM_SECRET: SECRET } });
        await t.seed.activeDomain('acme.test');
        const sent = await t.api.post('/v1/emails', { from: 'ann@acme.test', to: 'r@example.org', subject: 'Before the backup', text: 'x' });
        expect(sent.status).toBe(201);
        // Dumped while the node runs: the dump is of one moment.
        await run('pg_dump', ['-Fc', '-f', dump, source.url], { timeout: 60_000 });
        return { token: t.token, id: sent.body.id as string };
      })();
      await run('pg_restore', ['--no-owner', '-d', restored.url, dump], { timeout: 60_000 });

      await using back = await startTestApp({ env: { MAILROOM_DATABASE_URL: restored.url, MAILROOM_SECRET: SECRET } });
      const api = back.api.as(before.token);
      expect((await api.get(`/v1/emails/${before.id}`)).body).toMatchObject({ id: before.id, subject: 'Before the backup' });
      expect((await api.get('/v1/emails?to=r@example')).body.data.map((e: { id: string }) => e.id)).toEqual([before.id]);
      const fresh = await api.post('/v1/emails', { from: 'ann@acme.test', to: 'new@example.org', subject: 'After the restore', text: 'x' });
      expect(fresh.status).toBe(201);
      expect((await api.get('/v1/emails?limit=1')).body.data[0].id).toBe(fresh.body.id);
    } finally {
      await source.drop();
      await restored.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
