import type { Clock } from '../core/clock.js';
import type { Tx, Store } from '../store/db.js';
import type { EmailStatus, RecipientStatus } from '../store/tables.js';
import type { QueueItem } from '../delivery/queue.repo.js';
import type { AttemptOutcome, DeliveryJob, DeliveryLedger } from '../delivery/delivery.worker.js';
import { SINK_TEST_DOMAIN } from '../delivery/sink.js';
import { returnPathFor } from '../inbound/return-path.js';
import { appendEvents, type NewEvent } from '../events/index.js';
import { addressKey, mailDomain } from './addresses.js';
import { listUnsubscribeOf, storedMailboxes } from './email-input.js';
import {
  findEmailHeaders, findStoredEmailsByIds, loadAttachmentParts, markSent, recipientsOfEmails, setRecipientOutcome, settleSentEmails,
  type EmailHeader, type EmailRecipient, type StoredEmail,
} from './emails.repo.js';
import type { SuppressionReason } from '../store/tables.js';
import type { HtmlRewriter, SendersPort, SuppressionsPort } from './ports.js';
import { cachedSenders } from './sender-cache.js';

// The emails area as the delivery worker sees it (its DeliveryLedger port):
// hand-off (pending -> sent), what to send for a queue row, and the outcomes
// written back with their events in the worker's transaction.
//
// The email's status is the aggregate of its recipients' outcomes: sent while
// any recipient is still queued or deferred; then delivered when at least one
// recipient accepted the message, failed when none did (bounced, suppressed,
// given up).

const OPEN: readonly RecipientStatus[] = ['queued', 'deferred'];

/** The email's status once every recipient has an outcome, or undefined while some are open. */
export function aggregateStatus(statuses: RecipientStatus[]): Extract<EmailStatus, 'delivered' | 'failed'> | undefined {
  if (statuses.some((s) => OPEN.includes(s))) return undefined;
  return statuses.includes('delivered') ? 'delivered' : 'failed';
}

/** What the rows of one record call gather: events for one INSERT, outcomes for few UPDATEs. */
interface OutcomeBatch {
  events: NewEvent[];
  setOutcome(id: string, status: RecipientStatus, outcome: { smtpCode?: number | null; detail: string }): void;
}

export interface LedgerDeps {
  store: Store;
  clock: Clock;
  senders: SendersPort;
  suppressions: SuppressionsPort;
  /** Applied to the HTML of emails whose domain the workspace has (tracking). */
  rewriteHtml?: HtmlRewriter;
}

export function emailsLedger(deps: LedgerDeps): DeliveryLedger {
  const { store, suppressions } = deps;
  const senders = cachedSenders(deps.senders, deps.clock);

  /** What to send for one queue row: its email and the recipients of its domain still open. */
  async function jobFor(e: StoredEmail, open: EmailRecipient[], suppressed: Map<string, SuppressionReason>): Promise<DeliveryJob> {
    const skipped = open.flatMap((r) => {
      const reason = suppressed.get(addressKey(r.email));
      return reason === undefined ? [] : [{ id: r.id, address: r.email, reason: `suppressed: ${reason}` }];
    });
    let sendable = open.filter((r) => !suppressed.has(addressKey(r.email)));

    const domain = await senders.find(e.workspaceId, e.fromDomain);
    if (e.mode === 'live' && e.domainId !== null && !domain) {
      // Unsigned mail from a domain the workspace no longer has would fail DMARC at best. (A live
      // email with no domain at all was taken by a mail catcher, MAILROOM_DELIVERY=sink, and is kept unsigned.)
      const reason = `The sending domain ${e.fromDomain} was removed from the workspace.`;
      skipped.push(...sendable.map((r) => ({ id: r.id, address: r.email, reason })));
      sendable = [];
    }
    const returnPathDomain = domain?.returnPathDomain ?? `bounces.${e.fromDomain}`;
    // The stored metadata says whether there are parts to load at all.
    const parts = sendable.length && e.attachments.length ? await loadAttachmentParts(store.db, e.id) : [];
    const custom = Object.fromEntries(Object.entries(e.headers).filter(([k]) => !/^list-unsubscribe(-post)?$/i.test(k)));
    const listUnsubscribe = listUnsubscribeOf(e.headers);
    const [from] = storedMailboxes([e.from]);
    const html = sendable.length && e.html !== null && domain && deps.rewriteHtml
      ? await deps.rewriteHtml({ workspaceId: e.workspaceId, emailId: e.id, html: e.html, domain })
      : e.html;
    return {
      mode: e.mode,
      compose: {
        from, to: storedMailboxes(e.to), cc: storedMailboxes(e.cc), replyTo: storedMailboxes(e.replyTo), subject: e.subject,
        ...(e.text !== null && { text: e.text }), ...(html !== null && { html }), headers: custom,
        attachments: parts.map((p) => ({ filename: p.filename, content: p.content, contentType: p.contentType, ...(p.contentId && { contentId: p.contentId }) })),
        ...(listUnsubscribe && { listUnsubscribe }),
        messageIdDomain: e.fromDomain, messageIdLocal: e.id, messageId: e.messageId,
      },
      // One recipient: the return path names it, so an asynchronous bounce identifies it exactly.
      mailFrom: returnPathFor(e.id, sendable.length === 1 ? sendable[0].email : null, returnPathDomain),
      dkim: (domain?.dkim ?? []).map((k) => ({ domain: domain!.name, selector: k.selector, privateKey: k.privateKeyPem })),
      recipients: sendable.map((r) => ({ id: r.id, address: r.email })),
      skipped,
    };
  }

  /** The events and recipient outcomes of one row's attempt; suppressions for hard bounces and complaints. */
  async function recordRow(tx: Tx, batch: OutcomeBatch, e: EmailHeader, item: QueueItem, outcomes: AttemptOutcome[], now: number): Promise<void> {
    const { events, setOutcome } = batch;
    const base = { workspaceId: e.workspaceId, emailId: e.id, domainId: e.domainId, from: e.from, subject: e.subject, now };
    const about = (to: string) => ({ to, from: e.from, subject: e.subject });
    // Simulated outcomes on the sink's test domain never touch the suppression list, so they can be repeated.
    const suppressible = (address: string) => e.mode === 'live' && mailDomain(address) !== SINK_TEST_DOMAIN;

    for (const o of outcomes) {
      switch (o.kind) {
        case 'delivered':
          setOutcome(o.recipientId, 'delivered', { smtpCode: o.smtpCode, detail: o.response });
          events.push({ ...base, kind: 'delivered', recipient: o.address, data: {
            ...about(o.address), delivered_at: new Date(now).toISOString(), smtp_code: o.smtpCode, mx_host: o.mxHost,
          } });
          if (o.complained) {
            events.push({ ...base, kind: 'complained', recipient: o.address, data: { ...about(o.address), feedback_type: 'abuse' } });
            if (suppressible(o.address)) await suppressions.addFromBounce(tx, e.workspaceId, addressKey(o.address), 'complaint');
          }
          break;
        case 'deferred':
          setOutcome(o.recipientId, 'deferred', { smtpCode: o.smtpCode, detail: o.response });
          events.push({ ...base, kind: 'delayed', recipient: o.address, data: {
            ...about(o.address), attempt: o.attempt, next_attempt_at: new Date(o.nextAttemptAt).toISOString(),
            smtp_code: o.smtpCode, reason: o.response,
          } });
          break;
        case 'bounced':
        case 'expired': {
          setOutcome(o.recipientId, 'bounced', { smtpCode: o.smtpCode, detail: o.response });
          events.push({ ...base, kind: 'bounced', recipient: o.address, data: {
            ...about(o.address), bounce_type: o.bounce.bounce_type, bounce_subtype: o.bounce.bounce_subtype, smtp_code: o.smtpCode,
            enhanced_status_code: o.enhancedStatusCode, provider: (o.kind === 'bounced' && o.provider) || 'unknown',
            recommended_action: o.bounce.recommended_action, original_error: o.response,
          } });
          if (o.kind === 'expired') {
            events.push({ ...base, kind: 'failed', recipient: o.address, data: {
              ...about(o.address), reason: `Gave up after temporary failures since ${new Date(item.createdAt).toISOString()}: ${o.response}`,
            } });
          } else if (o.bounce.bounce_type === 'hard' && suppressible(o.address)) {
            await suppressions.addFromBounce(tx, e.workspaceId, addressKey(o.address), 'hard_bounce');
          }
          break;
        }
        case 'failed':
          setOutcome(o.recipientId, 'failed', { detail: o.reason });
          events.push({ ...base, kind: 'failed', recipient: o.address, data: { ...about(o.address), reason: o.reason } });
          break;
      }
    }
  }

  return {
    async handOff(tx, items, now) {
      const moved = await markSent(tx, [...new Set(items.map((i) => i.emailId))], now);
      await appendEvents(tx, moved.map((e): NewEvent => ({
        workspaceId: e.workspaceId, emailId: e.id, domainId: e.domainId, kind: 'sent', from: e.from, subject: e.subject, now,
        data: { from: e.from, to: e.to, subject: e.subject },
      })));
    },

    async load(items) {
      const jobs = new Map<string, DeliveryJob>();
      const emailIds = [...new Set(items.map((i) => i.emailId))];
      const emails = new Map<string, StoredEmail>();
      for (const e of await findStoredEmailsByIds(store.db, emailIds)) if (e.status === 'sent') emails.set(e.id, e);
      if (emails.size === 0) return jobs;
      const open = new Map<string, EmailRecipient[]>();
      for (const r of await recipientsOfEmails(store.db, [...emails.keys()])) {
        if (!OPEN.includes(r.status)) continue;
        const key = `${r.emailId}\n${r.domain}`;
        open.set(key, [...(open.get(key) ?? []), r]);
      }
      // A recipient suppressed since the email was accepted (a hard bounce of another email, say) is not sent to.
      const suppressed = new Map<string, Map<string, SuppressionReason>>();
      for (const ws of new Set([...emails.values()].map((e) => e.workspaceId))) {
        const addresses = [...open.values()].flat().filter((r) => emails.get(r.emailId)!.workspaceId === ws).map((r) => addressKey(r.email));
        suppressed.set(ws, addresses.length ? await suppressions.check(ws, [...new Set(addresses)]) : new Map());
      }
      for (const item of items) {
        const e = emails.get(item.emailId);
        const rows = open.get(`${item.emailId}\n${item.domain}`);
        if (!e || !rows) continue;
        jobs.set(item.id, await jobFor(e, rows, suppressed.get(e.workspaceId)!));
      }
      return jobs;
    },

    async record(tx, rows, now) {
      if (rows.length === 0) return;
      const headers = await findEmailHeaders(tx, [...new Set(rows.map((r) => r.item.emailId))]);
      const events: NewEvent[] = [];
      // Recipients that get the same status, code and reply share one UPDATE.
      const updates = new Map<string, { status: RecipientStatus; outcome: { smtpCode?: number | null; detail: string }; ids: string[] }>();
      const setOutcome = (id: string, status: RecipientStatus, outcome: { smtpCode?: number | null; detail: string }) => {
        const key = JSON.stringify([status, outcome.smtpCode, outcome.detail]);
        const update = updates.get(key);
        if (update) update.ids.push(id);
        else updates.set(key, { status, outcome, ids: [id] });
      };
      for (const { item, outcomes } of rows) {
        const e = headers.get(item.emailId);
        if (!e) continue;
        await recordRow(tx, { events, setOutcome }, e, item, outcomes, now);
      }
      for (const u of updates.values()) await setRecipientOutcome(tx, u.ids, u.status, u.outcome, now);
      await appendEvents(tx, events);
      const statuses = new Map<string, RecipientStatus[]>();
      for (const r of await recipientsOfEmails(tx, [...headers.keys()])) statuses.set(r.emailId, [...(statuses.get(r.emailId) ?? []), r.status]);
      const settled = { delivered: [] as string[], failed: [] as string[] };
      for (const [id, list] of statuses) {
        const status = aggregateStatus(list);
        if (status) settled[status].push(id);
      }
      await settleSentEmails(tx, settled.delivered, 'delivered', now);
      await settleSentEmails(tx, settled.failed, 'failed', now);
    },
  };
}
