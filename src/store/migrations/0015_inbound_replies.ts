import type { Kysely } from 'kysely';

// A received message that answers an email Mailroom sent names that email,
// so the replies to one email can be listed.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('inbound_messages').addColumn('in_reply_to_email_id', 'text').execute();
  await db.schema.createIndex('inbound_messages_reply_to').on('inbound_messages').columns(['workspace_id', 'in_reply_to_email_id', 'pos']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('inbound_messages_reply_to').execute();
  await db.schema.alterTable('inbound_messages').dropColumn('in_reply_to_email_id').execute();
}
