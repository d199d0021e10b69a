import Sqlite from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Kysely, Migrator, SqliteDialect, sql, type Transaction } from 'kysely';
import type { Database } from './tables.js';
import { migrations } from './migrations/index.js';

export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;

export interface Store {
  /** For reads, and for writes that must not wait for a group commit. */
  db: Db;
  /**
   * Runs `work` in a transaction that may be shared with other concurrent
   * writes, and resolves only after that transaction has committed (fsync'd).
   * Each unit runs in its own savepoint, so one unit's failure rolls back only
   * its own changes. `work` must not do network I/O: the connection is shared.
   */
  write<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  migrate(): Promise<string[]>;
  close(): Promise<void>;
}

interface Pending {
  work: (tx: Tx) => Promise<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

// Kysely prepares every query it runs; preparing is a large share of a cheap
// query's cost, and the set of distinct SQL texts an app issues is small.
const STATEMENT_CACHE_SIZE = 500;

function withStatementCache(conn: Sqlite.Database) {
  const cache = new Map<string, Sqlite.Statement>();
  return {
    close: () => conn.close(),
    prepare(text: string) {
      let stmt = cache.get(text);
      if (!stmt) {
        stmt = conn.prepare(text);
        // Evict the oldest entry; Map keeps insertion order.
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
        cache.set(text, stmt);
      }
      return stmt;
    },
  };
}

// Upper bound on units per commit, so one huge burst cannot hold the
// connection long enough to starve reads.
const MAX_UNITS_PER_COMMIT = 256;

export function openStore(databaseUrl: string): Store {
  const file = databaseUrl.replace(/^sqlite:/, '');
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const conn = new Sqlite(file);
  // WAL + synchronous=FULL: a commit is on disk before we answer 2xx. Group
  // commit below keeps that affordable under concurrency.
  conn.pragma('journal_mode = WAL');
  conn.pragma('synchronous = FULL');
  conn.pragma('foreign_keys = ON');
  conn.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(conn) }) });

  let queue: Pending[] = [];
  let flushing = false;

  async function runUnit(tx: Tx, unit: Pending, shared: boolean): Promise<() => void> {
    if (!shared) {
      try {
        const value = await unit.work(tx);
        return () => unit.resolve(value);
      } catch (err) {
        throw Object.assign(new Error('unit failed'), { unitError: err });
      }
    }
    await sql`savepoint unit`.execute(tx);
    try {
      const value = await unit.work(tx);
      await sql`release savepoint unit`.execute(tx);
      return () => unit.resolve(value);
    } catch (err) {
      await sql`rollback to savepoint unit`.execute(tx);
      await sql`release savepoint unit`.execute(tx);
      return () => unit.reject(err);
    }
  }

  async function flush(): Promise<void> {
    if (flushing) return;
    flushing = true;
    try {
      while (queue.length > 0) {
        const batch = queue.slice(0, MAX_UNITS_PER_COMMIT);
        queue = queue.slice(batch.length);
        const settle: Array<() => void> = [];
        try {
          await db.transaction().execute(async (tx) => {
            for (const unit of batch) settle.push(await runUnit(tx, unit, batch.length > 1));
          });
          for (const s of settle) s();
        } catch (err) {
          // A lone unit's own error, or a failed commit: nothing of the batch is durable.
          const unitError = (err as { unitError?: unknown }).unitError;
          for (const unit of batch) unit.reject(unitError ?? err);
        }
      }
    } finally {
      flushing = false;
    }
  }

  return {
    db,
    write<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ work, resolve: resolve as (v: unknown) => void, reject });
        // setImmediate lets every request that arrived in this turn of the
        // event loop join the same commit.
        if (queue.length === 1) setImmediate(() => void flush());
      });
    },
    async migrate() {
      const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
      const { error, results } = await migrator.migrateToLatest();
      if (error) throw error;
      return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
    },
    async close() {
      while (queue.length > 0 || flushing) await new Promise((r) => setImmediate(r));
      await db.destroy();
    },
  };
}
