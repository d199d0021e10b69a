import Sqlite from 'better-sqlite3';
import { execFile, fork, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

// `mailroom restore`, as an operator runs it on a backup `mailroom backup`
// wrote: safe after a crash, when the old database's WAL is still beside it
// (a backup copied over by hand gets that WAL replayed onto it), and a
// refusal in one line for anything it cannot put in place. And `mailroom
// store compact`, which puts a compact copy in the database's place the same way.

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const STORE_HOLDER = resolve(import.meta.dirname, '../helpers/store-holder.ts');

interface Install { dataDir: string; database: string; env: Record<string, string> }

const dirs: string[] = [];
const children: ChildProcess[] = [];

function install(env: Record<string, string> = {}): Install {
  const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-restore-'));
  dirs.push(dataDir);
  const database = join(dataDir, 'mailroom.db');
  return { dataDir, database, env: { MAILROOM_DATA_DIR: dataDir, MAILROOM_DATABASE_URL: `sqlite:${database}`, MAILROOM_LOG_LEVEL: 'silent', ...env } };
}

async function mailroom(args: string[], at: Install, env: Record<string, string> = {}) {
  return run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { cwd: ROOT, env: { ...process.env, ...at.env, ...env }, timeout: 60_000 });
}

/** The run's exit code and output, whether it succeeded or not. */
const outcome = (args: string[], at: Install, env: Record<string, string> = {}) => mailroom(args, at, env).then(
  ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
  (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
);

/** A process with the store open, the workspace `name` written in it. */
async function holdStore(at: Install, name: string): Promise<ChildProcess> {
  const child = fork(STORE_HOLDER, [name], { cwd: ROOT, execArgv: ['--import', 'tsx'], env: { ...process.env, ...at.env }, stdio: 'ignore' });
  children.push(child);
  await new Promise<void>((done, fail) => {
    child.once('message', () => done());
    child.once('exit', (code) => fail(new Error(`the store holder exited with ${code}`)));
  });
  return child;
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once('exit', done));
  child.kill('SIGKILL');
  await exited;
}

const workspacesIn = (file: string) => {
  const conn = new Sqlite(file, { readonly: true, fileMustExist: true });
  try {
    return conn.prepare('SELECT name FROM workspaces ORDER BY name').pluck().all();
  } finally {
    conn.close();
  }
};

const integrityOf = (file: string) => {
  const conn = new Sqlite(file, { readonly: true, fileMustExist: true });
  try {
    return conn.pragma('integrity_check', { simple: true });
  } finally {
    conn.close();
  }
};

const digest = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

afterEach(async () => {
  await Promise.all(children.splice(0).map(kill));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('mailroom restore', { timeout: 120_000 }, () => {
  it('restores a backup after a crash: the old WAL is folded into the database set aside, not replayed onto the backup', async () => {
    const at = install();
    await mailroom(['workspaces', 'create', '--name', 'before-backup'], at);
    const backupFile = join(at.dataDir, 'mailroom-backup.db');
    const backedUp = await mailroom(['backup', backupFile], at);
    expect(backedUp.stdout).toContain(`npx mailroom restore ${backupFile}`);
    expect(statSync(backupFile).mode & 0o777).toBe(0o600);

    // Written after the backup, then the process dies holding the store.
    const holder = await holdStore(at, 'after-backup');
    const busy = await outcome(['restore', backupFile], at);
    expect(busy.code).toBe(1);
    expect(busy.stderr.trim().split('\n')).toEqual(['mailroom: the database is in use: stop Mailroom first']);
    expect(readdirSync(at.dataDir).filter((f) => /restor/.test(f))).toEqual([]);
    await kill(holder);
    expect(existsSync(`${at.database}-wal`)).toBe(true);
    expect(existsSync(`${at.database}-shm`)).toBe(true);

    const restored = await mailroom(['restore', backupFile], at);
    const aside = readdirSync(at.dataDir).filter((f) => f.startsWith('mailroom.db.before-restore-'));
    expect(aside).toEqual([expect.stringMatching(/^mailroom\.db\.before-restore-\d{4}-\d\d-\d\dT\d{6}Z$/)]);
    expect(restored.stdout.trim().split('\n')).toEqual([
      `Restored the database ${at.database} from ${backupFile}.`,
      `The database that was there is kept as ${join(at.dataDir, aside[0])}: delete it once the restored one serves as it should.`,
      'Start Mailroom.',
    ]);
    expect(readdirSync(at.dataDir).filter((f) => /-wal$|-shm$|-journal$|\.restoring/.test(f))).toEqual([]);
    expect(statSync(at.database).mode & 0o777).toBe(0o600);
    expect(integrityOf(at.database)).toBe('ok');
    expect(workspacesIn(at.database)).toEqual(['before-backup']);
    // Nothing written before the restore is lost: the database set aside holds it, WAL and all, in one file.
    const kept = join(at.dataDir, aside[0]);
    expect(integrityOf(kept)).toBe('ok');
    expect(workspacesIn(kept)).toEqual(['after-backup', 'before-backup']);

    // And Mailroom starts on it under the same master secret.
    expect((await mailroom(['workspaces', 'list'], at)).stdout).toMatch(/before-backup/);
  });

  it('refuses, in one line and with the database untouched, a backup it cannot put in place', async () => {
    const at = install({ MAILROOM_SECRET: 'a'.repeat(40) });
    await mailroom(['workspaces', 'create', '--name', 'kept'], at);
    const backup = join(at.dataDir, 'mailroom-backup.db');
    await mailroom(['backup', backup], at);
    const junk = join(at.dataDir, 'junk.db');
    writeFileSync(junk, 'not a database, '.repeat(100));
    const foreign = join(at.dataDir, 'foreign.db');
    const conn = new Sqlite(foreign);
    conn.exec('CREATE TABLE notes (text TEXT)');
    conn.close();
    const before = { files: readdirSync(at.dataDir).sort(), digest: digest(at.database) };

    const refusals = [
      [['restore', join(at.dataDir, 'missing.db')], {}, `mailroom: there is no file ${join(at.dataDir, 'missing.db')}`],
      [['restore', junk], {}, `mailroom: ${junk} is not a SQLite database: give a file written by mailroom backup`],
      [['restore', foreign], {}, `mailroom: ${foreign} is a SQLite database but not a Mailroom database: give a file written by mailroom backup`],
      [['restore', at.database], {}, `mailroom: ${at.database} is the database itself, not a backup of it`],
      [['restore', backup], { MAILROOM_SECRET: 'b'.repeat(40) }, expect.stringMatching(/^mailroom: .* was made under another master secret than this node's: put the master\.key kept with the backup into /)],
      [['restore', backup], { MAILROOM_SECRET: '' }, expect.stringMatching(/^mailroom: .* was made under a master secret and this node has none: /)],
    ] as const;
    for (const [args, env, line] of refusals) {
      const refused = await outcome([...args], at, env);
      expect(refused.code, args.join(' ')).toBe(1);
      expect(refused.stderr.trim().split('\n')).toEqual([line]);
    }
    // The master secret was not made by the run without one.
    expect(existsSync(join(at.dataDir, 'master.key'))).toBe(false);
    expect({ files: readdirSync(at.dataDir).sort(), digest: digest(at.database) }).toEqual(before);

    const postgres = await outcome(['restore', backup], at, { MAILROOM_DATABASE_URL: 'postgres://mailroom@127.0.0.1:1/mailroom' });
    expect(postgres.code).toBe(64);
    expect(postgres.stderr).toMatch(/^mailroom: restore puts back a SQLite backup: restore PostgreSQL with its own tools \(pg_restore/);
  });

  it('restores where there was no database yet, given the master secret', async () => {
    const from = install();
    await mailroom(['workspaces', 'create', '--name', 'moved'], from);
    const backup = join(from.dataDir, 'mailroom-backup.db');
    await mailroom(['backup', backup], from);

    const to = install();
    copyFileSync(join(from.dataDir, 'master.key'), join(to.dataDir, 'master.key'));
    const { stdout } = await mailroom(['restore', backup], to);
    expect(stdout.trim().split('\n')).toEqual([`Restored the database ${to.database} from ${backup}.`, 'Start Mailroom.']);
    expect(readdirSync(to.dataDir).sort()).toEqual(['mailroom.db', 'master.key']);
    expect(workspacesIn(to.database)).toEqual(['moved']);
  });
});

describe('mailroom store compact', { timeout: 120_000 }, () => {
  const pragmaOf = (file: string, name: string) => {
    const conn = new Sqlite(file, { readonly: true, fileMustExist: true });
    try {
      return conn.pragma(name, { simple: true });
    } finally {
      conn.close();
    }
  };

  it('gives the free pages of deleted rows back to the disk, refusing while a process holds the store, and keeps every row', async () => {
    const at = install();
    await mailroom(['workspaces', 'create', '--name', 'kept'], at);
    // 16 MB of rows written, then deleted: their pages stay in the file, free.
    const conn = new Sqlite(at.database);
    conn.exec('CREATE TABLE filler (b BLOB)');
    const insert = conn.prepare('INSERT INTO filler VALUES (randomblob(65536))');
    for (let i = 0; i < 256; i++) insert.run();
    conn.exec('DROP TABLE filler');
    conn.close();
    expect(pragmaOf(at.database, 'freelist_count')).toBeGreaterThan(4_000);

    const holder = await holdStore(at, 'held');
    const sizeWhileHeld = statSync(at.database).size;
    const busy = await outcome(['store', 'compact'], at);
    expect(busy.code).toBe(1);
    expect(busy.stderr.trim().split('\n')).toEqual(['mailroom: the database is in use: stop Mailroom first']);
    expect(statSync(at.database).size).toBe(sizeWhileHeld);
    await kill(holder);

    // What a compaction killed halfway left is replaced, not read.
    writeFileSync(`${at.database}.compacting`, 'left by an interrupted compaction');
    const before = statSync(at.database).size + statSync(`${at.database}-wal`).size;
    const { stdout } = await mailroom(['store', 'compact'], at);
    const after = statSync(at.database).size;
    const mb = (n: number) => `${(n / 1_048_576).toFixed(1)} MB`;
    expect(stdout.trim().split('\n')).toEqual([`Compacted the database ${at.database}: ${mb(before)} before, ${mb(after)} now.`]);
    expect(before - after).toBeGreaterThan(16_000_000);
    expect(pragmaOf(at.database, 'freelist_count')).toBe(0);
    expect(integrityOf(at.database)).toBe('ok');
    // The workspace the crashed holder wrote was in its WAL, folded in first.
    expect(workspacesIn(at.database)).toEqual(['held', 'kept']);
    expect(statSync(at.database).mode & 0o777).toBe(0o600);
    expect(readdirSync(at.dataDir).sort()).toEqual(['mailroom.db', 'master.key']);

    const again = await mailroom(['store', 'compact'], at);
    expect(again.stdout.trim()).toBe(`The database ${at.database} has no free pages: nothing to give back (${mb(after)}).`);
    // Mailroom opens the compacted database as its own, in WAL mode again, and reads what it held.
    const listed = JSON.parse((await mailroom(['workspaces', 'list', '--json'], at)).stdout) as Array<{ name: string }>;
    expect(listed.map((w) => w.name)).toEqual(['kept', 'held']);
    expect(pragmaOf(at.database, 'journal_mode')).toBe('wal');
  });

  it('refuses a database that is not there, and a store on PostgreSQL, in one line', async () => {
    const at = install();
    const missing = await outcome(['store', 'compact'], at);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim().split('\n')).toEqual([`mailroom: there is no database at ${at.database}`]);
    const onPostgres = await outcome(['store', 'compact'], at, { MAILROOM_DATABASE_URL: 'postgres://mailroom@127.0.0.1:1/mailroom' });
    expect(onPostgres.code).toBe(64);
    expect(onPostgres.stderr).toContain('store compact compacts a SQLite database: on PostgreSQL, autovacuum reuses the space of deleted rows');
    expect(readdirSync(at.dataDir)).toEqual([]);
  });
});
