import { sql } from 'kysely';
import type { Db, Tx } from './db.js';

/**
 * The next batch of at most `max` events after position `after`: its last
 * position and size, or undefined when nothing is new. Shared by the engines
 * that follow the events table from their stored position (search index,
 * analytics rollups, engagement tiers).
 */
export async function nextEventBatch(tx: Tx, after: number, max: number): Promise<{ hi: number; count: number } | undefined> {
  const r = await sql<{ hi: number | null; n: number }>`
    select max(pos) as hi, count(*) as n from (select pos from events where pos > ${after} order by pos limit ${sql.lit(max)}) as batch`
    .execute(tx);
  const hi = r.rows[0]?.hi;
  return hi === null || hi === undefined ? undefined : { hi: Number(hi), count: Number(r.rows[0].n) };
}

// Followers of the events table (webhook fan-out, the events list's side
// indexes, analytics, engagement) read it in position order and keep how far
// they got in one table, event_watermarks, each under its name. A follower
// saves its position in the transaction that records what it made of the
// events, so a crash loses nothing and repeats nothing.

export type Follower = 'webhooks' | 'events_index' | 'analytics' | 'engagement';

/** The position of the last event `follower` has handled (0 before the first). */
export async function followerPosition(db: Db | Tx, follower: Follower): Promise<number> {
  const row = await db.selectFrom('event_watermarks').select('last_event_pos').where('name', '=', follower).executeTakeFirst();
  return Number(row?.last_event_pos ?? 0);
}

/** Records, in the caller's transaction, that `follower` has handled the events up to `pos`. */
export async function saveFollowerPosition(tx: Tx, follower: Follower, pos: number): Promise<void> {
  await tx.insertInto('event_watermarks').values({ name: follower, last_event_pos: pos })
    .onConflict((oc) => oc.column('name').doUpdateSet({ last_event_pos: pos })).execute();
}
