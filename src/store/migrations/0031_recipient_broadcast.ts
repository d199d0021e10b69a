import { sql, type Kysely } from 'kysely';
import { createRowTrigger, dropRowTrigger } from '../schema-helpers.js';
import { BODIES, OUTCOME_CHANGED, OUTCOMES, outcomeMoves, quoted, TRIGGERS } from './0027_broadcast_stats.js';

// A recipient row names its email's broadcast, so the broadcast-stats
// triggers on recipients fire only for broadcast mail and need not look the
// broadcast up. Before, every recipient of every email ran the trigger when
// its outcome was written: a lookup of the email on SQLite, and on
// PostgreSQL a plpgsql call as well, which made the statement that records
// a delivery about half as costly again.

const RECIPIENT_TRIGGERS = [
  { name: 'recipient_made', on: 'AFTER INSERT ON email_recipients', when: `NEW.status IN (${quoted(OUTCOMES)})`, moves: outcomeMoves('NEW.status') },
  { name: 'recipient_moved', on: 'AFTER UPDATE OF status ON email_recipients', when: OUTCOME_CHANGED, moves: outcomeMoves('NEW.status', 'OLD.status') },
] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('email_recipients').addColumn('broadcast_id', 'text').execute();
  await sql`UPDATE email_recipients SET broadcast_id = (SELECT e.broadcast_id FROM emails e WHERE e.id = email_recipients.email_id)
    WHERE email_id IN (SELECT id FROM emails WHERE broadcast_id IS NOT NULL)`.execute(db);
  for (const t of RECIPIENT_TRIGGERS) {
    const name = `broadcast_stats_${t.name}`;
    await dropRowTrigger(db, name, t.on);
    await createRowTrigger(db, name, t.on, `NEW.broadcast_id IS NOT NULL AND ${t.when}`,
      [`UPDATE broadcast_stats SET ${t.moves} WHERE broadcast_id = NEW.broadcast_id`]);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of RECIPIENT_TRIGGERS) {
    const name = `broadcast_stats_${t.name}`;
    await dropRowTrigger(db, name, t.on);
    const before = TRIGGERS.find((b) => b.name === t.name)!;
    await createRowTrigger(db, name, before.on, before.when, BODIES[t.name]);
  }
  await db.schema.alterTable('email_recipients').dropColumn('broadcast_id').execute();
}
