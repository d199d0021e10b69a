import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import { followerPosition, nextEventBatch, saveFollowerPosition } from '../store/event-log.js';
import { containsText, ftsTerm, hasTrigram, indexedContainsText, rareTrigramTerms, workspaceSearchTag } from '../store/trigrams.js';
import { runSql, type Db, type Tx } from '../store/db.js';
import type { EventsTable } from './events.tables.js';
import { isPostgres } from '../store/schema-helpers.js';
import { fetchPage, type Page, type PageBound, type PageQuery } from '../store/paging.js';
import { toEvent, type EmailEvent } from './events.repo.js';

// Reads of the events table for the account-wide list and for the consumers
// that follow it by position (webhook fan-out).
//
// Equality filters (type, email, domain) use indexes that end in pos, so a
// page is a range of one index walked newest first. The other filters use
// side indexes that an indexer fills in position order from a watermark
// (see migration 0006): events_search (trigram: FTS5 on SQLite, pg_trgm on
// PostgreSQL) for `to`/`from`, event_tags for `tags`, and event_hours (the
// range of positions written in each hour) to turn `created_*` into a range
// of positions. A list takes its rows from two parts: up to the watermark
// through the side indexes, and after it (a few seconds' worth) by
// evaluating the filters on the rows themselves. Both give the same rows.

export interface EventFilter {
  /** The full type string, `email.<kind>`. */
  type?: string;
  emailId?: string;
  domainId?: string;
  /** Partial, case-insensitive: the recipient the event is about, or the email's recipients. */
  to?: string;
  /** Partial, case-insensitive, on the from field as given. */
  from?: string;
  /** Events of emails carrying any of these tags. */
  tags?: string[];
  /** Epoch ms, exclusive. */
  createdAfter?: number;
  createdBefore?: number;
}

const HOUR_MS = 3_600_000;

const onPostgres = (db: Db | Tx) => isPostgres(db as unknown as Kysely<unknown>);

/** The text indexed for an event, as SQL over the events row: what `to` and `from` match. */
const SEARCH_TEXT = {
  to_text: sql<string>`coalesce(lower(events.recipient), (SELECT search_to FROM emails WHERE emails.id = events.email_id), '')`,
  from_text: sql<string>`lower(coalesce(events.from_address, ''))`,
};
type SearchColumn = keyof typeof SEARCH_TEXT;

const likeText = (column: SearchColumn, needle: string) => containsText(SEARCH_TEXT[column], needle);

const and = (conds: Array<RawBuilder<boolean>>) => sql<boolean>`${sql.join(conds, sql` AND `)}`;

interface Plan {
  ws: string;
  f: EventFilter;
  /** Text filters served by the side index (SQLite: 3 characters or more; PostgreSQL: all). */
  indexed: Array<[SearchColumn, string]>;
  /** Text filters matched by LIKE on the row. */
  scanned: Array<[SearchColumn, string]>;
}

/**
 * The filters as conditions on `events`. `sideIndexed` says whether the rows
 * are up to the watermark (tags through event_tags, text through the side
 * index elsewhere) or after it (everything evaluated on the row).
 */
function conditions(p: Plan, sideIndexed: boolean): Array<RawBuilder<boolean>> {
  const { ws, f } = p;
  const out = [sql<boolean>`events.workspace_id = ${ws}`];
  // The account-wide list is of email events; other types (contact.*) are for webhooks only.
  out.push(f.type !== undefined ? sql<boolean>`events.type = ${f.type}` : sql<boolean>`events.type LIKE 'email.%'`);
  if (f.emailId !== undefined) out.push(sql<boolean>`events.email_id = ${f.emailId}`);
  if (f.domainId !== undefined) out.push(sql<boolean>`events.domain_id = ${f.domainId}`);
  if (f.createdAfter !== undefined) out.push(sql<boolean>`events.created_at > ${f.createdAfter}`);
  if (f.createdBefore !== undefined) out.push(sql<boolean>`events.created_at < ${f.createdBefore}`);
  if (f.tags !== undefined && f.tags.length > 0) {
    out.push(sideIndexed
      ? sql<boolean>`EXISTS (SELECT 1 FROM event_tags WHERE event_tags.workspace_id = ${ws} AND event_tags.tag IN (${sql.join(f.tags)})
          AND event_tags.pos = events.pos)`
      : sql<boolean>`EXISTS (SELECT 1 FROM email_tags WHERE email_tags.email_id = events.email_id AND email_tags.tag IN (${sql.join(f.tags)}))`);
  }
  for (const [column, needle] of p.scanned) out.push(likeText(column, needle));
  if (!sideIndexed) for (const [column, needle] of p.indexed) out.push(likeText(column, needle));
  return out;
}

type Row = Selectable<EventsTable>;
type Fetch = (bound: PageBound | undefined, order: 'asc' | 'desc', take: number) => Promise<Row[]>;

export async function listEvents(db: Db, ws: string, f: EventFilter, page: PageQuery, now: number): Promise<Page<EmailEvent>> {
  const text: Array<[SearchColumn, string]> = [];
  if (f.to !== undefined) text.push(['to_text', f.to.toLowerCase()]);
  if (f.from !== undefined) text.push(['from_text', f.from.toLowerCase()]);
  const onPg = onPostgres(db);
  const indexed = onPg ? text : text.filter(([, n]) => hasTrigram(n));
  const p: Plan = { ws, f, indexed, scanned: text.filter((t) => !indexed.includes(t)) };
  const tags = f.tags ?? [];

  const plain = (extra: Array<RawBuilder<boolean>>, sideIndexed: boolean): Fetch => (bound, order, take) => db.selectFrom('events')
    .selectAll().where(and([...conditions(p, sideIndexed), ...extra]))
    .$if(bound !== undefined, (q) => q.where('pos', bound!.op, bound!.pos))
    .orderBy('pos', order).limit(take).execute();

  const needsSideIndex = indexed.length > 0 || tags.length > 0 || f.createdAfter !== undefined || f.createdBefore !== undefined;
  if (!needsSideIndex) return fetchPage(page, plain([], false), toEvent);

  const mark = await sideIndexWatermark(db);
  const range = await positionRange(db, ws, f, mark);
  const tail = plain([sql<boolean>`events.pos > ${mark}`], false);
  const inRange = sql<boolean>`events.pos >= ${range.lo} AND events.pos <= ${range.hi}`;
  // PostgreSQL's side table: its pg_trgm indexes serve LIKE, asked for the needle's rare stretches.
  const textIn = await Promise.all(indexed.map(async ([c, n]) =>
    sql<boolean>`events.pos IN (SELECT pos FROM events_search WHERE ${await indexedContainsText(db, 'events_search', c, n, now)})`));

  let head: Fetch;
  if (indexed.length > 0 && !onPg) {
    // The FTS5 table drives (CROSS JOIN keeps it the outer loop) and yields
    // matches in rowid order, so a page stops after `take` rows instead of
    // collecting every match of a common needle first.
    const match = [ftsTerm('ws_tag', workspaceSearchTag(ws)), ...(await Promise.all(indexed.map(([c, n]) => rareTrigramTerms(db, 'events_search', c, n, now))))].join(' AND ');
    const exact = indexed.map(([c, n]) => likeText(c, n));
    head = (bound, order, take) => db.selectFrom(sql<{ rowid: number }>`events_search`.as('s')).crossJoin('events').selectAll('events')
      .where(sql<boolean>`s.events_search MATCH ${match}`)
      .where(sql<boolean>`s.rowid >= ${range.lo} AND s.rowid <= ${range.hi}`)
      .$if(bound !== undefined, (q) => q.where(sql<boolean>`s.rowid ${sql.raw(bound!.op)} ${bound!.pos}`))
      .where(sql<boolean>`events.pos = s.rowid`).where(and([...conditions(p, true), ...exact]))
      .orderBy(sql`s.rowid`, order).limit(take).execute();
  } else if (tags.length > 0) {
    // One walk of event_tags per tag, newest first, merged: each stops after
    // `take` rows, and the first `take` of the merge are the page.
    const perTag = (tag: string): Fetch => (bound, order, take) => db.selectFrom('event_tags as t').crossJoin('events').selectAll('events')
      .where('t.workspace_id', '=', ws).where('t.tag', '=', tag)
      .where('t.pos', '>=', range.lo).where('t.pos', '<=', range.hi)
      .$if(bound !== undefined, (q) => q.where('t.pos', bound!.op, bound!.pos))
      .where(sql<boolean>`events.pos = t.pos`).where(and([...conditions({ ...p, f: { ...f, tags: undefined } }, true), ...textIn]))
      .orderBy('t.pos', order).limit(take).execute();
    head = async (bound, order, take) => {
      const byPos = new Map<number, Row>();
      for (const tag of new Set(tags)) for (const r of await perTag(tag)(bound, order, take)) byPos.set(r.pos, r);
      return [...byPos.values()].sort((a, b) => (order === 'desc' ? b.pos - a.pos : a.pos - b.pos)).slice(0, take);
    };
  } else {
    head = plain([inRange, ...textIn], true);
  }

  return fetchPage(page, async (bound, order, take) => {
    const skipTail = bound?.op === '<' && bound.pos <= mark + 1;
    const skipHead = range.lo > range.hi || (bound?.op === '>' && bound.pos >= range.hi) || (bound?.op === '<' && bound.pos <= range.lo);
    const after = skipTail ? [] : await tail(bound, order, take);
    const before = skipHead ? [] : await head(bound, order, take);
    return (order === 'desc' ? [...after, ...before] : [...before, ...after]).slice(0, take);
  }, toEvent);
}

/**
 * The positions, up to the watermark, that can hold events created inside
 * the filter's time bounds: an event lies in the hour of its created_at, and
 * event_hours has the lowest and highest position written in each hour.
 */
async function positionRange(db: Db, ws: string, f: EventFilter, mark: number): Promise<{ lo: number; hi: number }> {
  let lo = 1;
  let hi = mark;
  if (f.createdBefore !== undefined) {
    const row = await db.selectFrom('event_hours').select((eb) => eb.fn.max('max_pos').as('p'))
      .where('workspace_id', '=', ws).where('hour_start', '<', f.createdBefore).executeTakeFirst();
    hi = Math.min(hi, row?.p === null || row?.p === undefined ? 0 : Number(row.p));
  }
  if (f.createdAfter !== undefined) {
    const row = await db.selectFrom('event_hours').select((eb) => eb.fn.min('min_pos').as('p'))
      .where('workspace_id', '=', ws).where('hour_start', '>=', f.createdAfter - (f.createdAfter % HOUR_MS)).executeTakeFirst();
    lo = Math.max(lo, row?.p === null || row?.p === undefined ? mark + 1 : Number(row.p));
  }
  return { lo, hi };
}

export async function findEvent(db: Db, ws: string, id: string): Promise<EmailEvent | undefined> {
  const row = await db.selectFrom('events').selectAll().where('workspace_id', '=', ws).where('id', '=', id)
    .where('type', 'like', 'email.%').executeTakeFirst();
  return row && toEvent(row);
}

/** An event with what a consumer following the table needs besides the API shape. */
export interface PositionedEvent {
  pos: number;
  workspaceId: string;
  /** Epoch ms. */
  createdAt: number;
  event: EmailEvent;
}

/** Up to `limit` events of every workspace after position `afterPos`, in position order, up to a settled position (nextEventBatch). */
export async function readEventsAfter(db: Db, afterPos: number, limit: number): Promise<PositionedEvent[]> {
  const batch = await nextEventBatch(db, afterPos, limit);
  if (!batch) return [];
  const rows = await db.selectFrom('events').selectAll().where('pos', '>', afterPos).where('pos', '<=', batch.hi)
    .orderBy('pos', 'asc').execute();
  return rows.map((r) => ({ pos: r.pos, workspaceId: r.workspace_id, createdAt: r.created_at, event: toEvent(r) }));
}

/** The position of the last event committed (0 when there is none). */
export async function lastEventPos(db: Db): Promise<number> {
  // The webhook dispatcher asks four times a second: a fixed text.
  const { rows: [row] } = await runSql<{ pos: number | string | null }>(db, 'SELECT max(pos) AS pos FROM events', []);
  return Number(row?.pos ?? 0);
}

// ---- the side indexes ----

export const sideIndexWatermark = (db: Db | Tx): Promise<number> => followerPosition(db, 'events_index');

/** PostgreSQL: puts the search text of the events at positions `lo` (exclusive) to `hi` into events_search. */
export async function fillPostgresEventsSearch(tx: Tx, lo: number, hi: number): Promise<void> {
  await sql`INSERT INTO events_search (pos, to_text, from_text) SELECT pos, ${SEARCH_TEXT.to_text}, ${SEARCH_TEXT.from_text} FROM events
    WHERE pos > ${lo} AND pos <= ${hi}`.execute(tx);
}

/**
 * Adds up to `maxEvents` events past the watermark to the side indexes, a
 * statement per index, and moves the watermark; returns the positions
 * consumed. (A statement per batch matters: an FTS5 insert per row, as from
 * a trigger, flushes the index at every statement and costs six times as
 * much.) On PostgreSQL the batch must stop below positions of transactions
 * still in flight, as for webhook fan-out.
 */
export async function indexEventsBatch(tx: Tx, maxEvents: number): Promise<number> {
  const lo = await sideIndexWatermark(tx);
  const batch = await nextEventBatch(tx, lo, maxEvents);
  if (!batch) return 0;
  const { hi } = batch;
  if (onPostgres(tx)) {
    await fillPostgresEventsSearch(tx, lo, hi);
  } else {
    // A statement per workspace of the batch: each carries its workspace's tag.
    const workspaces = await sql<{ ws: string }>`SELECT DISTINCT workspace_id AS ws FROM events WHERE pos > ${lo} AND pos <= ${hi}`.execute(tx);
    for (const { ws } of workspaces.rows) {
      await sql`INSERT INTO events_search (rowid, to_text, from_text, ws_tag)
        SELECT pos, ${SEARCH_TEXT.to_text}, ${SEARCH_TEXT.from_text}, ${workspaceSearchTag(ws)} FROM events
        WHERE pos > ${lo} AND pos <= ${hi} AND workspace_id = ${ws}`.execute(tx);
    }
  }
  await sql`INSERT INTO event_tags (workspace_id, tag, pos) SELECT events.workspace_id, email_tags.tag, events.pos
    FROM events JOIN email_tags ON email_tags.email_id = events.email_id WHERE events.pos > ${lo} AND events.pos <= ${hi}`.execute(tx);
  await sql`INSERT INTO event_hours (workspace_id, hour_start, min_pos, max_pos)
    SELECT workspace_id, created_at - created_at % ${sql.lit(HOUR_MS)}, min(pos), max(pos) FROM events
    WHERE pos > ${lo} AND pos <= ${hi} GROUP BY workspace_id, created_at - created_at % ${sql.lit(HOUR_MS)}
    ON CONFLICT (workspace_id, hour_start) DO UPDATE SET
      min_pos = CASE WHEN excluded.min_pos < event_hours.min_pos THEN excluded.min_pos ELSE event_hours.min_pos END,
      max_pos = CASE WHEN excluded.max_pos > event_hours.max_pos THEN excluded.max_pos ELSE event_hours.max_pos END`.execute(tx);
  await saveFollowerPosition(tx, 'events_index', hi);
  return batch.count;
}

// ---- retention ----

/**
 * Deletes the events at `positions` with their rows in the side indexes.
 * Every one must be indexed already (at or below the side indexes'
 * watermark), and on SQLite the emails they are about still present: the
 * FTS5 table keeps no text of its own, so a row is taken out by giving the
 * text it was added with, which for an event without a recipient of its own
 * is its email's.
 */
export async function deleteIndexedEvents(tx: Tx, positions: number[]): Promise<void> {
  if (positions.length === 0) return;
  const at = sql.join(positions);
  if (onPostgres(tx)) {
    await sql`DELETE FROM events_search WHERE pos IN (${at})`.execute(tx);
  } else {
    const workspaces = await sql<{ ws: string }>`SELECT DISTINCT workspace_id AS ws FROM events WHERE pos IN (${at})`.execute(tx);
    for (const { ws } of workspaces.rows) {
      await sql`INSERT INTO events_search (events_search, rowid, to_text, from_text, ws_tag)
        SELECT 'delete', pos, ${SEARCH_TEXT.to_text}, ${SEARCH_TEXT.from_text}, ${workspaceSearchTag(ws)} FROM events
        WHERE pos IN (${at}) AND workspace_id = ${ws}`.execute(tx);
    }
  }
  await sql`DELETE FROM event_tags WHERE (workspace_id, tag, pos) IN (SELECT events.workspace_id, email_tags.tag, events.pos
    FROM events JOIN email_tags ON email_tags.email_id = events.email_id WHERE events.pos IN (${at}))`.execute(tx);
  await tx.deleteFrom('events').where('pos', 'in', positions).execute();
}

/** The positions of the events about the emails `emailIds`. */
export async function eventsOfEmails(tx: Tx, emailIds: string[]): Promise<number[]> {
  if (emailIds.length === 0) return [];
  const rows = await tx.selectFrom('events').select('pos').where('email_id', 'in', emailIds).execute();
  return rows.map((r) => Number(r.pos));
}

/**
 * The highest position of an event written in an hour that ended by
 * `cutoff` (0 when there is none): a bound below which every event indexed
 * is older than `cutoff`, read from event_hours rather than a scan of events.
 */
export async function lastPositionOfHoursBefore(tx: Tx, cutoff: number): Promise<number> {
  const row = await tx.selectFrom('event_hours').select((eb) => eb.fn.max('max_pos').as('p'))
    .where('hour_start', '<=', cutoff - HOUR_MS).executeTakeFirst();
  return row?.p === null || row?.p === undefined ? 0 : Number(row.p);
}

/**
 * Up to `limit` positions of events written before `cutoff` and at or below
 * `upTo` that are about no email of the emails table (a broadcast's or a
 * contact's, a received message's): those of an email go with the email.
 */
export async function expiredEventsOfNoEmail(tx: Tx, cutoff: number, upTo: number, limit: number): Promise<number[]> {
  const rows = await tx.selectFrom('events').select('pos')
    .where('pos', '<=', upTo).where('created_at', '<', cutoff)
    .where((eb) => eb.or([eb('email_id', 'is', null), eb.not(eb.exists(eb.selectFrom('emails').select('emails.pos').whereRef('emails.id', '=', 'events.email_id')))]))
    .orderBy('pos').limit(limit).execute();
  return rows.map((r) => Number(r.pos));
}
