import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { onPostgres } from '../../helpers/database.js';
import { openStore, type Store, type Tx } from '../../../src/store/db.js';
import { walCheckpointer, type WalCheckpointer } from '../../../src/store/wal-checkpointer.js';

// The WAL past 1,000 pages of 4 KB: one unit writing this much takes it there.
const PAST_THE_MARK = 5_000_000;

let dir: string;
beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'mailroom-checkpoint-')); });
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function openBlobStore(options: Parameters<typeof openStore>[1]): Promise<Store> {
  const store = openStore(`sqlite:${join(dir, 'db.sqlite')}`, options);
  await sql`create table blobs (body blob)`.execute(store.db);
  return store;
}

const addBlob = (tx: Tx, bytes: number) => sql`insert into blobs (body) values (zeroblob(${bytes}))`.execute(tx);
const blobCount = async (store: Store) => Number((await sql<{ n: number }>`select count(*) as n from blobs`.execute(store.db)).rows[0].n);
const until = async (done: () => boolean) => {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(done()).toBe(true);
};

/** A checkpointer whose checkpoints end when the test says. */
function heldCheckpointer() {
  const held: Array<{ end(): void; fail(err: Error): void }> = [];
  let closed = false;
  const checkpointer: WalCheckpointer = {
    checkpoint: () => new Promise<void>((resolve, reject) => void held.push({ end: resolve, fail: reject })),
    async close() { closed = true; },
  };
  return { held, checkpointer, closed: () => closed };
}

describe.skipIf(onPostgres)('WAL checkpoints between commits', () => {
  it('keeps the WAL bounded under a steady write load, checkpointing on a thread of its own', async () => {
    let checkpoints = 0;
    const store = await openBlobStore({
      checkpointer: (file) => {
        const real = walCheckpointer(file);
        return { checkpoint: () => { checkpoints++; return real.checkpoint(); }, close: () => real.close() };
      },
    });
    let largestWal = 0;
    // Four writers, 16 KB a unit, 30 MB in all: SQLite's own checkpoint, a backstop at 10,000 pages, would let the WAL reach 40 MB.
    await Promise.all(Array.from({ length: 4 }, async () => {
      for (let i = 0; i < 480; i++) {
        await store.write((tx) => addBlob(tx, 16_000));
        largestWal = Math.max(largestWal, store.fileSizes()!.wal);
      }
    }));
    expect(await blobCount(store)).toBe(1920);
    expect(checkpoints).toBeGreaterThan(3);
    expect(largestWal).toBeLessThan(2 * PAST_THE_MARK);
    await store.close();
    // The thread's connection closed first: the store's was the last, which removes the WAL.
    expect(existsSync(join(dir, 'db.sqlite-wal'))).toBe(false);
  });

  it('holds the next commit while a checkpoint runs, then commits the units that queued together; each resolves after its sync', async () => {
    const syncs: Array<() => void> = [];
    const { held, checkpointer } = heldCheckpointer();
    const store = await openBlobStore({ syncFile: (fd, done) => void syncs.push(() => done(null)), checkpointer: () => checkpointer });
    const big = store.write((tx) => addBlob(tx, PAST_THE_MARK));
    await until(() => syncs.length === 1 && held.length === 1);
    syncs.shift()!();
    await big;

    let settled = 0;
    const txs = new Set<Tx>();
    const queued = [1, 2, 3].map(() => store.write(async (tx) => { txs.add(tx); await addBlob(tx, 10); }).then(() => settled++));
    await new Promise((r) => setTimeout(r, 30));
    // Nothing commits while the checkpoint runs; reads go on.
    expect(await blobCount(store)).toBe(1);
    expect(txs.size).toBe(0);
    expect(syncs).toHaveLength(0);

    held.shift()!.end();
    await until(() => syncs.length === 1);
    expect(await blobCount(store)).toBe(4);
    expect(txs.size).toBe(1);
    // Committed, but not acknowledged before the sync.
    expect(settled).toBe(0);
    syncs.shift()!();
    await Promise.all(queued);
    await store.close();
  });

  it('goes on committing after a checkpoint fails, and asks again', async () => {
    const { held, checkpointer } = heldCheckpointer();
    const store = await openBlobStore({ checkpointer: () => checkpointer });
    const big = store.write((tx) => addBlob(tx, PAST_THE_MARK));
    await until(() => held.length === 1);
    const after = store.write((tx) => addBlob(tx, 10));
    held.shift()!.fail(new Error('SQLITE_IOERR'));
    await Promise.all([big, after]);
    expect(await blobCount(store)).toBe(2);
    // The WAL is still past the mark, so the commit after the failure asked for another.
    expect(held).toHaveLength(1);
    held.shift()!.end();
    await store.close();
  });

  it('closes once a running checkpoint has ended, the units queued behind it committed', async () => {
    const { held, checkpointer, closed } = heldCheckpointer();
    const store = await openBlobStore({ checkpointer: () => checkpointer });
    await store.write((tx) => addBlob(tx, PAST_THE_MARK));
    await until(() => held.length === 1);
    const queued = store.write((tx) => addBlob(tx, 10));
    let storeClosed = false;
    const closing = store.close().then(() => { storeClosed = true; });
    await new Promise((r) => setTimeout(r, 30));
    expect(storeClosed).toBe(false);
    expect(closed()).toBe(false);
    held.shift()!.end();
    await until(() => held.length === 1);
    // The unit that waited for the first asked for another checkpoint; the store waits for that one too.
    held.shift()!.end();
    await Promise.all([queued, closing]);
    expect(closed()).toBe(true);
  });

  it('closes a store while its thread runs a checkpoint', async () => {
    const store = await openBlobStore({});
    // The first write past the mark starts the thread, the second has it checkpoint.
    await store.write((tx) => addBlob(tx, PAST_THE_MARK));
    await new Promise((r) => setTimeout(r, 200));
    await store.write((tx) => addBlob(tx, 10));
    await store.close();
    expect(existsSync(join(dir, 'db.sqlite-wal'))).toBe(false);
    const reopened = openStore(`sqlite:${join(dir, 'db.sqlite')}`);
    expect(await blobCount(reopened)).toBe(2);
    await reopened.close();
  });

  it('keeps the process alive while a close awaits its thread, the only thing left to run', () => {
    const db = fileURLToPath(new URL('../../../src/store/db.ts', import.meta.url));
    const script = join(dir, 'close.mts');
    writeFileSync(script, `
      import { randomBytes } from 'node:crypto';
      const { openStore } = await import(${JSON.stringify(db)});
      // Syncs end at once, so the checkpoint is what the store waits for.
      const store = openStore(${JSON.stringify(`sqlite:${join(dir, 'db.sqlite')}`)}, { syncFile: (fd, done) => done(null) });
      await store.db.schema.createTable('blobs').addColumn('body', 'blob').execute();
      const addBlob = (bytes) => store.write((tx) => tx.insertInto('blobs').values({ body: randomBytes(bytes) }).execute());
      await addBlob(${PAST_THE_MARK});
      await new Promise((r) => setTimeout(r, 200));
      // A checkpoint of 30 MB, still running when close waits for it.
      await addBlob(30_000_000);
      await store.close();
      console.log('closed');
    `);
    const child = spawnSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8', timeout: 30_000 });
    // An unsettled top-level await (the loop empty while close waits) exits with 13.
    expect(child.status).toBe(0);
    expect(child.stdout.trim()).toBe('closed');
  });

  it('has no thread for a store in memory', async () => {
    let made = 0;
    const store = openStore('sqlite::memory:', { checkpointer: (file) => { made++; return walCheckpointer(file); } });
    await sql`create table blobs (body blob)`.execute(store.db);
    await store.write((tx) => addBlob(tx, PAST_THE_MARK));
    await store.write((tx) => addBlob(tx, 10));
    expect(made).toBe(0);
    await store.close();
  });
});
