import { sql, type Kysely } from 'kysely';
import { withPosition } from '../schema-helpers.js';

// Broadcasts, and the broadcast and contact an email was made for. Sending a
// broadcast turns its audience into ordinary emails in chunks; the row keeps
// how far that went (the position of the last contact done), and the unique
// key on the emails makes a second email for a contact impossible, whatever
// a crash or a second node does.

export async function up(db: Kysely<unknown>): Promise<void> {
  await withPosition(db, db.schema.createTable('broadcasts'))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('from_address', 'text')
    .addColumn('reply_to_list', 'text', (c) => c.notNull())
    .addColumn('subject', 'text')
    .addColumn('preview_text', 'text')
    .addColumn('html', 'text')
    .addColumn('text_body', 'text')
    .addColumn('template_id', 'text')
    .addColumn('template_version', 'integer')
    // JSON: {tag_ids, exclude_tag_ids, engagement_tiers}.
    .addColumn('audience', 'text', (c) => c.notNull())
    .addColumn('send_rate_per_minute', 'integer')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('status_reason', 'text')
    .addColumn('mode', 'text')
    .addColumn('scheduled_at', 'bigint')
    // A broadcast paused by the send quota goes on by itself at this time.
    .addColumn('resume_at', 'bigint')
    // The pace: the next chunk of emails is not made before this time.
    .addColumn('next_chunk_at', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('audience_size', 'integer')
    // The audience is the contacts up to this position when sending started.
    .addColumn('audience_max_pos', 'bigint')
    .addColumn('expanded_pos', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('emails_created', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('sent_at', 'bigint')
    .addColumn('cancelled_at', 'bigint')
    .addColumn('locked_until', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_owner', 'text')
    .execute();
  await db.schema.createIndex('broadcasts_ws_pos').on('broadcasts').columns(['workspace_id', 'pos']).execute();
  await db.schema.createIndex('broadcasts_status').on('broadcasts').columns(['status']).execute();

  await db.schema.alterTable('emails').addColumn('broadcast_id', 'text').execute();
  await db.schema.alterTable('emails').addColumn('contact_id', 'text').execute();
  // NULLs are distinct in both databases: emails that are not a broadcast's never collide.
  await db.schema.createIndex('emails_broadcast_contact').on('emails').columns(['broadcast_id', 'contact_id']).unique().execute();
  await db.schema.createIndex('emails_ws_broadcast_pos').on('emails').columns(['workspace_id', 'broadcast_id', 'pos'])
    .where(sql.ref('broadcast_id'), 'is not', null).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('emails_ws_broadcast_pos').execute();
  await db.schema.dropIndex('emails_broadcast_contact').execute();
  await db.schema.alterTable('emails').dropColumn('contact_id').execute();
  await db.schema.alterTable('emails').dropColumn('broadcast_id').execute();
  await db.schema.dropTable('broadcasts').execute();
}
