import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import { insertRows, insertRowsPositioned, jsonParam, jsonRowsInsert, literalStatus, paddedInList, runShaped, runSql, type Db, type Tx } from '../store/db.js';
import { lockedForClaim, lockedForUpdate } from '../store/lease.js';
import type { ShownRecipients } from './email-input.js';
import type { BroadcastStatsTable, EmailContentsTable, EmailRecipientsTable, EmailStatus, EmailsTable, RecipientStatus } from './emails.tables.js';
import { fetchPage, type Page, type PageBound, type PageQuery } from '../store/paging.js';
import { toIso, toIsoOrNull } from '../core/clock.js';
import { isPostgres } from '../store/schema-helpers.js';
import { ftsTerm, indexedContainsText, narrowedContainsText, rareTrigramTerms, searchesEmailsTable, workspaceSearchTag } from '../store/trigrams.js';
import { followerPosition, saveFollowerPosition } from '../store/event-log.js';

// Emails, their recipients, tags and attachment parts. Rows are mapped to
// API shapes (or to the plain StoredEmail the service reasons about) here,
// next to the queries, and never leave this file.

const onPostgres = (db: Db | Tx) => isPostgres(db as unknown as Kysely<unknown>);

export interface AttachmentMeta {
  filename: string;
  content_type: string;
  size: number;
  content_id: string | null;
}

export interface RecipientView {
  email: string;
  type: 'to' | 'cc' | 'bcc';
  status: RecipientStatus;
  smtp_code: number | null;
  detail: string | null;
  updated_at: string;
}

export interface EmailSummary {
  id: string;
  object: 'email';
  from: string;
  to: string[];
  cc: string[];
  bcc: string[];
  reply_to: string[];
  subject: string;
  tags: string[];
  status: EmailStatus;
  mode: 'live' | 'test';
  domain_id: string | null;
  message_id: string;
  scheduled_at: string | null;
  sent_at: string | null;
  resent_from: string | null;
  /** The template the content was rendered from, and its version; null when the content was given. */
  template_id: string | null;
  template_version: number | null;
  /** The broadcast the email is part of, and the contact it was made for. */
  broadcast_id: string | null;
  contact_id: string | null;
  /** Recipients whose message bounced (also after delivery, by a report), and recipients who complained. */
  bounced_recipients: number;
  complained_recipients: number;
  created_at: string;
  updated_at: string;
}

export interface Email extends EmailSummary {
  html: string | null;
  text: string | null;
  headers: Record<string, string>;
  attachments: AttachmentMeta[];
  recipients: RecipientView[];
}

/** The fields an email has both when it is written and when it is read back. */
interface EmailFields {
  id: string;
  workspaceId: string;
  domainId: string | null;
  mode: 'live' | 'test';
  from: string;
  fromDomain: string;
  to: string[];
  cc: string[];
  bcc: string[];
  replyTo: string[];
  subject: string;
  html: string | null;
  text: string | null;
  headers: Record<string, string>;
  tags: string[];
  status: EmailStatus;
  scheduledAt: number | null;
  messageId: string;
  /** The To and Cc fields the message shows, when they are not its recipients (a submitted message's own). */
  shownRecipients: ShownRecipients | null;
  templateId: string | null;
  templateVersion: number | null;
}

/** An email as the service reasons about it: times in ms, JSON parsed. */
export interface StoredEmail extends EmailFields {
  pos: number;
  attachments: AttachmentMeta[];
  sentAt: number | null;
  createdAt: number;
}

export interface StoredRecipient {
  id: string;
  email: string;
  kind: 'to' | 'cc' | 'bcc';
  domain: string;
  status: RecipientStatus;
}

export interface AttachmentPart {
  filename: string;
  contentType: string;
  contentId: string | null;
  content: Buffer;
}

export interface NewEmail extends EmailFields {
  resentFrom: string | null;
  broadcastId: string | null;
  contactId: string | null;
  recipients: Array<{ id: string; email: string; kind: 'to' | 'cc' | 'bcc'; domain: string; status: RecipientStatus; detail: string | null }>;
  attachments: AttachmentPart[];
  now: number;
}

export interface EmailFilter {
  status?: EmailStatus;
  to?: string;
  from?: string;
  subject?: string;
  tags?: string[];
  createdAfter?: number;
  createdBefore?: number;
  domainId?: string;
  templateId?: string;
  broadcastId?: string;
  mode?: 'live' | 'test';
  /** Emails with a recipient that bounced, or one that complained. */
  outcome?: 'bounced' | 'complained';
}

const SUMMARY_COLUMNS = [
  'pos', 'id', 'domain_id', 'mode', 'from_address', 'to_list', 'cc_list', 'bcc_list', 'reply_to_list', 'subject', 'tags',
  'status', 'scheduled_at', 'sent_at', 'message_id', 'resent_from', 'template_id', 'template_version', 'broadcast_id', 'contact_id',
  'created_at', 'updated_at',
] as const;

type SummaryRow = Pick<Selectable<EmailsTable>, (typeof SUMMARY_COLUMNS)[number]>;
/** A summary's row with its recipients' outcomes counted (withOutcomeCounts). */
type CountedRow = SummaryRow & OutcomeCounts;
interface OutcomeCounts { bounced: number; complained: number }

const json = <T>(text: string): T => JSON.parse(text) as T;

const toSummary = (r: CountedRow): EmailSummary => ({
  id: r.id, object: 'email', from: r.from_address, to: json(r.to_list), cc: json(r.cc_list), bcc: json(r.bcc_list),
  reply_to: json(r.reply_to_list), subject: r.subject, tags: json(r.tags), status: r.status, mode: r.mode,
  domain_id: r.domain_id, message_id: r.message_id, scheduled_at: toIsoOrNull(r.scheduled_at), sent_at: toIsoOrNull(r.sent_at),
  resent_from: r.resent_from, template_id: r.template_id, template_version: r.template_version,
  broadcast_id: r.broadcast_id, contact_id: r.contact_id, bounced_recipients: r.bounced, complained_recipients: r.complained,
  created_at: toIso(r.created_at), updated_at: toIso(r.updated_at),
});

/**
 * The rows, each with how many of its recipients bounced and complained: two
 * queries for a page, not two per email. A complaint is an event only (the
 * recipient stays delivered), counted once per recipient.
 */
async function withOutcomeCounts<R extends SummaryRow>(db: Db | Tx, rows: R[]): Promise<Array<R & OutcomeCounts>> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const bounced = await db.selectFrom('email_recipients').select(['email_id', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('email_id', 'in', ids).where('status', '=', 'bounced').groupBy('email_id').execute();
  const complained = await db.selectFrom('events').select(['email_id', (eb) => eb.fn.count<number | string>('recipient').distinct().as('n')])
    .where('email_id', 'in', ids).where('type', '=', 'email.complained').groupBy('email_id').execute();
  // PostgreSQL counts in bigint, which its driver gives as a string.
  const byEmail = (counts: Array<{ email_id: string | null; n: number | string }>) => new Map(counts.map((c) => [c.email_id, Number(c.n)]));
  const b = byEmail(bounced);
  const c = byEmail(complained);
  return rows.map((r) => ({ ...r, bounced: b.get(r.id) ?? 0, complained: c.get(r.id) ?? 0 }));
}

const toRecipientView = (r: Selectable<EmailRecipientsTable>): RecipientView => ({
  email: r.address, type: r.kind, status: r.status, smtp_code: r.smtp_code, detail: r.detail, updated_at: toIso(r.updated_at),
});

/** An email row with its content. */
type FullRow = Selectable<EmailsTable> & Pick<Selectable<EmailContentsTable>, 'html' | 'text_body' | 'headers' | 'shown_recipients'>;

/** Emails with their content: every column of the row, and the content from email_contents. */
function withContent(db: Db | Tx) {
  return db.selectFrom('emails').innerJoin('email_contents', 'email_contents.pos', 'emails.pos')
    .selectAll('emails').select(['email_contents.html', 'email_contents.text_body', 'email_contents.headers', 'email_contents.shown_recipients']);
}

const toStored = (r: FullRow): StoredEmail => ({
  pos: r.pos, id: r.id, workspaceId: r.workspace_id, domainId: r.domain_id, mode: r.mode, from: r.from_address,
  fromDomain: r.from_domain, to: json(r.to_list), cc: json(r.cc_list), bcc: json(r.bcc_list), replyTo: json(r.reply_to_list),
  subject: r.subject, html: r.html, text: r.text_body, headers: json(r.headers), tags: json(r.tags),
  attachments: json(r.attachments), status: r.status, scheduledAt: r.scheduled_at, sentAt: r.sent_at,
  messageId: r.message_id, shownRecipients: r.shown_recipients === null ? null : json(r.shown_recipients),
  templateId: r.template_id, templateVersion: r.template_version, createdAt: r.created_at,
});

/** Lower-cased text of the searchable fields: recipients' addresses, the from field, the subject. */
function searchText(e: NewEmail) {
  return {
    search_to: e.recipients.map((r) => r.email).join(' ').toLowerCase(),
    search_from: e.from.toLowerCase(),
    search_subject: e.subject.toLowerCase(),
  };
}

/** An email's row of email_contents, but for its position. */
const contentOf = (e: NewEmail) => ({
  html: e.html, text_body: e.text, headers: JSON.stringify(e.headers),
  shown_recipients: e.shownRecipients === null ? null : JSON.stringify(e.shownRecipients),
});

const attachmentMetas = (e: NewEmail) => e.attachments.map((a): AttachmentMeta => ({
  filename: a.filename, content_type: a.contentType, size: a.content.length, content_id: a.contentId,
}));

/** Rows of other tables written with new emails, in the same statement on PostgreSQL (see insertEmails). */
export interface RowsAlongside {
  table: 'outbound_queue' | 'events';
  rows: Array<Record<string, unknown>>;
}

/**
 * Inserts the emails with their recipients, tags and attachment parts, and
 * the rows `alongside` them (their queue rows and first events), a
 * statement per table for all of them on SQLite. On PostgreSQL, where each
 * statement is a round trip to the server that the transaction (and its
 * connection) waits for, one statement writes them all: see
 * insertOnPostgres.
 */
export async function insertEmails(tx: Tx, es: NewEmail[], alongside: RowsAlongside[] = []): Promise<void> {
  if (es.length === 0) return;
  const searches = es.map(searchText);
  const emails = es.map((e, i) => ({
    id: e.id, workspace_id: e.workspaceId, domain_id: e.domainId, mode: e.mode, from_address: e.from, from_domain: e.fromDomain,
    to_list: JSON.stringify(e.to), cc_list: JSON.stringify(e.cc), bcc_list: JSON.stringify(e.bcc),
    reply_to_list: JSON.stringify(e.replyTo), subject: e.subject, tags: JSON.stringify(e.tags),
    attachments: JSON.stringify(attachmentMetas(e)),
    status: e.status, scheduled_at: e.scheduledAt, sent_at: null, message_id: e.messageId, resent_from: e.resentFrom,
    template_id: e.templateId, template_version: e.templateVersion, broadcast_id: e.broadcastId, contact_id: e.contactId,
    ...searches[i], created_at: e.now, updated_at: e.now,
  }));
  const recipients = es.flatMap((e) => e.recipients.map((r, idx) => ({
    id: r.id, email_id: e.id, idx, workspace_id: e.workspaceId, address: r.email, kind: r.kind, domain: r.domain,
    status: r.status, smtp_code: null, detail: r.detail, updated_at: e.now, broadcast_id: e.broadcastId,
  })));
  if (onPostgres(tx)) {
    await insertOnPostgres(tx, {
      emails, recipients, alongside,
      contents: es.map((e, i) => ({ id: e.id, ...contentOf(e), ...searches[i] })),
      tags: es.flatMap((e) => e.tags.map((tag) => ({ email_id: e.id, workspace_id: e.workspaceId, tag }))),
    });
  } else {
    const positions = await insertRowsPositioned(tx, 'emails', emails);
    await insertRows(tx, 'email_contents', es.map((e, i) => ({ pos: positions[i], ...contentOf(e) })));
    await insertRows(tx, 'email_recipients', recipients);
    await insertRows(tx, 'email_tags', es.flatMap((e, i) => e.tags.map((tag) => ({ email_id: e.id, email_pos: positions[i], workspace_id: e.workspaceId, tag }))));
    for (const { table, rows } of alongside) await insertRows(tx, table, rows as never[]);
  }
  const parts = es.flatMap((e) => e.attachments.map((a, idx) => ({
    email_id: e.id, idx, filename: a.filename, content_type: a.contentType, content_id: a.contentId, content: a.content,
  })));
  if (parts.length) await tx.insertInto('email_attachments').values(parts).execute();
}

/**
 * The rows of insertEmails on PostgreSQL in one statement: each table's
 * rows go as one JSON array, read back into the table's own row type
 * (json_populate_recordset), each insert a part of the statement (a
 * data-modifying WITH); the rows that carry an email's position join the
 * emails' insert on its id. The text depends only on the tables and their
 * columns, not on how many rows there are, so it stays one prepared
 * statement.
 */
async function insertOnPostgres(tx: Tx, o: {
  emails: Array<Record<string, unknown>>; contents: Array<Record<string, unknown>>; recipients: Array<Record<string, unknown>>;
  tags: Array<Record<string, unknown>>; alongside: RowsAlongside[];
}): Promise<void> {
  const plain = [{ table: 'email_recipients', rows: o.recipients }, ...o.alongside].filter((p) => p.rows.length > 0);
  const text = `WITH e AS (
      ${jsonRowsInsert('emails', Object.keys(o.emails[0]), '$1')} RETURNING id, pos
    ), contents AS (
      INSERT INTO email_contents (pos, html, text_body, headers, shown_recipients) SELECT e.pos, v.html, v.text_body, v.headers, v.shown_recipients
      FROM json_to_recordset($2::json) AS v(id text, html text, text_body text, headers text, shown_recipients text) JOIN e ON e.id = v.id
    ), search AS (
      INSERT INTO emails_search (pos, search_to, search_from, search_subject) SELECT e.pos, v.search_to, v.search_from, v.search_subject
      FROM json_to_recordset($2::json) AS v(id text, search_to text, search_from text, search_subject text) JOIN e ON e.id = v.id
    ), tags AS (
      INSERT INTO email_tags (email_id, email_pos, workspace_id, tag) SELECT v.email_id, e.pos, v.workspace_id, v.tag
      FROM json_to_recordset($3::json) AS v(email_id text, workspace_id text, tag text) JOIN e ON e.id = v.email_id
    )${plain.map(({ table, rows }, i) => `, plain_${i} AS (
      ${jsonRowsInsert(table, Object.keys(rows[0]), `$${i + 4}`)}
    )`).join('')}
    SELECT count(*) AS n FROM e`;
  await runSql(tx, text, [o.emails, o.contents, o.tags, ...plain.map((p) => p.rows)].map(jsonParam));
}

/** A new email as the API shows it once insertEmails has written it. */
export function newEmailView(e: NewEmail): Email {
  const at = toIso(e.now);
  return {
    id: e.id, object: 'email', from: e.from, to: e.to, cc: e.cc, bcc: e.bcc, reply_to: e.replyTo, subject: e.subject, tags: e.tags,
    status: e.status, mode: e.mode, domain_id: e.domainId, message_id: e.messageId, scheduled_at: toIsoOrNull(e.scheduledAt),
    sent_at: null, resent_from: e.resentFrom, template_id: e.templateId, template_version: e.templateVersion,
    broadcast_id: e.broadcastId, contact_id: e.contactId, bounced_recipients: 0, complained_recipients: 0, created_at: at, updated_at: at, html: e.html, text: e.text, headers: e.headers,
    attachments: attachmentMetas(e), recipients: e.recipients.map((r) => ({ email: r.email, type: r.kind, status: r.status, smtp_code: null, detail: r.detail, updated_at: at })),
  };
}

export async function findStoredEmail(db: Db | Tx, ws: string, id: string): Promise<StoredEmail | undefined> {
  const row = await withContent(db).where('emails.workspace_id', '=', ws).where('emails.id', '=', id).executeTakeFirst();
  return row && toStored(row);
}

/** Whether the workspace has the email: its row alone, none of its content. */
export async function emailExists(db: Db | Tx, ws: string, id: string): Promise<boolean> {
  const row = await db.selectFrom('emails').select('id').where('workspace_id', '=', ws).where('id', '=', id).executeTakeFirst();
  return row !== undefined;
}

/** The email, read to change it: its row stays locked until the transaction ends (lockedForUpdate). */
export async function findStoredEmailForUpdate(tx: Tx, ws: string, id: string): Promise<StoredEmail | undefined> {
  const row = await lockedForUpdate(tx, withContent(tx).where('emails.workspace_id', '=', ws).where('emails.id', '=', id)).executeTakeFirst();
  return row && toStored(row);
}

/** By id alone, several at once: for the delivery worker, which works across workspaces. */
export async function findStoredEmailsByIds(db: Db | Tx, ids: string[]): Promise<StoredEmail[]> {
  if (ids.length === 0) return [];
  const list = paddedInList(ids);
  const { rows } = await runShaped(db, `emails by id x${list.length}`, list, (p) => withContent(db).where('emails.id', 'in', p as string[]));
  return rows.map(toStored);
}

export async function getEmail(db: Db | Tx, ws: string, id: string): Promise<Email | undefined> {
  const row = await withContent(db).where('emails.workspace_id', '=', ws).where('emails.id', '=', id).executeTakeFirst();
  if (!row) return undefined;
  const recipients = await db.selectFrom('email_recipients').selectAll().where('email_id', '=', id).orderBy('idx').execute();
  const [counted] = await withOutcomeCounts(db, [row]);
  return {
    ...toSummary(counted!), html: row.html, text: row.text_body, headers: json(row.headers), attachments: json(row.attachments),
    recipients: recipients.map(toRecipientView),
  };
}

export async function listEmails(db: Db, ws: string, f: EmailFilter, page: PageQuery, now: number): Promise<Page<EmailSummary>> {
  const text: Array<[column: 'search_to' | 'search_from' | 'search_subject', needle: string]> = [];
  if (f.to !== undefined) text.push(['search_to', f.to.toLowerCase()]);
  if (f.from !== undefined) text.push(['search_from', f.from.toLowerCase()]);
  if (f.subject !== undefined) text.push(['search_subject', f.subject.toLowerCase()]);
  const indexed = text.filter(([, n]) => searchesEmailsTable(db, n));
  const search = await postgresSearch(db, text, now);

  const col = (name: string) => sql.ref(`emails.${name}`);
  const conditions = [
    sql<boolean>`${col('workspace_id')} = ${ws}`,
    ...(f.status !== undefined ? [sql<boolean>`${col('status')} = ${f.status}`] : []),
    ...(f.domainId !== undefined ? [sql<boolean>`${col('domain_id')} = ${f.domainId}`] : []),
    ...(f.mode !== undefined ? [sql<boolean>`${col('mode')} = ${f.mode}`] : []),
    ...(f.templateId !== undefined ? [sql<boolean>`${col('template_id')} = ${f.templateId}`] : []),
    ...(f.broadcastId !== undefined ? [sql<boolean>`${col('broadcast_id')} = ${f.broadcastId}`] : []),
    // Complaints are few: the workspace's, by type, are read from their index; bounces are checked email by email.
    ...(f.outcome === 'complained'
      ? [sql<boolean>`${col('id')} IN (SELECT email_id FROM events WHERE workspace_id = ${ws} AND type = 'email.complained')`] : []),
    ...(f.outcome === 'bounced'
      ? [sql<boolean>`EXISTS (SELECT 1 FROM email_recipients r WHERE r.email_id = ${col('id')} AND r.status = 'bounced')`] : []),
    ...(f.createdAfter !== undefined ? [sql<boolean>`${col('created_at')} > ${f.createdAfter}`] : []),
    ...(f.createdBefore !== undefined ? [sql<boolean>`${col('created_at')} < ${f.createdBefore}`] : []),
    ...(f.tags?.length ? [sql<boolean>`${col('pos')} IN (SELECT email_pos FROM email_tags WHERE workspace_id = ${ws} AND tag IN (${sql.join(f.tags)}))`] : []),
    ...(search ? (search.narrowed ? [] : [search.filter]) : await Promise.all(text.map(([column, needle]) => indexedContainsText(db, 'emails', column, needle, now)))),
  ];
  const filters = sql<boolean>`${sql.join(conditions, sql` AND `)}`;
  const columns = SUMMARY_COLUMNS.map((c) => `emails.${c}` as const);

  const counted = (fetch: Fetch<SummaryRow>): Fetch<CountedRow> => async (bound, order, take) =>
    withOutcomeCounts(db, await fetch(bound, order, take));
  const plain = (extra: Array<RawBuilder<boolean>>): Fetch<SummaryRow> => (bound, order, take) => db.selectFrom('emails').select(columns)
    .where(filters).$if(extra.length > 0, (q) => q.where(sql<boolean>`${sql.join(extra, sql` AND `)}`))
    .$if(bound !== undefined, (q) => q.where('emails.pos', bound!.op, bound!.pos))
    .orderBy('emails.pos', order).limit(take).execute();
  if (search?.narrowed) {
    // The positions the trigram indexes of emails_search find, few, sorted
    // (newest first) drive: each is looked up in emails and checked against
    // the other filters until the page is full. (A subquery with ORDER BY
    // is planned on its own: its positions come sorted, so the page ends early.)
    return fetchPage(page, counted((bound, order, take) => db.selectFrom(sql<{ pos: number }>`(SELECT pos FROM emails_search WHERE ${search.match}
        ${bound ? sql`AND pos ${sql.raw(bound.op)} ${bound.pos}` : sql``} ORDER BY pos ${sql.raw(order)})`.as('s'))
      .crossJoin('emails').select(columns)
      .where(sql<boolean>`${col('pos')} = s.pos`)
      .where(filters)
      .orderBy(sql`s.pos`, order).limit(take).execute()), toSummary);
  }
  if (indexed.length === 0) return fetchPage(page, counted(plain([])), toSummary);

  // Two parts: up to the watermark through the trigram index, after it (the
  // emails of the last seconds) by the filters on the rows. Both give the
  // same rows. In the index, the FTS5 table drives: it yields matching
  // positions in order (newest first), each looked up in emails and checked
  // against the other filters, until the page is full. CROSS JOIN keeps
  // SQLite from putting emails first.
  const mark = await emailSearchWatermark(db);
  const terms = [ftsTerm('ws_tag', workspaceSearchTag(ws))];
  for (const [column, needle] of indexed) terms.push(await rareTrigramTerms(db, 'emails_search', column, needle, now));
  const match = terms.join(' AND ');
  const head: Fetch<SummaryRow> = (bound, order, take) => db.selectFrom(sql<{ rowid: number }>`emails_search`.as('s'))
    .crossJoin('emails').select(columns)
    .where(sql<boolean>`s.emails_search MATCH ${match}`)
    .where(sql<boolean>`s.rowid <= ${mark}`)
    .where(sql<boolean>`${col('pos')} = s.rowid`)
    .where(filters)
    .$if(bound !== undefined, (q) => q.where(sql<boolean>`s.rowid ${sql.raw(bound!.op)} ${bound!.pos}`))
    .orderBy(sql`s.rowid`, order).limit(take).execute();
  const tail = plain([sql<boolean>`${col('pos')} > ${mark}`]);
  // Each part, and when a page's bound leaves it no row: the tail's are all past the mark, the index's all up to it.
  const parts: Array<[Fetch<SummaryRow>, (bound: PageBound) => boolean]> = [
    [tail, (b) => b.op === '<' && b.pos <= mark + 1],
    [head, (b) => b.op === '>' && b.pos >= mark],
  ];
  return fetchPage(page, counted(async (bound, order, take) => {
    // Newest first, the tail's rows come first; walking back to newer rows, the index's.
    const rows: SummaryRow[] = [];
    for (const [fetch, bounded] of order === 'desc' ? parts : [...parts].reverse()) {
      if (rows.length < take && !(bound && bounded(bound))) rows.push(...(await fetch(bound, order, take - rows.length)));
    }
    return rows;
  }), toSummary);
}

type Fetch<R> = (bound: PageBound | undefined, order: 'asc' | 'desc', take: number) => Promise<R[]>;

/** The position up to which emails_search holds the emails (SQLite; see indexEmailSearch). */
export const emailSearchWatermark = (db: Db | Tx): Promise<number> => followerPosition(db, 'emails_index');

/**
 * Puts up to `maxEmails` emails past the watermark into emails_search and
 * moves the watermark; returns the emails indexed. An INSERT … SELECT of a
 * batch costs FTS5 a fraction of what an insert in each write unit does
 * (one index segment a batch instead of one a commit). SQLite has one
 * writer, so every email below the last one is there to index. Nothing to
 * do on PostgreSQL, where insertEmails writes emails_search with the email.
 */
export async function indexEmailSearch(tx: Tx, maxEmails: number): Promise<number> {
  if (onPostgres(tx)) return 0;
  const lo = await emailSearchWatermark(tx);
  const { rows } = await sql<{ hi: number | null; n: number }>`SELECT max(pos) AS hi, count(*) AS n
    FROM (SELECT pos FROM emails WHERE pos > ${lo} ORDER BY pos LIMIT ${maxEmails}) AS batch`.execute(tx);
  const hi = rows[0]?.hi;
  if (hi === null || hi === undefined) return 0;
  await indexEmailTexts(tx, lo, Number(hi));
  await saveFollowerPosition(tx, 'emails_index', Number(hi));
  return Number(rows[0].n);
}

/**
 * Puts the search text of the emails at positions `lo` (exclusive) to `hi`
 * into emails_search: a statement per workspace, each row with its
 * workspace's tag. The text is the emails columns', lower-cased when they
 * were written. SQLite only: on PostgreSQL insertEmails writes its plain
 * emails_search table.
 */
export async function indexEmailTexts(tx: Tx, lo: number, hi: number): Promise<void> {
  const workspaces = await sql<{ ws: string }>`SELECT DISTINCT workspace_id AS ws FROM emails WHERE pos > ${lo} AND pos <= ${hi}`.execute(tx);
  for (const { ws } of workspaces.rows) {
    await sql`INSERT INTO emails_search (rowid, search_to, search_from, search_subject, ws_tag)
      SELECT pos, search_to, search_from, search_subject, ${workspaceSearchTag(ws)} FROM emails
      WHERE pos > ${lo} AND pos <= ${hi} AND workspace_id = ${ws}`.execute(tx);
  }
}

/** PostgreSQL: puts the search text of every email into emails_search (a store copied from SQLite has none). */
export async function fillPostgresEmailsSearch(tx: Tx): Promise<void> {
  await sql`INSERT INTO emails_search (pos, search_to, search_from, search_subject)
    SELECT pos, search_to, search_from, search_subject FROM emails`.execute(tx);
}

/**
 * On PostgreSQL, what the list's text filters match in emails_search
 * (through its trigram indexes), and whether they narrow it to few rows
 * (see narrowedContainsText); as a filter on emails, for when they do not.
 * Nothing on SQLite, or without text filters.
 */
async function postgresSearch(db: Db, text: Array<[column: string, needle: string]>, now: number) {
  if (!onPostgres(db) || text.length === 0) return undefined;
  const found = await Promise.all(text.map(([column, needle]) => narrowedContainsText(db, 'emails_search', column, needle, now)));
  const match = sql<boolean>`${sql.join(found.map((f) => f.match), sql` AND `)}`;
  return { match, narrowed: found.some((f) => f.narrowed), filter: sql<boolean>`emails.pos IN (SELECT pos FROM emails_search WHERE ${match})` };
}

// ---- retention ----

export interface ExpiredEmail { id: string; pos: number }

/**
 * Up to `limit` emails made and sent before `cutoff` (one scheduled for
 * later is counted from when it went) whose work is over: not pending or
 * scheduled, nothing of them queued, no event of them past `eventsUpTo`
 * (the slowest follower of the events table has seen them all), and on
 * SQLite in the search index already. Oldest first in each workspace,
 * through its index on creation time.
 */
export async function expiredEmails(tx: Tx, cutoff: number, eventsUpTo: number, limit: number): Promise<ExpiredEmail[]> {
  const indexedUpTo = onPostgres(tx) ? undefined : await emailSearchWatermark(tx);
  const found: ExpiredEmail[] = [];
  for (const { id: ws } of await tx.selectFrom('workspaces').select('id').orderBy('pos').execute()) {
    if (found.length >= limit) break;
    const rows = await tx.selectFrom('emails').select(['id', 'pos'])
      .where('workspace_id', '=', ws).where('created_at', '<', cutoff)
      .where((eb) => eb.or([eb('sent_at', 'is', null), eb('sent_at', '<', cutoff)]))
      .where('status', 'not in', ['pending', 'scheduled'])
      .$if(indexedUpTo !== undefined, (q) => q.where('pos', '<=', indexedUpTo!))
      .where((eb) => eb.not(eb.exists(eb.selectFrom('outbound_queue').select('outbound_queue.id').whereRef('outbound_queue.email_id', '=', 'emails.id'))))
      .where((eb) => eb.not(eb.exists(eb.selectFrom('events').select('events.pos').whereRef('events.email_id', '=', 'emails.id').where('events.pos', '>', eventsUpTo))))
      .orderBy('created_at').limit(limit - found.length).execute();
    for (const r of rows) found.push({ id: r.id, pos: Number(r.pos) });
  }
  return found;
}

/** Deletes the emails with their content, recipients, tags, attachments, built messages and search rows. */
export async function deleteEmails(tx: Tx, emails: ExpiredEmail[]): Promise<void> {
  if (emails.length === 0) return;
  const ids = emails.map((e) => e.id);
  const positions = emails.map((e) => e.pos);
  await sql`DELETE FROM emails_search WHERE ${sql.ref(onPostgres(tx) ? 'pos' : 'rowid')} IN (${sql.join(positions)})`.execute(tx);
  await tx.deleteFrom('email_contents').where('pos', 'in', positions).execute();
  for (const table of ['email_recipients', 'email_tags', 'email_attachments', 'email_messages'] as const) {
    await tx.deleteFrom(table).where('email_id', 'in', ids).execute();
  }
  await tx.deleteFrom('emails').where('id', 'in', ids).execute();
}

/** What events about an email repeat: enough to write one without reading the whole row. */
export interface EmailHeader {
  id: string;
  workspaceId: string;
  domainId: string | null;
  mode: 'live' | 'test';
  from: string;
  subject: string;
  to: string[];
}

const HEADER_COLUMNS = ['id', 'workspace_id', 'domain_id', 'mode', 'from_address', 'subject', 'to_list'] as const;
const toHeader = (r: Pick<Selectable<EmailsTable>, (typeof HEADER_COLUMNS)[number]>): EmailHeader => ({
  id: r.id, workspaceId: r.workspace_id, domainId: r.domain_id, mode: r.mode, from: r.from_address, subject: r.subject, to: json(r.to_list),
});

/**
 * What events about these emails repeat, by id, their rows locked until the
 * transaction ends (in id order, so two transactions locking some of the
 * same emails never wait on each other in a circle).
 */
export async function lockEmailHeaders(tx: Tx, ids: string[]): Promise<Map<string, EmailHeader>> {
  const list = paddedInList(ids);
  const { rows } = await runShaped(tx, `lock email headers x${list.length}`, list, (p) => lockedForUpdate(tx, tx.selectFrom('emails').select(HEADER_COLUMNS)
    .where('id', 'in', p as string[]).orderBy('id')));
  return new Map(rows.map((r) => [r.id, toHeader(r)]));
}

/** Moves the pending ones among `ids` to sent in one statement; returns those it moved. */
export async function markSent(tx: Tx, ids: string[], now: number): Promise<EmailHeader[]> {
  if (ids.length === 0) return [];
  const list = paddedInList(ids);
  const { rows } = await runShaped(tx, `mark sent x${list.length}`, ['sent', 'pending', now, ...list],
    (p) => tx.updateTable('emails').set({ status: p[0] as 'sent', sent_at: p[2] as number, updated_at: p[2] as number })
      .where('id', 'in', p.slice(3) as string[]).where('status', '=', p[1] as 'pending')
      .returning(HEADER_COLUMNS));
  return rows.map(toHeader);
}

/** Moves the email from one of `from` to `to`; false when it was in none of them (someone else moved it first). */
export async function transitionEmail(tx: Tx, id: string, from: EmailStatus[], to: EmailStatus, now: number,
  extra: { scheduledAt?: number } = {}): Promise<boolean> {
  const withTime = extra.scheduledAt !== undefined;
  const res = await runShaped(tx, `transition email ${withTime} x${from.length}`,
    [to, now, id, extra.scheduledAt ?? null, ...from],
    (p) => tx.updateTable('emails').set({
      status: p[0] as EmailStatus, updated_at: p[1] as number,
      ...(withTime && { scheduled_at: p[3] as number }),
    }).where('id', '=', p[2] as string).where('status', 'in', p.slice(4) as EmailStatus[]));
  return Number(res.numAffectedRows) === 1;
}

const toStoredRecipient = (r: Pick<Selectable<EmailRecipientsTable>, 'id' | 'address' | 'kind' | 'domain' | 'status'>): StoredRecipient =>
  ({ id: r.id, email: r.address, kind: r.kind, domain: r.domain, status: r.status });

export async function listRecipients(db: Db | Tx, emailId: string, domain?: string): Promise<StoredRecipient[]> {
  const { rows } = await runShaped(db, `recipients ${domain !== undefined}`, [emailId, domain ?? null],
    (p) => db.selectFrom('email_recipients').select(['id', 'address', 'kind', 'domain', 'status'])
      .where('email_id', '=', p[0] as string)
      .$if(domain !== undefined, (q) => q.where('domain', '=', p[1] as string))
      .orderBy('idx'));
  return rows.map(toStoredRecipient);
}

export interface EmailRecipient extends StoredRecipient { emailId: string }

/** The recipients of these emails, in their order within each email: one statement for a delivery batch. */
export async function recipientsOfEmails(db: Db | Tx, emailIds: string[]): Promise<EmailRecipient[]> {
  const list = paddedInList(emailIds);
  const { rows } = await runShaped(db, `recipients of emails x${list.length}`, list, (p) => db.selectFrom('email_recipients')
    .select(['id', 'email_id', 'address', 'kind', 'domain', 'status']).where('email_id', 'in', p as string[]).orderBy('email_id').orderBy('idx'));
  return rows.map((r) => ({ ...toStoredRecipient(r), emailId: r.email_id }));
}

/**
 * Gives these emails the status `to` in one statement, if they are sent or
 * settled otherwise (a bounce report can turn delivered into failed).
 */
export async function settleEmails(tx: Tx, ids: string[], to: 'delivered' | 'failed', now: number): Promise<void> {
  if (ids.length === 0) return;
  const list = paddedInList(ids);
  await runShaped(tx, `settle emails x${list.length}`, [to, now, 'sent', 'delivered', 'failed', ...list], (p) => tx.updateTable('emails')
    .set({ status: p[0] as EmailStatus, updated_at: p[1] as number })
    .where('status', 'in', p.slice(2, 5) as EmailStatus[]).where('status', '!=', p[0] as EmailStatus)
    .where('id', 'in', p.slice(5) as string[]));
}

/**
 * Gives the recipients among `ids` whose status is one of `from` the status
 * and outcome; returns the ids it changed.
 */
export async function setRecipientOutcome(tx: Tx, ids: string[], from: readonly RecipientStatus[], status: RecipientStatus,
  outcome: { smtpCode?: number | null; detail?: string | null }, now: number): Promise<string[]> {
  if (ids.length === 0) return [];
  const withCode = outcome.smtpCode !== undefined;
  const withDetail = outcome.detail !== undefined;
  const list = paddedInList(ids);
  const { rows } = await runShaped(tx, `recipient outcome ${withCode} ${withDetail} from ${from.length} x${list.length}`,
    [status, now, outcome.smtpCode ?? null, outcome.detail ?? null, ...from, ...list],
    (p) => tx.updateTable('email_recipients').set({
      status: p[0] as RecipientStatus, updated_at: p[1] as number,
      ...(withCode && { smtp_code: p[2] as number | null }),
      ...(withDetail && { detail: p[3] as string | null }),
    }).where('status', 'in', p.slice(4, 4 + from.length) as RecipientStatus[])
      .where('id', 'in', p.slice(4 + from.length) as string[])
      .returning('id'));
  return rows.map((r) => r.id);
}

/** Recipients still waiting for an outcome become `cancelled`. */
export async function cancelOpenRecipients(tx: Tx, emailId: string, now: number): Promise<void> {
  await tx.updateTable('email_recipients').set({ status: 'cancelled', updated_at: now })
    .where('email_id', '=', emailId).where('status', 'in', ['queued', 'deferred']).execute();
}

/** One attachment of the workspace's email, by its place in the email's attachments. */
export async function findAttachmentPart(db: Db, ws: string, emailId: string, index: number): Promise<AttachmentPart | undefined> {
  const row = await db.selectFrom('email_attachments as a').innerJoin('emails as e', 'e.id', 'a.email_id')
    .select(['a.filename', 'a.content_type', 'a.content_id', 'a.content'])
    .where('e.workspace_id', '=', ws).where('a.email_id', '=', emailId).where('a.idx', '=', index).executeTakeFirst();
  return row && { filename: row.filename, contentType: row.content_type, contentId: row.content_id, content: row.content };
}

export async function loadAttachmentParts(db: Db | Tx, emailId: string): Promise<AttachmentPart[]> {
  const { rows } = await runShaped(db, 'attachment parts', [emailId], (p) => db.selectFrom('email_attachments')
    .select(['filename', 'content_type', 'content_id', 'content']).where('email_id', '=', p[0] as string).orderBy('idx'));
  return rows.map((r) => ({ filename: r.filename, contentType: r.content_type, contentId: r.content_id, content: r.content }));
}

/** What queueing a due email needs of it: not its content. */
export type DueEmail = Pick<StoredEmail, 'id' | 'workspaceId' | 'domainId' | 'from' | 'to' | 'subject'>;

/**
 * Scheduled emails whose time has come, oldest first. On PostgreSQL they stay
 * locked until the transaction ends, and emails another node's poller has
 * locked are passed over.
 */
export async function dueScheduledEmails(tx: Tx, now: number, limit: number): Promise<DueEmail[]> {
  const rows = await lockedForClaim(tx, tx.selectFrom('emails').select(['id', 'workspace_id', 'domain_id', 'from_address', 'to_list', 'subject'])
    .where('status', '=', literalStatus('scheduled')).where('scheduled_at', '<=', now)
    .orderBy('scheduled_at').limit(limit)).execute();
  return rows.map((r) => ({ id: r.id, workspaceId: r.workspace_id, domainId: r.domain_id, from: r.from_address, to: json(r.to_list), subject: r.subject }));
}

/** The earliest scheduled time still waiting, if any (the due poller sleeps until then). */
export async function nextScheduledAt(db: Db): Promise<number | undefined> {
  // The poller's look, four times a second: a fixed text. The status is written into it: bound, it makes SQLite plan
  // the statement anew at every run, to see whether the value allows the partial index of scheduled emails.
  const { rows: [row] } = await runSql<{ at: number | string | null }>(db, `SELECT min(scheduled_at) AS at FROM emails WHERE status = 'scheduled'`, []);
  return row?.at == null ? undefined : Number(row.at);
}

/** How a broadcast's emails stand (each has one recipient, its contact), by the names of the API's stats. */
export type BroadcastEmailCounts = Omit<BroadcastStatsTable, 'broadcast_id' | 'slot'>;

const BROADCAST_COUNTERS = ['emails_created', 'sent', 'delivered', 'bounced', 'failed', 'suppressed', 'opened', 'clicked',
  'complained', 'unsubscribed', 'skipped'] as const satisfies ReadonlyArray<keyof BroadcastEmailCounts>;

/** The broadcast's counters, kept by the database as its emails change (the sums of its slots); zeros before its first email. */
export async function broadcastEmailCounts(db: Db, broadcastId: string): Promise<BroadcastEmailCounts> {
  const row = await db.selectFrom('broadcast_stats').select((eb) => BROADCAST_COUNTERS.map((c) => eb.fn.sum<number | string>(c).as(c)))
    .where('broadcast_id', '=', broadcastId).executeTakeFirst();
  return Object.fromEntries(BROADCAST_COUNTERS.map((c) => [c, Number(row?.[c] ?? 0)])) as BroadcastEmailCounts;
}

/** The ids of a broadcast's emails still waiting for their send delay, or scheduled. */
export async function waitingBroadcastEmails(db: Db | Tx, ws: string, broadcastId: string, limit: number): Promise<string[]> {
  const rows = await db.selectFrom('emails').select('id').where('workspace_id', '=', ws).where('broadcast_id', '=', broadcastId)
    .where('status', 'in', ['pending', 'scheduled']).limit(limit).execute();
  return rows.map((r) => r.id);
}

/** The messages kept for these emails, by email id. */
export async function findBuiltMessages(db: Db | Tx, emailIds: string[]): Promise<Map<string, Buffer>> {
  if (emailIds.length === 0) return new Map();
  const list = paddedInList(emailIds);
  const { rows } = await runShaped(db, `built messages x${list.length}`, list, (p) => db.selectFrom('email_messages')
    .select(['email_id', 'raw']).where('email_id', 'in', p as string[]));
  return new Map(rows.map((r) => [r.email_id, r.raw]));
}

/** Keeps the built messages of emails with attempts left; a message kept already stays as it is. */
export async function keepBuiltMessages(tx: Tx, messages: Array<{ emailId: string; raw: Buffer }>, now: number): Promise<void> {
  if (messages.length === 0) return;
  await tx.insertInto('email_messages').values(messages.map((m) => ({ email_id: m.emailId, raw: m.raw, built_at: now })))
    .onConflict((oc) => oc.column('email_id').doNothing()).execute();
}

/** Drops the kept messages of emails that have no attempt left. */
export async function dropBuiltMessages(tx: Tx, emailIds: string[]): Promise<void> {
  if (emailIds.length === 0) return;
  const list = paddedInList(emailIds);
  await runShaped(tx, `drop built messages x${list.length}`, list, (p) => tx.deleteFrom('email_messages').where('email_id', 'in', p as string[]));
}
