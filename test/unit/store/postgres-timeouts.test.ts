import { sql } from 'kysely';
import net from 'node:net';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createTestDatabase, onPostgres, testDatabaseUrl } from '../../helpers/database.js';
import { startPgBouncer, type TestPgBouncer } from '../../helpers/pgbouncer.js';
import { isStoreUnavailable, openStore } from '../../../src/store/db.js';
import { DEFAULT_POSTGRES_TIMEOUTS, KEEPALIVE_IDLE_MS, MIGRATION_LOCK_KEY, postgresPool } from '../../../src/store/postgres.js';

// A PostgreSQL server (or pooler) that takes the connection and then says
// nothing, as a stopped process or a partition does, ends a store's wait
// within the bounds: the store counts as unavailable, the connection that
// waited is closed rather than handed out again, and the store serves again
// once the server answers.

const BOUND_MS = 300;
const bounds = { connectMs: BOUND_MS, queryMs: BOUND_MS };

interface Listener { url: string; open(): number; close(): void }

async function listening(onConnection: (socket: net.Socket) => void): Promise<Listener> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `postgres://u:p@127.0.0.1:${(server.address() as net.AddressInfo).port}/db`,
    open: () => sockets.size,
    close: () => { for (const s of sockets) s.destroy(); server.close(); },
  };
}

/** Answers the login as a server that asks no password (AuthenticationOk, ReadyForQuery), then nothing more. */
function greetThenSilent(socket: net.Socket): void {
  socket.once('data', () => socket.write(Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 0, 0x5a, 0, 0, 0, 5, 0x49])));
}

/** Relays to the server of `target`; frozen, it holds what either side sends until thawed, as a SIGSTOPped server does. */
async function freezableRelay(target: string): Promise<{ url: string; freeze(): void; thaw(): void; close(): void }> {
  const { hostname, port } = new URL(target);
  let held: Array<() => void> | undefined;
  const relay = await listening((client) => {
    const server = net.connect(Number(port), hostname);
    server.on('error', () => undefined);
    const pass = (from: net.Socket, to: net.Socket) => from.on('data', (chunk) => (held ? held.push(() => to.write(chunk)) : to.write(chunk)));
    pass(client, server);
    pass(server, client);
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
  });
  const url = new URL(target);
  url.host = new URL(relay.url).host;
  return {
    url: url.toString(),
    freeze: () => void (held ??= []),
    thaw: () => {
      const release = held ?? [];
      held = undefined;
      for (const write of release) write();
    },
    close: relay.close,
  };
}

const failure = async (work: () => Promise<unknown>): Promise<{ err: unknown; ms: number }> => {
  const started = performance.now();
  const err = await work().then(() => new Error('did not fail'), (e: unknown) => e);
  return { err, ms: performance.now() - started };
};

describe('a store on PostgreSQL whose server stops answering', () => {
  it('bounds connecting, the wait for a free connection and every statement by default, and keeps idle connections alive', async () => {
    expect(DEFAULT_POSTGRES_TIMEOUTS).toEqual({ connectMs: 5_000, queryMs: 30_000 });
    const pool = postgresPool('postgres://u:p@127.0.0.1:1/db', { poolSize: 1, preparedStatements: false });
    try {
      expect(pool.options).toMatchObject({
        connectionTimeoutMillis: DEFAULT_POSTGRES_TIMEOUTS.connectMs,
        query_timeout: DEFAULT_POSTGRES_TIMEOUTS.queryMs,
        keepAlive: true,
        keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS,
      });
    } finally {
      await pool.end();
    }
  });

  it('calls the store unavailable once a connection is not answered within the bound', async () => {
    const silent = await listening(() => undefined);
    const store = openStore(silent.url, { poolSize: 1, postgresTimeouts: bounds });
    try {
      const { err, ms } = await failure(() => store.write((tx) => sql`SELECT 1`.execute(tx)));
      expect(err).toMatchObject({ message: 'Connection terminated due to connection timeout' });
      expect(isStoreUnavailable(err)).toBe(true);
      expect(ms).toBeGreaterThanOrEqual(BOUND_MS - 20);
      expect(ms).toBeLessThan(BOUND_MS + 1_000);
    } finally {
      await store.close();
      silent.close();
    }
  });

  it('calls the store unavailable once a statement is not answered within the bound, and closes that connection', async () => {
    const stopped = await listening(greetThenSilent);
    const store = openStore(stopped.url, { poolSize: 1, preparedStatements: false, postgresTimeouts: bounds });
    try {
      const { err, ms } = await failure(() => store.write((tx) => sql`SELECT 1`.execute(tx)));
      expect(err).toMatchObject({ message: 'Query read timeout' });
      expect(isStoreUnavailable(err)).toBe(true);
      expect(ms).toBeLessThan(BOUND_MS + 1_000);
      // The pool's only connection is closed, not kept for the next unit.
      await expect.poll(() => stopped.open(), { timeout: 2_000 }).toBe(0);
      const next = await failure(() => sql`SELECT 2`.execute(store.db));
      expect(next.err).toMatchObject({ message: 'Query read timeout' });
    } finally {
      await store.close();
      stopped.close();
    }
  });

  it.runIf(onPostgres)('fails a write unit stopped mid-transaction once, within one bound, and serves again when the server answers', async () => {
    const database = await createTestDatabase();
    const relay = await freezableRelay(database.url);
    // Only the statement is bounded short: this test's connects are to a server that answers, however loaded the machine.
    const store = openStore(relay.url, { poolSize: 1, postgresTimeouts: { connectMs: DEFAULT_POSTGRES_TIMEOUTS.connectMs, queryMs: BOUND_MS } });
    try {
      const pid = async () => (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(store.db)).rows[0].pid;
      const before = await pid();
      const { err, ms } = await failure(() => store.write(async (tx) => {
        await sql`SELECT 1`.execute(tx);
        relay.freeze();
        await sql`SELECT 2`.execute(tx);
      }));
      // The ROLLBACK after it does not wait a second bound on the same silent connection.
      expect(err).toMatchObject({ message: 'Query read timeout' });
      expect(isStoreUnavailable(err)).toBe(true);
      expect(ms).toBeLessThan(1.6 * BOUND_MS);
      expect(isStoreUnavailable((await failure(() => sql`SELECT 3`.execute(store.db))).err)).toBe(true);

      relay.thaw();
      // A new connection, not the one that may still get the late answer to SELECT 2.
      expect(await pid()).not.toBe(before);
      expect((await sql<{ v: string }>`SELECT 'after' AS v`.execute(store.db)).rows).toEqual([{ v: 'after' }]);
    } finally {
      relay.thaw();
      await store.close();
      relay.close();
      await database.drop();
    }
  });

  it.runIf(onPostgres)('migrates without the statement bound, which the store\'s own statements keep', async () => {
    const database = await createTestDatabase(testDatabaseUrl);
    const store = openStore(database.url, { postgresTimeouts: { connectMs: DEFAULT_POSTGRES_TIMEOUTS.connectMs, queryMs: 50 } });
    try {
      expect((await store.migrate()).length).toBeGreaterThan(0);
      expect(await store.pendingMigrations()).toEqual([]);
      const { err } = await failure(() => sql`SELECT pg_sleep(0.5)`.execute(store.db));
      expect(err).toMatchObject({ message: 'Query read timeout' });
    } finally {
      await store.close();
      await database.drop();
    }
  });

  // Through PgBouncer with one server connection, every client of the test shares it: a limit lifted
  // for the session, or a lock the session kept, would show to the store's own statements after the migrations.
  for (const pooled of [false, true]) {
    it.runIf(onPostgres)(`migrates past the statement_timeout and lock_timeout the database sets, waiting for another node's migration${
      pooled ? ', through a pooler in transaction mode, leaving neither the lifted limits nor the lock on its server connection' : ''}`, async () => {
      const database = await createTestDatabase();
      const name = new URL(database.url).pathname.slice(1);
      const otherNode = new pg.Client({ connectionString: database.url });
      await otherNode.connect();
      let bouncer: TestPgBouncer | undefined;
      try {
        await otherNode.query(`ALTER DATABASE ${name} SET statement_timeout = '300ms'`);
        await otherNode.query(`ALTER DATABASE ${name} SET lock_timeout = '300ms'`);
        // Started after the settings: its server connection, opened as it starts, begins with them.
        if (pooled) bouncer = await startPgBouncer(database.url, 1);
        // Another node migrating holds the migrations' lock for a while.
        await otherNode.query(`SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY})`);
        const store = openStore(bouncer?.url ?? database.url, { poolSize: 1, preparedStatements: !pooled });
        try {
          const migrated = store.migrate().catch((err: unknown) => err);
          await new Promise((resolve) => setTimeout(resolve, 1_000));
          await otherNode.query(`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`);
          expect(await migrated).toContain('0001_platform');
          // The store's own connections keep the database's limits.
          const { rows: [row] } = await sql<{ statement: string; lock: string }>`
            SELECT current_setting('statement_timeout') AS statement, current_setting('lock_timeout') AS lock`.execute(store.db);
          expect(row).toEqual({ statement: '300ms', lock: '300ms' });
          const { rows: [locks] } = await otherNode.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory'`);
          expect(locks.n).toBe(0);
        } finally {
          await store.close();
        }
      } finally {
        await bouncer?.stop();
        await otherNode.end();
        await database.drop();
      }
    });
  }
});
