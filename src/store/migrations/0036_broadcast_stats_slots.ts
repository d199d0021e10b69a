import { sql, type Kysely } from 'kysely';
import { clustered, createRowTrigger, dropRowTrigger, isPostgres } from '../schema-helpers.js';
import { BODIES, COUNTERS, ENGAGEMENTS, isOne, OUTCOMES, TRIGGERS, unsubscribedBefore } from './0027_broadcast_stats.js';
import { RECIPIENT_TRIGGERS, recipientBody, recipientWhen } from './0031_recipient_broadcast.js';
import { LOCK_CONTACT } from './0035_unsubscribe_race.js';

// A broadcast's counters were one row, which every trigger updated: on
// PostgreSQL every transaction recording an outcome, open or click of one
// broadcast waited for the one before it to commit, and two nodes sending a
// big broadcast were serialised on that row (103-116 outcomes a second
// against 473-636 with the trigger off).
//
// Each broadcast's counters are now spread over slot rows, primary key
// (broadcast_id, slot): a trigger adds its change to one slot, making the
// row if it has none, and a read sums the slots. Only the sum means
// anything: a slot's counter may go below zero (a recipient counted
// delivered in one slot and bounced in another).
//
// The slot is the transaction's id modulo SLOTS: it stays the same for the
// whole transaction, so one transaction's changes to a broadcast lock one
// row however many rows it records, as the one row did, and transactions
// running at once took their ids one after another, so they mostly land on
// different slots. Measured with 16 writers of one broadcast on two nodes:
// 0.1-0.3 of them waiting on a lock, against 2.1-3.5 with the backend's pid
// instead (the pids of two pools are not handed out in a row), and faster
// in 3 of 3 pairs. A slot from the changed row's id would lock several rows
// a transaction, in no fixed order. SQLite has one writer at a time and one
// slot, 0.
//
// The counters already kept move to slot 0.

/** Slots a broadcast's counters are spread over on PostgreSQL. */
const SLOTS = 16;
// The triggers run after a write, so the transaction has its id already.
export const slotOf = (db: Kysely<unknown>) => (isPostgres(db) ? `pg_current_xact_id()::text::bigint % ${SLOTS}` : '0');

type TriggerName = (typeof TRIGGERS)[number]['name'];

/**
 * Adds each of `changes` (counter to an SQL expression) to the slot of the
 * broadcast `broadcast` names, for each row `from` yields (`from` ends in a
 * WHERE clause, which SQLite needs before an upsert's ON CONFLICT).
 */
export function addToSlot(slot: string, broadcast: string, changes: Record<string, string>, from = 'WHERE true'): string {
  const counters = Object.keys(changes);
  return `INSERT INTO broadcast_stats (broadcast_id, slot, ${counters.join(', ')})
    SELECT ${broadcast}, ${slot}, ${Object.values(changes).join(', ')} ${from}
    ON CONFLICT (broadcast_id, slot) DO UPDATE SET ${counters.map((c) => `${c} = broadcast_stats.${c} + excluded.${c}`).join(', ')}`;
}

const outcomeChanges = (now: string, was?: string) =>
  Object.fromEntries(OUTCOMES.map((o) => [o, `${isOne(now, o)}${was === undefined ? '' : ` - ${isOne(was, o)}`}`]));
/** The broadcasts of the contact's emails made at or before its unsubscribe, each once. */
const broadcastsBefore = (contact: string) => `FROM (SELECT DISTINCT broadcast_id FROM emails
  WHERE contact_id = ${contact}.id AND created_at <= ${contact}.unsubscribed_at AND broadcast_id IS NOT NULL) b WHERE true`;

/** What each trigger runs with slots; when and on what it fires stay as before. */
function slottedBodies(db: Kysely<unknown>): Record<TriggerName, string[]> {
  const slot = slotOf(db);
  return {
    email_made: [...(isPostgres(db) ? [LOCK_CONTACT] : []), addToSlot(slot, 'NEW.broadcast_id', {
      emails_created: '1', sent: 'CASE WHEN NEW.sent_at IS NULL THEN 0 ELSE 1 END', unsubscribed: unsubscribedBefore('NEW'),
    })],
    email_sent: [addToSlot(slot, 'NEW.broadcast_id', { sent: 'CASE WHEN NEW.sent_at IS NULL THEN -1 ELSE 1 END' })],
    recipient_made: [addToSlot(slot, 'NEW.broadcast_id', outcomeChanges('NEW.status'))],
    recipient_moved: [addToSlot(slot, 'NEW.broadcast_id', outcomeChanges('NEW.status', 'OLD.status'))],
    // Only an email's first event of the type counts (events_email_pos finds an earlier one).
    // On PostgreSQL two writers of one email's event of a type must be ordered by a
    // lock taken before the insert (tracking's counter row, the email row outcomes
    // lock), or each finds no earlier one in its snapshot and both count.
    engagement: [addToSlot(slot, 'e.broadcast_id',
      Object.fromEntries(Object.entries(ENGAGEMENTS).map(([counter, type]) => [counter, isOne('NEW.type', type)])),
      `FROM emails e WHERE e.id = NEW.email_id AND e.broadcast_id IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM events WHERE email_id = NEW.email_id AND type = NEW.type AND pos < NEW.pos)`)],
    unsubscribe_moved: [
      addToSlot(slot, 'b.broadcast_id', { unsubscribed: '-1' }, broadcastsBefore('OLD')),
      addToSlot(slot, 'b.broadcast_id', { unsubscribed: '1' }, broadcastsBefore('NEW')),
    ],
  };
}

/** Each trigger as migrations 0027, 0031 and 0035 left it. */
function unslottedTriggers(db: Kysely<unknown>): Record<TriggerName, { when: string; body: string[] }> {
  const triggers = Object.fromEntries(TRIGGERS.map((t) => [t.name, { when: t.when, body: BODIES[t.name] }])) as
    Record<TriggerName, { when: string; body: string[] }>;
  for (const t of RECIPIENT_TRIGGERS) triggers[t.name] = { when: recipientWhen(t), body: recipientBody(t) };
  if (isPostgres(db)) triggers.email_made.body = [LOCK_CONTACT, ...BODIES.email_made];
  return triggers;
}

/**
 * Drops the triggers, moves the counters into a table of the other shape
 * (`move` fills `broadcast_stats_next` from `broadcast_stats`), which takes
 * the name, and makes the triggers again for that shape. On
 * PostgreSQL dropping the triggers holds off the writers of what they
 * count until the migration commits, so no change goes uncounted.
 */
async function reshape(db: Kysely<unknown>, slotted: boolean, move: string): Promise<void> {
  const unslotted = unslottedTriggers(db);
  const slottedBody = slottedBodies(db);
  for (const t of TRIGGERS) await dropRowTrigger(db, `broadcast_stats_${t.name}`, t.on);
  let table = clustered(db, db.schema.createTable('broadcast_stats_next').addColumn('broadcast_id', 'text', (c) => c.notNull()));
  if (slotted) table = table.addColumn('slot', 'integer', (c) => c.notNull());
  for (const counter of COUNTERS) table = table.addColumn(counter, 'integer', (c) => c.notNull().defaultTo(0));
  // Named for the shape: the old table's key keeps its name on PostgreSQL until the table is dropped.
  table = table.addPrimaryKeyConstraint(slotted ? 'broadcast_stats_slots_pkey' : 'broadcast_stats_one_pkey',
    slotted ? ['broadcast_id', 'slot'] as never : ['broadcast_id'] as never);
  await table.execute();
  await sql.raw(move).execute(db);
  await db.schema.dropTable('broadcast_stats').execute();
  await db.schema.alterTable('broadcast_stats_next').renameTo('broadcast_stats').execute();
  for (const t of TRIGGERS) await createRowTrigger(db, `broadcast_stats_${t.name}`, t.on, unslotted[t.name].when,
    slotted ? slottedBody[t.name] : unslotted[t.name].body);
}

const COUNTER_LIST = COUNTERS.join(', ');

export async function up(db: Kysely<unknown>): Promise<void> {
  await reshape(db, true, `INSERT INTO broadcast_stats_next (broadcast_id, slot, ${COUNTER_LIST})
    SELECT broadcast_id, 0, ${COUNTER_LIST} FROM broadcast_stats`);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await reshape(db, false, `INSERT INTO broadcast_stats_next (broadcast_id, ${COUNTER_LIST})
    SELECT broadcast_id, ${COUNTERS.map((c) => `sum(${c})`).join(', ')} FROM broadcast_stats GROUP BY broadcast_id`);
}
