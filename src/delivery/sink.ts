import { newId } from '../core/ids.js';
import type { Db, Tx } from '../store/db.js';
import { classifyBounce, extractEnhancedStatus, type RecipientVerdict } from './index.js';

// The sink: where messages go when nothing may leave the machine
// (MAILROOM_DELIVERY=sink, and always for test keys). Every built message is
// kept in sink_messages; recipients on the test domain get a simulated
// outcome chosen by their local part, so a developer can exercise every
// event without sending a byte:
//
//   delivered@mailroom.test   accepted (also any other address, anywhere)
//   bounced@mailroom.test     550 5.1.1 unknown user: a hard bounce
//   delayed@mailroom.test     451 4.7.1 on the first attempt, accepted on the retry
//   complained@mailroom.test  accepted, then a complaint
//
// A +tag is ignored (bounced+case7@mailroom.test bounces), so tests can use
// distinct addresses.

export const SINK_TEST_DOMAIN = 'mailroom.test';
/** The mx_host of sink deliveries. */
export const SINK_HOST = 'sink.mailroom.test';

export type SinkVerdict = 'delivered' | 'bounced' | 'delayed' | 'complained';

export function sinkVerdict(address: string): SinkVerdict {
  const at = address.lastIndexOf('@');
  if (address.slice(at + 1).toLowerCase() !== SINK_TEST_DOMAIN) return 'delivered';
  const local = address.slice(0, at).toLowerCase().split('+')[0];
  return local === 'bounced' || local === 'delayed' || local === 'complained' ? local : 'delivered';
}

const REPLIES = {
  delivered: { code: 250, text: '250 2.0.0 Ok: kept by the Mailroom sink' },
  bounced: { code: 550, text: '550 5.1.1 The email account that you tried to reach does not exist (simulated by the Mailroom sink)' },
  delayed: { code: 451, text: '451 4.7.1 Temporarily deferred, try again later (simulated by the Mailroom sink)' },
} as const;

export interface SinkResult {
  outcomes: RecipientVerdict[];
  /** Accepted recipients whose simulation also files a complaint. */
  complained: Set<string>;
}

/** What the sink says to each recipient on attempt number `attempt` (0 for the first). */
export function sinkDeliver(recipients: string[], attempt: number): SinkResult {
  const complained = new Set<string>();
  const outcomes = recipients.map((recipient): RecipientVerdict => {
    const verdict = sinkVerdict(recipient);
    if (verdict === 'complained') complained.add(recipient);
    const reply = verdict === 'bounced' ? REPLIES.bounced : verdict === 'delayed' && attempt === 0 ? REPLIES.delayed : REPLIES.delivered;
    const enhanced = extractEnhancedStatus(reply.text)!;
    const base = { recipient, smtp_code: reply.code, enhanced_status_code: enhanced, response: reply.text, mx_host: SINK_HOST };
    if (reply.code === 550) return { ...base, status: 'bounced', bounce: classifyBounce({ code: reply.code, enhanced, text: reply.text }) };
    return { ...base, status: reply.code === 451 ? 'deferred' : 'delivered' };
  });
  return { outcomes, complained };
}

export interface KeptMessage {
  workspaceId: string;
  emailId: string;
  domain: string;
  mailFrom: string;
  recipients: string[];
  raw: Buffer;
  now: number;
}

/** Keeps the built message; call it in the transaction that records the outcome. */
export async function keepMessage(tx: Tx, m: KeptMessage): Promise<void> {
  await tx.insertInto('sink_messages').values({
    id: newId('msg', m.now), workspace_id: m.workspaceId, email_id: m.emailId, domain: m.domain, mail_from: m.mailFrom,
    recipients: JSON.stringify(m.recipients), raw: m.raw, created_at: m.now,
  }).execute();
}

export interface SinkMessage {
  domain: string;
  mailFrom: string;
  recipients: string[];
  raw: Buffer;
}

/** The messages the sink kept for an email, oldest first. */
export async function sinkMessagesFor(db: Db | Tx, emailId: string): Promise<SinkMessage[]> {
  const rows = await db.selectFrom('sink_messages').select(['domain', 'mail_from', 'recipients', 'raw'])
    .where('email_id', '=', emailId).orderBy('pos').execute();
  return rows.map((r) => ({ domain: r.domain, mailFrom: r.mail_from, recipients: JSON.parse(r.recipients) as string[], raw: r.raw }));
}

/** Deletes the messages the sink kept of the emails `emailIds`. */
export async function forgetSinkMessagesOf(tx: Tx, emailIds: string[]): Promise<void> {
  if (emailIds.length === 0) return;
  await tx.deleteFrom('sink_messages').where('email_id', 'in', emailIds).execute();
}
