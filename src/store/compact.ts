import Sqlite from 'better-sqlite3';
import { chmodSync, existsSync, renameSync, rmSync, statfsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { OfflineRefused, openAlone, removeWithSideFiles, SIDE_FILES, syncToDisk } from './offline.js';

// `mailroom store compact`: gives the SQLite database's free pages back to
// the file system, with the server stopped. Deleted rows (the retention
// purges) leave pages SQLite reuses for new rows but never returns, so the
// file stays at its largest. VACUUM INTO writes a compact copy beside the
// database, which is checked, put on disk, and then takes the database's
// name: a refusal or a crash at any step leaves the database as it was. The
// database is held alone meanwhile, so no server can start on it and write
// what the copy would lack.

export interface Compaction {
  /** Bytes of the database and its WAL before. */
  before: number;
  /** Bytes of the database after. */
  after: number;
  /** The free pages it had; with none, it is left as it was (its WAL folded in). */
  freePages: number;
}

const fileSize = (file: string) => (existsSync(file) ? statSync(file).size : 0);

export function compactSqlite(database: string): Compaction {
  if (!existsSync(database)) throw new OfflineRefused(`there is no database at ${database}`);
  const before = fileSize(database) + fileSize(`${database}-wal`);
  const compacting = `${database}.compacting`;
  // Left by a compaction that stopped halfway: ours to replace.
  removeWithSideFiles(compacting);
  const conn = openAlone(database, 'stop Mailroom and run compact again');
  try {
    const pageSize = conn.pragma('page_size', { simple: true }) as number;
    const free = conn.pragma('freelist_count', { simple: true }) as number;
    if (free === 0) return { before, after: fileSize(database), freePages: 0 };
    const needed = ((conn.pragma('page_count', { simple: true }) as number) - free) * pageSize;
    const { bavail, bsize } = statfsSync(dirname(database));
    // A margin over the live pages: the copy's own b-trees are packed, but not to the byte.
    if (bavail * bsize < needed * 1.1) {
      throw new OfflineRefused(`compacting needs about ${megabytes(needed * 1.1)} free beside the database; its file system has ${megabytes(bavail * bsize)}`);
    }
    try {
      conn.prepare('VACUUM INTO ?').run(compacting);
      checkCopy(compacting);
      chmodSync(compacting, 0o600);
      syncToDisk(compacting);
      // Whatever the database's WAL mode left beside it would be read as the copy's.
      for (const suffix of SIDE_FILES) rmSync(`${database}${suffix}`, { force: true });
      renameSync(compacting, database);
    } catch (err) {
      removeWithSideFiles(compacting);
      throw err instanceof OfflineRefused ? err : new OfflineRefused(`cannot compact ${database}: ${(err as Error).message}`);
    }
    syncToDisk(dirname(database));
    return { before, after: fileSize(database), freePages: free };
  } finally {
    conn.close();
  }
}

function checkCopy(copy: string): void {
  const conn = new Sqlite(copy, { fileMustExist: true });
  try {
    const answers = conn.prepare('PRAGMA quick_check').pluck().all() as string[];
    if (answers.join() !== 'ok') throw new OfflineRefused(`the compacted copy failed its check (${answers.slice(0, 3).join('; ')}): the database is left as it was`);
  } finally {
    conn.close();
    for (const suffix of SIDE_FILES) rmSync(`${copy}${suffix}`, { force: true });
  }
}

export const megabytes = (bytes: number) => `${(bytes / 1_048_576).toFixed(1)} MB`;
