// The store, opened as the other commands open it but only read: no
// migration is run and nothing is written, so a server running beside the
// check is not disturbed, and a store left behind shows as such.
import { existsSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { sql } from 'kysely';
import type { Config } from '../config.js';
import { existingKeyring, masterKeyFile, type Keyring } from '../keyring.js';
import { migrationsFromNewerVersion, openStore, type Db, type Store } from '../store/db.js';
import { migrations } from '../store/migrations/index.js';
import { isSecretOf, SECRET_MISMATCH_FIX, storedSecretCheck } from '../store/secret-check.js';
import { fail, ok, warn, type CheckResult } from './report.js';

/** Less free space than this under a SQLite store warns: a full disk makes Mailroom refuse new work. */
export const LOW_FREE_BYTES = 1024 ** 3;

/** Free pages past both of these warn: the file could give back that much (after a retention period was first set, say). */
export const MANY_FREE_BYTES = 64 * 1024 ** 2;
export const MANY_FREE_SHARE = 0.25;

const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(0)} MiB`;

export interface OpenedStore {
  store: Store | undefined;
  checks: CheckResult[];
}

const sqliteFileOf = (databaseUrl: string) => (databaseUrl.startsWith('sqlite:') ? databaseUrl.slice('sqlite:'.length) : undefined);

/** Opens the store unless there is none to open (a SQLite file never created), and says so. */
export function openStoreToCheck(config: Pick<Config, 'databaseUrl' | 'databasePreparedStatements'>): OpenedStore {
  const file = sqliteFileOf(config.databaseUrl);
  if (file !== undefined && file !== ':memory:' && !existsSync(file)) {
    return {
      store: undefined,
      checks: [fail('store', 'database', `no database at ${file}`, 'start Mailroom (or run mailroom migrate) with this MAILROOM_DATA_DIR / MAILROOM_DATABASE_URL, or point them at the existing database')],
    };
  }
  // PostgreSQL's connect and statement timeouts (the store's defaults) end the wait for a server that never answers.
  return { store: openStore(config.databaseUrl, { poolSize: 2, preparedStatements: config.databasePreparedStatements }), checks: [] };
}

/** What to do about a database no Mailroom has migrated yet (an empty one, made for it). */
const MIGRATE_FIX = 'run mailroom migrate (mailroom serve runs the migrations too as it starts)';

/** Whether a Mailroom has migrated this database: an empty one has none of its tables to read. */
export async function hasMailroomSchema(store: Store): Promise<boolean> {
  return (await store.pendingMigrations()).length < Object.keys(migrations).length;
}

export async function checkStore(store: Store, config: Pick<Config, 'databaseUrl' | 'dataDir' | 'secret'>): Promise<CheckResult[]> {
  const checks: CheckResult[] = [];
  try {
    await sql`SELECT 1`.execute(store.db);
  } catch (err) {
    return [fail('store', 'database', `cannot be read: ${(err as Error).message}`, 'check MAILROOM_DATABASE_URL, and that the database server runs')];
  }
  const file = sqliteFileOf(config.databaseUrl);
  checks.push(ok('store', 'database', file === undefined ? 'PostgreSQL answers' : `${file} answers`));
  const newer = await migrationsFromNewerVersion(store.db);
  const pending = await store.pendingMigrations();
  checks.push(newer.length > 0
    ? fail('store', 'migrations', `${newer.length} from a newer Mailroom: ${newer.join(', ')}`, 'run the Mailroom version that migrated this database (this one refuses to start on it)')
    : pending.length === 0
      ? ok('store', 'migrations', 'up to date')
      : pending.length === Object.keys(migrations).length
        ? fail('store', 'migrations', 'none run: the database has no Mailroom schema yet', MIGRATE_FIX)
        : fail('store', 'migrations', `${pending.length} not run: ${pending.join(', ')}`, MIGRATE_FIX));
  if (pending.length === 0) checks.push(await checkSecret(store.db, config));
  if (file !== undefined && file !== ':memory:') {
    checks.push(await freeSpace(config.dataDir));
    if (pending.length === 0) checks.push(await freePages(store.db));
  }
  return checks;
}

/**
 * Whether this node's master secret is the one the store was set up under
 * (store/secret-check.ts), read without writing: a node with another one, or
 * with none yet (it would make one), refuses to start on this store.
 */
async function checkSecret(db: Db, config: Pick<Config, 'dataDir' | 'secret'>): Promise<CheckResult> {
  const where = config.secret ? 'MAILROOM_SECRET' : masterKeyFile(config.dataDir);
  let keyring: Keyring | undefined;
  try {
    keyring = existingKeyring(config.dataDir, config.secret);
  } catch (err) {
    return fail('store', 'master secret', (err as Error).message, `put back the data dir's master.key, or ${SECRET_MISMATCH_FIX}`);
  }
  const stored = await storedSecretCheck(db);
  if (stored === undefined) {
    return ok('store', 'master secret', keyring
      ? `no node has started on this store yet: the first start records that it is set up under ${where}`
      : `none yet: the first start makes ${where} (or set MAILROOM_SECRET)`);
  }
  if (!keyring) {
    return fail('store', 'master secret', `the store was set up under a master secret this node does not have (no MAILROOM_SECRET, no ${where}): it would make a new one and refuse to start`, SECRET_MISMATCH_FIX);
  }
  return isSecretOf(stored, keyring.storeCheckKey)
    ? ok('store', 'master secret', `${where} is the secret the store was set up under`)
    : fail('store', 'master secret', `${where} is not the secret the store was set up under: this node refuses to start on it`, SECRET_MISMATCH_FIX);
}

/** How much of the SQLite file is pages deleted rows left: reused for new rows, given back only by a compaction. */
async function freePages(db: Db): Promise<CheckResult> {
  const pragma = async (name: string) => Number(Object.values((await sql.raw(`PRAGMA ${name}`).execute(db)).rows[0] as object)[0]);
  const pageSize = await pragma('page_size');
  const [free, total] = [await pragma('freelist_count') * pageSize, await pragma('page_count') * pageSize];
  const said = `${mib(free)} of the ${mib(total)} database are free pages, which new rows reuse`;
  return free >= MANY_FREE_BYTES && free >= total * MANY_FREE_SHARE
    ? warn('store', 'free pages', said, 'to give them back to the disk, stop Mailroom and run mailroom store compact')
    : ok('store', 'free pages', said);
}

async function freeSpace(dir: string): Promise<CheckResult> {
  const fs = await statfs(dir);
  const free = fs.bavail * fs.bsize;
  if (free < LOW_FREE_BYTES) {
    return warn('store', 'free space', `${gib(free)} free on the filesystem of ${dir}`,
      `free some space there, or move the data dir to a larger disk: under ${gib(LOW_FREE_BYTES)} a burst of mail can fill it`);
  }
  return ok('store', 'free space', `${gib(free)} free on the filesystem of ${dir}`);
}
