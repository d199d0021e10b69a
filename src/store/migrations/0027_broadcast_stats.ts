import { sql, type Kysely } from 'kysely';
import { clustered, createRowTrigger, dropRowTrigger } from '../schema-helpers.js';

// A broadcast's stats kept as counters, one row a broadcast, changed by
// triggers in the transaction that changes what they count: a read is one
// row instead of a scan of every email of the broadcast. Triggers see every
// path that moves a status (delivery, reports from inbound, cancels,
// suppression at send time), which counters kept by hand would miss.
//
// What each counter counts, as the scan it replaces did:
// - emails_created, sent: the broadcast's emails, those with a sent_at;
// - delivered, bounced, failed, suppressed: their recipients in that status;
// - opened, clicked, complained: their emails with at least one such event;
// - unsubscribed: their emails whose contact's unsubscribed_at is at or
//   after the email's created_at.
// Emails, recipients, events and contacts are never deleted (a contact's
// delete is soft and keeps unsubscribed_at), so only inserts and updates
// count. A broadcast with no row has made no email yet.
//
// Migration 0036 spreads each broadcast's row over slot rows, which a read
// sums: on PostgreSQL, writers of one broadcast no longer wait on one row.

export const OUTCOMES = ['delivered', 'bounced', 'failed', 'suppressed'] as const;
export const ENGAGEMENTS = { opened: 'email.opened', clicked: 'email.clicked', complained: 'email.complained' } as const;
export const COUNTERS = ['emails_created', 'sent', ...OUTCOMES, ...Object.keys(ENGAGEMENTS), 'unsubscribed'];

const quoted = (values: readonly string[]) => values.map((v) => `'${v}'`).join(', ');
export const isOne = (expr: string, value: string) => `CASE WHEN ${expr} = '${value}' THEN 1 ELSE 0 END`;
/** The outcome counters moved to status `now` from status `was` (SQL expressions), if it had one. */
export const outcomeMoves = (now: string, was?: string) =>
  OUTCOMES.map((o) => `${o} = ${o} + ${isOne(now, o)}${was === undefined ? '' : ` - ${isOne(was, o)}`}`).join(', ');
const engagementCounts = (type: string) =>
  Object.entries(ENGAGEMENTS).map(([counter, t]) => `${counter} = ${counter} + ${isOne(type, t)}`).join(', ');
/** Whether the email's contact had unsubscribed by the time the email was made (1 or 0). */
export const unsubscribedBefore = (e: string) =>
  `CASE WHEN EXISTS (SELECT 1 FROM contacts c WHERE c.id = ${e}.contact_id AND c.unsubscribed_at >= ${e}.created_at) THEN 1 ELSE 0 END`;
/** The broadcast's unsubscribed counter counted from its emails, in an UPDATE of broadcast_stats. */
export const UNSUBSCRIBED_RECOUNT =
  `(SELECT sum(${unsubscribedBefore('e')}) FROM emails e WHERE e.broadcast_id = broadcast_stats.broadcast_id)`;
const broadcastOf = (emailId: string) => `(SELECT broadcast_id FROM emails WHERE id = ${emailId})`;
/** The broadcasts of the contact's emails made at or before its unsubscribe (one email a broadcast and contact). */
const broadcastsBefore = (contact: string) =>
  `SELECT broadcast_id FROM emails WHERE contact_id = ${contact}.id AND created_at <= ${contact}.unsubscribed_at`;

const OUTCOME_CHANGED = `OLD.status <> NEW.status AND (OLD.status IN (${quoted(OUTCOMES)}) OR NEW.status IN (${quoted(OUTCOMES)}))`;
const ENGAGEMENT_EVENT = `NEW.email_id IS NOT NULL AND NEW.type IN (${quoted(Object.values(ENGAGEMENTS))})`;
const SENT_CHANGED = 'NEW.broadcast_id IS NOT NULL AND (OLD.sent_at IS NULL) <> (NEW.sent_at IS NULL)';

/** The statements each trigger runs, the same on both databases. */
export const BODIES = {
  email_made: [`INSERT INTO broadcast_stats (broadcast_id, emails_created, sent, unsubscribed)
    VALUES (NEW.broadcast_id, 1, CASE WHEN NEW.sent_at IS NULL THEN 0 ELSE 1 END, ${unsubscribedBefore('NEW')})
    ON CONFLICT (broadcast_id) DO UPDATE SET emails_created = broadcast_stats.emails_created + 1,
      sent = broadcast_stats.sent + excluded.sent, unsubscribed = broadcast_stats.unsubscribed + excluded.unsubscribed`],
  email_sent: [`UPDATE broadcast_stats SET sent = sent + CASE WHEN NEW.sent_at IS NULL THEN -1 ELSE 1 END
    WHERE broadcast_id = NEW.broadcast_id`],
  recipient_made: [`UPDATE broadcast_stats SET ${outcomeMoves('NEW.status')} WHERE broadcast_id = ${broadcastOf('NEW.email_id')}`],
  recipient_moved: [`UPDATE broadcast_stats SET ${outcomeMoves('NEW.status', 'OLD.status')} WHERE broadcast_id = ${broadcastOf('NEW.email_id')}`],
  // Only an email's first event of the type counts (events_email_pos finds an earlier one).
  engagement: [`UPDATE broadcast_stats SET ${engagementCounts('NEW.type')} WHERE broadcast_id = ${broadcastOf('NEW.email_id')}
    AND NOT EXISTS (SELECT 1 FROM events WHERE email_id = NEW.email_id AND type = NEW.type AND pos < NEW.pos)`],
  unsubscribe_moved: [
    `UPDATE broadcast_stats SET unsubscribed = unsubscribed - 1 WHERE broadcast_id IN (${broadcastsBefore('OLD')})`,
    `UPDATE broadcast_stats SET unsubscribed = unsubscribed + 1 WHERE broadcast_id IN (${broadcastsBefore('NEW')})`,
  ],
};

/** Each trigger: its statements, when it fires, and the cheap test that lets every other row pass. */
export const TRIGGERS: Array<{ name: keyof typeof BODIES; on: string; when: string }> = [
  { name: 'email_made', on: 'AFTER INSERT ON emails', when: 'NEW.broadcast_id IS NOT NULL' },
  { name: 'email_sent', on: 'AFTER UPDATE OF sent_at ON emails', when: SENT_CHANGED },
  { name: 'recipient_made', on: 'AFTER INSERT ON email_recipients', when: `NEW.status IN (${quoted(OUTCOMES)})` },
  { name: 'recipient_moved', on: 'AFTER UPDATE OF status ON email_recipients', when: OUTCOME_CHANGED },
  { name: 'engagement', on: 'AFTER INSERT ON events', when: ENGAGEMENT_EVENT },
  { name: 'unsubscribe_moved', on: 'AFTER UPDATE OF unsubscribed_at ON contacts', when: 'OLD.unsubscribed_at IS DISTINCT FROM NEW.unsubscribed_at' },
];

export async function up(db: Kysely<unknown>): Promise<void> {
  let table = clustered(db, db.schema.createTable('broadcast_stats').addColumn('broadcast_id', 'text', (c) => c.primaryKey()));
  for (const counter of COUNTERS) table = table.addColumn(counter, 'integer', (c) => c.notNull().defaultTo(0));
  await table.execute();
  // A contact's emails, for its unsubscribe; ordinary emails have no contact and stay out of it.
  await db.schema.createIndex('emails_contact_created').on('emails').columns(['contact_id', 'created_at'])
    .where(sql.ref('contact_id'), 'is not', null).execute();

  // Triggers before the backfill: on PostgreSQL creating them waits for the
  // writers of these tables and holds off new ones until the migration
  // commits, so the backfill reads everything they will not count.
  for (const t of TRIGGERS) await createRowTrigger(db, `broadcast_stats_${t.name}`, t.on, t.when, BODIES[t.name]);
  await backfill(db);
}

/** The counters of the broadcasts already there, counted as the scan did. */
async function backfill(db: Kysely<unknown>): Promise<void> {
  const ofBroadcast = 'e.broadcast_id = broadcast_stats.broadcast_id';
  const recipients = (status: string) =>
    `(SELECT count(*) FROM emails e JOIN email_recipients r ON r.email_id = e.id WHERE ${ofBroadcast} AND r.status = '${status}')`;
  const engaged = (type: string) =>
    `(SELECT count(DISTINCT ev.email_id) FROM events ev JOIN emails e ON e.id = ev.email_id WHERE ${ofBroadcast} AND ev.type = '${type}')`;
  await sql.raw(`INSERT INTO broadcast_stats (broadcast_id, emails_created, sent)
    SELECT broadcast_id, count(*), sum(CASE WHEN sent_at IS NULL THEN 0 ELSE 1 END) FROM emails
    WHERE broadcast_id IS NOT NULL GROUP BY broadcast_id`).execute(db);
  await sql.raw(`UPDATE broadcast_stats SET
    ${OUTCOMES.map((o) => `${o} = ${recipients(o)}`).join(', ')},
    ${Object.entries(ENGAGEMENTS).map(([counter, type]) => `${counter} = ${engaged(type)}`).join(', ')},
    unsubscribed = ${UNSUBSCRIBED_RECOUNT}`).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of TRIGGERS) await dropRowTrigger(db, `broadcast_stats_${t.name}`, t.on);
  await db.schema.dropIndex('emails_contact_created').execute();
  await db.schema.dropTable('broadcast_stats').execute();
}
