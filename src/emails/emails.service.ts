import { AppError, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import type { Clock } from '../core/clock.js';
import type { Plan } from '../config.js';
import { writeInBatches, type Store, type Tx } from '../store/db.js';
import { coalescedWrite } from '../store/coalesced-write.js';
import type { EmailStatus } from './emails.tables.js';
import type { Page, PageQuery } from '../store/paging.js';
import { sendQuotaLeft, sendQuotaTaker, type QuotaTake } from '../workspaces/quota.js';
import type { AttachmentsService } from '../attachments/index.js';
import { enqueue, dequeueEmail, lockQueuedRows, queueRows, type EnqueueInput } from '../delivery/queue.repo.js';
import { appendEvents, eventRows, listEventsForEmail, type EmailEvent, type NewEvent } from '../events/index.js';
import { addressKey } from './addresses.js';
import { checkScheduleTime, MAX_CONTENT_BYTES, normaliseEmail, type EmailCreateBody, type EmailDraft, type ShownRecipients } from './email-input.js';
import { expandTemplates, type Expanded } from './by-template.js';
import {
  broadcastEmailCounts, cancelOpenRecipients, emailExists, findAttachmentPart, dueScheduledEmails, findStoredEmail, findStoredEmailForUpdate, getEmail, indexEmailSearch, insertEmails, listEmails, newEmailView, listRecipients,
  waitingBroadcastEmails, type BroadcastEmailCounts,
  loadAttachmentParts, nextScheduledAt, transitionEmail, type AttachmentPart, type DueEmail, type Email, type EmailFilter, type EmailSummary, type NewEmail,
  type StoredEmail,
} from './emails.repo.js';
import type { DomainSenders, SendingDomain } from '../domains/index.js';
import type { SuppressionsPort } from '../suppressions/index.js';
import type { TemplatesPort } from './ports.js';
import { cachedSenders } from './sender-cache.js';
import { checkSpam, type SpamCheckResult } from './spam-check.js';
import type { QueryParams } from '../contract/operations.js';

// The rules of the Emails area: what may be sent, by whom and when; the
// states an email moves through; and the event each move writes, in the same
// transaction as the move.
//
//   scheduled --(due)--> pending --(worker takes it)--> sent --> delivered | failed
//   scheduled, pending --(cancel)--> cancelled
//
// A new email waits MAILROOM_SEND_DELAY seconds as pending (the cancel
// window); the delivery worker moves it to sent when it claims its first
// queue row, and outcomes.ts settles delivered or failed from the recipients.

/** Who is sending: the calling key's workspace, plan and mode. */
export interface Sender {
  workspaceId: string;
  plan: string;
  mode: 'live' | 'test';
}

export type ListQuery = QueryParams<'listEmails'>;

export interface CancelResult {
  id: string;
  object: 'email_cancel';
  cancelled: boolean;
  status: EmailStatus;
}

export interface BatchItemError {
  code: string;
  message: string;
  param?: string;
  /** Every problem, for the errors that list several (a template's variables). */
  problems?: Array<{ param: string; message: string; line?: number; column?: number }>;
}

export interface BatchItemResult {
  index: number;
  id?: string;
  error?: BatchItemError;
}

export interface EmailsService {
  /**
   * `messageId`: a submitting client's own, well-formed Message-ID, kept instead of Mailroom's;
   * `shownRecipients`: its own To and Cc fields, shown instead of the recipients.
   */
  create(sender: Sender, body: EmailCreateBody, options?: { messageId?: string; shownRecipients?: ShownRecipients }): Promise<Email>;
  /**
   * Sends the items that can be sent; the others (an AppError already, from
   * the schema, or refused here) fail alone. `strict`: all or nothing, the
   * first failure refusing the whole batch.
   */
  batch(sender: Sender, items: Array<EmailCreateBody | AppError>, options?: { strict?: boolean }): Promise<{ object: 'batch'; data: BatchItemResult[] }>;
  /**
   * A broadcast's emails, one per contact, made in one transaction with
   * `progress` (the broadcast's own write), the send quota taken for all of
   * them. An item that cannot be sent (its address, its content) is left out
   * with its error, which `progress` gets too, to record in the same
   * transaction. A quota used up or a from domain that may not send throws,
   * and nothing is made.
   */
  sendForBroadcast(sender: Sender, broadcastId: string, items: BroadcastItem[], progress: BroadcastProgress): Promise<BroadcastSendResult>;
  /** Throws the error an email of `body` would be refused with (its fields, not its quota or domain); writes nothing. */
  checkMessage(sender: Sender, body: EmailCreateBody): void;
  /** How many more emails the sender may send now (test keys: no limit). */
  quotaLeft(sender: Sender): Promise<number>;
  /** How a broadcast's emails stand. */
  broadcastCounts(broadcastId: string): Promise<BroadcastEmailCounts>;
  /** Cancels a broadcast's emails still waiting for their send delay (or scheduled); returns how many. */
  cancelBroadcastEmails(workspaceId: string, broadcastId: string): Promise<number>;
  list(workspaceId: string, query: ListQuery, page: PageQuery): Promise<Page<EmailSummary>>;
  get(workspaceId: string, id: string): Promise<Email>;
  /** The source of the message as the sink kept it (test keys, MAILROOM_DELIVERY=sink). */
  raw(workspaceId: string, id: string): Promise<Buffer>;
  /** One of the email's attachments, by its index in `attachments`. */
  attachment(workspaceId: string, id: string, index: number): Promise<AttachmentPart>;
  reschedule(workspaceId: string, id: string, scheduledAt: string): Promise<Email>;
  cancel(workspaceId: string, id: string): Promise<CancelResult>;
  resend(sender: Sender, id: string): Promise<Email>;
  /** Scores the email for spam without sending it; a payload that could not be sent is 400. */
  check(sender: Sender, body: EmailCreateBody): Promise<SpamCheckResult>;
  events(workspaceId: string, id: string, page: PageQuery): Promise<Page<EmailEvent>>;
  /** Moves scheduled emails whose time has come to the queue; returns how many. */
  promoteDue(): Promise<number>;
  /** When the next scheduled email falls due, if any. */
  nextScheduledAt(): Promise<number | undefined>;
  /** Brings the emails search index up to date (SQLite), a bounded amount per call; returns the emails indexed. */
  indexSearch(): Promise<number>;
}

/** One contact's email of a broadcast, its content rendered for that contact. */
export interface BroadcastItem {
  contactId: string;
  body: EmailCreateBody;
}

export interface BroadcastSendResult {
  made: number;
  refused: Array<{ contactId: string; error: AppError }>;
}

/** The broadcast's own write, in the transaction that makes its emails. */
export type BroadcastProgress = (tx: Tx, made: number, refused: BroadcastSendResult['refused']) => Promise<void>;

export interface EmailsDeps {
  store: Store;
  clock: Clock;
  senders: DomainSenders;
  suppressions: SuppressionsPort;
  attachments: AttachmentsService;
  plan(name: string): Plan;
  /** MAILROOM_SEND_DELAY in seconds. */
  sendDelaySeconds: number;
  /**
   * MAILROOM_DELIVERY=sink: nothing leaves the machine, so a live key may send
   * from any domain, as a mail catcher takes whatever an app sends.
   */
  liveFromAnyDomain: boolean;
  /** How long delivery keeps trying before giving up. */
  deliveryLifetimeMs: number;
  /** The List-Unsubscribe headers of Mailroom's own one-click link for an address (audience area). */
  unsubscribeHeaders(workspaceId: string, address: string): Record<string, string>;
  /** The address of that link's page, for a template's `unsubscribe_url`. */
  unsubscribeUrl(workspaceId: string, address: string): string;
  /** Renders the templates sends name (templates area). */
  templates: TemplatesPort;
  /** The message the sink kept for an email, if it kept one (delivery area). */
  keptMessage(emailId: string): Promise<Buffer | undefined>;
}

/** Emails promoted per transaction by the due poller. */
const PROMOTE_BATCH = 500;
const PROMOTE_MAX_BATCHES = 20;
/**
 * Emails a run of the search indexer puts in the index per transaction, and
 * the most batches of a run (the next run goes on). A batch holds the event
 * loop while FTS5 indexes it: 1,000 emails, some 10 ms.
 */
const INDEX_BATCH = 1_000;
const INDEX_MAX_BATCHES = 40;

/** Everything an insert needs, checked and fetched before the write transaction. */
interface Prepared {
  email: NewEmail;
  /** Domains with recipients to deliver to (suppressed ones excluded). */
  domains: string[];
  suppressed: Array<{ email: string; reason: string }>;
}

/** The data of events about the whole email. */
const emailData = (e: { from: string; to: string[]; subject: string }) => ({ from: e.from, to: e.to, subject: e.subject });

export function emailsService(deps: EmailsDeps): EmailsService {
  const { store, clock, senders, suppressions, attachments } = deps;
  const sendDelayMs = deps.sendDelaySeconds * 1000;
  const domains = cachedSenders(senders, clock);

  /** The email's domain, checked against the sender's mode. Memoised per request (a batch names few domains). */
  function domainLookup(sender: Sender) {
    const cache = new Map<string, Promise<SendingDomain | undefined>>();
    return async (draft: EmailDraft) => {
      let found = cache.get(draft.fromDomain);
      if (!found) cache.set(draft.fromDomain, (found = domains.find(sender.workspaceId, draft.fromDomain)));
      const domain = await found;
      if (sender.mode === 'live' && !deps.liveFromAnyDomain && domain?.status !== 'active') {
        throw new AppError('domain_not_verified', domain
          ? `The domain '${draft.fromDomain}' of 'from' is not verified yet (status ${domain.status}); verify its DNS records first, or send with a test key.`
          : `The domain '${draft.fromDomain}' of 'from' is not a domain of this workspace; add and verify it first, or send with a test key.`,
        { param: 'from' });
      }
      return domain;
    };
  }

  async function resolveAttachments(sender: Sender, draft: EmailDraft): Promise<AttachmentPart[]> {
    const uploads = draft.attachments.flatMap((a) => (a.kind === 'upload' ? [a.attachmentId] : []));
    const live = await attachments.fetchLive(sender.workspaceId, uploads);
    const parts = draft.attachments.map((a): AttachmentPart => {
      if (a.kind === 'inline') return { filename: a.filename, contentType: a.contentType, contentId: a.contentId, content: a.content };
      const upload = live.get(a.attachmentId);
      if (!upload) {
        throw new AppError('validation_error', `Attachment '${a.attachmentId}' does not exist or has expired (uploads are kept 24 hours); upload it again.`, { param: a.param });
      }
      return { filename: a.filename ?? upload.filename, contentType: a.contentType ?? upload.contentType, contentId: a.contentId, content: upload.content };
    });
    const total = draft.contentBytes + parts.reduce((n, p, i) => n + (draft.attachments[i].kind === 'upload' ? p.content.length : 0), 0);
    if (total > MAX_CONTENT_BYTES) {
      throw new AppError('validation_error', `The email's content is over ${MAX_CONTENT_BYTES / 1024 / 1024} MiB (html, text and attachments, decoded).`, { param: 'attachments' });
    }
    return parts;
  }

  function prepare(sender: Sender, draft: EmailDraft, domain: SendingDomain | undefined,
    parts: AttachmentPart[], suppressedAll: Map<string, string>, resentFrom: string | null, now: number,
    broadcast?: { id: string; contactId: string }): Prepared {
    const id = newId('em', now);
    const suppressed: Prepared['suppressed'] = [];
    const recipients = draft.recipients.map((r) => {
      const reason = suppressedAll.get(addressKey(r.email));
      if (reason !== undefined) suppressed.push({ email: r.email, reason });
      return {
        id: newId('rcpt', now), email: r.email, kind: r.kind, domain: r.domain,
        status: reason === undefined ? 'queued' as const : 'suppressed' as const,
        detail: reason === undefined ? null : `suppressed: ${reason}`,
      };
    });
    const open = recipients.filter((r) => r.status === 'queued');
    const status: EmailStatus = open.length === 0 ? 'failed' : draft.scheduledAt !== undefined ? 'scheduled' : 'pending';
    return {
      email: {
        id, workspaceId: sender.workspaceId, domainId: domain?.id ?? null, mode: sender.mode, from: draft.fromText,
        fromDomain: draft.fromDomain, to: draft.to, cc: draft.cc, bcc: draft.bcc, replyTo: draft.replyTo,
        subject: draft.subject, html: draft.html, text: draft.text, headers: draft.headers, tags: draft.tags, status,
        scheduledAt: draft.scheduledAt ?? null, messageId: draft.messageId ?? `<${id}@${draft.fromDomain}>`, resentFrom, recipients,
        shownRecipients: draft.shownRecipients ?? null,
        templateId: draft.template?.id ?? null, templateVersion: draft.template?.version ?? null, attachments: parts, now,
        broadcastId: broadcast?.id ?? null, contactId: broadcast?.contactId ?? null,
      },
      domains: [...new Set(open.map((r) => r.domain))],
      suppressed,
    };
  }

  /** Inserts prepared emails with their first events and, when pending, their queue rows (insertEmails). */
  async function insert(tx: Tx, ps: Prepared[]): Promise<void> {
    const events: NewEvent[] = [];
    const queued: EnqueueInput[] = [];
    for (const p of ps) {
      const e = p.email;
      const base = { workspaceId: e.workspaceId, emailId: e.id, domainId: e.domainId, from: e.from, subject: e.subject, now: e.now };
      for (const s of p.suppressed) {
        events.push({
          ...base, kind: 'failed', recipient: s.email,
          data: { to: s.email, from: e.from, subject: e.subject, reason: 'suppressed', suppression_reason: s.reason },
        });
      }
      if (e.status === 'scheduled') {
        events.push({ ...base, kind: 'scheduled', data: { ...emailData(e), scheduled_at: new Date(e.scheduledAt!).toISOString() } });
      } else if (e.status === 'pending') {
        const dueAt = e.now + sendDelayMs;
        events.push({ ...base, kind: 'queued', data: { ...emailData(e), send_at: new Date(dueAt).toISOString() } });
        queued.push({ workspaceId: e.workspaceId, emailId: e.id, domains: p.domains, dueAt, lifetimeMs: deps.deliveryLifetimeMs, now: e.now });
      }
    }
    await insertEmails(tx, ps.map((p) => p.email), [{ table: 'outbound_queue', rows: queueRows(queued) }, { table: 'events', rows: eventRows(events) }]);
  }

  const quota = sendQuotaTaker(store);
  /** Test keys never reach a real recipient, so they do not use up the workspace's quota. */
  const quotaTake = (sender: Sender, count: number, now: number): QuotaTake | undefined =>
    (sender.mode === 'live' ? { workspaceId: sender.workspaceId, plan: deps.plan(sender.plan), count, now } : undefined);

  /**
   * Sends that reach the store together share one write unit: a statement
   * per table for all their emails and, where the quota is taken in the
   * emails' unit (sendQuotaTaker), one take per workspace and day. Should
   * the shared write fail (a quota used up by some of them), each send is
   * written again on its own, and only the sends that cannot be made fail.
   */
  const insertTogether = coalescedWrite<{ sender: Sender; prepared: Prepared }>(store, async (tx, sends) => {
    await insert(tx, sends.map((s) => s.prepared));
    await quota.inUnit(tx, sends.map(({ sender, prepared }) => quotaTake(sender, 1, prepared.email.now)));
  });

  async function send(sender: Sender, draft: EmailDraft, resentFrom: string | null): Promise<Email> {
    const now = clock.now();
    const domain = await domainLookup(sender)(draft);
    const parts = await resolveAttachments(sender, draft);
    const suppressed = await suppressions.check(sender.workspaceId, draft.recipients.map((r) => addressKey(r.email)));
    const prepared = prepare(sender, draft, domain, parts, suppressed, resentFrom, now);
    await quota.around(quotaTake(sender, 1, now), () => insertTogether([{ sender, prepared }]));
    return newEmailView(prepared.email);
  }

  /** Moves an email from one of `from` to pending and queues it, due at once. */
  async function promote(tx: Tx, e: DueEmail, from: EmailStatus[], now: number): Promise<boolean> {
    if (!(await transitionEmail(tx, e.id, from, 'pending', now))) return false;
    const open = (await listRecipients(tx, e.id)).filter((r) => r.status === 'queued');
    await enqueue(tx, [{ workspaceId: e.workspaceId, emailId: e.id, domains: open.map((r) => r.domain), dueAt: now, lifetimeMs: deps.deliveryLifetimeMs, now }]);
    await appendEvents(tx, [{
      workspaceId: e.workspaceId, emailId: e.id, domainId: e.domainId, kind: 'queued', from: e.from, subject: e.subject, now,
      data: { ...emailData(e), send_at: new Date(now).toISOString() },
    }]);
    return true;
  }

  /**
   * The email, to change its state: its queue rows and its row stay locked
   * until the transaction ends, taken in the order a delivery claim takes
   * them, so a claim under way is waited for and none starts meanwhile.
   */
  async function lockedEmail(tx: Tx, ws: string, id: string, now: number): Promise<StoredEmail> {
    await lockQueuedRows(tx, id, now);
    const e = await findStoredEmailForUpdate(tx, ws, id);
    if (!e) throw notFound('email', id);
    return e;
  }

  /**
   * Adds Mailroom's unsubscribe link when the email asked for it. One-click
   * (List-Unsubscribe-Post, RFC 8058) only over https, as the RFC requires;
   * over plain http the link is offered without it.
   */
  function draftOf(sender: Sender, { body, template }: Expanded, now: number): EmailDraft {
    const normalised = normaliseEmail(body, now);
    const draft = template === undefined ? normalised : { ...normalised, template };
    if (draft.unsubscribeFor === undefined) return draft;
    const added = deps.unsubscribeHeaders(sender.workspaceId, draft.unsubscribeFor);
    const oneClick = /^<https:/i.test(added['List-Unsubscribe'] ?? '');
    const headers = Object.fromEntries(Object.entries(added).filter(([k]) => oneClick || k.toLowerCase() !== 'list-unsubscribe-post'));
    return { ...draft, headers: { ...draft.headers, ...headers } };
  }

  /** Each payload's content, rendered from its template when it names one. */
  const expand = (sender: Sender, bodies: EmailCreateBody[]) =>
    expandTemplates(deps.templates, sender.workspaceId, bodies, (address) => deps.unsubscribeUrl(sender.workspaceId, address));

  /** A single payload's content; its error thrown. */
  async function expandOne(sender: Sender, body: EmailCreateBody): Promise<Expanded> {
    if (body.template === undefined) return { body: body as Expanded['body'] };
    const [expanded] = await expand(sender, [body]);
    if (expanded instanceof AppError) throw expanded;
    return expanded;
  }

  const service: EmailsService = {
    async create(sender, body, options = {}) {
      const expanded = await expandOne(sender, body);
      const draft = draftOf(sender, expanded, clock.now());
      return send(sender, { ...draft, ...options }, null);
    },

    async batch(sender, items, { strict = false } = {}) {
      const now = clock.now();
      const results: BatchItemResult[] = items.map((_, index) => ({ index }));
      const lookup = domainLookup(sender);
      const ready: Array<{ index: number; draft: EmailDraft; domain: SendingDomain | undefined; parts: AttachmentPart[] }> = [];
      /** A refused item: in strict mode the whole batch, naming the item. */
      const refuse = (index: number, err: AppError) => {
        if (strict) {
          throw new AppError(err.code, `emails[${index}]: ${err.message}`, {
            status: err.status, param: err.param === undefined ? `emails.${index}` : `emails.${index}.${err.param}`,
          });
        }
        const problems = err.details?.problems as BatchItemError['problems'];
        results[index].error = {
          code: err.code, message: err.message, ...(err.param !== undefined && { param: err.param }), ...(problems && { problems }),
        };
      };
      const schemaError = items.findIndex((item) => item instanceof AppError);
      if (strict && schemaError >= 0) refuse(schemaError, items[schemaError] as AppError);
      const wellFormed = items.map((item) => (item instanceof AppError ? {} as EmailCreateBody : item));
      const expanded = (await expand(sender, wellFormed)).map((item, i) => (items[i] instanceof AppError ? items[i] as AppError : item));
      for (const [index, item] of expanded.entries()) {
        try {
          if (item instanceof AppError) throw item;
          const draft = draftOf(sender, item, now);
          ready.push({ index, draft, domain: await lookup(draft), parts: await resolveAttachments(sender, draft) });
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          refuse(index, err);
        }
      }
      if (ready.length) {
        const suppressed = await suppressions.check(sender.workspaceId,
          [...new Set(ready.flatMap((r) => r.draft.recipients.map((x) => addressKey(x.email))))]);
        const prepared = ready.map((r) => prepare(sender, r.draft, r.domain, r.parts, suppressed, null, now));
        // One transaction for the batch: the quota is taken for all of it or none.
        const take = quotaTake(sender, prepared.length, now);
        await quota.around(take, () => store.write(async (tx) => {
          await insert(tx, prepared);
          await quota.inUnit(tx, [take]);
        }));
        ready.forEach((r, i) => (results[r.index].id = prepared[i].email.id));
      }
      return { object: 'batch', data: results };
    },

    async sendForBroadcast(sender, broadcastId, items, progress) {
      const now = clock.now();
      const lookup = domainLookup(sender);
      const refused: BroadcastSendResult['refused'] = [];
      const ready: Array<{ contactId: string; draft: EmailDraft; domain: SendingDomain | undefined }> = [];
      for (const item of items) {
        let draft: EmailDraft;
        try {
          draft = draftOf(sender, { body: item.body as Expanded['body'] }, now);
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          refused.push({ contactId: item.contactId, error: err });
          continue;
        }
        // Every item has the broadcast's from: a domain that may not send stops them all.
        ready.push({ contactId: item.contactId, draft, domain: await lookup(draft) });
      }
      const suppressed = await suppressions.check(sender.workspaceId, ready.map((r) => addressKey(r.draft.recipients[0].email)));
      const prepared = ready.map((r) => prepare(sender, r.draft, r.domain, [], suppressed, null, now, { id: broadcastId, contactId: r.contactId }));
      const take = quotaTake(sender, prepared.length, now);
      await quota.around(take, () => store.write(async (tx) => {
        await insert(tx, prepared);
        await quota.inUnit(tx, [take]);
        await progress(tx, prepared.length, refused);
      }));
      return { made: prepared.length, refused };
    },

    async list(ws, q, page) {
      let templateId: string | undefined;
      if (q.template_id !== undefined) {
        templateId = await deps.templates.templateId(ws, q.template_id);
        // An alias no template holds names no email.
        if (templateId === undefined) return { data: [], has_more: false };
      }
      const filter: EmailFilter = {
        ...(q.status !== undefined && { status: q.status }),
        ...(q.to !== undefined && { to: q.to }),
        ...(q.from !== undefined && { from: q.from }),
        ...(q.subject !== undefined && { subject: q.subject }),
        ...(q.tags !== undefined && q.tags.length > 0 && { tags: q.tags }),
        ...(q.created_after !== undefined && { createdAfter: Date.parse(q.created_after) }),
        ...(q.created_before !== undefined && { createdBefore: Date.parse(q.created_before) }),
        ...(q.domain_id !== undefined && { domainId: q.domain_id }),
        ...(q.mode !== undefined && { mode: q.mode }),
        ...(templateId !== undefined && { templateId }),
        ...(q.broadcast_id !== undefined && { broadcastId: q.broadcast_id }),
        ...(q.outcome !== undefined && { outcome: q.outcome }),
      };
      return listEmails(store.db, ws, filter, page, clock.now());
    },

    async get(ws, id) {
      const email = await getEmail(store.db, ws, id);
      if (!email) throw notFound('email', id);
      return email;
    },

    async raw(ws, id) {
      if (!(await emailExists(store.db, ws, id))) throw notFound('email', id);
      const kept = await deps.keptMessage(id);
      if (!kept) {
        throw new AppError('not_found', `Email ${id} has no stored source: Mailroom keeps the source of mail delivered to the sink (test keys, or MAILROOM_DELIVERY=sink), once it is delivered.`);
      }
      return kept;
    },

    async attachment(ws, id, index) {
      const part = await findAttachmentPart(store.db, ws, id, index);
      if (part) return part;
      if (!(await emailExists(store.db, ws, id))) throw notFound('email', id);
      throw new AppError('not_found', `Email ${id} has no attachment ${index}.`, { param: 'index' });
    },

    async reschedule(ws, id, input) {
      const now = clock.now();
      const at = checkScheduleTime(input, now);
      return store.write(async (tx) => {
        const e = await lockedEmail(tx, ws, id, now);
        if (e.status !== 'pending' && e.status !== 'scheduled') {
          throw new AppError('invalid_state', `Only a pending or scheduled email can be rescheduled; this one is ${e.status}.`, { param: 'scheduled_at' });
        }
        await dequeueEmail(tx, e.id);
        if (at === undefined) {
          // Due now: straight to the queue, without another send delay.
          await promote(tx, e, ['pending', 'scheduled'], now);
        } else {
          await transitionEmail(tx, e.id, ['pending', 'scheduled'], 'scheduled', now, { scheduledAt: at });
          await appendEvents(tx, [{
            workspaceId: ws, emailId: e.id, domainId: e.domainId, kind: 'scheduled', from: e.from, subject: e.subject, now,
            data: { ...emailData(e), scheduled_at: new Date(at).toISOString() },
          }]);
        }
        return (await getEmail(tx, ws, id))!;
      });
    },

    async cancel(ws, id) {
      const now = clock.now();
      return store.write(async (tx): Promise<CancelResult> => {
        const e = await lockedEmail(tx, ws, id, now);
        const result = (cancelled: boolean, status: EmailStatus): CancelResult => ({ id, object: 'email_cancel', cancelled, status });
        if (e.status === 'cancelled') return result(true, 'cancelled');
        if (e.status !== 'pending' && e.status !== 'scheduled') return result(false, e.status);
        // The claim that hands an email to delivery moves it to sent in its own
        // transaction (lockedEmail waited for one under way), so a pending
        // email here has no message in flight.
        await transitionEmail(tx, e.id, ['pending', 'scheduled'], 'cancelled', now);
        await dequeueEmail(tx, e.id);
        await cancelOpenRecipients(tx, e.id, now);
        await appendEvents(tx, [{
          workspaceId: ws, emailId: e.id, domainId: e.domainId, kind: 'cancelled', from: e.from, subject: e.subject, now,
          data: { ...emailData(e), previous_status: e.status },
        }]);
        return result(true, 'cancelled');
      });
    },

    async resend(sender, id) {
      const original = await findStoredEmail(store.db, sender.workspaceId, id);
      if (!original) throw notFound('email', id);
      if (original.status !== 'sent' && original.status !== 'delivered' && original.status !== 'failed') {
        throw new AppError('invalid_state', `Only a sent, delivered or failed email can be resent; this one is ${original.status}.`);
      }
      const parts = await loadAttachmentParts(store.db, id);
      // The stored fields passed these checks when the email was made; running
      // them again rebuilds the recipient list the same way.
      const normalised = normaliseEmail({
        from: original.from, to: original.to, cc: original.cc, bcc: original.bcc, reply_to: original.replyTo,
        subject: original.subject, headers: original.headers, tags: original.tags,
        ...(original.html !== null && { html: original.html }), ...(original.text !== null && { text: original.text }),
        attachments: parts.map((p) => ({
          content: p.content.toString('base64'), filename: p.filename, content_type: p.contentType,
          ...(p.contentId !== null && { content_id: p.contentId }),
        })),
      }, clock.now());
      const shown = original.shownRecipients === null ? normalised : { ...normalised, shownRecipients: original.shownRecipients };
      const draft = original.templateId === null ? shown
        : { ...shown, template: { id: original.templateId, version: original.templateVersion! } };
      return send(sender, draft, id);
    },

    async check(sender, body) {
      // The spec gives this operation 400 for a payload it cannot take, not 422.
      const asBadRequest = (err: unknown) => err instanceof AppError && err.status === 422
        ? new AppError(err.code, err.message, { param: err.param, status: 400, details: err.details }) : err;
      let draft: EmailDraft;
      let parts: AttachmentPart[];
      try {
        draft = draftOf(sender, await expandOne(sender, body), clock.now());
        parts = await resolveAttachments(sender, draft);
      } catch (err) {
        throw asBadRequest(err);
      }
      const domain = await domains.find(sender.workspaceId, draft.fromDomain);
      return checkSpam({
        subject: draft.subject, html: draft.html, text: draft.text, headers: draft.headers,
        attachmentNames: parts.map((p) => p.filename), domainVerified: domain?.status === 'active',
        fromName: draft.from.name ?? null, fromDomain: draft.fromDomain, recipientCount: draft.recipients.length,
        dmarc: domain?.dmarc ?? 'unknown',
      });
    },

    async events(ws, id, page) {
      if (!(await emailExists(store.db, ws, id))) throw notFound('email', id);
      return listEventsForEmail(store.db, ws, id, page);
    },

    async promoteDue() {
      let total = 0;
      for (let i = 0; i < PROMOTE_MAX_BATCHES; i++) {
        const now = clock.now();
        const { seen, moved } = await store.write(async (tx) => {
          const due = await dueScheduledEmails(tx, now, PROMOTE_BATCH);
          let n = 0;
          for (const e of due) if (await promote(tx, e, ['scheduled'], now)) n += 1;
          return { seen: due.length, moved: n };
        });
        total += moved;
        if (seen < PROMOTE_BATCH) break;
      }
      return total;
    },

    nextScheduledAt: () => nextScheduledAt(store.db),

    indexSearch: () => writeInBatches(store, { size: INDEX_BATCH, maxBatches: INDEX_MAX_BATCHES }, indexEmailSearch),

    broadcastCounts: (broadcastId) => broadcastEmailCounts(store.db, broadcastId),

    checkMessage(sender, body) {
      draftOf(sender, { body: body as Expanded['body'] }, clock.now());
    },

    quotaLeft: async (sender) => sender.mode === 'live'
      ? sendQuotaLeft(store.db, sender.workspaceId, deps.plan(sender.plan), clock.now()) : Number.POSITIVE_INFINITY,

    async cancelBroadcastEmails(ws, broadcastId) {
      let cancelled = 0;
      for (;;) {
        const ids = await waitingBroadcastEmails(store.db, ws, broadcastId, PROMOTE_BATCH);
        for (const id of ids) if ((await service.cancel(ws, id)).cancelled) cancelled++;
        if (ids.length < PROMOTE_BATCH) return cancelled;
      }
    },
  };
  return service;
}
