import { sql, type Kysely } from 'kysely';
import { withPosition } from '../schema-helpers.js';

// The audience area: contacts, tags and their assignments, suppressions, and
// the per-address engagement aggregates that engagement tiers are computed from.

export async function up(db: Kysely<unknown>): Promise<void> {
  await withPosition(db, db.schema.createTable('contacts'))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('engagement_tier', 'text', (c) => c.notNull())
    .addColumn('unsubscribe_reason', 'text')
    .addColumn('unsubscribed_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('deleted_at', 'bigint')
    .execute();
  // Soft-deleted rows keep their address, so uniqueness holds among live rows
  // only: re-creating a deleted address makes a new contact.
  await db.schema.createIndex('contacts_ws_email_live').on('contacts').columns(['workspace_id', 'email']).unique()
    .where(sql.ref('deleted_at'), 'is', null).execute();
  await db.schema.createIndex('contacts_ws_pos').on('contacts').columns(['workspace_id', 'pos']).execute();
  await db.schema.createIndex('contacts_ws_status_pos').on('contacts').columns(['workspace_id', 'status', 'pos']).execute();
  await db.schema.createIndex('contacts_ws_tier_pos').on('contacts').columns(['workspace_id', 'engagement_tier', 'pos']).execute();

  await withPosition(db, db.schema.createTable('tags'))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('name_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('tags_ws_name').on('tags').columns(['workspace_id', 'name_key']).unique().execute();
  await db.schema.createIndex('tags_ws_pos').on('tags').columns(['workspace_id', 'pos']).execute();

  await db.schema.createTable('contact_tags')
    .addColumn('contact_id', 'text', (c) => c.notNull().references('contacts.id'))
    // Deleting a tag removes its assignments with it.
    .addColumn('tag_id', 'text', (c) => c.notNull().references('tags.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('contact_tags_pk', ['contact_id', 'tag_id'])
    .execute();
  await db.schema.createIndex('contact_tags_tag').on('contact_tags').columns(['tag_id', 'contact_id']).execute();

  await withPosition(db, db.schema.createTable('suppressions'))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('suppressions_ws_email').on('suppressions').columns(['workspace_id', 'email']).unique().execute();
  await db.schema.createIndex('suppressions_ws_pos').on('suppressions').columns(['workspace_id', 'pos']).execute();
  await db.schema.createIndex('suppressions_ws_reason_pos').on('suppressions').columns(['workspace_id', 'reason', 'pos']).execute();

  await db.schema.createTable('address_engagement')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('first_sent_at', 'bigint')
    .addColumn('last_engaged_at', 'bigint')
    .addPrimaryKeyConstraint('address_engagement_pk', ['workspace_id', 'email'])
    .execute();

  await db.schema.createTable('engagement_watermark')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('last_event_pos', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['engagement_watermark', 'address_engagement', 'suppressions', 'contact_tags', 'tags', 'contacts']) {
    await db.schema.dropTable(t).execute();
  }
}
