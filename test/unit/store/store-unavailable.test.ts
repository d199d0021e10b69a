import Sqlite from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { testDatabaseUrl, onPostgres } from '../../helpers/database.js';
import { isStoreFull, isStoreRefusingWrites, isStoreUnavailable } from '../../../src/store/db.js';

// The classifier is fed the errors the drivers really throw, made to happen
// here: a port with nothing behind it, a server that hangs up or never
// answers (before or after the login), a backend terminated by an administrator, a SQLite lock held by
// another connection.

const rejection = async (work: () => Promise<unknown>): Promise<unknown> => work().then(() => { throw new Error('did not fail'); }, (err: unknown) => err);

async function listening(onConnection: (socket: net.Socket) => void): Promise<{ url: string; close(): void }> {
  const server = net.createServer(onConnection);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const sockets = new Set<net.Socket>();
  server.on('connection', (s) => sockets.add(s));
  return {
    url: `postgres://u:p@127.0.0.1:${(server.address() as net.AddressInfo).port}/db`,
    close: () => { for (const s of sockets) s.destroy(); server.close(); },
  };
}

/** Greets a client as a server that asks no password (AuthenticationOk, ReadyForQuery), then never answers: a server stopped after the login. */
function greetThenSilent(socket: net.Socket): void {
  socket.once('data', () => {
    const authenticationOk = Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 0]);
    const readyForQuery = Buffer.from([0x5a, 0, 0, 0, 5, 0x49]);
    socket.write(Buffer.concat([authenticationOk, readyForQuery]));
  });
}

async function onePoolQuery(url: string, options: pg.PoolConfig = {}): Promise<unknown> {
  const pool = new pg.Pool({ connectionString: url, ...options });
  try {
    return await rejection(() => pool.query('SELECT 1'));
  } finally {
    await pool.end().catch(() => undefined);
  }
}

describe('isStoreUnavailable', () => {
  it('is true for a connection refused (nothing listening where the database or its pooler was)', async () => {
    const gone = await listening(() => undefined);
    gone.close();
    const err = await onePoolQuery(gone.url);
    expect(err).toMatchObject({ code: 'ECONNREFUSED' });
    expect(isStoreUnavailable(err)).toBe(true);
  });

  it('is true for a connection the server closes before it answers (node-postgres: no code, "Connection terminated unexpectedly")', async () => {
    const rude = await listening((socket) => socket.destroy());
    const err = await onePoolQuery(rude.url);
    rude.close();
    expect(err).toMatchObject({ message: 'Connection terminated unexpectedly' });
    expect((err as { code?: string }).code).toBeUndefined();
    expect(isStoreUnavailable(err)).toBe(true);
  });

  it('is true for a new connection past connectionTimeoutMillis, and for a wait for a free client past it', async () => {
    const silent = await listening(() => undefined);
    const pool = new pg.Pool({ connectionString: silent.url, max: 1, connectionTimeoutMillis: 200 });
    const [connecting, waiting] = await Promise.all([rejection(() => pool.query('SELECT 1')), rejection(() => pool.query('SELECT 1'))]);
    await pool.end().catch(() => undefined);
    silent.close();
    expect(connecting).toMatchObject({ message: 'Connection terminated due to connection timeout' });
    expect(isStoreUnavailable(connecting)).toBe(true);
    expect(waiting).toMatchObject({ message: 'timeout exceeded when trying to connect' });
    expect(isStoreUnavailable(waiting)).toBe(true);
  });

  it('is true for a statement unanswered past query_timeout (node-postgres: no code, "Query read timeout")', async () => {
    const stopped = await listening(greetThenSilent);
    const err = await onePoolQuery(stopped.url, { query_timeout: 200 });
    stopped.close();
    expect(err).toMatchObject({ message: 'Query read timeout' });
    expect((err as { code?: string }).code).toBeUndefined();
    expect(isStoreUnavailable(err)).toBe(true);
    expect(isStoreRefusingWrites(err)).toBe(true);
  });

  it('is true for SQLITE_BUSY: the write lock held by another connection past busy_timeout', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailroom-busy-'));
    const holder = new Sqlite(join(dir, 'db.sqlite'));
    const waiter = new Sqlite(join(dir, 'db.sqlite'));
    try {
      holder.pragma('journal_mode = WAL');
      waiter.pragma('busy_timeout = 50');
      holder.exec('BEGIN IMMEDIATE');
      let err: unknown;
      try {
        waiter.exec('BEGIN IMMEDIATE');
      } catch (e) {
        err = e;
      }
      expect(err).toMatchObject({ code: 'SQLITE_BUSY', message: 'database is locked' });
      expect(isStoreUnavailable(err)).toBe(true);
      expect(isStoreFull(err)).toBe(false);
      expect(isStoreRefusingWrites(err)).toBe(true);
    } finally {
      holder.close();
      waiter.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.runIf(onPostgres)('is true for a backend terminated under a query (57P01), and for the client\'s next queries', async () => {
    const admin = new pg.Client({ connectionString: testDatabaseUrl });
    const victim = new pg.Client({ connectionString: testDatabaseUrl });
    await admin.connect();
    await victim.connect();
    victim.on('error', () => undefined);
    const ended = new Promise((resolve) => victim.once('end', resolve));
    try {
      const { rows: [{ pid }] } = await victim.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const sleeping = rejection(() => victim.query('SELECT pg_sleep(10)'));
      await new Promise((resolve) => setTimeout(resolve, 100));
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      const err = await sleeping;
      expect(err).toMatchObject({ code: '57P01' });
      expect(isStoreUnavailable(err)).toBe(true);
      const next = await rejection(() => victim.query('SELECT 1'));
      // Which of the two the next query gets depends on whether the client has seen the close yet.
      expect(next).toMatchObject({ message: expect.stringMatching(/^Connection terminated|not queryable/) });
      expect(isStoreUnavailable(next)).toBe(true);
      await ended;
      const later = await rejection(() => victim.query('SELECT 1'));
      expect(later).toMatchObject({ message: 'Client has encountered a connection error and is not queryable' });
      expect(isStoreUnavailable(later)).toBe(true);
    } finally {
      await admin.end();
      await victim.end().catch(() => undefined);
    }
  });

  it('is true for the SQLSTATEs of a server stopping, starting or out of connections, and for class 08', () => {
    for (const code of ['57P01', '57P02', '57P03', '53300', '08000', '08006', '08001', '08P01']) {
      expect(isStoreUnavailable(Object.assign(new Error('x'), { code })), code).toBe(true);
    }
  });

  it('is false for other failures: a full store, a clash, a bad statement, a bug, anything not an Error', () => {
    for (const code of ['SQLITE_FULL', '53100', '23505', '42601', 'SQLITE_CONSTRAINT_UNIQUE', 'ENOENT', '40P01']) {
      expect(isStoreUnavailable(Object.assign(new Error('Connection terminated unexpectedly'), { code })), code).toBe(false);
    }
    expect(isStoreUnavailable(new TypeError('Cannot read properties of undefined'))).toBe(false);
    expect(isStoreUnavailable({ code: 'ECONNREFUSED' })).toBe(false);
    expect(isStoreUnavailable(undefined)).toBe(false);
    expect(isStoreRefusingWrites(Object.assign(new Error('full'), { code: 'SQLITE_FULL' }))).toBe(true);
  });
});
