import Sqlite from 'better-sqlite3';
import { chmodSync, copyFileSync, existsSync, mkdirSync, realpathSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { openAlone, OfflineRefused, removeWithSideFiles, SIDE_FILES, syncToDisk } from './offline.js';
import { isSecretOf, SECRET_CHECK_SETTING } from './secret-check.js';

// `mailroom restore FILE`: puts a backup in place of the SQLite database, with
// the server stopped. Copying the file over the database by hand is unsafe
// after a crash: the old database's WAL is still beside it, and SQLite
// replays it onto the copy, which then holds rows the backup does not, or is
// corrupt. Here the backup is copied beside the database and checked there;
// the database is set aside, never deleted, once no process has it open; its
// WAL files go, and the copy takes its name. A refusal at any step leaves the
// database as it was.

export interface RestoreSecret {
  /** The store check key of this node's master secret (Keyring.storeCheckKey); undefined when it has none. */
  checkKey: Buffer | undefined;
  /** Where master.key belongs, for the messages. */
  dataDir: string;
}

/** Puts `source` in place of `database`; returns where the database that was there is kept, if there was one. */
export function restoreSqlite(source: string, database: string, secret: RestoreSecret): { previous: string | undefined } {
  if (!existsSync(source)) throw new OfflineRefused(`there is no file ${source}`);
  if (!statSync(source).isFile()) throw new OfflineRefused(`${source} is not a file`);
  const restoring = `${database}.restoring`;
  const real = realpathSync(source);
  if ([database, restoring].some((f) => existsSync(f) && realpathSync(f) === real)) {
    throw new OfflineRefused(`${source} is the database itself, not a backup of it`);
  }
  mkdirSync(dirname(database), { recursive: true });
  // Left by a restore that stopped halfway: ours to replace.
  removeWithSideFiles(restoring);
  let previous: string | undefined;
  try {
    copyOwnerOnly(source, restoring);
    checkBackup(restoring, source, secret);
    if (existsSync(database)) previous = setAside(database);
  } catch (err) {
    removeWithSideFiles(restoring);
    throw err;
  }
  try {
    for (const suffix of SIDE_FILES) rmSync(`${database}${suffix}`, { force: true });
    renameSync(restoring, database);
  } catch (err) {
    if (previous) renameSync(previous, database);
    throw err;
  }
  syncToDisk(dirname(database));
  return { previous };
}

/** A copy readable by the owner only, as the database is, and on disk before it is renamed. */
function copyOwnerOnly(source: string, target: string): void {
  try {
    copyFileSync(source, target);
    // The copy took the backup's mode.
    chmodSync(target, 0o600);
    syncToDisk(target);
  } catch (err) {
    throw new OfflineRefused(`cannot copy ${source} to ${target}: ${(err as Error).message}`);
  }
}

/**
 * The copy is what gets checked, not `source`: read-only as it is, SQLite
 * makes a -wal and -shm beside a file in WAL mode (a backup's header says
 * so), and would read a -wal found there. Beside the copy they are ours to remove.
 */
function checkBackup(copy: string, source: string, secret: RestoreSecret): void {
  const conn = new Sqlite(copy, { readonly: true, fileMustExist: true });
  try {
    let answers: string[];
    try {
      answers = conn.prepare('PRAGMA quick_check').pluck().all() as string[];
    } catch (err) {
      if ((err as { code?: unknown }).code === 'SQLITE_NOTADB') throw new OfflineRefused(`${source} is not a SQLite database: give a file written by mailroom backup`);
      throw new OfflineRefused(`${source} cannot be read as a database: ${(err as Error).message}`);
    }
    if (answers.join() !== 'ok') throw new OfflineRefused(`${source} is damaged: ${answers.slice(0, 3).join('; ')}`);
    const tables = new Set(conn.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).pluck().all() as string[]);
    if (!tables.has('kysely_migration')) throw new OfflineRefused(`${source} is a SQLite database but not a Mailroom database: give a file written by mailroom backup`);
    const stored = tables.has('store_settings')
      ? conn.prepare('SELECT value FROM store_settings WHERE name = ?').pluck().get(SECRET_CHECK_SETTING) as string | undefined
      : undefined;
    // Without a check value no node has started on it, so nothing in it depends on a secret.
    if (stored === undefined) return;
    const fix = `put the master.key kept with the backup into ${secret.dataDir} (with MAILROOM_SECRET unset), or set the MAILROOM_SECRET it was made under, first`;
    if (!secret.checkKey) throw new OfflineRefused(`${source} was made under a master secret and this node has none: ${fix}`);
    if (!isSecretOf(stored, secret.checkKey)) throw new OfflineRefused(`${source} was made under another master secret than this node's: ${fix}`);
  } finally {
    conn.close();
    for (const suffix of SIDE_FILES) rmSync(`${copy}${suffix}`, { force: true });
  }
}

/**
 * Renames the database aside once no process has it open, its WAL first
 * copied into it, so the file kept holds everything it had and stands alone.
 */
function setAside(database: string): string {
  openAlone(database, 'stop Mailroom, move the database and its -wal and -shm files aside yourself, and run restore again').close();
  const stamp = new Date().toISOString().replace(/:|\.\d+/g, '');
  let aside = `${database}.before-restore-${stamp}`;
  for (let n = 2; existsSync(aside); n++) aside = `${database}.before-restore-${stamp}-${n}`;
  renameSync(database, aside);
  return aside;
}
