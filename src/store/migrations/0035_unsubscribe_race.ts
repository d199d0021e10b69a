import { sql, type Kysely } from 'kysely';
import { createRowTrigger, dropRowTrigger, isPostgres } from '../schema-helpers.js';
import { BODIES, TRIGGERS, UNSUBSCRIBED_RECOUNT } from './0027_broadcast_stats.js';

// On PostgreSQL a broadcast email made for a contact and that contact's
// unsubscribe, in two transactions at once, each missed the other's
// uncommitted row: the email's trigger saw no unsubscribe, the unsubscribe's
// trigger saw no email, and the unsubscribed counter stayed one short.
// Nothing ordered them: emails.contact_id has no foreign key, and an update
// of unsubscribed_at takes only FOR NO KEY UPDATE on the contact.
//
// The email's trigger now takes FOR SHARE on its contact first, which
// conflicts with that update: whichever of the two comes second waits for
// the first to commit, and its next statement (READ COMMITTED takes a new
// snapshot for each) sees the other's row and counts it. Emails made for
// one contact side by side do not wait on each other (FOR SHARE shares).
// SQLite has one writer at a time and needs none of it.
//
// The counters already kept may have missed such a pair: they are counted
// again from the emails.

const EMAIL_MADE = TRIGGERS.find((t) => t.name === 'email_made')!;
const NAME = `broadcast_stats_${EMAIL_MADE.name}`;
export const LOCK_CONTACT = 'PERFORM 1 FROM contacts WHERE id = NEW.contact_id FOR SHARE';

export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return recount(db);
  await dropRowTrigger(db, NAME, EMAIL_MADE.on);
  await createRowTrigger(db, NAME, EMAIL_MADE.on, EMAIL_MADE.when, [LOCK_CONTACT, ...BODIES.email_made]);
  // Replacing the trigger holds off writers of emails until this commits;
  // this holds off unsubscribes, whose counts the recount would overwrite.
  await sql`LOCK TABLE contacts IN SHARE MODE`.execute(db);
  await recount(db);
}

async function recount(db: Kysely<unknown>): Promise<void> {
  await sql.raw(`UPDATE broadcast_stats SET unsubscribed = ${UNSUBSCRIBED_RECOUNT}`).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await dropRowTrigger(db, NAME, EMAIL_MADE.on);
  await createRowTrigger(db, NAME, EMAIL_MADE.on, EMAIL_MADE.when, BODIES.email_made);
}
