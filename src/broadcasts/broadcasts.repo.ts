import { sql, type Selectable, type Updateable } from 'kysely';
import { compiledOn, runShaped, type Db, type Tx } from '../store/db.js';
import type { BroadcastSkipsTable, BroadcastStatus, BroadcastsTable, SkipCode } from './broadcasts.tables.js';
import type { EngagementTier } from '../contacts/contacts.tables.js';
import { fetchPage, type Page, type PageQuery } from '../store/paging.js';
import { claimLeases, freed, lockedForUpdate } from '../store/lease.js';
import { toIso, toIsoOrNull } from '../core/clock.js';

// Broadcasts: the row of each, mapped to the shape the service reasons
// about; the sender's claim and its progress, written under a lease.

export interface Audience {
  tag_ids: string[];
  exclude_tag_ids: string[];
  engagement_tiers: EngagementTier[] | null;
}

/** The content and audience a person edits. */
export interface BroadcastContent {
  name: string;
  from: string | null;
  replyTo: string[];
  subject: string | null;
  previewText: string | null;
  html: string | null;
  text: string | null;
  template: { id: string; version: number | null } | null;
  audience: Audience;
  sendRatePerMinute: number | null;
}

/** A broadcast as the service reasons about it: times in ms, JSON parsed. */
export interface StoredBroadcast extends BroadcastContent {
  pos: number;
  id: string;
  workspaceId: string;
  status: BroadcastStatus;
  statusReason: string | null;
  mode: 'live' | 'test' | null;
  scheduledAt: number | null;
  resumeAt: number | null;
  audienceSize: number | null;
  audienceMaxPos: number | null;
  expandedPos: number;
  emailsCreated: number;
  createdAt: number;
  updatedAt: number;
  startedAt: number | null;
  sentAt: number | null;
  cancelledAt: number | null;
}

/** The API's fields of a broadcast, but its stats. */
export interface BroadcastFields {
  id: string;
  object: 'broadcast';
  name: string;
  from: string | null;
  reply_to: string[];
  subject: string | null;
  preview_text: string | null;
  html: string | null;
  text: string | null;
  template: { id: string; version: number | null } | null;
  audience: Audience;
  send_rate_per_minute: number | null;
  status: BroadcastStatus;
  status_reason: string | null;
  mode: 'live' | 'test' | null;
  scheduled_at: string | null;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  sent_at: string | null;
  cancelled_at: string | null;
}

type Row = Selectable<BroadcastsTable>;

const toStored = (r: Row): StoredBroadcast => ({
  pos: Number(r.pos), id: r.id, workspaceId: r.workspace_id, name: r.name, from: r.from_address,
  replyTo: JSON.parse(r.reply_to_list) as string[], subject: r.subject, previewText: r.preview_text, html: r.html, text: r.text_body,
  template: r.template_id === null ? null : { id: r.template_id, version: r.template_version },
  audience: JSON.parse(r.audience) as Audience, sendRatePerMinute: r.send_rate_per_minute, status: r.status,
  statusReason: r.status_reason, mode: r.mode, scheduledAt: r.scheduled_at, resumeAt: r.resume_at, audienceSize: r.audience_size,
  audienceMaxPos: r.audience_max_pos === null ? null : Number(r.audience_max_pos), expandedPos: Number(r.expanded_pos),
  emailsCreated: r.emails_created, createdAt: r.created_at, updatedAt: r.updated_at, startedAt: r.started_at, sentAt: r.sent_at,
  cancelledAt: r.cancelled_at,
});

export const toFields = (b: StoredBroadcast): BroadcastFields => ({
  id: b.id, object: 'broadcast', name: b.name, from: b.from, reply_to: b.replyTo, subject: b.subject, preview_text: b.previewText,
  html: b.html, text: b.text, template: b.template, audience: b.audience, send_rate_per_minute: b.sendRatePerMinute,
  status: b.status, status_reason: b.statusReason, mode: b.mode, scheduled_at: toIsoOrNull(b.scheduledAt),
  created_at: toIso(b.createdAt), updated_at: toIso(b.updatedAt), started_at: toIsoOrNull(b.startedAt),
  sent_at: toIsoOrNull(b.sentAt), cancelled_at: toIsoOrNull(b.cancelledAt),
});

const contentColumns = (c: BroadcastContent) => ({
  name: c.name, from_address: c.from, reply_to_list: JSON.stringify(c.replyTo), subject: c.subject, preview_text: c.previewText,
  html: c.html, text_body: c.text, template_id: c.template?.id ?? null, template_version: c.template?.version ?? null,
  audience: JSON.stringify(c.audience), send_rate_per_minute: c.sendRatePerMinute,
});

export async function insertBroadcast(tx: Tx, b: { id: string; workspaceId: string; content: BroadcastContent; now: number }): Promise<void> {
  await tx.insertInto('broadcasts').values({
    id: b.id, workspace_id: b.workspaceId, ...contentColumns(b.content), status: 'draft', status_reason: null, mode: null,
    scheduled_at: null, resume_at: null, audience_size: null, audience_max_pos: null, created_at: b.now, updated_at: b.now,
    started_at: null, sent_at: null, cancelled_at: null, lease_owner: null,
  }).execute();
}

export async function findBroadcast(db: Db | Tx, ws: string, id: string): Promise<StoredBroadcast | undefined> {
  const row = await db.selectFrom('broadcasts').selectAll().where('workspace_id', '=', ws).where('id', '=', id).executeTakeFirst();
  return row && toStored(row);
}

/** A broadcast that is scheduled or under way, as what it names: its template (id or alias, as given) and its audience. */
export interface UnfinishedBroadcast {
  id: string;
  status: BroadcastStatus;
  templateRef: string | null;
  audience: Audience;
}

/**
 * The first of the workspace's scheduled, sending and paused broadcasts that
 * `uses` picks, read in the caller's transaction: a deletion that checks it
 * there cannot pass a send that starts meanwhile.
 */
export async function unfinishedBroadcastUsing(tx: Tx, ws: string, uses: (b: UnfinishedBroadcast) => boolean): Promise<UnfinishedBroadcast | undefined> {
  const rows = await tx.selectFrom('broadcasts').select(['id', 'status', 'template_id', 'audience'])
    .where('workspace_id', '=', ws).where('status', 'in', ['scheduled', 'sending', 'paused']).orderBy('pos').execute();
  return rows.map((r) => ({ id: r.id, status: r.status, templateRef: r.template_id, audience: JSON.parse(r.audience) as Audience })).find(uses);
}

/** The broadcast, read to change it: its row stays locked until the transaction ends. */
export async function findBroadcastForUpdate(tx: Tx, ws: string, id: string): Promise<StoredBroadcast | undefined> {
  const row = await lockedForUpdate(tx, tx.selectFrom('broadcasts').selectAll().where('workspace_id', '=', ws).where('id', '=', id)).executeTakeFirst();
  return row && toStored(row);
}

export async function listBroadcasts(db: Db, ws: string, f: { status?: BroadcastStatus }, page: PageQuery): Promise<Page<StoredBroadcast>> {
  return fetchPage(page, (bound, order, take) => db.selectFrom('broadcasts').selectAll().where('workspace_id', '=', ws)
    .$if(f.status !== undefined, (q) => q.where('status', '=', f.status!))
    .$if(bound !== undefined, (q) => q.where('pos', bound!.op, bound!.pos))
    .orderBy('pos', order).limit(take).execute(), toStored);
}

export async function updateContent(tx: Tx, id: string, content: BroadcastContent, now: number): Promise<void> {
  await tx.updateTable('broadcasts').set({ ...contentColumns(content), updated_at: now }).where('id', '=', id).execute();
}

export async function deleteBroadcast(tx: Tx, id: string): Promise<void> {
  await tx.deleteFrom('broadcasts').where('id', '=', id).execute();
}

/** Moves a broadcast from one of `from` to a new state; false when it was in none of them. */
export async function transitionBroadcast(tx: Tx, id: string, from: BroadcastStatus[], set: Updateable<BroadcastsTable> & { status: BroadcastStatus },
  now: number): Promise<boolean> {
  const res = await tx.updateTable('broadcasts').set({ ...set, updated_at: now }).where('id', '=', id).where('status', 'in', from).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Scheduled broadcasts whose time has come, and broadcasts paused by the quota whose reset has come. */
export async function dueBroadcasts(db: Db | Tx, now: number): Promise<Array<{ id: string; workspaceId: string; status: BroadcastStatus }>> {
  const rows = await db.selectFrom('broadcasts').select(['id', 'workspace_id', 'status'])
    .where((eb) => eb.or([
      eb.and([eb('status', '=', 'scheduled'), eb('scheduled_at', '<=', now)]),
      eb.and([eb('status', '=', 'paused'), eb('resume_at', '<=', now)]),
    ])).limit(100).execute();
  return rows.map((r) => ({ id: r.id, workspaceId: r.workspace_id, status: r.status }));
}

/**
 * Leases one sending broadcast whose next chunk is due to `owner`, the one
 * waiting longest; a broadcast another sender holds is left to it.
 */
export async function claimSending(tx: Tx, c: { now: number; until: number; owner: string }): Promise<StoredBroadcast | undefined> {
  const next = tx.selectFrom('broadcasts').select('id').where('status', '=', 'sending')
    .where('next_chunk_at', '<=', c.now).orderBy('next_chunk_at').limit(sql.lit(1));
  const [row] = await claimLeases(tx, 'broadcasts', next, c);
  return row && toStored(row);
}

/**
 * Records a chunk made by `owner`, in the chunk's transaction, and frees the
 * broadcast, or renews the lease until `keepLeaseUntil` for a next chunk
 * made straight after: false when the broadcast is no longer sending under
 * its lease (paused, cancelled or taken over meanwhile), and the caller then
 * rolls the chunk back.
 */
export async function recordChunk(tx: Tx, id: string, owner: string,
  p: { expandedPos: number; made: number; nextChunkAt: number; done: boolean; now: number; keepLeaseUntil?: number }): Promise<boolean> {
  const res = await tx.updateTable('broadcasts').set((eb) => ({
    expanded_pos: p.expandedPos, emails_created: eb('emails_created', '+', p.made), next_chunk_at: p.nextChunkAt,
    ...(p.keepLeaseUntil === undefined ? freed('broadcasts', p.now) : { locked_until: p.keepLeaseUntil }), updated_at: p.now,
    ...(p.done && { status: 'sent' as const, sent_at: p.now }),
  })).where('id', '=', id).where('lease_owner', '=', owner).where('status', '=', 'sending').executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** A contact of a broadcast that got no email, as the API lists it. */
export interface BroadcastSkip {
  object: 'broadcast_skip';
  contact_id: string;
  email: string;
  code: SkipCode;
  message: string;
  created_at: string;
}

export interface NewSkip {
  contactId: string;
  email: string;
  code: SkipCode;
  message: string;
}

/**
 * Records the contacts of a chunk that got no email, in the chunk's
 * transaction; one already recorded for the broadcast stays as it is.
 */
export async function insertSkips(tx: Tx, b: { id: string; workspaceId: string }, skips: NewSkip[], now: number): Promise<void> {
  if (skips.length === 0) return;
  await tx.insertInto('broadcast_skips').values(skips.map((s) => ({
    broadcast_id: b.id, workspace_id: b.workspaceId, contact_id: s.contactId, email: s.email, code: s.code, message: s.message, created_at: now,
  }))).onConflict((oc) => oc.columns(['broadcast_id', 'contact_id']).doNothing()).execute();
}

const toSkip = (r: Selectable<BroadcastSkipsTable>): BroadcastSkip => ({
  object: 'broadcast_skip', contact_id: r.contact_id, email: r.email, code: r.code, message: r.message, created_at: toIso(Number(r.created_at)),
});

/** The broadcast's skipped contacts, newest first. */
export async function listSkips(db: Db, ws: string, broadcastId: string, page: PageQuery): Promise<Page<BroadcastSkip>> {
  return fetchPage(page, (bound, order, take) => db.selectFrom('broadcast_skips').selectAll()
    .where('broadcast_id', '=', broadcastId).where('workspace_id', '=', ws)
    .$if(bound !== undefined, (q) => q.where('pos', bound!.op, bound!.pos))
    .orderBy('pos', order).limit(take).execute(), toSkip);
}

/** Gives up `owner`'s lease on the broadcast, its next chunk not before `nextChunkAt`. */
export async function releaseBroadcast(tx: Tx, id: string, owner: string, nextChunkAt: number): Promise<void> {
  await tx.updateTable('broadcasts').set({ ...freed('broadcasts', nextChunkAt), next_chunk_at: nextChunkAt })
    .where('id', '=', id).where('lease_owner', '=', owner).execute();
}

/** When the sender next has work, as far as the broadcasts say now (it sleeps until then). */
export interface BroadcastWork {
  /** The earliest time a scheduled broadcast starts or a paused one resumes. */
  startAt?: number;
  /** The earliest time a chunk of a sending broadcast no one holds is due. */
  chunkAt?: number;
}

/**
 * When the sender next has work, in one read: its look four times a second,
 * so a fixed text, with the statuses written into it.
 */
export async function nextBroadcastWork(db: Db, now: number): Promise<BroadcastWork> {
  const { rows: [row] } = await runShaped(db, 'next broadcast work', [now], ([at]) => compiledOn(db, sql<{ scheduled: unknown; resume: unknown; chunk: unknown }>`
    SELECT (SELECT min(scheduled_at) FROM broadcasts WHERE status = 'scheduled') AS scheduled,
      (SELECT min(resume_at) FROM broadcasts WHERE status = 'paused') AS resume,
      (SELECT min(next_chunk_at) FROM broadcasts WHERE status = 'sending' AND locked_until <= ${at}) AS chunk`));
  const time = (v: unknown) => (v == null ? undefined : Number(v));
  const starts = [time(row.scheduled), time(row.resume)].filter((t) => t !== undefined);
  return {
    ...(starts.length > 0 && { startAt: Math.min(...starts) }),
    ...(row.chunk != null && { chunkAt: Number(row.chunk) }),
  };
}
