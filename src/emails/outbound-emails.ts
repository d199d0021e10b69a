import type { Clock } from '../core/clock.js';
import type { Store } from '../store/db.js';
import { composeMessage } from '../delivery/index.js';
import type { DeliveryJob, OutboundEmails } from '../delivery/delivery.worker.js';
import type { QueueItem } from '../delivery/queue.repo.js';
import { returnPathFor } from '../inbound/return-path.js';
import { appendEvents, type NewEvent } from '../events/index.js';
import { addressKey } from './addresses.js';
import { listUnsubscribeOf, storedMailboxes } from './email-input.js';
import {
  findBuiltMessages, findStoredEmailsByIds, keepBuiltMessages, loadAttachmentParts, markSent, recipientsOfEmails,
  type EmailRecipient, type StoredEmail,
} from './emails.repo.js';
import { isOpen, recordRecipientOutcomes, type KnownEmail } from './outcomes.js';
import type { SuppressionReason } from '../suppressions/suppressions.tables.js';
import type { DomainSenders, SendingDomain } from '../domains/index.js';
import type { SuppressionsPort } from '../suppressions/index.js';
import type { HtmlRewriter } from './ports.js';
import { cachedSenders } from './sender-cache.js';

// The emails area as the delivery worker sees it (its OutboundEmails port):
// hand-off (pending -> sent), what to send for a queue row, and the outcomes
// written back with their events in the worker's transaction (outcomes.ts).

type Message = NonNullable<DeliveryJob['message']>;

export interface OutboundEmailsDeps {
  store: Store;
  clock: Clock;
  senders: DomainSenders;
  suppressions: SuppressionsPort;
  /** Applied to the HTML of emails whose domain the workspace has (tracking). */
  rewriteHtml?: HtmlRewriter;
  /** The keyring's returnPathKey: tags the recipient of a single-recipient return path. */
  returnPathKey: Buffer;
}

export function outboundEmails(deps: OutboundEmailsDeps): OutboundEmails {
  const { store, suppressions } = deps;
  const senders = cachedSenders(deps.senders, deps.clock);

  /** The email's message, built now: its attachments read, its HTML rewritten (tracking), composed. */
  async function build(e: StoredEmail, domain: SendingDomain | undefined): Promise<Message> {
    // The stored metadata says whether there are parts to load at all.
    const parts = e.attachments.length ? await loadAttachmentParts(store.db, e.id) : [];
    const custom = Object.fromEntries(Object.entries(e.headers).filter(([k]) => !/^list-unsubscribe(-post)?$/i.test(k)));
    const listUnsubscribe = listUnsubscribeOf(e.headers);
    const [from] = storedMailboxes([e.from]);
    const html = e.html !== null && domain && deps.rewriteHtml
      ? await deps.rewriteHtml({ workspaceId: e.workspaceId, emailId: e.id, html: e.html, domain })
      : e.html;
    try {
      const { raw } = await composeMessage({
        // A submitted message's own fields may hold groups ("undisclosed-recipients:;"): the composer parses them itself.
        from, to: e.shownRecipients?.to ?? storedMailboxes(e.to), cc: e.shownRecipients?.cc ?? storedMailboxes(e.cc),
        replyTo: storedMailboxes(e.replyTo), subject: e.subject,
        ...(e.text !== null && { text: e.text }), ...(html !== null && { html }), headers: custom,
        attachments: parts.map((p) => ({ filename: p.filename, content: p.content, contentType: p.contentType, ...(p.contentId && { contentId: p.contentId }) })),
        ...(listUnsubscribe && { listUnsubscribe }),
        messageIdDomain: e.fromDomain, messageIdLocal: e.id, messageId: e.messageId, date: new Date(deps.clock.now()),
      });
      return { raw, builtNow: true };
    } catch (err) {
      // The input was checked when the email was accepted; what the composer still refuses will not change.
      return { unbuildable: `The message could not be built: ${(err as Error).message}` };
    }
  }

  /**
   * What to send for one queue row: the recipients of its domain still open,
   * and the email's message (`messageOf` builds it once for all its rows).
   */
  async function jobFor(e: StoredEmail, open: EmailRecipient[], suppressed: Map<string, SuppressionReason>,
    messageOf: (e: StoredEmail, domain: SendingDomain | undefined) => Promise<Message>): Promise<DeliveryJob> {
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
    return {
      mode: e.mode,
      ...(sendable.length > 0 && { message: await messageOf(e, domain) }),
      // One recipient: the return path names it, so an asynchronous bounce identifies it exactly.
      mailFrom: returnPathFor(deps.returnPathKey, e.id, sendable.length === 1 ? sendable[0].email : null, returnPathDomain),
      dkim: (domain?.dkim ?? []).map((k) => ({ domain: domain!.name, selector: k.selector, privateKey: k.privateKeyPem })),
      recipients: sendable.map((r) => ({ id: r.id, address: r.email })),
      skipped,
    };
  }

  /**
   * What the load read of each row's email, for its outcome write. Keyed by the
   * worker's own item, so a row whose outcome is never written leaves nothing behind.
   */
  const knownOf = new WeakMap<QueueItem, KnownEmail>();

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
      const recipientIds = new Map<string, string[]>();
      for (const r of await recipientsOfEmails(store.db, [...emails.keys()])) {
        const all = recipientIds.get(r.emailId);
        if (all) all.push(r.id);
        else recipientIds.set(r.emailId, [r.id]);
        if (!isOpen(r.status)) continue;
        const key = `${r.emailId}\n${r.domain}`;
        const rows = open.get(key);
        if (rows) rows.push(r);
        else open.set(key, [r]);
      }
      // A recipient suppressed since the email was accepted (a hard bounce of another email, say) is not sent to.
      const suppressed = new Map<string, Map<string, SuppressionReason>>();
      for (const ws of new Set([...emails.values()].map((e) => e.workspaceId))) {
        const addresses = [...open.values()].flat().filter((r) => emails.get(r.emailId)!.workspaceId === ws).map((r) => addressKey(r.email));
        suppressed.set(ws, addresses.length ? await suppressions.check(ws, [...new Set(addresses)]) : new Map());
      }
      // A message built at an earlier attempt is signed again as it is; one built now serves every row of its email.
      const kept = await findBuiltMessages(store.db, [...emails.keys()]);
      const messages = new Map<string, Promise<Message>>();
      const messageOf = (e: StoredEmail, domain: SendingDomain | undefined) => {
        let message = messages.get(e.id);
        if (!message) {
          const raw = kept.get(e.id);
          message = raw ? Promise.resolve({ raw, builtNow: false }) : build(e, domain);
          messages.set(e.id, message);
        }
        return message;
      };
      for (const item of items) {
        const e = emails.get(item.emailId);
        const rows = open.get(`${item.emailId}\n${item.domain}`);
        if (!e || !rows) continue;
        knownOf.set(item, {
          header: { id: e.id, workspaceId: e.workspaceId, domainId: e.domainId, mode: e.mode, from: e.from, subject: e.subject, to: e.to },
          recipientIds: recipientIds.get(e.id)!,
        });
        jobs.set(item.id, await jobFor(e, rows, suppressed.get(e.workspaceId)!, messageOf));
      }
      return jobs;
    },

    async record(tx, rows, now) {
      const known = new Map<string, KnownEmail>();
      for (const { item } of rows) {
        const email = knownOf.get(item);
        if (email) known.set(item.emailId, email);
      }
      const open = await recordRecipientOutcomes(tx, suppressions, rows.map((r) => ({ emailId: r.item.emailId, outcomes: r.outcomes })), now, known);
      // An email with attempts left keeps its message, so the next attempt only signs it.
      const keep = new Map<string, Buffer>();
      for (const r of rows) if (r.built && open.has(r.item.emailId)) keep.set(r.item.emailId, r.built);
      await keepBuiltMessages(tx, [...keep].map(([emailId, raw]) => ({ emailId, raw })), now);
    },
  };
}
