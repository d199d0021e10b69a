// Two Mailroom nodes' services on one database, without HTTP or engines: for
// tests that put the same request through both at once. On PostgreSQL each
// node has a pool of its own, as two processes would; SQLite has one process
// to a file, so there both nodes are the same services (and their requests
// still run side by side).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { systemClock } from '../../src/core/clock.js';
import { openServices, type Services } from '../../src/main.js';
import { createTestDatabase, onPostgres } from './database.js';

export interface TwoNodes {
  a: Services;
  b: Services;
  /** The default workspace. */
  workspaceId: string;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

const SECRET = 'two-nodes-test-secret-'.padEnd(48, 'x');

export async function openTwoNodes(): Promise<TwoNodes> {
  const dirs = [mkdtempSync(join(tmpdir(), 'mailroom-node-a-')), mkdtempSync(join(tmpdir(), 'mailroom-node-b-'))];
  const database = onPostgres ? await createTestDatabase() : undefined;
  const open = (dir: string) => openServices(loadConfig({
    MAILROOM_DATA_DIR: dir, MAILROOM_SECRET: SECRET, MAILROOM_LOG_LEVEL: 'silent', MAILROOM_DELIVERY: 'sink',
    ...(database && { MAILROOM_DATABASE_URL: database.url }),
  }), systemClock, pino({ level: 'silent' }));
  const a = await open(dirs[0]);
  const b = database ? await open(dirs[1]) : a;
  const { id: workspaceId } = await a.workspaces.ensureDefault();
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await a.store.close();
    if (b !== a) await b.store.close();
    await database?.drop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  };
  return { a, b, workspaceId, close, [Symbol.asyncDispose]: close };
}
