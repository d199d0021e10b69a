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

/** Binary column: BLOB on SQLite, BYTEA on PostgreSQL. */
export function binaryType(db: Kysely<unknown>): 'blob' | 'bytea' {
  return isPostgres(db) ? 'bytea' : 'blob';
}
