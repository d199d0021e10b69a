import type { Kysely } from 'kysely';

// The To and Cc fields of a message submitted over SMTP, as its client wrote
// them. An MTA delivers to the envelope and leaves the header alone: a
// Bcc-only message ("undisclosed-recipients:;"), mail to an alias the client
// expanded, or one transaction of a list split over several all name others
// in To than the recipients of this copy. Null for an email whose fields are
// its recipients, as every API email's are.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('email_contents').addColumn('shown_recipients', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('email_contents').dropColumn('shown_recipients').execute();
}
