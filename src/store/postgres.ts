import { createHash } from 'node:crypto';
import {
  CompiledQuery, PostgresAdapter, PostgresDialect, PostgresDriver,
  type DatabaseConnection, type DialectAdapter, type Driver, type TransactionSettings,
} from 'kysely';
import pg from 'pg';

// The connection pool of a store on PostgreSQL, set up so that rows read the
// same as on SQLite: the repos map them without knowing the database.

/** Whether a MAILROOM_DATABASE_URL names a PostgreSQL database. */
export const isPostgresUrl = (url: string): boolean => /^postgres(ql)?:\/\//.test(url);

const INT8_OID = 20;
const NUMERIC_OID = 1700;

/**
 * Epoch-ms times, positions and counts are bigint columns, and count(*) is a
 * bigint too; pg reads int8 as a string by default (it may exceed 2^53).
 * Ours stay far below that, and SQLite gives numbers, so int8 reads as a
 * number. sum() over a bigint column is numeric, read as a number likewise
 * (only counts are summed). Set on this pool's clients only, not on pg's
 * global table.
 */
function typeParsers(): pg.CustomTypesConfig {
  const asNumber = (text: string) => Number(text);
  return {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
      if (oid === INT8_OID || oid === NUMERIC_OID) return asNumber;
      return pg.types.getTypeParser(oid, format);
    }) as pg.CustomTypesConfig['getTypeParser'],
  };
}

// Named statements. PostgreSQL parses, analyses and plans an unnamed
// statement at every run; a named one is parsed once per connection and its
// plan kept (PostgreSQL's plan cache picks a generic plan once five custom
// ones cost no less). The store's fixed SQL texts (see runSql) are few and
// run again and again, so each gets a name, and the connection sends only
// the values. Any other text stays unnamed: Kysely's ad-hoc queries have no
// bound, and each name costs memory on every connection of the pool.

/**
 * How much SQL text gets names, in characters, and how long one named text
 * may be. A prepared statement takes some 40 bytes of the server's memory
 * per character of its text (a 64-row INSERT of 10 columns, 4 KB of SQL,
 * some 170 KB), on every connection that runs it, until the connection
 * closes; sends of every batch size and their deliveries name some 80 KB
 * of SQL, 3 MB a connection. Beyond the budget, and for longer texts (large
 * multi-row INSERTs, whose rows cost more than their parsing), texts run
 * unnamed.
 */
export const NAMED_TEXT_BUDGET = 256 * 1024;
export const MAX_NAMED_TEXT = 16 * 1024;
/** A text renamed this often (its statement unusable each time) runs unnamed from then on. */
const MAX_RENAMES = 3;

interface StatementName { name: string; renames: number }

const statementNames = new Map<string, StatementName | null>();
let namedChars = 0;

const nameOf = (text: string, renames: number) =>
  `mr_${createHash('sha256').update(text).digest('base64url').slice(0, 24)}${renames ? `_${renames}` : ''}`;

/** Runs `text` as a named statement from now on, if it is short enough and the budget has room. */
export function nameStatement(text: string): void {
  if (statementNames.has(text) || text.length > MAX_NAMED_TEXT || namedChars + text.length > NAMED_TEXT_BUDGET) return;
  statementNames.set(text, { name: nameOf(text, 0), renames: 0 });
  namedChars += text.length;
}

/** Characters of the texts named so far (for tests of the budget). */
export const namedTextChars = (): number => namedChars;

/**
 * A named statement the connection cannot use as it is: prepared before a
 * schema change that its result or its existence depends on (0A000 "cached
 * plan must not change result type", as a SELECT * after another node's
 * migration added a column), or gone from the connection (26000). Or a name
 * the connection already has (42P05): a pooler in transaction mode that does
 * not keep prepared statements handed this client a server connection on
 * which another client prepared it. PostgreSQL keeps refusing such a
 * statement on every connection concerned. The routine tells the first from
 * the other errors of code 0A000 (a feature not supported), in any language
 * the server speaks.
 */
export function isUnusableStatement(err: unknown): boolean {
  const { code, routine } = (err ?? {}) as { code?: string; routine?: string };
  return (code === '0A000' && routine === 'RevalidateCachedQuery') || code === '26000' || code === '42P05';
}

/**
 * Gives a text whose statement became unusable a new name, so each
 * connection prepares it afresh on its next run; the old statements stay on
 * their connections until those close. A text renamed again and again (a
 * pooler that loses statements) runs unnamed instead.
 */
function renameUnusable(text: string): void {
  const named = statementNames.get(text);
  if (!named) return;
  const renames = named.renames + 1;
  statementNames.set(text, renames > MAX_RENAMES ? null : { name: nameOf(text, renames), renames });
}

type Query = (...args: unknown[]) => Promise<unknown>;

/** Replaces the client's query function with one that runs through `wrap`. */
function wrapQuery(client: pg.PoolClient, wrap: (query: Query, args: unknown[]) => Promise<unknown>): void {
  const query = client.query.bind(client) as Query;
  (client as unknown as { query: Query }).query = (...args) => wrap(query, args);
}

/** Makes the client run the named texts as named statements (Kysely calls query(text, values)). */
function withNamedStatements(client: pg.PoolClient): void {
  wrapQuery(client, (query, args) => {
    const [text, values] = args;
    const named = args.length === 2 && typeof text === 'string' && Array.isArray(values) ? statementNames.get(text) : undefined;
    if (!named) return query(...args);
    return query({ name: named.name, text, values }).catch((err: unknown) => {
      if (isUnusableStatement(err) && statementNames.get(text as string) === named) renameUnusable(text as string);
      throw err;
    });
  });
}

/** What node-postgres rejects a query with once query_timeout passes without its answer. */
export const QUERY_TIMEOUT_MESSAGE = 'Query read timeout';

/**
 * Closes a client whose query timed out. node-postgres leaves such a client
 * open and queryable: its next query would wait behind the late answer (a
 * stopped server's, forever), and the pool would hand it out again. Closed,
 * the pool drops it on release. The statements asked of it meanwhile (the
 * ROLLBACK of the transaction it was in) fail at once with the timeout, so
 * the unit's caller sees that error rather than pg's "Client was closed".
 */
function closedOnTimeout(client: pg.PoolClient): void {
  let timedOut: Error | undefined;
  wrapQuery(client, (query, args) => {
    if (timedOut) return Promise.reject(timedOut);
    const running = query(...args);
    // A query given a callback or a Submittable returns no promise.
    if (typeof running?.then !== 'function') return running;
    return running.catch((err: unknown) => {
      if (err instanceof Error && err.message === QUERY_TIMEOUT_MESSAGE && !timedOut) {
        timedOut = err;
        client.end().catch(() => undefined);
      }
      throw err;
    });
  });
}

/**
 * Kysely's key for the migrations' advisory lock: the lock every node and
 * every version of Mailroom takes before it migrates.
 */
export const MIGRATION_LOCK_KEY = '3853314791062309107';

/**
 * Kysely's dialect for a pool whose statements are not limited (queryMs 0:
 * the migrations, a store copy). Each transaction begins by lifting, for
 * itself only (SET LOCAL), the statement_timeout and lock_timeout the
 * database or the role may set. Set on the session instead, they would stay
 * behind a pooler in transaction mode on whichever server connection ran the
 * SET, for other clients, while the transaction itself could get another.
 * Statements outside a transaction keep the database's limits.
 *
 * With `migrationLock`, the transaction then takes the migrations' lock,
 * released with it (pg_advisory_xact_lock), in place of Kysely's lock held
 * by the session around it, which such a pooler could leave held on a
 * server connection for the next node's migrations to wait on. Kysely's key
 * is kept, so a node of an earlier version migrating meanwhile is waited
 * for, and waits.
 */
export class UnboundedDialect extends PostgresDialect {
  constructor(private readonly pool: pg.Pool, private readonly o: { migrationLock: boolean }) {
    super({ pool });
  }

  override createDriver(): Driver {
    return new UnboundedDriver({ pool: this.pool }, this.o.migrationLock);
  }

  override createAdapter(): DialectAdapter {
    return this.o.migrationLock ? new LockInTransactionAdapter() : super.createAdapter();
  }
}

class UnboundedDriver extends PostgresDriver {
  constructor(config: { pool: pg.Pool }, private readonly migrationLock: boolean) {
    super(config);
  }

  override async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    await super.beginTransaction(connection, settings);
    await connection.executeQuery(CompiledQuery.raw('SET LOCAL statement_timeout = 0'));
    await connection.executeQuery(CompiledQuery.raw('SET LOCAL lock_timeout = 0'));
    if (this.migrationLock) await connection.executeQuery(CompiledQuery.raw(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`));
  }
}

/** Kysely's migrator takes no lock of its own: its transaction takes it as it begins (UnboundedDriver). */
class LockInTransactionAdapter extends PostgresAdapter {
  override async acquireMigrationLock(): Promise<void> {}
  override async releaseMigrationLock(): Promise<void> {}
}

/**
 * How long a store on PostgreSQL waits, in milliseconds, before it gives up
 * on a server (or pooler) that does not answer, and calls the store
 * unavailable: to open a connection or get a free one from the pool
 * (`connectMs`), and for the answer to one statement (`queryMs`; 0 waits
 * for ever, as the migrations do, and with UnboundedDialect their
 * transactions lift the statement_timeout and lock_timeout the database or
 * the role may set). PostgreSQL's own statement_timeout cannot do the bounding: a
 * stopped or unreachable server never sends its error.
 */
export interface PostgresTimeouts {
  connectMs: number;
  queryMs: number;
}

export const DEFAULT_POSTGRES_TIMEOUTS: PostgresTimeouts = { connectMs: 5_000, queryMs: 30_000 };

/**
 * TCP keepalive on idle connections after this long: a firewall or NAT on the
 * way keeps their state, and a peer gone for good (a host powered off, a
 * partition) is found by the kernel's probes rather than by the next query.
 */
export const KEEPALIVE_IDLE_MS = 10_000;

export function postgresPool(url: string, o: { poolSize: number; preparedStatements: boolean; timeouts?: PostgresTimeouts }): pg.Pool {
  const timeouts = o.timeouts ?? DEFAULT_POSTGRES_TIMEOUTS;
  const pool = new pg.Pool({
    connectionString: url,
    max: o.poolSize,
    types: typeParsers(),
    connectionTimeoutMillis: timeouts.connectMs,
    query_timeout: timeouts.queryMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS,
  });
  if (o.preparedStatements) pool.on('connect', withNamedStatements);
  if (timeouts.queryMs > 0) pool.on('connect', closedOnTimeout);
  // An idle connection the server closes (a restart, an administrator) is
  // dropped by the pool, which opens another for the next query; without a
  // listener the 'error' event would end the process.
  pool.on('error', () => undefined);
  // The pool listens only to its idle connections: one lost while a unit holds
  // it between statements would emit 'error' with no listener, and end the
  // process. The unit's next statement fails all the same ("not queryable"),
  // which the store reports as unavailable.
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}
