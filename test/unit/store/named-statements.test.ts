import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, onPostgres, type TestDatabase } from '../../helpers/database.js';
import { openStore, runSql, type Store } from '../../../src/store/db.js';
import { MAX_NAMED_TEXT, NAMED_TEXT_BUDGET, namedTextChars, nameStatement } from '../../../src/store/postgres.js';
import { startPgBouncer } from '../../helpers/pgbouncer.js';

// The fixed texts of runSql run on PostgreSQL as named statements: parsed
// once per connection, and prepared afresh when a schema change makes them
// stale. The store has one connection, so its prepared statements are
// the ones pg_prepared_statements lists.

describe.runIf(onPostgres)('named statements on PostgreSQL', () => {
  let database: TestDatabase;
  let store: Store;
  /** Another node on the same database: its schema changes are the ones a migration makes. */
  let other: Store;

  beforeEach(async () => {
    database = await createTestDatabase();
    store = openStore(database.url, { poolSize: 1 });
    other = openStore(database.url, { poolSize: 1 });
    await sql`CREATE TABLE probe (id text PRIMARY KEY, a integer)`.execute(other.db);
    await sql`INSERT INTO probe VALUES ('x', 1), ('y', 2)`.execute(other.db);
  });
  afterEach(async () => {
    await store.close();
    await other.close();
    await database.drop();
  });

  const prepared = async () => (await sql<{ name: string; statement: string }>`SELECT name, statement FROM pg_prepared_statements`.execute(store.db)).rows;

  it('prepares a fixed text once on a connection and runs it by its name after', async () => {
    const text = 'SELECT a FROM probe WHERE id = $1';
    expect((await runSql(store.db, text, ['x'])).rows).toEqual([{ a: 1 }]);
    expect((await runSql(store.db, text, ['y'])).rows).toEqual([{ a: 2 }]);
    expect(await store.write((tx) => runSql(tx, text, ['x']))).toMatchObject({ rows: [{ a: 1 }] });
    const named = (await prepared()).filter((p) => p.statement === text);
    expect(named).toHaveLength(1);
    expect(named[0].name).toMatch(/^mr_/);
  });

  it('leaves the queries of Kysely\'s builder unnamed', async () => {
    expect(await store.db.selectFrom('probe' as never).select('a' as never).where('id' as never, '=', 'x' as never).execute()).toEqual([{ a: 1 }]);
    expect(await prepared()).toEqual([]);
  });

  it('runs a text again under a new name once another node\'s migration changes its result columns, outside a write unit and in one', async () => {
    const text = 'SELECT * FROM probe WHERE id = $1';
    for (let i = 0; i < 3; i++) expect((await runSql(store.db, text, ['x'])).rows).toEqual([{ id: 'x', a: 1 }]);

    await sql`ALTER TABLE probe ADD COLUMN b integer DEFAULT 7`.execute(other.db);
    expect((await runSql(store.db, text, ['x'])).rows).toEqual([{ id: 'x', a: 1, b: 7 }]);

    await sql`ALTER TABLE probe ADD COLUMN c integer DEFAULT 8`.execute(other.db);
    let runs = 0;
    const rows = await store.write(async (tx) => {
      runs++;
      await runSql(tx, 'UPDATE probe SET a = a + 1 WHERE id = $1', ['y']);
      return (await runSql(tx, text, ['x'])).rows;
    });
    expect(rows).toEqual([{ id: 'x', a: 1, b: 7, c: 8 }]);
    // The unit ran twice; the first run's update was rolled back with it.
    expect(runs).toBe(2);
    expect((await runSql(store.db, 'SELECT a FROM probe WHERE id = $1', ['y'])).rows).toEqual([{ a: 3 }]);
    // The stale statements stay on the connection under their old names until it closes.
    expect((await prepared()).filter((p) => p.statement === text)).toHaveLength(3);
  });

  it('still fails a statement that fails for any other reason, without running it again', async () => {
    let runs = 0;
    await expect(store.write(async (tx) => {
      runs++;
      await runSql(tx, 'INSERT INTO probe (id, a) VALUES ($1, $2)', ['x', 5]);
    })).rejects.toMatchObject({ code: '23505' });
    expect(runs).toBe(1);
  });

  it('leaves a text longer than a named one may be unnamed', async () => {
    const text = `SELECT a FROM probe WHERE id = $1${' '.repeat(MAX_NAMED_TEXT)}`;
    expect((await runSql(store.db, text, ['x'])).rows).toEqual([{ a: 1 }]);
    expect((await prepared()).filter((p) => p.statement === text)).toEqual([]);
  });

  it('runs every text unnamed when prepared statements are turned off', async () => {
    const unnamed = openStore(database.url, { poolSize: 1, preparedStatements: false });
    try {
      const text = 'SELECT a FROM probe WHERE id = $1 AND $2::int IS NOT NULL';
      for (let i = 0; i < 6; i++) expect((await runSql(unnamed.db, text, ['x', i])).rows).toEqual([{ a: 1 }]);
      expect(await unnamed.write((tx) => runSql(tx, text, ['y', 0]))).toMatchObject({ rows: [{ a: 2 }] });
      expect((await sql`SELECT name FROM pg_prepared_statements`.execute(unnamed.db)).rows).toEqual([]);
    } finally {
      await unnamed.close();
    }
  });

  describe('behind PgBouncer 1.18 in transaction mode, one server connection for two clients', () => {
    // Each client prepares a name on the one server connection, which the other
    // then finds there already (42P05): the text is renamed and its work runs
    // again, until after a few renames it runs unnamed.
    async function alternate(options: { preparedStatements?: boolean }, text: string) {
      const bouncer = await startPgBouncer(database.url, 1);
      const clients = [openStore(bouncer.url, { poolSize: 1, ...options }), openStore(bouncer.url, { poolSize: 1, ...options })];
      try {
        const onServer = async () => (await sql<{ name: string; statement: string }>`SELECT name, statement FROM pg_prepared_statements`
          .execute(clients[0].db)).rows.filter((p) => p.statement === text).length;
        for (let i = 0; i < 12; i++) {
          const client = clients[i % 2];
          expect((await runSql(client.db, text, ['x', i])).rows).toEqual([{ a: 1 + i }]);
          await client.write((tx) => runSql(tx, 'UPDATE probe SET a = a + 1 WHERE id = $1', ['x']));
        }
        const names = await onServer();
        for (let i = 0; i < 4; i++) await runSql(clients[i % 2].db, text, ['x', 12 + i]);
        return { names, namesAfter: await onServer() };
      } finally {
        for (const client of clients) await client.close();
        await bouncer.stop();
      }
    }

    it('recovers from the names it finds taken, then runs the text unnamed', async () => {
      const { names, namesAfter } = await alternate({}, 'SELECT a FROM probe WHERE id = $1 AND a >= $2');
      expect(names).toBeGreaterThan(1);
      expect(namesAfter).toBe(names);
    });

    it('names nothing with prepared statements turned off', async () => {
      const { names, namesAfter } = await alternate({ preparedStatements: false }, 'SELECT a FROM probe WHERE id = $1 AND a >= $2 + 0');
      expect([names, namesAfter]).toEqual([0, 0]);
    });
  });

  // Last: it spends the budget of this file's process.
  it('names texts up to a budget of characters; the others run unnamed', async () => {
    const early = 'SELECT a FROM probe WHERE id = $1 AND a > $2';
    expect((await runSql(store.db, early, ['y', 0])).rows).toEqual([{ a: 2 }]);
    // The rest of the budget, to its last character, goes to texts of the longest kind named.
    for (let i = 0; namedTextChars() < NAMED_TEXT_BUDGET; i++) {
      nameStatement(String.fromCharCode(0x4e00 + i).padEnd(Math.min(NAMED_TEXT_BUDGET - namedTextChars(), MAX_NAMED_TEXT)));
    }
    const late = 'SELECT a FROM probe WHERE id = $1 AND a >= $2';
    expect((await runSql(store.db, late, ['y', 0])).rows).toEqual([{ a: 2 }]);
    expect((await runSql(store.db, early, ['x', 0])).rows).toEqual([{ a: 1 }]);
    expect((await prepared()).filter((p) => p.statement === early || p.statement === late).map((p) => p.statement)).toEqual([early]);
  });
});
