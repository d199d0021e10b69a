import { PostgresAdapter, sql, type CreateTableBuilder, type Kysely } from 'kysely';

// Column shapes shared by migrations, written once so SQLite and PostgreSQL get
// the right type for each from the same migration code.

export function isPostgres(db: Kysely<unknown>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/** The monotonic position: rowid alias with AUTOINCREMENT (never reused) / identity on PostgreSQL. */
export function withPosition<T extends string>(db: Kysely<unknown>, table: CreateTableBuilder<T, never>): CreateTableBuilder<T, 'pos'> {
  return isPostgres(db)
    ? table.addColumn('pos', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    : table.addColumn('pos', 'integer', (c) => c.primaryKey().autoIncrement());
}

/** On SQLite, a table stored in its primary key's order (WITHOUT ROWID): range reads of it are sequential. */
export function clustered<T extends string, C extends string>(db: Kysely<unknown>, table: CreateTableBuilder<T, C>): CreateTableBuilder<T, C> {
  return isPostgres(db) ? table : table.modifyEnd(sql`without rowid`);
}

/**
 * PostgreSQL's counterpart of SQLite's FTS5 trigram tables: a pg_trgm GIN
 * index on each searched column, which serves LIKE '%needle%' (and ILIKE)
 * on the column itself, so the search needs no table of its own.
 */
export async function trigramIndexes(db: Kysely<unknown>, table: string, columns: readonly string[]): Promise<void> {
  await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`.execute(db);
  for (const column of columns) {
    await sql`CREATE INDEX ${sql.id(`${table}_${column}_trgm`)} ON ${sql.table(table)} USING gin (${sql.ref(column)} gin_trgm_ops)`.execute(db);
  }
}

/** Binary column: BLOB on SQLite, BYTEA on PostgreSQL. */
export function binaryType(db: Kysely<unknown>): 'blob' | 'bytea' {
  return isPostgres(db) ? 'bytea' : 'blob';
}

/**
 * A row trigger running `body` (statements the two databases share) for
 * each row `on` names ("AFTER INSERT ON table"), when `when` holds: a
 * trigger on SQLite, a plpgsql function and its trigger on PostgreSQL.
 */
export async function createRowTrigger(db: Kysely<unknown>, name: string, on: string, when: string, body: string[]): Promise<void> {
  if (!isPostgres(db)) {
    await sql.raw(`CREATE TRIGGER ${name} ${on} FOR EACH ROW WHEN ${when} BEGIN ${body.map((s) => `${s};`).join(' ')} END`).execute(db);
    return;
  }
  await sql.raw(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN ${body.map((s) => `${s};`).join(' ')} RETURN NULL; END $$`).execute(db);
  await sql.raw(`CREATE TRIGGER ${name} ${on} FOR EACH ROW WHEN (${when}) EXECUTE FUNCTION ${name}()`).execute(db);
}

/** Drops what createRowTrigger made; `on` as it was given there. */
export async function dropRowTrigger(db: Kysely<unknown>, name: string, on: string): Promise<void> {
  if (!isPostgres(db)) {
    await sql.raw(`DROP TRIGGER ${name}`).execute(db);
    return;
  }
  await sql.raw(`DROP TRIGGER ${name} ON ${/ON (\w+)$/.exec(on)![1]}`).execute(db);
  await sql.raw(`DROP FUNCTION ${name}()`).execute(db);
}
