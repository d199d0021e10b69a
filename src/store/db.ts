import Sqlite from 'better-sqlite3';
import { closeSync, existsSync, fdatasync, fstatSync, mkdirSync, openSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CompiledQuery, Kysely, LimitNode, Migrator, PostgresDialect, sql, SqliteDialect, SqliteDriver, ValueNode,
  type Compilable, type Driver, type SqliteDatabase, type Insertable, type KyselyPlugin, type QueryResult, type RawBuilder, type RootOperationNode, type Transaction,
} from 'kysely';
import type { Database } from './tables.js';
import { migrations } from './migrations/index.js';
import { isPostgres } from './schema-helpers.js';
import {
  DEFAULT_POSTGRES_TIMEOUTS, QUERY_TIMEOUT_MESSAGE, UnboundedDialect, isPostgresUrl, isUnusableStatement, nameStatement, postgresPool, type PostgresTimeouts,
} from './postgres.js';
import { walCheckpointer, type WalCheckpointer } from './wal-checkpointer.js';

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
   * With `gatherMs`, the unit may wait that long for others to share its
   * commit (each commit is an fsync): for background work that no one waits
   * on, never for a request. On PostgreSQL each unit is a transaction of its
   * own on a connection of the pool (its commit is durable when it returns),
   * and `gatherMs` has no effect.
   *
   * With `durable: false`, on PostgreSQL the commit does not wait for the WAL
   * to reach the disk (synchronous_commit off), and row locks are let go that
   * much sooner: for rows whose loss in a crash does no harm (an
   * idempotency key's claim, whose request commits after it). The WAL is written in
   * order, so the next durable commit makes it durable too. SQLite commits
   * such a unit as any other.
   */
  write<T>(work: (tx: Tx) => Promise<T>, options?: { gatherMs?: number; durable?: boolean }): Promise<T>;
  migrate(): Promise<string[]>;
  /** Commits an empty write unit: resolves once the store can take writes and make them durable. */
  checkWritable(): Promise<void>;
  /** Migrations this code has that the database has not run (another process's newer code, or an older database). */
  pendingMigrations(): Promise<string[]>;
  /**
   * The SQLite files on disk (database and WAL), and the database's free pages
   * (`free`), in bytes; undefined in memory and on PostgreSQL.
   */
  fileSizes(): { database: number; wal: number; free: number } | undefined;
  /**
   * Writes a consistent copy of the database to `file` while it is in use
   * (SQLite's online backup: pages are copied in steps between other work,
   * and the copy is of one moment). The file must not exist; it is made
   * readable by the owner only. On PostgreSQL it throws: pg_dump makes such
   * a copy there. A backup refused for what was asked throws BackupRefused.
   */
  backup(file: string): Promise<void>;
  close(): Promise<void>;
}

/** A backup that cannot be made as asked (a file that exists, a store that is not a SQLite file); the message says why. */
export class BackupRefused extends Error {}

interface Pending {
  work: (tx: Tx) => Promise<unknown>;
  /** Written without gatherMs: commits as soon as it can. */
  eager: boolean;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

// Kysely prepares every query it runs; preparing is a large share of a cheap
// query's cost, and the set of distinct SQL texts an app issues is small.
const STATEMENT_CACHE_SIZE = 500;

/** How long a write unit waits for the write lock that another process holds, before it fails with SQLITE_BUSY. */
const WRITE_LOCK_WAIT_MS = 5_000;
/** The pause between two tries for that lock: the event loop runs meanwhile. */
const WRITE_LOCK_RETRY_MS = 20;
/**
 * SQLite's own wait for a lock, inside a statement: it blocks the event loop,
 * so it is only a moment, for a lock about to be let go (the write lock is
 * waited for between tries, above).
 */
const BUSY_TIMEOUT_MS = 5;

/**
 * SQLite's dialect with transactions that take the write lock as they begin
 * (BEGIN IMMEDIATE). A server has one connection, so nothing changes for it;
 * a second process on the same file (the CLI beside a running server) waits
 * its turn for the lock. With a plain BEGIN it would read first and, should
 * the server commit meanwhile, fail at its first write. The wait is tries a
 * moment apart rather than SQLite's busy_timeout, which would hold the
 * event loop (every socket, every timer) for as long as the other process
 * held the lock.
 *
 * A rollback is skipped when SQLite has already ended the transaction
 * itself, as it may on a full disk or an I/O error: the error that ended it
 * is the one to report, not "cannot rollback - no transaction is active".
 */
class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly database: SqliteDatabase, private readonly conn: Sqlite.Database) {
    super({ database });
  }

  override createDriver(): Driver {
    const driver = new SqliteDriver({ database: this.database });
    driver.beginTransaction = async (connection) => {
      for (const deadline = Date.now() + WRITE_LOCK_WAIT_MS; ;) {
        try {
          await connection.executeQuery(CompiledQuery.raw('begin immediate'));
          return;
        } catch (err) {
          if ((err as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw err;
          await sleep(WRITE_LOCK_RETRY_MS);
        }
      }
    };
    driver.rollbackTransaction = async (connection) => {
      if (this.conn.inTransaction) await connection.executeQuery(CompiledQuery.raw('rollback'));
    };
    return driver;
  }
}

function withStatementCache(conn: Sqlite.Database) {
  const cache = new Map<string, Sqlite.Statement>();
  return {
    close: () => conn.close(),
    prepare(text: string) {
      let stmt = cache.get(text);
      if (stmt) {
        // Moved to the end, so the statements in use are the last evicted.
        cache.delete(text);
      } else {
        stmt = conn.prepare(text);
        // Evict the least recently used entry; Map keeps insertion order.
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      }
      cache.set(text, stmt);
      return stmt;
    },
  };
}

// SQLite plans a LIMIT bound as a parameter with the value bound at the
// time, so binding that parameter again expires the statement, and the next
// run prepares it anew: a simple paged SELECT costs three times what it
// would with the same number written into its text. Whole numbers in a
// LIMIT are therefore written into the SQL; the statement cache then keeps a
// statement per limit in use, which for a list is the few page sizes its
// clients ask for. The plugin sees the outermost query only: a subquery
// writes its limit with sql.lit.
const inlineLimits: KyselyPlugin = {
  transformQuery({ node }) {
    if (!('limit' in node) || !node.limit) return node;
    const value = node.limit.limit;
    if (!ValueNode.is(value) || value.immediate || !Number.isSafeInteger(value.value)) return node;
    return { ...node, limit: LimitNode.create(ValueNode.createImmediate(value.value)) } as RootOperationNode;
  },
  transformResult: async ({ result }) => result,
};

// Building and compiling a query with Kysely costs several times what running
// a cheap statement costs, and the hot statements of sending and delivery
// have few shapes. A shaped query is compiled once per shape from stand-in
// parameters; afterwards only the real parameters are bound to the SQL text.
// The stand-ins tell exactly where each parameter lands, whatever the values.
const MAX_SHAPES = 2000;

interface ShapePlan {
  sql: string;
  /** For each placeholder of `sql`, the index into the caller's params. */
  order: number[];
}

const shapes = new Map<string, ShapePlan | null>();
const STAND_IN = '\u0000mailroom-param-';

const standIns = (n: number) => Array.from({ length: n }, (_, i) => `${STAND_IN}${i}`);

/**
 * Runs the query `build(params)` describes, reusing the SQL text compiled for
 * `shape`. `build` must use only `params` for its values, or values the shape
 * itself names (a LIMIT, which is best written into the SQL): it is compiled
 * once with stand-ins, so the same shape must always yield the same SQL. A
 * shape whose compiled SQL binds anything else is never reused; a call with
 * an undefined parameter runs uncached, since Kysely may leave an undefined
 * value out of the SQL.
 */
export async function runShaped<R>(db: Db | Tx, shape: string, params: readonly unknown[],
  build: (params: readonly unknown[]) => Compilable<R>): Promise<QueryResult<R>> {
  const key = `${isPostgres(db as unknown as Kysely<unknown>) ? 'pg' : 'sqlite'}\n${shape}`;
  let plan = shapes.get(key);
  if (plan === undefined && shapes.size < MAX_SHAPES) {
    const compiled = build(standIns(params.length)).compile();
    const order = compiled.parameters.map((v) => typeof v === 'string' && v.startsWith(STAND_IN) ? Number(v.slice(STAND_IN.length)) : -1);
    plan = order.includes(-1) ? null : { sql: compiled.sql, order };
    shapes.set(key, plan);
  }
  if (!plan || params.includes(undefined)) return db.executeQuery(build(params).compile());
  return runSql<R>(db, plan.sql, plan.order.map((i) => params[i]));
}

/** A raw query as runShaped takes it, compiled for the connection it runs on. */
export const compiledOn = <R>(db: Db | Tx, query: RawBuilder<R>): Compilable<R> => ({ compile: () => query.compile(db) });

/**
 * Runs a fixed SQL text with its parameters: inside a store.write unit
 * straight on the statements of the unit's connection, elsewhere through
 * Kysely. On PostgreSQL the text runs as a named statement (see
 * nameStatement), so give it only texts of a bounded set.
 */
export async function runSql<R>(db: Db | Tx, text: string, params: unknown[]): Promise<QueryResult<R>> {
  const statement = unitTxs.get(db as Tx)?.statement;
  if (statement) return runStatement<R>(statement(text), params);
  if (!isPostgres(db as unknown as Kysely<unknown>)) return db.executeQuery<R>(CompiledQuery.raw(text, params));
  nameStatement(text);
  try {
    return await db.executeQuery<R>(CompiledQuery.raw(text, params));
  } catch (err) {
    // Outside a transaction nothing was done: the text runs again under its new name.
    if (db.isTransaction || !isUnusableStatement(err)) throw err;
    return db.executeQuery<R>(CompiledQuery.raw(text, params));
  }
}

/**
 * A status a query filters on, written into its text rather than bound: a
 * partial index of that status serves only the literal, and SQLite plans a
 * statement again at every run to see whether a bound value allows one.
 */
export const literalStatus = <S extends string>(status: S): RawBuilder<S> => sql.lit(status);

/**
 * Runs `batch` as one write unit after another until one handles fewer than
 * `size` rows (nothing is left) or `maxBatches` have run (the next call goes
 * on): the bounded work of a periodic task. Returns the rows handled.
 */
export async function writeInBatches(store: Pick<Store, 'write'>, o: { size: number; maxBatches: number },
  batch: (tx: Tx, size: number) => Promise<number>): Promise<number> {
  let total = 0;
  for (let i = 0; i < o.maxBatches; i++) {
    const n = await store.write((tx) => batch(tx, o.size));
    total += n;
    if (n < o.size) break;
  }
  return total;
}

/**
 * Runs `work` in a read transaction whose every statement sees the same
 * moment: a SQLite transaction does; on PostgreSQL, whose default isolation
 * gives each statement a newer snapshot, it is REPEATABLE READ.
 */
export function readAtOneMoment<T>(db: Db, work: (tx: Tx) => Promise<T>): Promise<T> {
  const begin = db.transaction();
  return (isPostgres(db as unknown as Kysely<unknown>) ? begin.setIsolationLevel('repeatable read') : begin).execute(work);
}

/**
 * Whether a write failed because the store has no room left: SQLite's disk
 * (or its max_page_count), PostgreSQL's disk_full. Nothing of the write was
 * kept, and it can succeed once room is made.
 */
export const isStoreFull = (err: unknown): boolean => ['SQLITE_FULL', '53100'].includes((err as { code?: string } | undefined)?.code ?? '');

/**
 * PostgreSQL's answers when the server cannot serve a session now: the
 * server stopping (57P01 admin_shutdown, as pg_ctl restart or a terminated
 * backend answers; 57P02 crash_shutdown), starting or in recovery (57P03),
 * or out of connections (53300); and a statement the server cancelled, by
 * its statement_timeout or an administrator (57014), or whose wait for a
 * lock passed lock_timeout (55P03): its transaction was rolled back, as when
 * the node gives up on a statement itself. Class 08 (connection exception,
 * which PgBouncer uses for its own refusals) is matched by prefix.
 */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '57014', '55P03']);
/** The socket's errors on the way to the database or its pooler. */
const UNAVAILABLE_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT']);
/**
 * What node-postgres throws with no code: a connection that closed under a
 * query or before its greeting, or a statement given to its client once it
 * had seen the close; a new connection past connectionTimeoutMillis; a wait
 * for a free client of the pool past it; a statement unanswered past
 * query_timeout.
 */
const UNAVAILABLE_PG_MESSAGES = new Set([
  'Connection terminated unexpectedly',
  'Client has encountered a connection error and is not queryable',
  'Connection terminated due to connection timeout',
  'timeout exceeded when trying to connect',
  QUERY_TIMEOUT_MESSAGE,
]);

/**
 * Whether a statement failed because the store cannot be reached or locked
 * right now: PostgreSQL (or the pooler before it) restarting, gone or out of
 * connections; SQLite's write lock held by another process past a write's
 * wait for it (SQLITE_BUSY and its extended codes). Nothing of a write unit
 * that failed so was kept, unless the connection dropped while its COMMIT
 * was on the way; it can succeed once the store is back.
 */
export function isStoreUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string') return UNAVAILABLE_PG_MESSAGES.has(err.message);
  return UNAVAILABLE_SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code) || UNAVAILABLE_SOCKET_CODES.has(code)
    || code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_');
}

/** Whether a write failed for a reason that passes by itself or with an operator's help (a full or an unreachable store): try it again later. */
export const isStoreRefusingWrites = (err: unknown): boolean => isStoreFull(err) || isStoreUnavailable(err);

/** The codes a unique index answers a clashing write with, on PostgreSQL and on SQLite. */
const UNIQUE_VIOLATIONS = new Set(['23505', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY']);

/**
 * Runs a write that checks a unique name is free before it takes it. On
 * PostgreSQL another node may commit the same name between the check and the
 * write, which the unique index then refuses: the write runs once more, and
 * its check now sees the other node's row and answers as it would have.
 */
export async function writeCheckingUnique<T>(store: Store, work: (tx: Tx) => Promise<T>): Promise<T> {
  try {
    return await store.write(work);
  } catch (err) {
    if (!UNIQUE_VIOLATIONS.has((err as { code?: string }).code ?? '')) throw err;
    return store.write(work);
  }
}

/** Whether `db` is the transaction of a store.write unit. */
export const inWriteUnit = (db: Db | Tx): boolean => unitTxs.has(db as Tx);

/** What a transaction of store.write carries beside Kysely's own. */
interface UnitTx {
  /**
   * The statements of the connection the transaction holds. A shaped query
   * of the transaction runs on them directly, as Kysely's SQLite driver would
   * run it, without the executor's turns of the event loop: the transaction
   * has the connection to itself until it ends. SQLite only.
   */
  statement?: (sql: string) => Sqlite.Statement;
}

const unitTxs = new WeakMap<Tx, UnitTx>();

function runStatement<R>(statement: Sqlite.Statement, params: unknown[]): QueryResult<R> {
  // As arguments rather than one array: better-sqlite3 reads an array's values one lookup at a time.
  if (statement.reader) return { rows: statement.all(...params) as R[] };
  const { changes, lastInsertRowid } = statement.run(...params);
  return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
}

/** SQLite binds at most 32,766 parameters per statement (PostgreSQL 65,535). */
const MAX_BOUND_PARAMS = 32_766;

/**
 * `rows` cut into chunks of `maxRows`, then of power-of-two sizes (largest
 * first): with a multi-row statement per chunk, rows of any count share
 * a few statement texts, which stay prepared and compiled (the sends that
 * share a commit are any number).
 */
export function statementChunks<T>(rows: T[], maxRows: number): T[][] {
  const chunks: T[][] = [];
  for (let start = 0; start < rows.length;) {
    const left = rows.length - start;
    const size = left >= maxRows ? Math.max(1, maxRows) : 2 ** Math.floor(Math.log2(left));
    chunks.push(rows.slice(start, start + size));
    start += size;
  }
  return chunks;
}

/**
 * The values of an IN list padded to a power of two (at most `max`) by
 * repeating the last one: IN reads a repeated value once, so the statement
 * matches, changes and returns the same rows, and lists of any length share
 * a few statement texts, which stay prepared. Empty stays empty.
 */
export function paddedInList<T>(values: readonly T[], max = Infinity): T[] {
  const padded = [...values];
  if (padded.length === 0) return padded;
  const size = Math.max(padded.length, Math.min(max, 2 ** Math.ceil(Math.log2(padded.length))));
  while (padded.length < size) padded.push(padded[padded.length - 1]);
  return padded;
}

/**
 * A multi-row INSERT of plain values. On SQLite, through runShaped: rows
 * that all name the same columns share a few compiled texts (see
 * statementChunks), and rows past the bound-parameter limit go in further
 * statements. On PostgreSQL, where each statement is a round trip, rows of
 * JSON's own values (text, numbers, booleans, null) go in one statement
 * whatever their count, as one JSON parameter read back into the table's
 * row type (json_populate_recordset): one prepared text per table and
 * columns.
 */
export async function insertRows<T extends keyof Database & string>(db: Db | Tx, table: T, rows: Array<Insertable<Database[T]>>): Promise<void> {
  const columns = rows.length > 0 && isPostgres(db as unknown as Kysely<unknown>) ? jsonRowColumns(rows as Array<Record<string, unknown>>) : undefined;
  if (!columns) {
    await insertChunks(db, table, rows);
    return;
  }
  await runSql(db, jsonRowsInsert(table, columns, '$1'), [jsonParam(rows as Array<Record<string, unknown>>)]);
}

/**
 * PostgreSQL: an INSERT of the rows in the JSON parameter `param` (jsonParam),
 * each read back into the table's row type, `columns` taken from it.
 */
export function jsonRowsInsert(table: string, columns: readonly string[], param: string): string {
  const names = columns.map((c) => `"${c}"`).join(', ');
  return `INSERT INTO "${table}" (${names}) SELECT ${names} FROM json_populate_recordset(NULL::"${table}", ${param}::json)`;
}

/** The columns rows all name, when every value is one JSON carries as it is; undefined otherwise (a Buffer, say). */
function jsonRowColumns(rows: Array<Record<string, unknown>>): string[] | undefined {
  const columns = Object.keys(rows[0]);
  for (const r of rows) {
    if (Object.keys(r).length !== columns.length) return undefined;
    for (const c of columns) {
      const v = r[c];
      if (v !== null && typeof v !== 'string' && typeof v !== 'boolean' && !(typeof v === 'number' && Number.isFinite(v))) return undefined;
    }
  }
  return columns;
}

/**
 * Rows as a JSON parameter. A lone surrogate, which JSON.stringify writes
 * as an escape that PostgreSQL's JSON refuses, becomes U+FFFD, as it does
 * in a text parameter (which the driver encodes as UTF-8).
 */
export function jsonParam(rows: Array<Record<string, unknown>>): string {
  const json = JSON.stringify(rows);
  if (!json.includes('\\ud')) return json;
  // Escapes read left to right, so an escaped backslash before "ud…" is not taken for one.
  return json.replace(/\\(\\|ud[89a-f][0-9a-f]{2})/g, (escape, what: string) => (what === '\\' ? escape : '\\ufffd'));
}

/**
 * insertRows into a table with a position (withPosition) on SQLite,
 * answering each row's position in the rows' order. Nothing is read back:
 * the rows of one multi-row INSERT take consecutive rowids in their order
 * (AUTOINCREMENT gives each the largest so far plus one), so the last rowid
 * of the statement tells them all. (PostgreSQL's inserts name positions in
 * the statement itself: see insertEmails.)
 */
export async function insertRowsPositioned<T extends keyof Database & string>(tx: Tx, table: T, rows: Array<Insertable<Database[T]>>): Promise<number[]> {
  if (isPostgres(tx as unknown as Kysely<unknown>)) throw new Error('insertRowsPositioned is for SQLite');
  const positions: number[] = [];
  for (const { result, rows: chunk } of await insertChunks(tx, table, rows)) {
    const last = Number(result.insertId);
    for (let i = 0; i < chunk.length; i++) positions.push(last - chunk.length + 1 + i);
  }
  return positions;
}

/** The multi-row INSERTs of insertRows, a chunk of the rows each, with what each answered. */
async function insertChunks<T extends keyof Database & string>(db: Db | Tx, table: T,
  rows: Array<Insertable<Database[T]>>): Promise<Array<{ rows: Array<Insertable<Database[T]>>; result: QueryResult<unknown> }>> {
  if (rows.length === 0) return [];
  const columns = Object.keys(rows[0]);
  // The rows are typed by the signature; Kysely's overloads cannot follow a generic table name.
  const insert = (values: unknown) => (db as Db).insertInto(table).values(values as never);
  if (!rows.every((r) => Object.keys(r).length === columns.length && columns.every((c) => c in r))) {
    return [{ rows, result: await db.executeQuery(insert(rows).compile()) }];
  }
  const done = [];
  for (const chunk of statementChunks(rows, Math.floor(MAX_BOUND_PARAMS / columns.length))) {
    const params: unknown[] = [];
    for (const r of chunk) for (const c of columns) params.push((r as Record<string, unknown>)[c]);
    const result = await runShaped(db, `insert ${table} (${columns.join(',')}) x${chunk.length}`, params,
      (p) => insert(chunk.map((_, i) => Object.fromEntries(columns.map((c, j) => [c, p[i * columns.length + j]])))));
    done.push({ rows: chunk, result });
  }
  return done;
}

// Upper bound on units per commit, so one huge burst cannot hold the
// connection long enough to starve reads.
const MAX_UNITS_PER_COMMIT = 256;

/** Past this many pages in the WAL, the store checkpoints between two commits (SQLite's own default mark). */
const WAL_CHECKPOINT_PAGES = 1000;
/** SQLite's own checkpoint, on the event loop, runs only if the store's checkpoints fail. */
const BACKSTOP_CHECKPOINT_PAGES = 10_000;
const WAL_HEADER_BYTES = 32;
const WAL_FRAME_HEADER_BYTES = 24;

type SyncFile = (fd: number, done: (err: NodeJS.ErrnoException | null) => void) => void;

/**
 * Makes WAL commits durable off the event loop. With synchronous=NORMAL,
 * SQLite writes a commit's frames to the WAL without an fsync (it still
 * syncs around checkpoints); an fdatasync of the WAL file on libuv's thread
 * pool then puts every commit written before it on disk, while the event
 * loop goes on taking requests. One sync covers all commits waiting for it;
 * `onIdle` is called when the last one ends.
 */
function walSyncer(walPath: string, syncFile: SyncFile, onIdle: () => void) {
  let fd: number | undefined;
  let waiting: Array<{ resolve(): void; reject(err: unknown): void }> = [];
  let busy = false;

  function start(): void {
    if (busy || waiting.length === 0) return;
    busy = true;
    const covered = waiting;
    waiting = [];
    const finish = (err: unknown) => {
      busy = false;
      for (const c of covered) if (err) c.reject(err); else c.resolve();
      start();
      if (!busy) onIdle();
    };
    try {
      fd ??= openSync(walPath, 'r');
      syncFile(fd, finish);
    } catch (err) {
      finish(err);
    }
  }

  const syncer = {
    /** Whether a sync is under way. */
    busy: () => busy,
    /** The WAL file's size in bytes. */
    walSize(): number {
      fd ??= openSync(walPath, 'r');
      return fstatSync(fd).size;
    },
    /** Resolves once everything committed before the call is on disk. */
    sync(): Promise<void> {
      return new Promise((resolve, reject) => {
        waiting.push({ resolve, reject });
        start();
      });
    },
    async close(): Promise<void> {
      // Syncs run one after another, so one more waits for those under way.
      if (busy || waiting.length > 0) await syncer.sync().catch(() => undefined);
      if (fd !== undefined) closeSync(fd);
    },
  };
  return syncer;
}

export interface StoreOptions {
  /** How the WAL file is synced (default fdatasync); tests hold it to see writes wait for it. */
  syncFile?: SyncFile;
  /** What checkpoints the WAL (default a thread of its own); tests hold it or make it fail. */
  checkpointer?: (file: string) => WalCheckpointer;
  /** The most connections a store on PostgreSQL opens (default 10). */
  poolSize?: number;
  /** Whether a store on PostgreSQL runs its fixed texts as named prepared statements (default true). */
  preparedStatements?: boolean;
  /** How long a store on PostgreSQL waits for a server that does not answer (default DEFAULT_POSTGRES_TIMEOUTS; queryMs 0: no limit). */
  postgresTimeouts?: Partial<PostgresTimeouts>;
}

/** A store on the database the URL names: `sqlite:PATH` (or `sqlite::memory:`), or `postgres://…`. */
export function openStore(databaseUrl: string, options: StoreOptions = {}): Store {
  return isPostgresUrl(databaseUrl)
    ? openPostgresStore(databaseUrl, {
      poolSize: options.poolSize ?? 10,
      preparedStatements: options.preparedStatements ?? true,
      timeouts: { ...DEFAULT_POSTGRES_TIMEOUTS, ...options.postgresTimeouts },
    })
    : openSqliteStore(databaseUrl, options);
}

function migratorOf(db: Db): Migrator {
  return new Migrator({ db, provider: { getMigrations: async () => migrations } });
}

async function pendingMigrationsOf(db: Db): Promise<string[]> {
  return (await migratorOf(db).getMigrations()).filter((m) => m.executedAt === undefined).map((m) => m.name);
}

/** A database migrated by a newer Mailroom than this one: running on it could misread what that version wrote. */
export class NewerStoreError extends Error {}

/** Migrations the database has run that this version does not have: a newer Mailroom ran them. */
export async function migrationsFromNewerVersion(db: Db): Promise<string[]> {
  // A new database has no table of migrations yet: nothing newer in it.
  const { rows } = await sql<{ name: string }>`SELECT name FROM kysely_migration`.execute(db).catch(() => ({ rows: [] as Array<{ name: string }> }));
  return rows.map((r) => r.name).filter((name) => !Object.hasOwn(migrations, name)).sort();
}

async function migrateToLatest(db: Db): Promise<string[]> {
  const newer = await migrationsFromNewerVersion(db);
  if (newer.length > 0) {
    const newest = Object.keys(migrations).sort().at(-1);
    throw new NewerStoreError(`This database was migrated by a newer Mailroom: ${newer.join(', ')} ${newer.length === 1 ? 'is' : 'are'} not among this version's migrations (its newest is ${newest}). `
      + 'Run that newer version (every node of a deployment runs the same one), or restore a backup made before the upgrade.');
  }
  const { error, results } = await migratorOf(db).migrateToLatest();
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** PostgreSQL's deadlock_detected and serialization_failure: the transaction was rolled back, and may simply run again. */
const isTransientConflict = (err: unknown) => ['40P01', '40001'].includes((err as { code?: string } | undefined)?.code ?? '');
/** Runs of a PostgreSQL write unit after its first, for a stale statement or a transient conflict. */
const UNIT_RETRIES = 3;

type PostgresPoolOptions = Required<Parameters<typeof postgresPool>[1]>;

/** `forMigrations`: the Kysely the migrations run on, whose one transaction takes their lock (UnboundedDialect). */
function postgresDb(url: string, o: PostgresPoolOptions, forMigrations = false): Db {
  const pool = postgresPool(url, o);
  const dialect = o.timeouts.queryMs === 0 ? new UnboundedDialect(pool, { migrationLock: forMigrations }) : new PostgresDialect({ pool });
  return new Kysely<Database>({ dialect, plugins: [inlineLimits] });
}

/** The oldest PostgreSQL Mailroom runs on: the broadcast stats triggers read pg_current_xact_id(), new in 13. */
const OLDEST_POSTGRES = { number: 130000, name: '13' };

/** Refuses a server older than OLDEST_POSTGRES before a migration, rather than a trigger failing on the first broadcast. */
export function checkPostgresVersion(serverVersionNum: number, serverVersion: string): void {
  if (serverVersionNum < OLDEST_POSTGRES.number) {
    throw new Error(`Mailroom needs PostgreSQL ${OLDEST_POSTGRES.name} or later; this server is ${serverVersion}`);
  }
}

/**
 * Migrates on a pool of its own whose statements have no time limit: an
 * index built over a large table may take minutes. Connecting is bounded
 * as for the store.
 */
async function migrateUnbounded(url: string, o: PostgresPoolOptions): Promise<string[]> {
  const db = postgresDb(url, { ...o, timeouts: { ...o.timeouts, queryMs: 0 } }, true);
  try {
    const { rows: [server] } = await sql<{ num: string; version: string }>`
      SELECT current_setting('server_version_num') AS num, current_setting('server_version') AS version`.execute(db);
    checkPostgresVersion(Number(server.num), server.version);
    return await migrateToLatest(db);
  } finally {
    await db.destroy();
  }
}

/**
 * PostgreSQL: a pool of connections, a transaction per write unit. There is
 * no group commit to arrange: the server makes each commit durable before it
 * answers, and concurrent transactions share its WAL flushes by themselves.
 */
function openPostgresStore(url: string, o: PostgresPoolOptions): Store {
  const db = postgresDb(url, o);
  const inFlight = new Set<Promise<unknown>>();
  const store: Store = {
    db,
    write<T>(work: (tx: Tx) => Promise<T>, options?: { durable?: boolean }): Promise<T> {
      const attempt = () => db.transaction().execute(async (tx) => {
        if (options?.durable === false) await sql`SET LOCAL synchronous_commit = off`.execute(tx);
        unitTxs.set(tx, {});
        return work(tx);
      });
      // A named statement gone stale (a migration of another node changed its
      // table) fails the transaction; the unit runs again, as a unit whose
      // unique name was taken does, and its statement now has a new name.
      // A deadlock or a serialisation failure rolled the whole transaction
      // back too: the unit runs again, a few times at most.
      const run = (retries: number): Promise<T> => attempt().catch((err: unknown) => {
        if (retries === 0 || !(isUnusableStatement(err) || isTransientConflict(err))) throw err;
        return run(retries - 1);
      });
      const done = run(UNIT_RETRIES);
      inFlight.add(done);
      const settled = () => void inFlight.delete(done);
      done.then(settled, settled);
      return done;
    },
    async checkWritable() {
      await store.write(async (tx) => void (await sql`SELECT 1`.execute(tx)));
    },
    pendingMigrations: () => pendingMigrationsOf(db),
    fileSizes: () => undefined,
    async backup() {
      throw new BackupRefused('backup copies a SQLite database; for PostgreSQL use pg_dump (or a base backup) instead');
    },
    migrate: () => migrateUnbounded(url, o),
    async close() {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
      await db.destroy();
    },
  };
  return store;
}

function openSqliteStore(databaseUrl: string, options: StoreOptions): Store {
  const file = databaseUrl.replace(/^sqlite:/, '');
  const inMemory = file === ':memory:';
  if (!inMemory) {
    mkdirSync(dirname(file), { recursive: true });
    // Readable by the owner only, like master.key: it holds mail and key hashes.
    // SQLite gives the -wal and -shm files the mode of the database file.
    closeSync(openSync(file, 'a', 0o600));
  }
  const conn = new Sqlite(file);
  // WAL, and a write unit resolves only once its commit is on disk: a 2xx or
  // a 250 is said after the fsync. The fsync itself runs off the event loop
  // (walSyncer), and group commit below shares it between concurrent units.
  // A commit is visible to reads a moment before it is durable; everything
  // the process does on the strength of a write waits for the write.
  conn.pragma('journal_mode = WAL');
  conn.pragma(inMemory ? 'synchronous = FULL' : 'synchronous = NORMAL');
  // Units that arrive while a sync runs wait for its end and commit together:
  // they could not be durable sooner anyway, and one commit of many costs
  // less than many small ones (each writes the pages it touched to the WAL).
  const syncer = inMemory ? undefined : walSyncer(`${file}-wal`, options.syncFile ?? fdatasync, resumeCommits);
  // Checkpoints: SQLite's own runs inside the commit that takes the WAL past
  // wal_autocheckpoint pages, on this connection, so the event loop stands
  // still for milliseconds while it copies pages and syncs both files.
  // Instead, once a commit leaves the WAL past WAL_CHECKPOINT_PAGES, a
  // connection on a thread of its own checkpoints (PASSIVE: it neither takes
  // the writer's lock nor waits for readers; this connection reads on
  // meanwhile; it may run beside the commit's own sync, as it syncs the WAL
  // before copying) and the next commit waits for it, its units queueing. With no
  // commit in between, every frame gets copied, so that next commit starts
  // the WAL again from its beginning, and journal_size_limit cuts the file
  // back to the mark: the WAL stays bounded however steady the writes. (A
  // checkpoint beside the commits never catches up: the WAL only restarts
  // when a commit finds all of it copied.) SQLite's own checkpoint stays as
  // a backstop, far higher, for a checkpoint thread that fails. Durability
  // is the same: a checkpoint copies only committed frames, syncing the WAL
  // before and the database file after.
  const checkpointer = inMemory ? undefined : (options.checkpointer ?? walCheckpointer)(file);
  let checkpointing = false;
  const walMarkBytes = WAL_HEADER_BYTES + WAL_CHECKPOINT_PAGES * (WAL_FRAME_HEADER_BYTES + Number(conn.pragma('page_size', { simple: true })));
  if (!inMemory) {
    conn.pragma(`journal_size_limit = ${walMarkBytes}`);
    conn.pragma(`wal_autocheckpoint = ${BACKSTOP_CHECKPOINT_PAGES}`);
  }

  function checkpointIfDue(): void {
    if (!checkpointer || checkpointing || syncer!.walSize() <= walMarkBytes) return;
    checkpointing = true;
    // One that fails is asked for again after the next commit; the backstop covers the rest.
    void checkpointer.checkpoint().catch(() => undefined).then(() => {
      checkpointing = false;
      resumeCommits();
    });
  }

  function resumeCommits(): void {
    // A unit that does not gather goes now, and takes the gathering ones along (as a kick does).
    if (queue.some((u) => u.eager) || (queue.length > 0 && !soon && later === undefined)) kick();
  }
  conn.pragma('foreign_keys = ON');
  conn.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  // Savepoints keep a statement journal of the pages each unit changes; in
  // memory it costs no file I/O (it is never needed after a crash: the WAL
  // and its commit record are what make a commit durable).
  conn.pragma('temp_store = MEMORY');
  conn.pragma('cache_size = -32000');
  const statements = withStatementCache(conn);
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect(statements, conn), plugins: [inlineLimits] });

  let queue: Pending[] = [];
  // Run on the connection directly: the unit's transaction holds it, and the
  // statements are fixed.
  const savepoint = conn.prepare('savepoint unit');
  const release = conn.prepare('release savepoint unit');
  const rollbackTo = conn.prepare('rollback to savepoint unit');

  let flushing = false;
  let soon = false;
  let later: NodeJS.Timeout | undefined;

  function kick(): void {
    soon = false;
    clearTimeout(later);
    later = undefined;
    void flush();
  }

  async function runUnit(tx: Tx, unit: Pending, shared: boolean): Promise<() => void> {
    if (!shared) {
      try {
        const value = await unit.work(tx);
        return () => unit.resolve(value);
      } catch (err) {
        throw Object.assign(new Error('unit failed'), { unitError: err });
      }
    }
    savepoint.run();
    try {
      const value = await unit.work(tx);
      release.run();
      return () => unit.resolve(value);
    } catch (err) {
      // SQLite may have ended the whole transaction on this error (a full
      // disk, an I/O error): the units before this one went with it, so the
      // batch fails as one.
      if (!conn.inTransaction) throw Object.assign(new Error('unit failed'), { unitError: err });
      rollbackTo.run();
      release.run();
      return () => unit.reject(err);
    }
  }

  async function flush(): Promise<void> {
    if (flushing) return;
    flushing = true;
    try {
      while (queue.length > 0 && !syncer?.busy() && !checkpointing) {
        const batch = queue.slice(0, MAX_UNITS_PER_COMMIT);
        queue = queue.slice(batch.length);
        const settle: Array<() => void> = [];
        try {
          await db.transaction().execute(async (tx) => {
            unitTxs.set(tx, { statement: statements.prepare });
            for (const unit of batch) settle.push(await runUnit(tx, unit, batch.length > 1));
          });
          if (syncer) {
            void syncer.sync().then(() => settle.forEach((s) => s()), (err) => batch.forEach((u) => u.reject(err)));
            checkpointIfDue();
          } else {
            settle.forEach((s) => s());
          }
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

  const store: Store = {
    db,
    write<T>(work: (tx: Tx) => Promise<T>, options?: { gatherMs?: number }): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ work, eager: !options?.gatherMs, resolve: resolve as (v: unknown) => void, reject });
        if (soon) return;
        if (options?.gatherMs) {
          later ??= setTimeout(kick, options.gatherMs);
        } else {
          // setImmediate lets every request that arrived in this turn of the
          // event loop join the same commit (and any unit gathering so far).
          soon = true;
          setImmediate(kick);
        }
      });
    },
    async checkWritable() {
      await store.write(async (tx) => void (await sql`SELECT 1`.execute(tx)));
    },
    pendingMigrations: () => pendingMigrationsOf(db),
    fileSizes() {
      if (inMemory) return undefined;
      const size = (path: string) => (existsSync(path) ? statSync(path).size : 0);
      // Both read the database's header, which the connection has in its cache.
      const free = (conn.pragma('freelist_count', { simple: true }) as number) * (conn.pragma('page_size', { simple: true }) as number);
      return { database: size(file), wal: size(`${file}-wal`), free };
    },
    async backup(target) {
      if (inMemory) throw new BackupRefused('an in-memory database has nothing to back up');
      // Made here, owner-only like the database, before SQLite writes into it
      // (an empty file is an empty database to its backup); 'wx' refuses a file
      // that exists, even one made a moment ago.
      try {
        closeSync(openSync(target, 'wx', 0o600));
      } catch (err) {
        const { code, message } = err as NodeJS.ErrnoException;
        throw new BackupRefused(code === 'EEXIST' ? `${target} exists already; give a new file` : `cannot write ${target}: ${message}`);
      }
      try {
        await conn.backup(target);
      } catch (err) {
        rmSync(target, { force: true });
        throw err;
      }
    },
    migrate: () => migrateToLatest(db),
    async close() {
      while (queue.length > 0 || flushing) await new Promise((r) => setImmediate(r));
      // Syncs settle their units in order, so the last one done means all are.
      await syncer?.close();
      // Before the last connection closes, which checkpoints and removes the WAL.
      await checkpointer?.close();
      await db.destroy();
    },
  };
  return store;
}
