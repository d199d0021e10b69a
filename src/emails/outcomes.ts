import type { Tx } from '../store/db.js';
import { rowsNeedLocks } from '../store/lease.js';
import type { EmailStatus, RecipientStatus } from './emails.tables.js';
import type { AttemptOutcome } from '../delivery/delivery.worker.js';
import { SINK_TEST_DOMAIN } from '../delivery/sink.js';
import { appendEvents, type NewEvent } from '../events/index.js';
import { addressKey, mailDomain } from './addresses.js';
import {
  dropBuiltMessages, lockEmailHeaders, recipientsOfEmails, setRecipientOutcome, settleEmails, type EmailHeader,
} from './emails.repo.js';
import type { SuppressionsPort } from '../suppressions/index.js';

// The one place a recipient's outcome is recorded, whoever learnt it: the
// delivery worker from the SMTP reply, the inbound processor from a DSN or a
// feedback report. In the caller's transaction it writes the recipient's
// status, the event, the suppression a hard bounce or a complaint calls for,
// and the email's status, which is the aggregate of its recipients': open
// while any recipient is queued or deferred; then delivered when at least
// one recipient accepted the message, failed when none did. A bounce that
// comes as a report after the SMTP transaction was accepted therefore gives
// the same recipient, event, suppression and email as a 550 at SMTP time.
//
// An outcome moves a recipient that is still waiting (queued, deferred); a
// bounce also moves one that was delivered (the report came after the
// remote server took the message). An outcome that comes too late for its
// recipient, such as a retry's verdict after a report settled it, changes
// nothing and adds no event.

const OPEN: readonly RecipientStatus[] = ['queued', 'deferred'];
const WAITING_OR_DELIVERED: readonly RecipientStatus[] = [...OPEN, 'delivered'];

/** The email's status once every recipient has an outcome, or undefined while some are open. */
export function aggregateStatus(statuses: RecipientStatus[]): Extract<EmailStatus, 'delivered' | 'failed'> | undefined {
  if (statuses.some((s) => OPEN.includes(s))) return undefined;
  return statuses.includes('delivered') ? 'delivered' : 'failed';
}

export function isOpen(status: RecipientStatus): boolean {
  return OPEN.includes(status);
}

/** A recipient who was delivered to complained (a feedback report, or the sink's simulation). */
export interface Complaint {
  kind: 'complained';
  recipientId: string;
  address: string;
  feedbackType: string;
  /** The mailbox provider the report came from, when known. */
  provider?: string;
}

export type RecipientOutcome = AttemptOutcome | Complaint;

export interface EmailOutcomes {
  emailId: string;
  outcomes: RecipientOutcome[];
}

type Outcome = { smtpCode?: number | null; detail: string };

/** An event of the outcomes given; one that reports a recipient's change is written only if the change is. */
interface Pending {
  event: NewEvent;
  changeOf?: string;
}

/** What the caller read of an email before: neither its header nor its set of recipients ever changes. */
export interface KnownEmail {
  header: EmailHeader;
  /** Every recipient of the email, whatever their status. */
  recipientIds: readonly string[];
}

/**
 * Records the outcomes, in `tx`; outcomes of emails that no longer exist are
 * passed over. Returns the emails that still have recipients waiting.
 * `known` holds what the caller read of the emails before: their headers
 * are then not read again where the transaction needs no row locks, and an
 * email whose every recipient this call changes is settled without reading
 * its recipients back.
 */
export async function recordRecipientOutcomes(tx: Tx, suppressions: Pick<SuppressionsPort, 'addFromBounce'>,
  list: EmailOutcomes[], now: number, known?: ReadonlyMap<string, KnownEmail>): Promise<Set<string>> {
  if (list.length === 0) return new Set();
  const ids = [...new Set(list.map((l) => l.emailId))];
  // The emails stay locked to the end of the transaction: two outcomes of one
  // email recorded side by side (two destinations, a report) settle it one
  // after the other, the second seeing the recipients the first changed. The
  // lock, taken before any event is written, also orders complaints, which
  // change no recipient: the broadcast stats count only an email's first
  // email.complained, and on PostgreSQL two reports of one email recorded on
  // two nodes at once would each see no earlier complaint and both count.
  const headers = known && !rowsNeedLocks(tx) && ids.every((id) => known.has(id))
    ? new Map(ids.map((id) => [id, known.get(id)!.header]))
    : await lockEmailHeaders(tx, ids);
  /** Every event, in the order of the outcomes given, as the events' positions will tell. */
  const pending: Pending[] = [];
  // Recipients that get the same status, code and reply share one UPDATE.
  const updates = new Map<string, { status: RecipientStatus; outcome: Outcome; ids: string[] }>();
  const setOutcome = (id: string, status: RecipientStatus, outcome: Outcome, ...changeEvents: NewEvent[]) => {
    const key = `${status}\n${outcome.smtpCode}\n${outcome.detail}`;
    const update = updates.get(key);
    if (update) update.ids.push(id);
    else updates.set(key, { status, outcome, ids: [id] });
    for (const event of changeEvents) pending.push({ event, changeOf: id });
  };
  const at = new Date(now).toISOString();

  for (const { emailId, outcomes } of list) {
    const e = headers.get(emailId);
    if (!e) continue;
    const base = { workspaceId: e.workspaceId, emailId: e.id, domainId: e.domainId, from: e.from, subject: e.subject, now };
    for (const o of outcomes) {
      switch (o.kind) {
        case 'delivered':
          setOutcome(o.recipientId, 'delivered', { smtpCode: o.smtpCode, detail: o.response }, {
            ...base, kind: 'delivered', recipient: o.address,
            data: { ...about(e, o.address), delivered_at: at, smtp_code: o.smtpCode, mx_host: o.mxHost },
          });
          if (o.complained) await complain(e, base, { address: o.address, feedbackType: 'abuse' });
          break;
        case 'complained':
          await complain(e, base, o);
          break;
        case 'deferred':
          setOutcome(o.recipientId, 'deferred', { smtpCode: o.smtpCode, detail: o.response }, {
            ...base, kind: 'delayed', recipient: o.address, data: {
              ...about(e, o.address), attempt: o.attempt, next_attempt_at: new Date(o.nextAttemptAt).toISOString(),
              smtp_code: o.smtpCode, reason: o.response,
            },
          });
          break;
        case 'bounced':
        case 'expired': {
          const bounced: NewEvent = { ...base, kind: 'bounced', recipient: o.address, data: {
            ...about(e, o.address), bounce_type: o.bounce.bounce_type, bounce_subtype: o.bounce.bounce_subtype, smtp_code: o.smtpCode,
            enhanced_status_code: o.enhancedStatusCode, provider: (o.kind === 'bounced' && o.provider) || 'unknown',
            recommended_action: o.bounce.recommended_action, original_error: o.response,
          } };
          const gaveUp: NewEvent[] = o.kind === 'expired' ? [{ ...base, kind: 'failed', recipient: o.address, data: {
            ...about(e, o.address), reason: `Gave up after temporary failures since ${new Date(o.queuedAt).toISOString()}: ${o.response}`,
          } }] : [];
          setOutcome(o.recipientId, 'bounced', { smtpCode: o.smtpCode, detail: o.response }, bounced, ...gaveUp);
          if (o.kind === 'bounced' && o.bounce.bounce_type === 'hard') await suppress(e, o.address, 'hard_bounce');
          break;
        }
        case 'failed':
          setOutcome(o.recipientId, 'failed', { detail: o.reason },
            { ...base, kind: 'failed', recipient: o.address, data: { ...about(e, o.address), reason: o.reason } });
          break;
      }
    }
  }

  async function suppress(e: EmailHeader, address: string, reason: 'hard_bounce' | 'complaint') {
    if (suppressible(e, address)) await suppressions.addFromBounce(tx, e.workspaceId, addressKey(address), reason);
  }
  async function complain(e: EmailHeader, base: Omit<NewEvent, 'kind' | 'data'>, c: Omit<Complaint, 'kind' | 'recipientId'>) {
    pending.push({ event: { ...base, kind: 'complained', recipient: c.address, data: {
      ...about(e, c.address), feedback_type: c.feedbackType, ...(c.provider !== undefined && { provider: c.provider }),
    } } });
    await suppress(e, c.address, 'complaint');
  }

  /** The recipients this call changed, and their status now. */
  const changed = new Map<string, RecipientStatus>();
  for (const u of updates.values()) {
    const from = u.status === 'bounced' ? WAITING_OR_DELIVERED : OPEN;
    for (const id of await setRecipientOutcome(tx, u.ids, from, u.status, u.outcome, now)) changed.set(id, u.status);
  }
  const events: NewEvent[] = [];
  for (const p of pending) if (p.changeOf === undefined || changed.has(p.changeOf)) events.push(p.event);
  await appendEvents(tx, events);
  // The email rows are locked (or the writer holds the database): a recipient this call changed stays as it left it.
  const statuses = new Map<string, RecipientStatus[]>();
  for (const id of ids) {
    const recipientIds = known?.get(id)?.recipientIds;
    if (headers.has(id) && recipientIds?.every((r) => changed.has(r))) statuses.set(id, recipientIds.map((r) => changed.get(r)!));
  }
  return settle(tx, ids.filter((id) => headers.has(id)), statuses, now);
}

const about = (e: EmailHeader, to: string) => ({ to, from: e.from, subject: e.subject });

/** Simulated outcomes on the sink's test domain, and test mail, never touch the suppression list, so they can be repeated. */
function suppressible(e: EmailHeader, address: string): boolean {
  return e.mode === 'live' && mailDomain(address) !== SINK_TEST_DOMAIN;
}

/**
 * Each email whose recipients all have an outcome takes their aggregate
 * status, and its kept message goes; returns the emails still open. The
 * recipients' statuses are read for the emails `known` does not give them of.
 */
async function settle(tx: Tx, emailIds: string[], known: ReadonlyMap<string, RecipientStatus[]>, now: number): Promise<Set<string>> {
  const open = new Set<string>();
  const delivered = new Set<string>();
  const seen = new Set<string>();
  const note = (emailId: string, status: RecipientStatus) => {
    seen.add(emailId);
    if (isOpen(status)) open.add(emailId);
    else if (status === 'delivered') delivered.add(emailId);
  };
  for (const [emailId, statuses] of known) for (const status of statuses) note(emailId, status);
  const unknown = emailIds.filter((id) => !known.has(id));
  if (unknown.length > 0) for (const r of await recipientsOfEmails(tx, unknown)) note(r.emailId, r.status);
  // Each settled email's status is aggregateStatus() of its recipients.
  const settled = { delivered: [] as string[], failed: [] as string[] };
  for (const id of seen) if (!open.has(id)) settled[delivered.has(id) ? 'delivered' : 'failed'].push(id);
  await settleEmails(tx, settled.delivered, 'delivered', now);
  await settleEmails(tx, settled.failed, 'failed', now);
  await dropBuiltMessages(tx, [...settled.delivered, ...settled.failed]);
  return open;
}
