import type { Clock } from '../core/clock.js';
import type { Store } from '../store/db.js';
import type { EmailStatus, RecipientStatus } from '../store/tables.js';
import type { QueueItem } from '../delivery/queue.repo.js';
import type { DeliveryJob, DeliveryLedger } from '../delivery/delivery.worker.js';
import { SINK_TEST_DOMAIN } from '../delivery/sink.js';
import { returnPathFor } from '../inbound/return-path.js';
import { appendEvents, type NewEvent } from '../events/events.repo.js';
import { addressKey, mailDomain } from './addresses.js';
import { listUnsubscribeOf, storedMailboxes } from './email-input.js';
import {
  findEmailHeader, findStoredEmailById, listRecipients, loadAttachmentParts, markSent, setRecipientOutcome, transitionEmail,
} from './emails.repo.js';
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

  return {
    async handOff(tx, items, now) {
      const moved = await markSent(tx, [...new Set(items.map((i) => i.emailId))], now);
      await appendEvents(tx, moved.map((e): NewEvent => ({
        workspaceId: e.workspaceId, emailId: e.id, domainId: e.domainId, kind: 'sent', from: e.from, subject: e.subject, now,
        data: { from: e.from, to: e.to, subject: e.subject },
      })));
    },

    async load(item: QueueItem): Promise<DeliveryJob | undefined> {
      const e = await findStoredEmailById(store.db, item.emailId);
      if (!e || e.status !== 'sent') return undefined;
      const open = (await listRecipients(store.db, e.id, item.domain)).filter((r) => OPEN.includes(r.status));
      if (open.length === 0) return undefined;

      // A recipient suppressed since the email was accepted (a hard bounce of another email, say) is not sent to.
      const suppressed = await suppressions.check(e.workspaceId, open.map((r) => addressKey(r.email)));
      const skipped = open.flatMap((r) => {
        const reason = suppressed.get(addressKey(r.email));
        return reason === undefined ? [] : [{ id: r.id, address: r.email, reason: `suppressed: ${reason}` }];
      });
      let sendable = open.filter((r) => !suppressed.has(addressKey(r.email)));

      const domain = await senders.find(e.workspaceId, e.fromDomain);
      if (e.mode === 'live' && !domain) {
        // Unsigned mail from a domain the workspace no longer has would fail DMARC at best.
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
          messageIdDomain: e.fromDomain, messageIdLocal: e.id,
        },
        // One recipient: the return path names it, so an asynchronous bounce identifies it exactly.
        mailFrom: returnPathFor(e.id, sendable.length === 1 ? sendable[0].email : null, returnPathDomain),
        dkim: (domain?.dkim ?? []).map((k) => ({ domain: domain!.name, selector: k.selector, privateKey: k.privateKeyPem })),
        recipients: sendable.map((r) => ({ id: r.id, address: r.email })),
        skipped,
      };
    },

    async record(tx, item, outcomes, now) {
      const e = await findEmailHeader(tx, item.emailId);
      if (!e) return;
      const base = { workspaceId: e.workspaceId, emailId: e.id, domainId: e.domainId, from: e.from, subject: e.subject, now };
      const about = (to: string) => ({ to, from: e.from, subject: e.subject });
      const events: NewEvent[] = [];
      // Simulated outcomes on the sink's test domain never touch the suppression list, so they can be repeated.
      const suppressible = (address: string) => e.mode === 'live' && mailDomain(address) !== SINK_TEST_DOMAIN;

      for (const o of outcomes) {
        switch (o.kind) {
          case 'delivered':
            await setRecipientOutcome(tx, [o.recipientId], 'delivered', { smtpCode: o.smtpCode, detail: o.response }, now);
            events.push({ ...base, kind: 'delivered', recipient: o.address, data: {
              ...about(o.address), delivered_at: new Date(now).toISOString(), smtp_code: o.smtpCode, mx_host: o.mxHost,
            } });
            if (o.complained) {
              events.push({ ...base, kind: 'complained', recipient: o.address, data: { ...about(o.address), feedback_type: 'abuse' } });
              if (suppressible(o.address)) await suppressions.addFromBounce(tx, e.workspaceId, addressKey(o.address), 'complaint');
            }
            break;
          case 'deferred':
            await setRecipientOutcome(tx, [o.recipientId], 'deferred', { smtpCode: o.smtpCode, detail: o.response }, now);
            events.push({ ...base, kind: 'delayed', recipient: o.address, data: {
              ...about(o.address), attempt: o.attempt, next_attempt_at: new Date(o.nextAttemptAt).toISOString(),
              smtp_code: o.smtpCode, reason: o.response,
            } });
            break;
          case 'bounced':
          case 'expired': {
            await setRecipientOutcome(tx, [o.recipientId], 'bounced', { smtpCode: o.smtpCode, detail: o.response }, now);
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
            await setRecipientOutcome(tx, [o.recipientId], 'failed', { detail: o.reason }, now);
            events.push({ ...base, kind: 'failed', recipient: o.address, data: { ...about(o.address), reason: o.reason } });
            break;
        }
      }
      await appendEvents(tx, events);
      const settled = aggregateStatus((await listRecipients(tx, e.id)).map((r) => r.status));
      if (settled) await transitionEmail(tx, e.id, ['sent'], settled, now);
    },
  };
}
