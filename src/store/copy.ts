import Sqlite from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { sql, type Kysely } from 'kysely';
import type { Store, Tx } from './db.js';
import { isPostgres } from './schema-helpers.js';
import { fillPostgresEmailsSearch } from '../emails/index.js';
import { fillPostgresEventsSearch, sideIndexWatermark } from '../events/index.js';

// `mailroom store copy --to postgres://…`: moves a SQLite store into an empty
// PostgreSQL database, every table with its ids and positions as they are,
// so cursors, tracking links and unsubscribe links keep working. The target
// is migrated first and must hold no workspace yet; the rows go in one
// transaction, parents before children; the identity sequences then start
// after the copied positions, and every table's row count is checked against
// the source's. SQLite's search indexes are not copied; the search text of
// the emails, and of the events the source had indexed, goes into
// PostgreSQL's emails_search and events_search from the copied rows.

export class StoreCopyError extends Error {}

export interface CopiedTable {
  name: string;
  rows: number;
}

/** Tables that are the migrator's own, or SQLite's search indexes and their shadow tables. */
const NOT_COPIED = /^(kysely_migration|kysely_migration_lock|sqlite_.*|.*_search(_.*)?)$/;
/** PostgreSQL takes at most 65,535 parameters a statement. */
const MAX_PARAMETERS = 60_000;

export async function copySqliteToPostgres(sqliteFile: string, target: Store, log: (line: string) => void = () => undefined): Promise<CopiedTable[]> {
  const db = target.db as unknown as Kysely<Record<string, Record<string, unknown>>>;
  if (!isPostgres(db as unknown as Kysely<unknown>)) throw new StoreCopyError('the target of a copy must be a postgres:// database');
  if (!existsSync(sqliteFile)) throw new StoreCopyError(`there is no SQLite store at ${sqliteFile}`);
  const source = new Sqlite(sqliteFile, { readonly: true, fileMustExist: true });
  // One read transaction: every table is read as of one moment, even if a server still writes.
  source.prepare('BEGIN').run();
  try {
    await target.migrate();
    const applied = (rows: Array<{ name: string }>) => rows.map((r) => r.name).sort().join(',');
    const sourceMigrations = applied(source.prepare('SELECT name FROM kysely_migration').all() as Array<{ name: string }>);
    const { rows: targetMigrations } = await sql<{ name: string }>`SELECT name FROM kysely_migration`.execute(db);
    if (sourceMigrations !== applied(targetMigrations)) {
      throw new StoreCopyError('the SQLite store is not at the latest migration: run `mailroom migrate` on it first');
    }
    // Every row of a store in use hangs off a workspace; a target without one holds only what its migrations wrote.
    const { rows: [workspaces] } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM workspaces`.execute(db);
    if (workspaces.n > 0) throw new StoreCopyError(`the target database is not empty: it holds ${workspaces.n === 1 ? 'a workspace' : `${workspaces.n} workspaces`}`);
    const sourceTables = new Set((source.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all() as Array<{ name: string }>).map((t) => t.name));
    const tables = (await copyOrder(db)).filter((t) => sourceTables.has(t));

    const copied: CopiedTable[] = [];
    await db.transaction().execute(async (tx) => {
      // The rows go in as they are: the counters triggers keep (broadcast_stats) are copied, not counted again.
      for (const table of tables) await sql`ALTER TABLE ${sql.table(table)} DISABLE TRIGGER USER`.execute(tx);
      // What the migrations wrote (the followers' first positions, say) gives way to the source's rows.
      for (const table of [...tables].reverse()) await sql`DELETE FROM ${sql.table(table)}`.execute(tx);
      for (const table of tables) {
        const columns = await columnsOf(tx, table);
        const identity = columns.filter((c) => c.identity).map((c) => c.name);
        const names = columns.map((c) => c.name);
        const batchRows = Math.max(1, Math.floor(MAX_PARAMETERS / names.length));
        const select = source.prepare(`SELECT ${names.map((n) => `"${n}"`).join(', ')} FROM "${table}"`);
        let count = 0;
        let batch: unknown[][] = [];
        const flush = async () => {
          if (batch.length === 0) return;
          const values = sql.join(batch.map((row) => sql`(${sql.join(row)})`));
          await sql`INSERT INTO ${sql.table(table)} (${sql.join(names.map((n) => sql.ref(n)))})
            ${identity.length > 0 ? sql`OVERRIDING SYSTEM VALUE` : sql``} VALUES ${values}`.execute(tx);
          count += batch.length;
          batch = [];
        };
        for (const row of select.raw().iterate() as Iterable<unknown[]>) {
          batch.push(row);
          if (batch.length >= batchRows) await flush();
        }
        await flush();
        for (const column of identity) {
          // The next position after the copied ones, so the new rows sort after them.
          await sql`SELECT setval(pg_get_serial_sequence(${table}, ${column}),
            (SELECT coalesce(max(${sql.ref(column)}), 0) + 1 FROM ${sql.table(table)}), false)`.execute(tx);
        }
        copied.push({ name: table, rows: count });
        log(`${table}: ${count} rows`);
      }
      for (const table of tables) await sql`ALTER TABLE ${sql.table(table)} ENABLE TRIGGER USER`.execute(tx);
      const typed = tx as unknown as Tx;
      await fillPostgresEmailsSearch(typed);
      // The events the source had indexed (the other side indexes, event_tags and event_hours, are copied as they are).
      await fillPostgresEventsSearch(typed, 0, await sideIndexWatermark(typed));
    });

    // Counted in a transaction, which the target's store runs without the database's statement_timeout.
    await db.transaction().execute(async (tx) => {
      for (const { name, rows } of copied) {
        const inSource = (source.prepare(`SELECT count(*) AS n FROM "${name}"`).get() as { n: number }).n;
        const { rows: [inTarget] } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(name)}`.execute(tx);
        if (inSource !== rows || inTarget.n !== rows) {
          throw new StoreCopyError(`${name}: ${inSource} rows in the SQLite store, ${inTarget.n} in the target after the copy`);
        }
      }
    });
    return copied;
  } finally {
    source.prepare('COMMIT').run();
    source.close();
  }
}

/** The target's tables that hold data, each after the tables its foreign keys point to. */
async function copyOrder(db: Kysely<Record<string, Record<string, unknown>>>): Promise<string[]> {
  const { rows: tables } = await sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables
    WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`.execute(db);
  const { rows: links } = await sql<{ child: string; parent: string }>`SELECT c.relname AS child, p.relname AS parent
    FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid
    WHERE k.contype = 'f' AND c.relnamespace = current_schema()::regnamespace`.execute(db);
  const names = tables.map((t) => t.name).filter((n) => !NOT_COPIED.test(n));
  const ordered: string[] = [];
  const placed = new Set<string>();
  const place = (name: string, path: Set<string>) => {
    if (placed.has(name) || path.has(name)) return;
    path.add(name);
    for (const l of links) if (l.child === name && l.parent !== name) place(l.parent, path);
    placed.add(name);
    ordered.push(name);
  };
  for (const name of names) place(name, new Set());
  return ordered.filter((n) => names.includes(n));
}

async function columnsOf(db: Kysely<Record<string, Record<string, unknown>>>, table: string): Promise<Array<{ name: string; identity: boolean }>> {
  const { rows } = await sql<{ name: string; identity: string }>`SELECT column_name AS name, is_identity AS identity
    FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ${table} ORDER BY ordinal_position`.execute(db);
  return rows.map((r) => ({ name: r.name, identity: r.identity === 'YES' }));
}
