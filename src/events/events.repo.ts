import type { Selectable } from 'kysely';
import { insertRows, type Db, type Tx } from '../store/db.js';
import type { EventsTable } from './events.tables.js';
import { fetchPage, type Page, type PageQuery } from '../store/paging.js';
import { newId } from '../core/ids.js';
import { toIso } from '../core/clock.js';

// The shared events table: every state change of an email appends a row here
// in the same transaction as the change, so the timeline can never disagree
// with the email. Other areas read it (the account-wide events list, webhook
// fan-out, engagement) by position.

/** Event kinds written by sending and delivery; the type string is `email.<kind>`. */
export type EmailEventKind =
  | 'scheduled' // created for later, or rescheduled
  | 'queued' // waiting out the send delay before hand-off
  | 'sent' // handed to delivery
  | 'delivered'
  | 'delayed' // temporary failure, will be retried
  | 'bounced'
  | 'complained'
  | 'opened' // the open pixel was fetched (tracking)
  | 'clicked' // a tracked link was followed
  | 'replied' // an answer to it was received
  | 'failed' // a recipient will not be sent to (suppressed, or delivery gave up)
  | 'cancelled';

export interface EmailEvent {
  id: string;
  object: 'event';
  type: string;
  email_id: string | null;
  created_at: string;
  data: Record<string, unknown>;
}

export interface NewEvent {
  workspaceId: string;
  emailId: string;
  domainId: string | null;
  kind: EmailEventKind;
  /** The recipient a per-recipient event is about. */
  recipient?: string;
  from: string;
  subject: string;
  data: Record<string, unknown>;
  now: number;
}

export const toEvent = (r: Selectable<EventsTable>): EmailEvent => ({
  id: r.id,
  object: 'event',
  type: r.type,
  email_id: r.email_id,
  created_at: toIso(r.created_at),
  data: JSON.parse(r.data) as Record<string, unknown>,
});

/** Appends one event; call it inside the transaction that makes the change it reports. */
export async function appendEvent(tx: Tx, e: NewEvent): Promise<string> {
  const id = newId('evt', e.now);
  await tx.insertInto('events').values({
    id, workspace_id: e.workspaceId, email_id: e.emailId, domain_id: e.domainId, type: `email.${e.kind}`,
    recipient: e.recipient ?? null, from_address: e.from, subject: e.subject, data: JSON.stringify(e.data), created_at: e.now,
  }).execute();
  return id;
}

/** The rows of `events`, as appendEvents writes them. */
export const eventRows = (events: NewEvent[]) => events.map((e) => ({
  id: newId('evt', e.now), workspace_id: e.workspaceId, email_id: e.emailId, domain_id: e.domainId, type: `email.${e.kind}` as const,
  recipient: e.recipient ?? null, from_address: e.from, subject: e.subject, data: JSON.stringify(e.data), created_at: e.now,
}));

/** Several events in one statement (a batch send, a delivery outcome for many recipients). */
export async function appendEvents(tx: Tx, events: NewEvent[]): Promise<void> {
  await insertRows(tx, 'events', eventRows(events));
}

/**
 * Kinds of events about something other than one email: they reach webhooks
 * (which follow the events table) but not the events list, which is the
 * timeline of emails.
 */
export type WorkspaceEventType = 'broadcast.sending' | 'broadcast.paused' | 'broadcast.sent' | 'broadcast.cancelled' | 'contact.unsubscribed';

/** Appends one such event; call it inside the transaction that makes the change it reports. */
export async function appendWorkspaceEvent(tx: Tx, e: { workspaceId: string; type: WorkspaceEventType; recipient?: string; data: Record<string, unknown>; now: number }): Promise<void> {
  await insertRows(tx, 'events', [{
    id: newId('evt', e.now), workspace_id: e.workspaceId, email_id: null, domain_id: null, type: e.type,
    recipient: e.recipient ?? null, from_address: null, subject: null, data: JSON.stringify(e.data), created_at: e.now,
  }]);
}

/**
 * The `email.received` event of a message that became ready, in the shared
 * events table, in the same transaction. Its email_id is the inbound id: the
 * event is about that message.
 */
export interface ReceivedEvent {
  workspaceId: string; inboundId: string; domainId: string; from: string; subject: string; data: Record<string, unknown>; now: number;
}

/** The email.received events of several processed messages, in one statement. */
export async function appendReceivedEvents(tx: Tx, events: ReceivedEvent[]): Promise<void> {
  await insertRows(tx, 'events', events.map((e) => ({
    id: newId('evt', e.now), workspace_id: e.workspaceId, email_id: e.inboundId, domain_id: e.domainId, type: 'email.received' as const,
    recipient: null, from_address: e.from, subject: e.subject, data: JSON.stringify(e.data), created_at: e.now,
  })));
}

/** The timeline of one email, newest first like every list. */
export async function listEventsForEmail(db: Db, ws: string, emailId: string, page: PageQuery): Promise<Page<EmailEvent>> {
  return fetchPage(page, (bound, order, take) => db.selectFrom('events').selectAll()
    .where('email_id', '=', emailId).where('workspace_id', '=', ws)
    .$if(bound !== undefined, (q) => q.where('pos', bound!.op, bound!.pos))
    .orderBy('pos', order).limit(take).execute(), toEvent);
}

