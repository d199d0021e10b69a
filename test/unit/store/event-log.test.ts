import { describe, expect, it } from 'vitest';
import { newId } from '../../../src/core/ids.js';
import type { Db, Tx } from '../../../src/store/db.js';
import { followerPosition, nextEventBatch, saveFollowerPosition } from '../../../src/store/event-log.js';
import { onPostgres } from '../../helpers/database.js';
import { useTempStore } from '../../helpers/store.js';

// Followers of the events table read it in batches of positions; a batch
// must never pass over an event that commits after it was read.

const temp = useTempStore();

const insertEvent = (db: Db | Tx) => db.insertInto('events').values({
  id: newId('evt'), workspace_id: 'ws_1', type: 'email.sent', data: '{}', created_at: Date.now(),
}).returning('pos').executeTakeFirstOrThrow();

/** A transaction that inserts an event and stays open until `end` is called (commit, or rollback with `false`). */
function openTransaction(db: Db) {
  let finish!: (commit: boolean) => void;
  const decided = new Promise<boolean>((resolve) => (finish = resolve));
  let inserted!: (pos: number) => void;
  const pos = new Promise<number>((resolve) => (inserted = resolve));
  const done = db.transaction().execute(async (tx) => {
    inserted((await insertEvent(tx)).pos);
    if (!(await decided)) throw new Error('rolled back');
  }).catch((err: Error) => { if (err.message !== 'rolled back') throw err; });
  return { pos, end: async (commit = true) => { finish(commit); await done; } };
}

describe('batches of the events table', () => {
  it('gives every event after a position, and nothing when none is new', async () => {
    expect(await nextEventBatch(temp.store.db, 0, 10)).toBeUndefined();
    for (let i = 0; i < 5; i++) await insertEvent(temp.store.db);
    expect(await nextEventBatch(temp.store.db, 0, 3)).toEqual({ hi: 3, count: 3 });
    expect(await nextEventBatch(temp.store.db, 3, 10)).toEqual({ hi: 5, count: 2 });
    expect(await nextEventBatch(temp.store.db, 5, 10)).toBeUndefined();
  });

  // Transactions side by side, each on a connection of its own: PostgreSQL's (SQLite has one writer).
  it.runIf(onPostgres)('stops before an event still in flight, and passes over one rolled back once its transaction has ended', async () => {
    const first = openTransaction(temp.store.db);
    const firstPos = await first.pos;
    const second = await insertEvent(temp.store.db);
    expect(second.pos).toBe(firstPos + 1);
    // The later position is committed, the earlier one not yet: nothing may be taken.
    expect(await nextEventBatch(temp.store.db, 0, 10)).toBeUndefined();
    await first.end();
    expect(await nextEventBatch(temp.store.db, 0, 10)).toEqual({ hi: second.pos, count: 2 });

    const doomed = openTransaction(temp.store.db);
    const doomedPos = await doomed.pos;
    const after = await insertEvent(temp.store.db);
    expect(await nextEventBatch(temp.store.db, second.pos, 10)).toBeUndefined();
    await doomed.end(false);
    expect(await nextEventBatch(temp.store.db, second.pos, 10)).toEqual({ hi: after.pos, count: 1 });
    expect(after.pos).toBe(doomedPos + 1);
  });

  it('lets one run of a follower at a time take its position, so two at once handle different events', async () => {
    const run = () => temp.store.write(async (tx) => {
      const pos = await followerPosition(tx, 'analytics');
      await new Promise((resolve) => setTimeout(resolve, 50));
      await saveFollowerPosition(tx, 'analytics', pos + 1);
      return pos;
    });
    expect((await Promise.all([run(), run()])).sort()).toEqual([0, 1]);
    expect(await followerPosition(temp.store.db, 'analytics')).toBe(2);
  });
});
