import type { Kysely } from 'kysely';
import { binaryType } from '../schema-helpers.js';

// The message of an email as built at its hand-off to delivery, kept while
// the email still has attempts to make (a retry, another destination), so a
// later attempt only signs it instead of reading the email and building it
// again.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createTable('email_messages')
    .addColumn('email_id', 'text', (c) => c.primaryKey())
    .addColumn('raw', binaryType(db), (c) => c.notNull())
    .addColumn('built_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('email_messages').execute();
}
