import { sql } from 'kysely';
import { followerPosition, nextEventBatch, saveFollowerPosition } from '../store/event-log.js';
import { readAtOneMoment, type Db, type Tx } from '../store/db.js';

// Hourly rollups of the events table. A fold follows the events by position
// from the 'analytics' watermark and adds each batch into analytics_hourly,
// in one transaction with the watermark, so every event is counted exactly
// once. Each hour has rows at four levels (all events; per domain; per set of
// email tags; per both), so a query reads only the level its filters need.
// A read adds the rollups of its range to the events past the watermark,
// counted the same way in memory, inside one read transaction: the answer
// is exact however far behind the fold is, and costs one index range of
// rollup rows plus a short tail of events.
//
// Unique opens and clicks count each (email, recipient) once, in the hour of
// its first open (or click); analytics_first_engagement remembers which pairs
// were seen. That keeps them additive across hours, domains and tag sets.

export const COUNT_NAMES = [
  'sent', 'delivered', 'bounced', 'opened', 'clicked', 'complained', 'failed', 'delayed', 'unique_opened', 'unique_clicked',
] as const;
export type CountName = (typeof COUNT_NAMES)[number];
export type Counts = Record<CountName, number>;

const COUNTED_TYPES: Record<string, CountName> = {
  'email.sent': 'sent',
  'email.delivered': 'delivered',
  'email.bounced': 'bounced',
  'email.opened': 'opened',
  'email.clicked': 'clicked',
  'email.complained': 'complained',
  'email.failed': 'failed',
  'email.delayed': 'delayed',
};
const UNIQUE_OF: Partial<Record<CountName, { kind: 'opened' | 'clicked'; count: CountName }>> = {
  opened: { kind: 'opened', count: 'unique_opened' },
  clicked: { kind: 'clicked', count: 'unique_clicked' },
};

export const HOUR_MS = 3_600_000;
/** The rollup levels' "any" values of the two dimensions. */
const ANY_DOMAIN = '*';
const ANY_TAGSET = -1;
// SQLite binds at most 32766 parameters per statement.
const IN_CHUNK = 500;
/** Rollup rows per upsert statement (14 columns each). */
const UPSERT_CHUNK = 200;

export const zeroCounts = (): Counts => Object.fromEntries(COUNT_NAMES.map((n) => [n, 0])) as Counts;

/** Counts of one workspace, hour, mode, domain ('' for none) and sorted tag list. */
export interface Bucket {
  workspaceId: string;
  hourStart: number;
  mode: 'live' | 'test';
  domainId: string;
  tags: string[];
  counts: Counts;
}

interface FirstEngagement {
  workspace_id: string;
  email_id: string;
  recipient: string;
  kind: 'opened' | 'clicked';
}

interface CountedEvent {
  pos: number;
  workspace_id: string;
  email_id: string | null;
  domain_id: string | null;
  type: string;
  recipient: string | null;
  created_at: number;
}

async function inChunks<T>(values: string[], read: (chunk: string[]) => Promise<T[]>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < values.length; i += IN_CHUNK) out.push(...await read(values.slice(i, i + IN_CHUNK)));
  return out;
}

/**
 * Counts events (in position order) into buckets. Opens and clicks whose
 * (email, recipient) pair is neither recorded nor seen earlier in `events`
 * are unique; they come back in `firsts`.
 */
async function countEvents(db: Db | Tx, events: CountedEvent[]): Promise<{ buckets: Map<string, Bucket>; firsts: FirstEngagement[] }> {
  const emailIds = [...new Set(events.map((e) => e.email_id).filter((id): id is string => id !== null))];
  const modeOf = new Map((await inChunks(emailIds, (chunk) => db.selectFrom('emails').select(['id', 'mode'])
    .where('id', 'in', chunk).execute())).map((r) => [r.id, r.mode]));
  const tagsOf = new Map<string, string[]>();
  for (const r of await inChunks(emailIds, (chunk) => db.selectFrom('email_tags').select(['email_id', 'tag'])
    .where('email_id', 'in', chunk).execute())) {
    const list = tagsOf.get(r.email_id) ?? [];
    list.push(r.tag);
    tagsOf.set(r.email_id, list);
  }
  const engaged = events.filter((e) => UNIQUE_OF[COUNTED_TYPES[e.type]] !== undefined && e.email_id !== null);
  const engagedIds = [...new Set(engaged.map((e) => e.email_id!))];
  const seen = new Set((await inChunks(engagedIds, (chunk) => db.selectFrom('analytics_first_engagement')
    .select(['email_id', 'recipient', 'kind']).where('email_id', 'in', chunk).execute()))
    .map((r) => `${r.email_id}\n${r.recipient}\n${r.kind}`));

  const buckets = new Map<string, Bucket>();
  const firsts: FirstEngagement[] = [];
  for (const e of events) {
    const name = COUNTED_TYPES[e.type];
    if (name === undefined) continue;
    const hourStart = e.created_at - (e.created_at % HOUR_MS);
    const domainId = e.domain_id ?? '';
    const tags = e.email_id === null ? [] : [...new Set(tagsOf.get(e.email_id) ?? [])].sort();
    const mode = (e.email_id !== null && modeOf.get(e.email_id)) || 'live';
    const key = JSON.stringify([e.workspace_id, hourStart, mode, domainId, tags]);
    let bucket = buckets.get(key);
    if (!bucket) buckets.set(key, bucket = { workspaceId: e.workspace_id, hourStart, mode, domainId, tags, counts: zeroCounts() });
    bucket.counts[name]++;
    const unique = UNIQUE_OF[name];
    if (unique && e.email_id !== null) {
      const recipient = (e.recipient ?? '').toLowerCase();
      const pair = `${e.email_id}\n${recipient}\n${unique.kind}`;
      if (!seen.has(pair)) {
        seen.add(pair);
        bucket.counts[unique.count]++;
        firsts.push({ workspace_id: e.workspace_id, email_id: e.email_id, recipient, kind: unique.kind });
      }
    }
  }
  return { buckets, firsts };
}

const EVENT_COLUMNS = ['pos', 'workspace_id', 'email_id', 'domain_id', 'type', 'recipient', 'created_at'] as const;

export const readWatermark = (db: Db | Tx): Promise<number> => followerPosition(db, 'analytics');

/** The tag set's id, made on first use. */
async function tagsetId(tx: Tx, ws: string, tags: string[]): Promise<number> {
  if (tags.length === 0) return 0;
  const key = JSON.stringify(tags);
  const found = await tx.selectFrom('analytics_tagsets').select('pos').where('workspace_id', '=', ws).where('tags_key', '=', key).executeTakeFirst();
  if (found) return found.pos;
  const { pos } = await tx.insertInto('analytics_tagsets').values({ workspace_id: ws, tags_key: key }).returning('pos').executeTakeFirstOrThrow();
  await tx.insertInto('analytics_tagset_tags').values(tags.map((tag) => ({ tagset: pos, workspace_id: ws, tag }))).execute();
  return pos;
}

/**
 * Folds up to `maxEvents` events past the watermark into the rollups and
 * moves the watermark; returns the number of positions consumed (0 when
 * caught up). On PostgreSQL the read must stop below positions of
 * transactions still in flight, as for webhook fan-out.
 */
export async function foldBatch(tx: Tx, maxEvents: number): Promise<number> {
  const lo = await readWatermark(tx);
  const batch = await nextEventBatch(tx, lo, maxEvents);
  if (!batch) return 0;
  const { hi } = batch;
  const events = await tx.selectFrom('events').select(EVENT_COLUMNS)
    .where('pos', '>', lo).where('pos', '<=', hi).where('type', 'in', Object.keys(COUNTED_TYPES))
    .orderBy('pos').execute();
  const { buckets, firsts } = await countEvents(tx, events);

  // Each bucket adds to its four levels; rows a filter can never select (no
  // domain, no tags) are not written.
  const rows = new Map<string, { workspace_id: string; hour_start: number; mode: 'live' | 'test'; domain_id: string; tagset: number; counts: Counts }>();
  for (const b of buckets.values()) {
    const tagset = await tagsetId(tx, b.workspaceId, b.tags);
    const domains = b.domainId === '' ? [ANY_DOMAIN] : [ANY_DOMAIN, b.domainId];
    const tagsets = b.tags.length === 0 ? [ANY_TAGSET] : [ANY_TAGSET, tagset];
    for (const domain_id of domains) {
      for (const set of tagsets) {
        const key = JSON.stringify([b.workspaceId, b.hourStart, b.mode, domain_id, set]);
        const row = rows.get(key) ?? { workspace_id: b.workspaceId, hour_start: b.hourStart, mode: b.mode, domain_id, tagset: set, counts: zeroCounts() };
        for (const n of COUNT_NAMES) row.counts[n] += b.counts[n];
        rows.set(key, row);
      }
    }
  }
  const values = [...rows.values()].map(({ counts, ...key }) => ({ ...key, ...counts }));
  for (let i = 0; i < values.length; i += UPSERT_CHUNK) {
    await tx.insertInto('analytics_hourly').values(values.slice(i, i + UPSERT_CHUNK))
      .onConflict((oc) => oc.columns(['workspace_id', 'mode', 'domain_id', 'tagset', 'hour_start']).doUpdateSet(
        Object.fromEntries(COUNT_NAMES.map((n) => [n, sql`analytics_hourly.${sql.ref(n)} + excluded.${sql.ref(n)}`])),
      ))
      .execute();
  }
  for (let i = 0; i < firsts.length; i += IN_CHUNK) {
    await tx.insertInto('analytics_first_engagement').values(firsts.slice(i, i + IN_CHUNK))
      .onConflict((oc) => oc.doNothing()).execute();
  }
  await saveFollowerPosition(tx, 'analytics', hi);
  return batch.count;
}

export interface AnalyticsFilter {
  /** Inclusive, hour-aligned epoch ms. */
  from: number;
  /** Exclusive, hour-aligned epoch ms. */
  to: number;
  /** Live mail or test mail, never both together. */
  mode: 'live' | 'test';
  domainId?: string;
  tags?: string[];
}

/** Counts per UTC hour (only hours with events) of one workspace, exact up to the latest committed event. */
export async function countsByHour(db: Db, ws: string, f: AnalyticsFilter): Promise<Map<number, Counts>> {
  return readAtOneMoment(db, async (trx) => {
    const mark = await readWatermark(trx);
    const rows = await trx.selectFrom('analytics_hourly')
      .select('hour_start')
      .select((eb) => COUNT_NAMES.map((n) => eb.fn.sum<number>(n).as(n)))
      .where('workspace_id', '=', ws).where('mode', '=', f.mode).where('domain_id', '=', f.domainId ?? ANY_DOMAIN)
      .$if(f.tags === undefined || f.tags.length === 0, (q) => q.where('tagset', '=', ANY_TAGSET))
      .$if(f.tags !== undefined && f.tags.length > 0, (q) => q.where('tagset', 'in', (eb) => eb.selectFrom('analytics_tagset_tags')
        .select('tagset').where('workspace_id', '=', ws).where('tag', 'in', f.tags!)))
      .where('hour_start', '>=', f.from).where('hour_start', '<', f.to)
      .groupBy('hour_start')
      .execute();
    const byHour = new Map<number, Counts>();
    for (const r of rows) {
      byHour.set(Number(r.hour_start), Object.fromEntries(COUNT_NAMES.map((n) => [n, Number(r[n])])) as Counts);
    }

    // The tail the fold has not reached. Uniqueness needs every tail event of
    // the workspace in order, so the range and filters apply to the buckets.
    const tail = await trx.selectFrom('events').select(EVENT_COLUMNS)
      .where('workspace_id', '=', ws).where('pos', '>', mark).where('type', 'in', Object.keys(COUNTED_TYPES))
      .orderBy('pos').execute();
    const { buckets } = await countEvents(trx, tail);
    const wanted = new Set(f.tags ?? []);
    for (const b of buckets.values()) {
      if (b.hourStart < f.from || b.hourStart >= f.to || b.mode !== f.mode) continue;
      if (f.domainId !== undefined && b.domainId !== f.domainId) continue;
      if (wanted.size > 0 && !b.tags.some((t) => wanted.has(t))) continue;
      const sum = byHour.get(b.hourStart) ?? zeroCounts();
      for (const n of COUNT_NAMES) sum[n] += b.counts[n];
      byHour.set(b.hourStart, sum);
    }
    return byHour;
  });
}

/** Deletes what marks the first open and click of the emails `emailIds` (their counts stay in the rollups). */
export async function forgetFirstEngagementOf(tx: Tx, emailIds: string[]): Promise<void> {
  if (emailIds.length === 0) return;
  await tx.deleteFrom('analytics_first_engagement').where('email_id', 'in', emailIds).execute();
}
