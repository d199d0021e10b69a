import type { Clock } from '../core/clock.js';
import type { Store } from '../store/db.js';
import type { DeliveryJob, OutboundEmails } from '../delivery/delivery.worker.js';
import { returnPathFor } from '../inbound/return-path.js';
import { appendEvents, type NewEvent } from '../events/index.js';
import { addressKey } from './addresses.js';
import { listUnsubscribeOf, storedMailboxes } from './email-input.js';
import { findStoredEmailsByIds, loadAttachmentParts, markSent, recipientsOfEmails, type EmailRecipient, type StoredEmail } from './emails.repo.js';
import { isOpen, recordRecipientOutcomes } from './outcomes.js';
import type { SuppressionReason } from '../suppressions/suppressions.tables.js';
import type { DomainSenders } from '../domains/index.js';
import type { SuppressionsPort } from '../suppressions/index.js';
import type { HtmlRewriter } from './ports.js';
import { cachedSenders } from './sender-cache.js';

// The emails area as the delivery worker sees it (its OutboundEmails port):
// hand-off (pending -> sent), what to send for a queue row, and the outcomes
// written back with their events in the worker's transaction (outcomes.ts).

export interface OutboundEmailsDeps {
  store: Store;
  clock: Clock;
  senders: DomainSenders;
  suppressions: SuppressionsPort;
  /** Applied to the HTML of emails whose domain the workspace has (tracking). */
  rewriteHtml?: HtmlRewriter;
}

export function outboundEmails(deps: OutboundEmailsDeps): OutboundEmails {
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
        if (!isOpen(r.status)) continue;
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
      await recordRecipientOutcomes(tx, suppressions, rows.map((r) => ({ emailId: r.item.emailId, outcomes: r.outcomes })), now);
    },
  };
}
