import { sql, type Kysely } from 'kysely';
import { compiledOn, inWriteUnit, runShaped, type Db, type Tx } from './db.js';
import { lockedForUpdate } from './lease.js';
import { isPostgres } from './schema-helpers.js';

/**
 * The next batch of at most `max` events after position `after`: its last
 * position and size, or undefined when nothing is new. Shared by the engines
 * that follow the events table from their stored position (search index,
 * analytics rollups, engagement tiers, webhook fan-out). A batch holds only
 * settled positions (see settledBatch): a follower that moves past it never
 * passes over an event committed later.
 */
export async function nextEventBatch(db: Db | Tx, after: number, max: number): Promise<{ hi: number; count: number } | undefined> {
  if (isPostgres(db as unknown as Kysely<unknown>)) return settledBatch(db, after, max);
  // SQLite has one writer: an event is visible only once every lower position is.
  const r = await sql<{ hi: number | null; n: number }>`
    select max(pos) as hi, count(*) as n from (select pos from events where pos > ${after} order by pos limit ${sql.lit(max)}) as batch`
    .execute(db);
  const hi = r.rows[0]?.hi;
  return hi === null || hi === undefined ? undefined : { hi: Number(hi), count: Number(r.rows[0].n) };
}

// On PostgreSQL, transactions take positions from the identity sequence as
// they insert, but commit in their own order: position 7 can be visible while
// 6 is still in flight, and a follower that moved to 7 would never see 6. So
// a batch ends before the first missing position, unless that position is
// settled: missing for good, its transaction rolled back. A position missing
// under snapshot S, below one visible in S, was taken before S by a
// transaction then in progress; once every transaction in progress at S has
// ended (the oldest one running now is newer than all of them), it is either
// visible or never will be. The snapshot at which each gap was first seen is
// kept, so that under steady load (there is always some transaction in
// flight) a rolled-back gap still settles once the transactions of that
// moment end. (A transaction whose first write is its event insert gets its
// transaction id a moment after its position; a snapshot taken in between
// misses it. The window is a few instructions long.)
const gapsSeen = new Map<string, string>();
const GAPS_KEPT = 10_000;

async function settledBatch(db: Db | Tx, after: number, max: number): Promise<{ hi: number; count: number } | undefined> {
  const { rows } = await sql<{ pos: number; snap: string; place: string }>`
    SELECT pos, pg_current_snapshot()::text AS snap, current_database() || ':' || coalesce(inet_server_port(), 0) AS place
    FROM events WHERE pos > ${after} ORDER BY pos LIMIT ${sql.lit(max)}`.execute(db);
  if (rows.length === 0) return undefined;
  let hi = after;
  let count = 0;
  for (const { pos } of rows) {
    if (pos !== hi + 1 && !(await gapSettled(db, rows[0].place, hi + 1, pos - 1, rows[0].snap))) break;
    hi = pos;
    count++;
  }
  return count === 0 ? undefined : { hi, count };
}

/**
 * Whether the missing positions `lo`..`hi` (of the database at `place`) are
 * missing for good: every transaction in progress when the gap was first
 * seen has ended, and none of them committed one of these positions
 * meanwhile (one statement, so both are of the same moment). When one did,
 * the gap is not settled: the next batch reads that event in order.
 */
async function gapSettled(db: Db | Tx, place: string, lo: number, hi: number, snapshot: string): Promise<boolean> {
  const key = `${place}:${lo}`;
  let seen = gapsSeen.get(key);
  if (seen === undefined) {
    if (gapsSeen.size >= GAPS_KEPT) gapsSeen.clear();
    gapsSeen.set(key, (seen = snapshot));
  }
  const { rows } = await sql<{ ended: boolean; filled: boolean }>`
    SELECT pg_snapshot_xmin(pg_current_snapshot()) >= pg_snapshot_xmax(${seen}::pg_snapshot) AS ended,
      EXISTS (SELECT 1 FROM events WHERE pos >= ${lo} AND pos <= ${hi}) AS filled`.execute(db);
  const { ended, filled } = rows[0];
  if (ended) gapsSeen.delete(key);
  return ended && !filled;
}

// Followers of the events table (webhook fan-out, the events list's side
// indexes, analytics, engagement) read it in position order and keep how far
// they got in one table, event_watermarks, each under its name. A follower
// saves its position in the transaction that records what it made of the
// events, so a crash loses nothing and repeats nothing. The emails search
// index on SQLite follows the emails table the same way and keeps its
// position (an emails.pos) here too, as 'emails_index'.

export type Follower = 'webhooks' | 'events_index' | 'analytics' | 'engagement' | 'emails_index';

/**
 * The position of the last event `follower` has handled (0 before the
 * first). Read in a store.write unit on PostgreSQL, where units run side by
 * side, it locks the follower's row until the unit ends: a second run of the
 * same follower waits, then reads the position the first one saved, rather
 * than handle the same events again. (On SQLite units never overlap.)
 */
export async function followerPosition(db: Db | Tx, follower: Follower): Promise<number> {
  const lock = inWriteUnit(db) && isPostgres(db as unknown as Kysely<unknown>);
  if (lock) {
    await db.insertInto('event_watermarks').values({ name: follower, last_event_pos: 0 })
      .onConflict((oc) => oc.column('name').doNothing()).execute();
  }
  const read = (name: string) => db.selectFrom('event_watermarks').select('last_event_pos').where('name', '=', name);
  // The lock-free read is an engine's idle look, several a second: compiled once.
  const { rows: [row] } = lock ? { rows: [await lockedForUpdate(db, read(follower)).executeTakeFirst()] }
    : await runShaped(db, 'follower position', [follower], ([name]) => read(name as string));
  return Number(row?.last_event_pos ?? 0);
}

/**
 * Whether a row past `follower`'s position is visible (an event; an email
 * for the emails search index): one read, so that a follower with nothing
 * new skips the write transaction of its batch (and the scheduler the claim
 * of its run).
 */
export async function followerBehind(db: Db, follower: Follower): Promise<boolean> {
  const followed = follower === 'emails_index' ? 'emails' : 'events';
  const { rows: [row] } = await runShaped(db, `follower behind on ${followed}`, [follower], ([name]) => compiledOn(db, sql<{ behind: boolean | number }>`
    SELECT EXISTS (SELECT 1 FROM ${sql.table(followed)} WHERE pos > coalesce((SELECT last_event_pos FROM event_watermarks WHERE name = ${name}), 0)) AS behind`));
  return Boolean(row.behind);
}

/**
 * The position every follower of the events table has reached (0 while one
 * has not begun): an event at or below it may be deleted without one of
 * them missing it.
 */
export async function slowestEventFollower(db: Db | Tx): Promise<number> {
  const followers: Follower[] = ['webhooks', 'events_index', 'analytics', 'engagement'];
  const rows = await db.selectFrom('event_watermarks').select(['name', 'last_event_pos']).where('name', 'in', followers).execute();
  return rows.length < followers.length ? 0 : Math.min(...rows.map((r) => Number(r.last_event_pos)));
}

/** Records, in the caller's transaction, that `follower` has handled the events up to `pos`. */
export async function saveFollowerPosition(tx: Tx, follower: Follower, pos: number): Promise<void> {
  await tx.insertInto('event_watermarks').values({ name: follower, last_event_pos: pos })
    .onConflict((oc) => oc.column('name').doUpdateSet({ last_event_pos: pos })).execute();
}
