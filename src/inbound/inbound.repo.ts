import { sql, type Selectable } from 'kysely';
import { compiledOn, insertRows, literalStatus, runShaped, type Db, type Tx } from '../store/db.js';
import type { InboundKind, InboundMessagesTable, InboundStatus } from './inbound.tables.js';
import { claimLeases } from '../store/lease.js';
import { fetchPage, type Page, type PageQuery } from '../store/paging.js';
import { toIso } from '../core/clock.js';
import type { MessageFields } from './parse-message.js';
import { indexedContainsText } from '../store/trigrams.js';
import { readSetting } from '../store/settings.js';

// Received messages. Rows become API shapes (or the plain records the
// service and the processor work with) here and nowhere else.

export interface InboundHeader {
  name: string;
  value: string;
}

export interface InboundAttachmentMeta {
  /** Position in the list, the {index} of the download path. */
  index: number;
  filename: string | null;
  content_type: string;
  size: number;
  content_id: string | null;
  disposition: 'attachment' | 'inline';
}

export interface AuthResults {
  spf: { result: string; domain: string | null };
  dkim: Array<{ result: string; domain: string; selector: string | null; aligned: boolean }>;
  dmarc: { result: string; policy: string | null; domain: string | null };
  /** The Authentication-Results field (RFC 8601) the checks amount to. */
  authentication_results: string;
}

/**
 * Where a message is in its processing: stored (the 250 was given), parsed
 * and checked, or given up on (failure_reason says why).
 */
export type InboundProcessingStatus = 'received' | 'processed' | 'failed';

export interface InboundEmailSummary {
  id: string;
  object: 'inbound_email';
  status: InboundProcessingStatus;
  failure_reason: string | null;
  domain_id: string;
  from: string;
  to: string[];
  cc: string[];
  subject: string;
  message_id: string | null;
  /** The email Mailroom sent from this workspace that this message answers. */
  in_reply_to_email_id: string | null;
  envelope: { mail_from: string; rcpt_to: string[] };
  size: number;
  attachment_count: number;
  received_at: string;
}

export interface InboundEmail extends InboundEmailSummary {
  reply_to: string[];
  text: string | null;
  html: string | null;
  headers: InboundHeader[];
  attachments: InboundAttachmentMeta[];
  /** null until the message is processed. */
  auth: AuthResults | null;
  tls: boolean;
}

/** A received message as stored: the envelope, where it was delivered, and the raw source. */
interface StoredEnvelope {
  id: string;
  workspaceId: string;
  domainId: string;
  kind: InboundKind;
  mailFrom: string;
  rcptTo: string[];
  remoteIp: string;
  helo: string;
  raw: Buffer;
}

/** What the listener stores before it answers 250. */
export interface NewInbound extends StoredEnvelope {
  tls: boolean;
  receivedAt: number;
  /** A processor of this process the message is leased to as it is stored (its first attempt), instead of claiming it later. */
  lease?: { owner: string; until: number };
}

/** A claimed row, as the processor needs it. */
export interface PendingInbound extends StoredEnvelope {
  attempts: number;
}

/** The parsed fields the processor stores when a message is ready. */
export interface ParsedInbound
  extends Pick<MessageFields, 'from' | 'to' | 'cc' | 'replyTo' | 'subject' | 'text' | 'html' | 'messageId' | 'headers' | 'attachments'> {
  auth: AuthResults;
  inReplyToEmailId: string | null;
  /** Bare addresses of the envelope and the header fields, for the to/from filters. */
  searchTo: string[];
  searchFrom: string[];
}

export interface InboundFilter {
  to?: string;
  from?: string;
  domainId?: string;
  inReplyToEmailId?: string;
  receivedAfter?: number;
  receivedBefore?: number;
}

/** A receiving domain as the listener matches it. */
export interface ReceivingDomain {
  id: string;
  workspaceId: string;
}

const json = <T>(text: string | null, fallback: T): T => (text === null ? fallback : (JSON.parse(text) as T));

type SummaryRow = Pick<Selectable<InboundMessagesTable>, 'pos' | 'id' | 'status' | 'last_error' | 'domain_id' | 'from_address' | 'to_list'
  | 'cc_list' | 'subject' | 'message_id' | 'in_reply_to_email_id' | 'mail_from' | 'rcpt_to' | 'size' | 'attachments' | 'received_at'>;

const SUMMARY_COLUMNS = ['pos', 'id', 'status', 'last_error', 'domain_id', 'from_address', 'to_list', 'cc_list', 'subject', 'message_id', 'in_reply_to_email_id',
  'mail_from', 'rcpt_to', 'size', 'attachments', 'received_at'] as const;

const PROCESSING_STATUS: Record<InboundStatus, InboundProcessingStatus> = { pending: 'received', ready: 'processed', failed: 'failed' };

const toSummary = (r: SummaryRow): InboundEmailSummary => ({
  id: r.id,
  object: 'inbound_email',
  status: PROCESSING_STATUS[r.status],
  failure_reason: r.status === 'failed' ? r.last_error ?? 'processing failed' : null,
  domain_id: r.domain_id,
  from: r.from_address ?? '',
  to: json(r.to_list, []),
  cc: json(r.cc_list, []),
  subject: r.subject ?? '',
  message_id: r.message_id,
  in_reply_to_email_id: r.in_reply_to_email_id,
  envelope: { mail_from: r.mail_from, rcpt_to: json(r.rcpt_to, []) },
  size: r.size,
  attachment_count: json<unknown[]>(r.attachments, []).length,
  received_at: toIso(r.received_at),
});

const toInbound = (r: Selectable<InboundMessagesTable>): InboundEmail => ({
  ...toSummary(r),
  reply_to: json(r.reply_to_list, []),
  text: r.text_body,
  html: r.html,
  headers: json(r.headers, []),
  attachments: json(r.attachments, []),
  auth: r.status === 'ready' ? json<AuthResults | null>(r.auth, null) : null,
  tls: r.tls === 1,
});

const searchText = (addresses: string[]) => [...new Set(addresses.map((a) => a.trim().toLowerCase()).filter(Boolean))].join('\n');

// ---- receiving domains (the domains table, read only) ----

/** Active domains of that name with inbound mail on, in any workspace. */
export async function inboundDomains(db: Db, name: string): Promise<ReceivingDomain[]> {
  const rows = await db.selectFrom('domains').select(['id', 'workspace_id'])
    .where('name', '=', name).where('status', '=', 'active').where('inbound_enabled', '=', 1)
    .orderBy('pos').execute();
  return rows.map((r) => ({ id: r.id, workspaceId: r.workspace_id }));
}

/**
 * Domains whose return path domain (`<return path subdomain>.<name>`) is
 * `host`, active or being verified: an unverified domain sends no live mail,
 * so nothing can bounce to it, and its bounce host is refused like any other
 * host that is not ours.
 */
export async function returnPathDomains(db: Db, host: string): Promise<ReceivingDomain[]> {
  // Each split of the host at a dot is a candidate (subdomain, domain) pair;
  // a return path subdomain may itself have several labels.
  const splits: Array<[string, string]> = [];
  for (let i = host.indexOf('.'); i > 0; i = host.indexOf('.', i + 1)) splits.push([host.slice(0, i), host.slice(i + 1)]);
  if (splits.length === 0) return [];
  const rows = await db.selectFrom('domains').select(['id', 'workspace_id'])
    .where((eb) => eb.or(splits.map(([sub, name]) => eb.and([eb('return_path_subdomain', '=', sub), eb('name', '=', name)]))))
    .where('status', 'in', ['active', 'verifying'])
    .orderBy('pos').execute();
  return rows.map((r) => ({ id: r.id, workspaceId: r.workspace_id }));
}

/** Whether any workspace has a domain of that name, whatever its state. */
export async function domainExists(db: Db, name: string): Promise<boolean> {
  return (await db.selectFrom('domains').select('id').where('name', '=', name).limit(1).executeTakeFirst()) !== undefined;
}

// ---- the emails a return path names (the emails tables, read only) ----

export interface ReturnedEmail {
  id: string;
  domainId: string | null;
  from: string;
  subject: string;
  /** When the email was accepted: whether a return path of it may carry a legacy tag. */
  createdAt: number;
  /** Bare recipient addresses as given. */
  recipients: string[];
  /** The id of each recipient's row, by address as given. */
  recipientIds: Map<string, string>;
  /**
   * The recipients that share their destination domain with another
   * recipient of the email: only they can have been sent in a transaction
   * of several recipients, under the untagged return path.
   */
  sharingDestination: Set<string>;
}

export async function findReturnedEmail(db: Db | Tx, ws: string, emailId: string): Promise<ReturnedEmail | undefined> {
  const email = await db.selectFrom('emails').select(['id', 'domain_id', 'from_address', 'subject', 'created_at'])
    .where('workspace_id', '=', ws).where('id', '=', emailId).executeTakeFirst();
  if (!email) return undefined;
  const recipients = await db.selectFrom('email_recipients').select(['id', 'address', 'domain']).where('email_id', '=', emailId).orderBy('id').execute();
  const perDomain = new Map<string, number>();
  for (const r of recipients) perDomain.set(r.domain, (perDomain.get(r.domain) ?? 0) + 1);
  return {
    id: email.id, domainId: email.domain_id, from: email.from_address, subject: email.subject, createdAt: Number(email.created_at),
    recipients: recipients.map((r) => r.address), recipientIds: new Map(recipients.map((r) => [r.address, r.id])),
    sharingDestination: new Set(recipients.filter((r) => perDomain.get(r.domain)! > 1).map((r) => r.address)),
  };
}

/**
 * The first creation time of an email whose return paths carry only keyed
 * tags (migration 0038 wrote it): emails created before may also carry a
 * legacy one.
 */
export async function keyedReturnPathsSince(db: Db | Tx): Promise<number> {
  const value = await readSetting(db, 'keyed_return_paths_since');
  // Written by a migration every store has run; without it no legacy tag is taken.
  return value === undefined ? 0 : Number(value);
}

/** Message-IDs of a reply looked at, nearest first: a thread's References can run to hundreds. */
export const ANSWERED_IDS_LOOKED_AT = 50;

/**
 * The email of this workspace that one of `messageIds` names, nearest first.
 * Mailroom gives each email the Message-ID `<email id@from domain>`; the id
 * part finds the email, and its stored Message-ID must then match exactly, so
 * a made-up or another workspace's id links nothing. One query reads every
 * candidate.
 */
export async function findAnsweredEmail(db: Db | Tx, ws: string, messageIds: readonly string[]): Promise<ReturnedEmail | undefined> {
  const candidates = messageIds.slice(0, ANSWERED_IDS_LOOKED_AT).flatMap((messageId) => {
    const id = /^<(em_[A-Za-z0-9]+)@[^<>@\s]+>$/.exec(messageId)?.[1];
    return id ? [{ id, messageId: messageId.toLowerCase() }] : [];
  });
  if (candidates.length === 0) return undefined;
  const found = await db.selectFrom('emails').select(['id', 'message_id'])
    .where('workspace_id', '=', ws).where('id', 'in', [...new Set(candidates.map((c) => c.id))]).execute();
  const stored = new Map(found.map((e) => [e.id, e.message_id.toLowerCase()]));
  const answered = candidates.find((c) => stored.get(c.id) === c.messageId);
  return answered ? findReturnedEmail(db, ws, answered.id) : undefined;
}

// ---- writes of the listener and the processor ----

export async function insertInbound(tx: Tx, rows: NewInbound[]): Promise<void> {
  await insertRows(tx, 'inbound_messages', rows.map((m) => ({
    id: m.id, workspace_id: m.workspaceId, domain_id: m.domainId, kind: m.kind, status: 'pending' as const,
    mail_from: m.mailFrom, rcpt_to: JSON.stringify(m.rcptTo), remote_ip: m.remoteIp, helo: m.helo, tls: m.tls ? 1 : 0,
    size: m.raw.length, locked_until: m.lease?.until ?? 0, lease_owner: m.lease?.owner ?? null, attempts: m.lease ? 1 : 0, last_error: null,
    received_at: m.receivedAt, processed_at: null,
    from_address: null, to_list: null, cc_list: null, reply_to_list: null, subject: null, text_body: null, html: null,
    message_id: null, headers: null, attachments: null, auth: null,
    search_to: searchText(m.rcptTo), search_from: searchText([m.mailFrom]), detail: null,
  })));
  await insertRows(tx, 'inbound_sources', rows.map((m) => ({ id: m.id, raw: m.raw })));
}

/**
 * Whether a pending message no one holds is waiting: the processor's look
 * before a claim (a write transaction). Compiled once, the status written
 * into the text (bound, SQLite would plan the statement anew at every run,
 * to see whether the value allows the partial index of pending messages).
 */
export async function anyClaimable(db: Db, now: number): Promise<boolean> {
  const { rows } = await runShaped(db, 'any inbound claimable', [now], ([at]) => compiledOn(db, sql<{ id: string }>`
    SELECT id FROM inbound_messages WHERE status = 'pending' AND locked_until <= ${at} LIMIT 1`));
  return rows.length > 0;
}

/** Leases up to `limit` pending rows to `owner`, oldest first, and counts the attempt. */
export async function claimPending(tx: Tx, c: { now: number; leaseMs: number; owner: string; limit: number }): Promise<PendingInbound[]> {
  const pending = tx.selectFrom('inbound_messages').select('id').where('status', '=', literalStatus('pending'))
    .orderBy('locked_until').orderBy('pos').limit(sql.lit(c.limit));
  const rows = await claimLeases(tx, 'inbound_messages', pending, { now: c.now, until: c.now + c.leaseMs, owner: c.owner });
  const res = { rows };
  if (res.rows.length === 0) return [];
  const sources = await tx.selectFrom('inbound_sources').select(['id', 'raw']).where('id', 'in', res.rows.map((r) => r.id)).execute();
  // A message and its source are written and deleted in the same transactions.
  const rawOf = new Map(sources.map((s) => [s.id, s.raw]));
  return res.rows.map((r) => ({
    id: r.id, workspaceId: r.workspace_id, domainId: r.domain_id, kind: r.kind, mailFrom: r.mail_from,
    rcptTo: JSON.parse(r.rcpt_to) as string[], remoteIp: r.remote_ip, helo: r.helo, raw: rawOf.get(r.id)!, attempts: r.attempts,
  }));
}

/** Stores the parsed message and makes it visible; false when the lease was lost meanwhile. */
export async function markReady(tx: Tx, id: string, owner: string, p: ParsedInbound, now: number): Promise<boolean> {
  const values = ['ready', now, 0, null, null, p.from, JSON.stringify(p.to), JSON.stringify(p.cc), JSON.stringify(p.replyTo),
    p.subject, p.text, p.html, p.messageId, JSON.stringify(p.headers), JSON.stringify(p.attachments), JSON.stringify(p.auth),
    searchText(p.searchTo), searchText(p.searchFrom), id, owner, 'pending', p.inReplyToEmailId];
  const res = await runShaped(tx, 'inbound ready', values, (v) => tx.updateTable('inbound_messages').set({
    status: v[0] as 'ready', processed_at: v[1] as number, locked_until: v[2] as number, lease_owner: v[3] as null, last_error: v[4] as null,
    from_address: v[5] as string, to_list: v[6] as string, cc_list: v[7] as string, reply_to_list: v[8] as string,
    subject: v[9] as string, text_body: v[10] as string | null, html: v[11] as string | null, message_id: v[12] as string | null,
    headers: v[13] as string, attachments: v[14] as string, auth: v[15] as string,
    search_to: v[16] as string, search_from: v[17] as string, in_reply_to_email_id: v[21] as string | null,
  }).where('id', '=', v[18] as string).where('lease_owner', '=', v[19] as string).where('status', '=', v[20] as 'pending'));
  return Number(res.numAffectedRows) === 1;
}

/** Closes a report row with what came of it; false when the lease was lost meanwhile. */
export async function markReportDone(tx: Tx, id: string, owner: string, detail: string, now: number): Promise<boolean> {
  const res = await tx.updateTable('inbound_messages')
    .set({ status: 'ready', processed_at: now, locked_until: 0, lease_owner: null, last_error: null, detail })
    .where('id', '=', id).where('lease_owner', '=', owner).where('status', '=', 'pending').executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** After a failed attempt: retried once `retryAt` comes, or given up for good when `retryAt` is null. */
export async function markAttemptFailed(tx: Tx, id: string, owner: string, error: string, retryAt: number | null, now: number): Promise<void> {
  await tx.updateTable('inbound_messages')
    .set(retryAt === null
      ? { status: 'failed', processed_at: now, locked_until: 0, lease_owner: null, last_error: error }
      : { locked_until: retryAt, lease_owner: null, last_error: error })
    .where('id', '=', id).where('lease_owner', '=', owner).where('status', '=', 'pending').execute();
}

/** Deletes up to `limit` messages received before `before`; returns how many went. */
export async function purgeReceivedBefore(tx: Tx, before: number, limit: number): Promise<number> {
  const ids = (await tx.selectFrom('inbound_messages').select('id').where('received_at', '<', before).orderBy('received_at').limit(limit).execute())
    .map((r) => r.id);
  if (ids.length === 0) return 0;
  await tx.deleteFrom('inbound_sources').where('id', 'in', ids).execute();
  const res = await tx.deleteFrom('inbound_messages').where('id', 'in', ids).executeTakeFirst();
  return Number(res.numDeletedRows);
}

// ---- reads of the API ----

// Received mail is visible from its 250 on, in whatever state its processing
// is; reports to a return path are not mail of the workspace's own.
const VISIBLE_KIND = 'message';

export async function listInbound(db: Db, ws: string, f: InboundFilter, page: PageQuery, now: number): Promise<Page<InboundEmailSummary>> {
  const to = f.to === undefined ? undefined : await indexedContainsText(db, 'inbound_messages', 'search_to', f.to.toLowerCase(), now);
  const from = f.from === undefined ? undefined : await indexedContainsText(db, 'inbound_messages', 'search_from', f.from.toLowerCase(), now);
  return fetchPage(page, (bound, order, take) => db.selectFrom('inbound_messages').select(SUMMARY_COLUMNS)
    .where('workspace_id', '=', ws).where('kind', '=', VISIBLE_KIND)
    .$if(f.domainId !== undefined, (q) => q.where('domain_id', '=', f.domainId!))
    .$if(f.inReplyToEmailId !== undefined, (q) => q.where('in_reply_to_email_id', '=', f.inReplyToEmailId!))
    .$if(f.receivedAfter !== undefined, (q) => q.where('received_at', '>', f.receivedAfter!))
    .$if(f.receivedBefore !== undefined, (q) => q.where('received_at', '<', f.receivedBefore!))
    .$if(to !== undefined, (q) => q.where(to!))
    .$if(from !== undefined, (q) => q.where(from!))
    .$if(bound !== undefined, (q) => q.where('pos', bound!.op, bound!.pos))
    .orderBy('pos', order).limit(take).execute(), toSummary);
}

export async function findInbound(db: Db, ws: string, id: string): Promise<InboundEmail | undefined> {
  const row = await db.selectFrom('inbound_messages').selectAll()
    .where('workspace_id', '=', ws).where('id', '=', id).where('kind', '=', VISIBLE_KIND)
    .executeTakeFirst();
  return row && toInbound(row);
}

/** The stored source of a message, and its processing status. */
export async function findInboundRaw(db: Db, ws: string, id: string): Promise<{ raw: Buffer; status: InboundProcessingStatus } | undefined> {
  const row = await db.selectFrom('inbound_messages as m').innerJoin('inbound_sources as s', 's.id', 'm.id').select(['s.raw', 'm.status'])
    .where('m.workspace_id', '=', ws).where('m.id', '=', id).where('m.kind', '=', VISIBLE_KIND)
    .executeTakeFirst();
  return row && { raw: row.raw, status: PROCESSING_STATUS[row.status] };
}
