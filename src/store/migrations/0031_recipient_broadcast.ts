import { sql, type Kysely } from 'kysely';
import { createRowTrigger, dropRowTrigger } from '../schema-helpers.js';
import { BODIES, outcomeMoves, TRIGGERS } from './0027_broadcast_stats.js';

// A recipient row names its email's broadcast, so the broadcast-stats
// triggers on recipients fire only for broadcast mail and need not look the
// broadcast up. Before, every recipient of every email ran the trigger when
// its outcome was written: a lookup of the email on SQLite, and on
// PostgreSQL a plpgsql call as well, which made the statement that records
// a delivery about half as costly again.

/** The counters each recipient trigger moves; when and on what it fires stay as migration 0027 has them. */
const RECIPIENT_MOVES: Partial<Record<string, string>> = {
  recipient_made: outcomeMoves('NEW.status'),
  recipient_moved: outcomeMoves('NEW.status', 'OLD.status'),
};
export const RECIPIENT_TRIGGERS = TRIGGERS.filter((t) => RECIPIENT_MOVES[t.name] !== undefined);
/** When a recipient trigger fires once this migration has run: for a recipient of a broadcast. */
export const recipientWhen = (t: (typeof TRIGGERS)[number]) => `NEW.broadcast_id IS NOT NULL AND ${t.when}`;
/** What a recipient trigger runs once this migration has run. */
export const recipientBody = (t: (typeof TRIGGERS)[number]) =>
  [`UPDATE broadcast_stats SET ${RECIPIENT_MOVES[t.name]} WHERE broadcast_id = NEW.broadcast_id`];

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('email_recipients').addColumn('broadcast_id', 'text').execute();
  await sql`UPDATE email_recipients SET broadcast_id = (SELECT e.broadcast_id FROM emails e WHERE e.id = email_recipients.email_id)
    WHERE email_id IN (SELECT id FROM emails WHERE broadcast_id IS NOT NULL)`.execute(db);
  for (const t of RECIPIENT_TRIGGERS) {
    const name = `broadcast_stats_${t.name}`;
    await dropRowTrigger(db, name, t.on);
    await createRowTrigger(db, name, t.on, recipientWhen(t), recipientBody(t));
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of RECIPIENT_TRIGGERS) {
    const name = `broadcast_stats_${t.name}`;
    await dropRowTrigger(db, name, t.on);
    await createRowTrigger(db, name, t.on, t.when, BODIES[t.name]);
  }
  await db.schema.alterTable('email_recipients').dropColumn('broadcast_id').execute();
}
