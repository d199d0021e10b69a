import Sqlite from 'better-sqlite3';
import { closeSync, fsyncSync, openSync, rmSync } from 'node:fs';

// What the commands run on a SQLite database with the server stopped
// (restore, compact) share: a connection that holds the database alone, with
// its WAL folded into the file, and the care a file put in its place needs.

/** The command cannot run on this database now, or on the file it was given; the message says why. */
export class OfflineRefused extends Error {}

/** SQLite's files beside a database, named after it: with another database, SQLite would read them as its own. */
export const SIDE_FILES = ['-wal', '-shm', '-journal'];

/**
 * Opens `database` for this process alone, in rollback-journal mode: its WAL
 * copied into the file and removed, so the file stands alone. `otherwise`
 * says what to do when that cannot be made sure for another reason than a
 * process using it.
 */
export function openAlone(database: string, otherwise: string): Sqlite.Database {
  let conn: Sqlite.Database | undefined;
  try {
    conn = new Sqlite(database, { timeout: 0, fileMustExist: true });
    // In exclusive locking mode the lock stays until the connection closes,
    // and taking it fails at once while any other process has the database
    // open, even one doing nothing.
    conn.pragma('locking_mode = EXCLUSIVE');
    conn.exec('BEGIN EXCLUSIVE; COMMIT');
    // Leaving WAL mode checkpoints the whole WAL and removes it, or fails.
    const mode = conn.pragma('journal_mode = DELETE', { simple: true });
    if (mode !== 'delete') throw new Error(`its journal mode stays ${String(mode)}`);
    return conn;
  } catch (err) {
    conn?.close();
    if ((err as { code?: unknown }).code === 'SQLITE_BUSY') throw new OfflineRefused('the database is in use: stop Mailroom first');
    throw new OfflineRefused(`cannot make sure nothing uses the database ${database} (${(err as Error).message}): ${otherwise}`);
  }
}

export function removeWithSideFiles(file: string): void {
  for (const f of [file, ...SIDE_FILES.map((suffix) => `${file}${suffix}`)]) rmSync(f, { force: true });
}

/** Puts a file's or a directory's contents on disk: a rename lives in its directory. */
export function syncToDisk(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
