import type { Kysely } from 'kysely';
import { withPosition } from '../schema-helpers.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  await withPosition(db, db.schema.createTable('tracked_links'))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('email_id', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('tracked_links_email').on('tracked_links').column('email_id').execute();
  // Per-email counters, so an open or click reads one row rather than counting events.
  await db.schema.createTable('tracking_counts')
    .addColumn('email_id', 'text', (c) => c.primaryKey())
    .addColumn('opens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('clicks', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('tracking_counts').execute();
  await db.schema.dropTable('tracked_links').execute();
}
