// A migrated store for each test of a file, closed and removed after it: for
// unit tests of what sits on the store. On a SQLite file in a temp dir of its
// own, or, with MAILROOM_TEST_DATABASE_URL set, on a fresh PostgreSQL
// database (the temp dir is made all the same).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { openStore, type Store } from '../../src/store/db.js';
import { createTestDatabase, onPostgres, type TestDatabase } from './database.js';

export interface TempStore {
  /** The current test's store. */
  readonly store: Store;
  /** Its temp dir, for further stores a test opens itself. */
  readonly dir: string;
}

export function useTempStore(): TempStore {
  const current: { store?: Store; dir?: string; database?: TestDatabase } = {};
  beforeEach(async () => {
    current.dir = mkdtempSync(join(tmpdir(), 'mailroom-store-'));
    current.database = onPostgres ? await createTestDatabase() : undefined;
    current.store = openStore(current.database?.url ?? `sqlite:${join(current.dir, 'db.sqlite')}`);
    await current.store.migrate();
  });
  afterEach(async () => {
    await current.store?.close();
    await current.database?.drop();
    rmSync(current.dir!, { recursive: true, force: true });
  });
  return {
    get store() { return current.store!; },
    get dir() { return current.dir!; },
  };
}
