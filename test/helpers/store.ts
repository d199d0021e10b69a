// A migrated SQLite store in a temp dir of its own for each test of a file,
// closed and removed after it: for unit tests of what sits on the store.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { openStore, type Store } from '../../src/store/db.js';

export interface TempStore {
  /** The current test's store. */
  readonly store: Store;
  /** Its temp dir, for further stores a test opens itself. */
  readonly dir: string;
}

export function useTempStore(): TempStore {
  const current: { store?: Store; dir?: string } = {};
  beforeEach(async () => {
    current.dir = mkdtempSync(join(tmpdir(), 'mailroom-store-'));
    current.store = openStore(`sqlite:${join(current.dir, 'db.sqlite')}`);
    await current.store.migrate();
  });
  afterEach(async () => {
    await current.store?.close();
    rmSync(current.dir!, { recursive: true, force: true });
  });
  return {
    get store() { return current.store!; },
    get dir() { return current.dir!; },
  };
}
