import { sql } from 'kysely';
import type { Tx } from './db.js';

/**
 * The next batch of at most `max` events after position `after`: its last
 * position and size, or undefined when nothing is new. Shared by the engines
 * that follow the events table from a stored watermark (search index,
 * analytics rollups, engagement tiers).
 */
export async function nextEventBatch(tx: Tx, after: number, max: number): Promise<{ hi: number; count: number } | undefined> {
  const r = await sql<{ hi: number | null; n: number }>`
    select max(pos) as hi, count(*) as n from (select pos from events where pos > ${after} order by pos limit ${sql.lit(max)}) as batch`
    .execute(tx);
  const hi = r.rows[0]?.hi;
  return hi === null || hi === undefined ? undefined : { hi: Number(hi), count: Number(r.rows[0].n) };
}
