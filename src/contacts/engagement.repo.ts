import { sql, type RawBuilder } from 'kysely';
import { followerPosition, nextEventBatch, saveFollowerPosition } from '../store/event-log.js';
import type { Db, Tx } from '../store/db.js';
import type { EngagementTier } from './contacts.tables.js';
import {
  AT_RISK_WITHIN_MS, ENGAGED_WITHIN_MS, ENGAGEMENT_EVENT_TYPES, INACTIVE_WITHIN_MS, NEW_WITHIN_MS, SEND_EVENT_TYPES,
  type EngagementFacts,
} from './engagement.js';

// Set-based upkeep of engagement tiers. Events are folded, in position order
// and from a stored watermark, into one row of facts per address
// (address_engagement); a contact's tier is then a function of its address's
// facts and the time, so refreshing tiers never re-reads the events table.
// The periodic work is set-based: one statement per batch of events or of
// contacts, never one per contact.

const IN_CHUNK = 500;

/** engagementTier() of engagement.ts, as SQL over `ae.first_sent_at` and `ae.last_engaged_at`. */
function tierCase(now: number): RawBuilder<EngagementTier> {
  const first = sql.ref('ae.first_sent_at');
  const last = sql.ref('ae.last_engaged_at');
  return sql<EngagementTier>`case
    when ${last} is null and ${first} is null then 'no_data'
    when ${last} >= ${now - ENGAGED_WITHIN_MS} then 'engaged'
    when ${last} is null and ${first} >= ${now - NEW_WITHIN_MS} then 'new'
    when coalesce(${last}, ${first}) >= ${now - AT_RISK_WITHIN_MS} then 'at_risk'
    when coalesce(${last}, ${first}) >= ${now - INACTIVE_WITHIN_MS} then 'inactive'
    else 'cold' end`;
}

// Upsert merges: the earliest send only moves back and the latest engagement
// only forward, so folding an event twice (say, once reported and once from
// the stream) changes nothing.
const MERGE_FIRST_SENT = sql<number | null>`case
  when excluded.first_sent_at is null then address_engagement.first_sent_at
  when address_engagement.first_sent_at is null or excluded.first_sent_at < address_engagement.first_sent_at then excluded.first_sent_at
  else address_engagement.first_sent_at end`;
const MERGE_LAST_ENGAGED = sql<number | null>`case
  when excluded.last_engaged_at is null then address_engagement.last_engaged_at
  when address_engagement.last_engaged_at is null or excluded.last_engaged_at > address_engagement.last_engaged_at then excluded.last_engaged_at
  else address_engagement.last_engaged_at end`;

const typeList = (types: readonly string[]) => sql.join(types.map((t) => sql.lit(t)));

/**
 * The (workspace, address, type, time) facts of the events in (lo, hi]. An
 * event about one recipient names it; an event about a whole email (the
 * email.sent hand-off, an open of the email's single tracking pixel, a click
 * on its links) counts for each recipient the email had, except those it was
 * never sent to (suppressed or cancelled), since a pixel cannot tell which
 * recipient opened.
 */
function batchFacts(lo: number, hi: number): RawBuilder<unknown> {
  const types = typeList([...SEND_EVENT_TYPES, ...ENGAGEMENT_EVENT_TYPES]);
  return sql`
    select e.workspace_id, lower(e.recipient) as email, e.type, e.created_at from events e
      where e.pos > ${lo} and e.pos <= ${hi} and e.recipient is not null and e.type in (${types})
    union all
    select e.workspace_id, lower(r.address) as email, e.type, e.created_at from events e
      join email_recipients r on r.email_id = e.email_id and r.workspace_id = e.workspace_id
      where e.pos > ${lo} and e.pos <= ${hi} and e.recipient is null and e.type in (${types})
        and r.status not in ('suppressed', 'cancelled')`;
}

/**
 * Folds up to `maxEvents` events after the watermark into address_engagement,
 * re-tiers the live contacts of the addresses they touch, and moves the
 * watermark. Returns the number of event positions consumed (0 when caught up).
 */
export async function foldEventBatch(tx: Tx, maxEvents: number, now: number): Promise<number> {
  const lo = await followerPosition(tx, 'engagement');
  const batch = await nextEventBatch(tx, lo, maxEvents);
  if (!batch) return 0;
  const { hi } = batch;

  // The WHERE clause keeps SQLite from reading ON CONFLICT as a join constraint.
  await sql`
    insert into address_engagement (workspace_id, email, first_sent_at, last_engaged_at)
    select f.workspace_id, f.email,
      min(case when f.type in (${typeList(SEND_EVENT_TYPES)}) then f.created_at end),
      max(case when f.type in (${typeList(ENGAGEMENT_EVENT_TYPES)}) then f.created_at end)
    from (${batchFacts(lo, hi)}) as f
    where f.email is not null
    group by f.workspace_id, f.email
    on conflict (workspace_id, email) do update set
      first_sent_at = ${MERGE_FIRST_SENT},
      last_engaged_at = ${MERGE_LAST_ENGAGED}`.execute(tx);

  await sql`
    update contacts set engagement_tier = ${tierCase(now)}
    from address_engagement as ae
    where ae.workspace_id = contacts.workspace_id and ae.email = contacts.email
      and contacts.deleted_at is null
      and contacts.engagement_tier <> ${tierCase(now)}
      and (contacts.workspace_id, contacts.email) in (select f.workspace_id, f.email from (${batchFacts(lo, hi)}) as f)`.execute(tx);

  await saveFollowerPosition(tx, 'engagement', hi);
  return batch.count;
}

/** Re-tiers live contacts with positions in (after, upTo] as of `now`: tiers age with time alone. */
export async function retierContactRange(tx: Tx, after: number, upTo: number, now: number): Promise<number> {
  const res = await sql`
    update contacts set engagement_tier = ${tierCase(now)}
    from address_engagement as ae
    where ae.workspace_id = contacts.workspace_id and ae.email = contacts.email
      and contacts.pos > ${after} and contacts.pos <= ${upTo}
      and contacts.deleted_at is null
      and contacts.engagement_tier <> ${tierCase(now)}`.execute(tx);
  return Number(res.numAffectedRows ?? 0);
}

export async function maxContactPos(db: Db): Promise<number> {
  const row = await db.selectFrom('contacts').select((eb) => eb.fn.max('pos').as('hi')).executeTakeFirst();
  return Number(row?.hi ?? 0);
}

/** The recorded facts for these normalised addresses (absent: nothing recorded). */
export async function factsFor(db: Db | Tx, ws: string, emails: string[]): Promise<Map<string, EngagementFacts>> {
  const out = new Map<string, EngagementFacts>();
  const unique = [...new Set(emails)];
  for (let i = 0; i < unique.length; i += IN_CHUNK) {
    const rows = await db.selectFrom('address_engagement').selectAll()
      .where('workspace_id', '=', ws).where('email', 'in', unique.slice(i, i + IN_CHUNK)).execute();
    for (const r of rows) {
      out.set(r.email, {
        firstSentAt: r.first_sent_at === null ? null : Number(r.first_sent_at),
        lastEngagedAt: r.last_engaged_at === null ? null : Number(r.last_engaged_at),
      });
    }
  }
  return out;
}

/** Folds one reported event for one address and re-tiers its contact, inside the reporter's transaction. */
export async function recordAddressEvent(tx: Tx, ws: string, email: string, facts: EngagementFacts, now: number): Promise<void> {
  await tx.insertInto('address_engagement')
    .values({ workspace_id: ws, email, first_sent_at: facts.firstSentAt, last_engaged_at: facts.lastEngagedAt })
    .onConflict((oc) => oc.columns(['workspace_id', 'email']).doUpdateSet({
      first_sent_at: MERGE_FIRST_SENT,
      last_engaged_at: MERGE_LAST_ENGAGED,
    })).execute();
  await sql`
    update contacts set engagement_tier = ${tierCase(now)}
    from address_engagement as ae
    where ae.workspace_id = contacts.workspace_id and ae.email = contacts.email
      and contacts.workspace_id = ${ws} and contacts.email = ${email} and contacts.deleted_at is null`.execute(tx);
}
