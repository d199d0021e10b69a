import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { useTempStore } from '../../helpers/store.js';
import { createTestDatabase, onPostgres } from '../../helpers/database.js';
import { AppError } from '../../../src/core/errors.js';
import {
  checkPostgresVersion, insertRows, insertRowsPositioned, isStoreFull, openStore, paddedInList, runShaped, statementChunks, type Tx,
} from '../../../src/store/db.js';


const temp = useTempStore();
const ROOT = resolve(import.meta.dirname, '../../..');

const usage = async (ws: string) => (await temp.store.db.selectFrom('send_usage').select(['period', 'count'])
  .where('workspace_id', '=', ws).orderBy('period').execute()).map((r) => [r.period, Number(r.count)]);

const addUsage = (tx: Tx, ws: string, period: string, count: number) =>
  insertRows(tx, 'send_usage', [{ workspace_id: ws, period, count }]);

describe('group commit', () => {
  it('commits the other units of a shared transaction when one of them fails, and rolls back only that one', async () => {
    const txs: Tx[] = [];
    const results = await Promise.allSettled([
      temp.store.write(async (tx) => { txs.push(tx); await addUsage(tx, 'ws_a', 'p1', 1); return 'a'; }),
      temp.store.write(async (tx) => {
        txs.push(tx);
        await addUsage(tx, 'ws_b', 'p1', 1);
        throw new AppError('validation_error', 'refused');
      }),
      temp.store.write(async (tx) => { txs.push(tx); await addUsage(tx, 'ws_c', 'p1', 1); return 'c'; }),
    ]);
    // One transaction for the three units, each in its own savepoint (on
    // PostgreSQL, a transaction each: there is no group commit there).
    expect(new Set(txs).size).toBe(onPostgres ? 3 : 1);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(AppError);
    expect(await usage('ws_a')).toEqual([['p1', 1]]);
    expect(await usage('ws_b')).toEqual([]);
    expect(await usage('ws_c')).toEqual([['p1', 1]]);
  });

  // SQLite's page limit fails a write as a full disk does (SQLITE_FULL), and SQLite ends the transaction itself.
  it.skipIf(onPostgres)('fails every unit of a shared commit with the error when the store is full, and commits again once there is room', async () => {
    const { db } = temp.store;
    const { rows: [{ page_count: pages }] } = await sql<{ page_count: number }>`PRAGMA page_count`.execute(db);
    await sql.raw(`PRAGMA max_page_count = ${Number(pages)}`).execute(db);
    const results = await Promise.allSettled([
      temp.store.write(async (tx) => { await addUsage(tx, 'ws_a', 'p1', 1); return 'a'; }),
      temp.store.write(async (tx) => { await addUsage(tx, 'ws_b', 'x'.repeat(100_000), 1); return 'b'; }),
      temp.store.write(async (tx) => { await addUsage(tx, 'ws_c', 'p1', 1); return 'c'; }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    for (const r of results) expect(isStoreFull((r as PromiseRejectedResult).reason)).toBe(true);
    await sql`PRAGMA max_page_count = 1073741823`.execute(db);
    expect(await usage('ws_a')).toEqual([]);
    expect(await usage('ws_c')).toEqual([]);
    expect(await temp.store.write(async (tx) => { await addUsage(tx, 'ws_a', 'p2', 2); return 'ok'; })).toBe('ok');
    expect(await usage('ws_a')).toEqual([['p2', 2]]);
  });

  it('runs a lone unit without a savepoint and rejects it with its own error', async () => {
    await expect(temp.store.write(async (tx) => {
      await addUsage(tx, 'ws_a', 'p1', 1);
      throw new AppError('validation_error', 'refused');
    })).rejects.toThrow('refused');
    expect(await usage('ws_a')).toEqual([]);
    expect(await temp.store.write(async (tx) => { await addUsage(tx, 'ws_a', 'p2', 2); return 'ok'; })).toBe('ok');
    expect(await usage('ws_a')).toEqual([['p2', 2]]);
  });

  // On PostgreSQL each unit commits on its own, at once.
  it.skipIf(onPostgres)('lets a gathering unit share the commit of a unit written after it, and commits a lone one after its wait', async () => {
    const txs: Tx[] = [];
    const gathered = temp.store.write(async (tx) => { txs.push(tx); await addUsage(tx, 'ws_a', 'p1', 1); }, { gatherMs: 5_000 });
    const eager = temp.store.write(async (tx) => { txs.push(tx); await addUsage(tx, 'ws_b', 'p1', 1); });
    await Promise.all([gathered, eager]);
    expect(txs).toHaveLength(2);
    expect(txs[0]).toBe(txs[1]);

    const started = performance.now();
    await temp.store.write((tx) => addUsage(tx, 'ws_c', 'p1', 1), { gatherMs: 20 });
    expect(performance.now() - started).toBeGreaterThanOrEqual(15);
    expect(await usage('ws_c')).toEqual([['p1', 1]]);
  });
});

describe('durability', () => {
  it('resolves a write only once a sync of the WAL has followed its commit, one sync for many commits', async () => {
    const held: Array<() => void> = [];
    const path = join(temp.dir, 'held.sqlite');
    const heldStore = openStore(`sqlite:${path}`, { syncFile: (fd, done) => void held.push(() => done(null)) });
    await heldStore.migrate();
    let settled = 0;
    const writes = ['a', 'b', 'c'].map((ws) => heldStore.write((tx) => addUsage(tx, ws, 'p', 1)).then(() => settled++));
    for (let i = 0; i < 20 && held.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(held).toHaveLength(1);
    // Committed and readable, but not acknowledged until the sync is done.
    expect(Number((await heldStore.db.selectFrom('send_usage').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n)).toBe(3);
    expect(settled).toBe(0);
    held.shift()!();
    await Promise.all(writes);
    expect(settled).toBe(3);
    await heldStore.close();
  });

  it('commits the units that arrive while a sync runs together, once it is done', async () => {
    const held: Array<() => void> = [];
    const heldStore = openStore(`sqlite:${join(temp.dir, 'gathered.sqlite')}`, { syncFile: (fd, done) => void held.push(() => done(null)) });
    await heldStore.migrate();
    const count = async () => Number((await heldStore.db.selectFrom('send_usage').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    const waitForSync = async () => {
      for (let i = 0; i < 40 && held.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
      expect(held).toHaveLength(1);
    };
    const first = heldStore.write((tx) => addUsage(tx, 'ws_a', 'p', 1));
    await waitForSync();
    const txs = new Set<Tx>();
    const later = ['ws_b', 'ws_c', 'ws_d'].map((ws) => heldStore.write(async (tx) => { txs.add(tx); await addUsage(tx, ws, 'p', 1); }));
    await new Promise((r) => setTimeout(r, 20));
    // A unit that gathers, written after them, does not hold them back.
    later.push(heldStore.write(async (tx) => { txs.add(tx); await addUsage(tx, 'ws_e', 'p', 1); }, { gatherMs: 5_000 }));
    // Nothing commits while the first sync runs…
    expect(await count()).toBe(1);
    expect(txs.size).toBe(0);
    held.shift()!();
    await first;
    // …then the units that waited commit in one transaction, covered by the next sync.
    await waitForSync();
    expect(await count()).toBe(5);
    expect(txs.size).toBe(1);
    held.shift()!();
    await Promise.all(later);
    await heldStore.close();
  });

  it('rejects the writes a failed sync was to cover', async () => {
    const failing = openStore(`sqlite:${join(temp.dir, 'failing.sqlite')}`, {
      syncFile: (fd, done) => done(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })),
    });
    await failing.migrate();
    await expect(failing.write((tx) => addUsage(tx, 'ws_a', 'p', 1))).rejects.toThrow(/EIO/);
    await failing.close();
  });
});

describe('writes that need not wait for the disk', () => {
  it.runIf(onPostgres)('runs a unit again that PostgreSQL picked as a deadlock\'s victim, so both units commit', async () => {
    await temp.store.write(async (tx) => { await addUsage(tx, 'ws_d', 'p1', 1); await addUsage(tx, 'ws_d', 'p2', 1); });
    let runs = 0;
    let arrived = 0;
    let bothHoldOne!: () => void;
    const held = new Promise<void>((resolve) => (bothHoldOne = resolve));
    // Each takes one row, then, once the other holds its own, wants the other's: a deadlock.
    const unit = (first: string, second: string) => temp.store.write(async (tx) => {
      runs += 1;
      await sql`UPDATE send_usage SET count = count + 1 WHERE workspace_id = 'ws_d' AND period = ${first}`.execute(tx);
      if (++arrived === 2) bothHoldOne();
      await held;
      await sql`UPDATE send_usage SET count = count + 1 WHERE workspace_id = 'ws_d' AND period = ${second}`.execute(tx);
    });
    await Promise.all([unit('p1', 'p2'), unit('p2', 'p1')]);
    expect(runs).toBe(3);
    expect(await usage('ws_d')).toEqual([['p1', 3], ['p2', 3]]);
  });

  it.runIf(onPostgres)('commit on PostgreSQL without waiting for the WAL flush; every other write waits for it', async () => {
    // The test cluster runs without synchronous commits; this database is given them, as a real server has them.
    const database = await createTestDatabase();
    const setup = openStore(database.url);
    const name = (await sql<{ name: string }>`SELECT current_database() AS name`.execute(setup.db)).rows[0].name;
    await sql`ALTER DATABASE ${sql.id(name)} SET synchronous_commit = on`.execute(setup.db);
    await setup.close();
    const store = openStore(database.url);
    try {
      await store.migrate();
      const setting = async (tx: Tx) => (await sql<{ synchronous_commit: string }>`SHOW synchronous_commit`.execute(tx)).rows[0].synchronous_commit;
      expect(await store.write(async (tx) => { await addUsage(tx, 'ws_n', 'p', 1); return setting(tx); }, { durable: false })).toBe('off');
      // SET LOCAL ends with its transaction: the connection goes back to the pool as it was.
      expect(await Promise.all(Array.from({ length: 12 }, () => store.write(setting)))).toEqual(Array(12).fill('on'));
      expect((await store.db.selectFrom('send_usage').select('count').where('workspace_id', '=', 'ws_n').execute()).map((r) => Number(r.count))).toEqual([1]);
    } finally {
      await store.close();
      await database.drop();
    }
  });

  it.skipIf(onPostgres)('are written by SQLite as any other write: resolved after the sync of their commit', async () => {
    const held: Array<() => void> = [];
    const heldStore = openStore(`sqlite:${join(temp.dir, 'lossy.sqlite')}`, { syncFile: (fd, done) => void held.push(() => done(null)) });
    await heldStore.migrate();
    let settled = false;
    const write = heldStore.write((tx) => addUsage(tx, 'ws_l', 'p', 1), { durable: false }).then(() => { settled = true; });
    for (let i = 0; i < 20 && held.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(held).toHaveLength(1);
    expect(settled).toBe(false);
    held.shift()!();
    await write;
    expect(settled).toBe(true);
    await heldStore.close();
  });
});

describe('shaped queries', () => {
  it('reuses the compiled text of a shape with new parameters', async () => {
    for (const [ws, count] of [['ws_a', 1], ['ws_b', 2], ['ws_c', 3]] as const) {
      await temp.store.write((tx) => runShaped(tx, 'test usage upsert', [ws, 'p', count], (p) => tx.insertInto('send_usage')
        .values({ workspace_id: p[0] as string, period: p[1] as string, count: p[2] as number })));
    }
    const read = (ws: string) => runShaped(temp.store.db, 'test usage read', [ws], (p) => temp.store.db.selectFrom('send_usage')
      .select(['workspace_id', 'count']).where('workspace_id', '=', p[0] as string));
    expect((await read('ws_a')).rows).toEqual([{ workspace_id: 'ws_a', count: 1 }]);
    expect((await read('ws_c')).rows).toEqual([{ workspace_id: 'ws_c', count: 3 }]);
  });

  it('places each parameter by where it lands, even when a first call repeats a value', async () => {
    await temp.store.write(async (tx) => {
      await addUsage(tx, 'same', 'same', 1);
      await addUsage(tx, 'ws_x', 'p9', 9);
    });
    // Stated in the opposite order to the SQL's placeholders, first with two equal values.
    const read = (ws: string, period: string) => runShaped(temp.store.db, 'test repeated-value read', [period, ws], (p) => temp.store.db
      .selectFrom('send_usage').select('count').where('workspace_id', '=', p[1] as string).where('period', '=', p[0] as string));
    expect((await read('same', 'same')).rows).toEqual([{ count: 1 }]);
    expect((await read('ws_x', 'p9')).rows).toEqual([{ count: 9 }]);
  });

  it('never reuses a shape whose query binds a value it was not given as a parameter', async () => {
    await temp.store.write(async (tx) => {
      await addUsage(tx, 'ws_a', 'p1', 1);
      await addUsage(tx, 'ws_b', 'p2', 2);
    });
    // The period is captured rather than passed: caching would pin the first one.
    const read = (ws: string, period: string) => runShaped(temp.store.db, 'test captured read', [ws], (p) => temp.store.db
      .selectFrom('send_usage').select('count').where('workspace_id', '=', p[0] as string).where('period', '=', period));
    expect((await read('ws_a', 'p1')).rows).toEqual([{ count: 1 }]);
    expect((await read('ws_b', 'p2')).rows).toEqual([{ count: 2 }]);
  });

  it('inserts many rows per statement, whatever order each row names its columns in', async () => {
    await temp.store.write((tx) => insertRows(tx, 'send_usage', [
      { workspace_id: 'ws_a', period: 'p1', count: 1 },
      { workspace_id: 'ws_a', period: 'p2', count: 2 },
    ]));
    await temp.store.write((tx) => insertRows(tx, 'send_usage', [
      { workspace_id: 'ws_a', period: 'p3', count: 3 },
      { count: 4, period: 'p4', workspace_id: 'ws_a' },
    ]));
    await temp.store.write((tx) => insertRows(tx, 'send_usage', []));
    expect(await usage('ws_a')).toEqual([['p1', 1], ['p2', 2], ['p3', 3], ['p4', 4]]);
  });

  it('inserts rows of any count in one statement on PostgreSQL, in chunks of a few sizes on SQLite, each value as it was given', async () => {
    // Text that JSON escapes (quotes, backslashes, a surrogate's escape written out), non-ASCII, nulls, numbers past 2^32. On PostgreSQL
    // also a lone surrogate, which its JSON refuses as an escape: it arrives as U+FFFD, as it does in a text parameter.
    const texts = ['plain', 'a "quoted" \\ back\\slash', 'Grüße 日本 🎉', '\\ud800 written out', ...(onPostgres ? ['lone \ud800 surrogate'] : [])];
    const rows = texts.map((text, i) => ({
      id: `evt_json_${i}`, workspace_id: 'ws_json', email_id: i % 2 ? null : `em_${i}`, domain_id: null, type: 'email.sent' as const,
      recipient: text, from_address: null, subject: text, data: JSON.stringify({ text }), created_at: 1_790_000_000_000 + i,
    }));
    let statements = 0;
    await temp.store.write(async (tx) => {
      const counted = tx.executeQuery.bind(tx);
      tx.executeQuery = ((query: Parameters<typeof counted>[0]) => { statements++; return counted(query); }) as typeof tx.executeQuery;
      await insertRows(tx, 'events', rows);
    });
    const stored = await temp.store.db.selectFrom('events').select(['id', 'email_id', 'recipient', 'subject', 'data', 'created_at'])
      .where('workspace_id', '=', 'ws_json').orderBy('id').execute();
    const given = (text: string) => text.replace('\ud800', '\ufffd');
    expect(stored.map((r) => ({ ...r, created_at: Number(r.created_at) }))).toEqual(rows.map((r) => ({
      id: r.id, email_id: r.email_id, recipient: given(r.recipient), subject: given(r.subject), data: r.data,
      created_at: r.created_at,
    })));
    // SQLite: chunks of 4 and 1 (or 4), straight on the unit's statements, not through the executor. PostgreSQL: one.
    expect(statements).toBe(onPostgres ? 1 : 0);
  });

  it('inserts rows holding bytes, which JSON cannot carry, as they are', async () => {
    const raw = Buffer.from([0, 1, 2, 0xff, 0x80, 13, 10]);
    await temp.store.write((tx) => insertRows(tx, 'inbound_sources', [{ id: 'in_bytes_1', raw }, { id: 'in_bytes_2', raw: Buffer.alloc(0) }]));
    const stored = await temp.store.db.selectFrom('inbound_sources').select(['id', 'raw']).where('id', 'like', 'in_bytes_%').orderBy('id').execute();
    expect(stored.map((r) => [r.id, Buffer.from(r.raw).toString('hex')])).toEqual([['in_bytes_1', raw.toString('hex')], ['in_bytes_2', '']]);
  });

  it('cuts rows into chunks of a few sizes, powers of two up to a bound, largest first', () => {
    const sizes = (n: number, max: number) => statementChunks(Array.from({ length: n }, (_, i) => i), max).map((c) => c.length);
    expect(sizes(100, 1000)).toEqual([64, 32, 4]);
    expect(sizes(25, 10)).toEqual([10, 10, 4, 1]);
    expect(sizes(0, 10)).toEqual([]);
    expect(statementChunks([1, 2, 3], 1000).flat()).toEqual([1, 2, 3]);
  });

  it('pads an IN list to a power of two, up to a bound, with its last value', () => {
    const sizes = (n: number, max?: number) => paddedInList(Array.from({ length: n }, (_, i) => i), max).length;
    expect([1, 2, 3, 5, 8, 9, 100].map((n) => sizes(n))).toEqual([1, 2, 4, 8, 8, 16, 128]);
    expect([sizes(300, 500), sizes(500, 500), sizes(600, 500)]).toEqual([500, 500, 600]);
    expect(paddedInList(['a', 'b', 'c'])).toEqual(['a', 'b', 'c', 'c']);
    expect(paddedInList([])).toEqual([]);
  });

  it('matches, changes and returns each row once through a padded IN list, inside a write unit and outside one', async () => {
    await temp.store.write((tx) => insertRows(tx, 'send_usage', ['p1', 'p2', 'p3', 'p4', 'p5'].map((period) => ({ workspace_id: 'ws_in', period, count: 1 }))));
    const periods = paddedInList(['p1', 'p2', 'p4']);
    const shape = `test usage in x${periods.length}`;
    const read = (db: Tx | typeof temp.store.db) => runShaped(db, `read ${shape}`, periods, (p) => db.selectFrom('send_usage')
      .select('period').where('workspace_id', '=', 'ws_in').where('period', 'in', p as string[]).orderBy('period'));
    const bump = (db: Tx | typeof temp.store.db) => runShaped(db, `bump ${shape}`, periods, (p) => db.updateTable('send_usage')
      .set((eb) => ({ count: eb('count', '+', 1) })).where('workspace_id', '=', 'ws_in').where('period', 'in', p as string[]));
    const bumpReturning = (tx: Tx) => runShaped(tx, `bump returning ${shape}`, periods, (p) => tx.updateTable('send_usage')
      .set((eb) => ({ count: eb('count', '+', 1) })).where('workspace_id', '=', 'ws_in').where('period', 'in', p as string[]).returning('period'));
    const remove = (tx: Tx) => runShaped(tx, `delete ${shape}`, periods, (p) => tx.deleteFrom('send_usage')
      .where('workspace_id', '=', 'ws_in').where('period', 'in', p as string[]));

    expect((await read(temp.store.db)).rows).toEqual([{ period: 'p1' }, { period: 'p2' }, { period: 'p4' }]);
    expect((await bump(temp.store.db)).numAffectedRows).toBe(3n);
    const inside = await temp.store.write(async (tx) => ({
      read: (await read(tx)).rows.length,
      bumped: (await bump(tx)).numAffectedRows,
      returned: (await bumpReturning(tx)).rows.map((r) => r.period).sort(),
    }));
    expect(inside).toEqual({ read: 3, bumped: 3n, returned: ['p1', 'p2', 'p4'] });
    expect(await usage('ws_in')).toEqual([['p1', 4], ['p2', 4], ['p3', 1], ['p4', 4], ['p5', 1]]);
    expect((await temp.store.write(remove)).numAffectedRows).toBe(3n);
    expect(await usage('ws_in')).toEqual([['p3', 1], ['p5', 1]]);
  });

  it.skipIf(onPostgres)('answers the position of each row it inserts, in the rows\' order, across statements and beside other units', async () => {
    // Ten parameters a row: 4,000 rows take two statements. The ids run against the order the rows are given.
    const events = Array.from({ length: 4_000 }, (_, i) => ({
      id: `evt_${String(9_999 - i).padStart(5, '0')}`, workspace_id: 'ws_pos', email_id: null, domain_id: null, type: 'contact.unsubscribed' as const,
      recipient: null, from_address: null, subject: null, data: '{}', created_at: i,
    }));
    const [positions] = await Promise.all([
      temp.store.write((tx) => insertRowsPositioned(tx, 'events', events.slice(0, 3_000))),
      // Units sharing the commit, each with rows of its own in the same table.
      temp.store.write((tx) => insertRowsPositioned(tx, 'events', events.slice(3_000, 3_500))),
      temp.store.write((tx) => insertRowsPositioned(tx, 'events', events.slice(3_500))),
    ]);
    const stored = new Map((await temp.store.db.selectFrom('events').select(['id', 'pos']).where('workspace_id', '=', 'ws_pos').execute())
      .map((r) => [r.id, Number(r.pos)]));
    expect(positions).toEqual(events.slice(0, 3_000).map((e) => stored.get(e.id)));
    expect(new Set(positions).size).toBe(3_000);
  });

  it('inserts more rows than one statement can bind', async () => {
    // Three parameters a row: 12,000 rows bind 36,000, past SQLite's 32,766.
    const rows = Array.from({ length: 12_000 }, (_, i) => ({ workspace_id: 'ws_many', period: `p${i}`, count: i }));
    await temp.store.write((tx) => insertRows(tx, 'send_usage', rows));
    const stored = await temp.store.db.selectFrom('send_usage').select((eb) => [eb.fn.countAll().as('n'), eb.fn.sum('count').as('total')])
      .where('workspace_id', '=', 'ws_many').executeTakeFirstOrThrow();
    expect([Number(stored.n), Number(stored.total)]).toEqual([12_000, (11_999 * 12_000) / 2]);
  });

  it('answers a shaped query inside a write unit as outside one: rows, changes and the unit\'s own uncommitted rows', async () => {
    const upsert = (tx: Tx, ws: string, count: number) => runShaped(tx, 'test usage add', [ws, 'p', count, count], (p) => tx.insertInto('send_usage')
      .values({ workspace_id: p[0] as string, period: p[1] as string, count: p[2] as number })
      .onConflict((oc) => oc.columns(['workspace_id', 'period']).doUpdateSet((eb) => ({ count: eb('send_usage.count', '+', p[3] as number) }))));
    const read = (db: Tx | typeof temp.store.db, ws: string) => runShaped(db, 'test usage of', [ws], (p) => db.selectFrom('send_usage')
      .select(['period', 'count']).where('workspace_id', '=', p[0] as string));
    const inside = await temp.store.write(async (tx) => {
      const first = await upsert(tx, 'ws_a', 2);
      const second = await upsert(tx, 'ws_a', 3);
      return { changes: [first.numAffectedRows, second.numAffectedRows], rows: (await read(tx, 'ws_a')).rows };
    });
    expect(inside).toEqual({ changes: [1n, 1n], rows: [{ period: 'p', count: 5 }] });
    expect((await read(temp.store.db, 'ws_a')).rows).toEqual([{ period: 'p', count: 5 }]);
  });
});

describe('reads outside a write unit', () => {
  const countOf = (ws: string) => runShaped(temp.store.db, 'test usage count of', [ws], (p) => temp.store.db.selectFrom('send_usage')
    .select('count').where('workspace_id', '=', p[0] as string));

  it('never see the changes of a unit under way, which may yet roll back', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => { release = r; });
    let inserted!: () => void;
    const didInsert = new Promise<void>((r) => { inserted = r; });
    const write = temp.store.write(async (tx) => {
      await addUsage(tx, 'ws_open', 'p', 1);
      inserted();
      await held;
      throw new Error('rolled back');
    });
    await didInsert;
    const read = countOf('ws_open');
    release();
    await expect(write).rejects.toThrow('rolled back');
    expect((await read).rows).toEqual([]);
  });
});

describe('a second process on the same SQLite file', () => {
  // The CLI beside a running server: its write unit reads, the server writes,
  // then it writes. Its transaction holds the write lock from its start, so
  // the server's write waits for its commit, and neither fails.
  it.skipIf(onPostgres)('writes after reading though the server writes in between', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailroom-second-writer-'));
    const file = join(dir, 'mailroom.db');
    const server = openStore(`sqlite:${file}`);
    try {
      await server.write(async (tx) => void await sql`CREATE TABLE probe (who text)`.execute(tx));
      const second = fork(join(ROOT, 'test/helpers/sqlite-second-writer.ts'), [file], { execArgv: ['--import', 'tsx'], stdio: 'ignore' });
      const outcome = new Promise<string>((resolve) => second.on('message', (m) => String(m) !== 'read' && resolve(String(m))));
      const ended = new Promise((resolve) => second.once('exit', resolve));
      await new Promise((resolve) => second.once('message', resolve));
      // The second process has read, and holds its transaction open.
      await server.write(async (tx) => void await sql`INSERT INTO probe (who) VALUES ('server')`.execute(tx));
      expect(await outcome).toBe('done');
      await ended;
      const { rows } = await sql<{ who: string }>`SELECT who FROM probe ORDER BY rowid`.execute(server.db);
      expect(rows.map((r) => r.who)).toEqual(['second', 'server']);
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});

describe('limits', () => {
  it('writes a whole-number LIMIT into the SQL, and reads the same rows with it', async () => {
    await temp.store.write(async (tx) => {
      for (const [period, count] of [['p1', 1], ['p2', 2], ['p3', 3]] as const) await addUsage(tx, 'ws_l', period, count);
    });
    const { db } = temp.store;
    const newest = (n: number) => db.selectFrom('send_usage').select('period').where('workspace_id', '=', 'ws_l')
      .orderBy('period', 'desc').limit(n);
    const compiled = newest(2).compile();
    expect(compiled.sql).toMatch(/ order by "period" desc limit 2$/);
    expect(compiled.parameters).toEqual(['ws_l']);
    expect(await newest(2).execute()).toEqual([{ period: 'p3' }, { period: 'p2' }]);
    expect(await newest(1).execute()).toEqual([{ period: 'p3' }]);
  });

  it('leaves a LIMIT that is not a whole number as a parameter', () => {
    const compiled = temp.store.db.selectFrom('send_usage').select('period').limit(2.5).compile();
    expect(compiled.sql).toMatch(/ limit (\?|\$1)$/);
    expect(compiled.parameters).toEqual([2.5]);
  });
});

describe('the PostgreSQL server', () => {
  it('is refused before a migration when it is older than 13, naming its version', () => {
    expect(() => checkPostgresVersion(120017, '12.17')).toThrow('Mailroom needs PostgreSQL 13 or later; this server is 12.17');
    expect(() => checkPostgresVersion(130000, '13.0')).not.toThrow();
    expect(() => checkPostgresVersion(150018, '15.18 (Debian 15.18-0+deb12u1)')).not.toThrow();
  });
});
