import type { Kysely } from 'kysely';
import { clustered, withPosition } from '../schema-helpers.js';

// Hourly rollups of the events table for GET /analytics, folded from a
// watermark in event_watermarks (see src/analytics/analytics.repo.ts).


export async function up(db: Kysely<unknown>): Promise<void> {
  // Per workspace and UTC hour, four levels of rows: domain_id '*' with
  // tagset -1 counts every event; a domain id with tagset -1 the events of
  // that domain; '*' with a tag set those of emails with exactly those tags;
  // both, both. A query reads the one level its filters need, so a year
  // without filters is 8,760 rows whatever the number of domains and tags.
  await clustered(db, db.schema.createTable('analytics_hourly')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('hour_start', 'bigint', (c) => c.notNull())
    .addColumn('domain_id', 'text', (c) => c.notNull())
    .addColumn('tagset', 'bigint', (c) => c.notNull())
    .addColumn('sent', 'bigint', (c) => c.notNull())
    .addColumn('delivered', 'bigint', (c) => c.notNull())
    .addColumn('bounced', 'bigint', (c) => c.notNull())
    .addColumn('opened', 'bigint', (c) => c.notNull())
    .addColumn('clicked', 'bigint', (c) => c.notNull())
    .addColumn('complained', 'bigint', (c) => c.notNull())
    .addColumn('failed', 'bigint', (c) => c.notNull())
    .addColumn('delayed', 'bigint', (c) => c.notNull())
    .addColumn('unique_opened', 'bigint', (c) => c.notNull())
    .addColumn('unique_clicked', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('analytics_hourly_pk', ['workspace_id', 'domain_id', 'tagset', 'hour_start']))
    .execute();

  // A distinct set of tags an email carried, so an any-of tag filter selects
  // whole rollup rows and an email with two of the asked tags counts once.
  await withPosition(db, db.schema.createTable('analytics_tagsets'))
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    // The sorted tags as a JSON array.
    .addColumn('tags_key', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('analytics_tagsets_key').on('analytics_tagsets').columns(['workspace_id', 'tags_key']).unique().execute();
  await clustered(db, db.schema.createTable('analytics_tagset_tags')
    .addColumn('tagset', 'bigint', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('tag', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('analytics_tagset_tags_pk', ['workspace_id', 'tag', 'tagset']))
    .execute();

  // The first open and the first click of each email by each recipient:
  // what unique_opened / unique_clicked count.
  await clustered(db, db.schema.createTable('analytics_first_engagement')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('email_id', 'text', (c) => c.notNull())
    .addColumn('recipient', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('analytics_first_engagement_pk', ['email_id', 'recipient', 'kind']))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['analytics_first_engagement', 'analytics_tagset_tags', 'analytics_tagsets', 'analytics_hourly']) {
    await db.schema.dropTable(t).execute();
  }
}
