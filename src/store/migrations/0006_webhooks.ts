import { sql, type Kysely } from 'kysely';
import { clustered, isPostgres, trigramIndexes, withPosition } from '../schema-helpers.js';

// Webhook endpoints, their deliveries and every attempt; the watermarks of the
// consumers that read the events table in position order (webhook fan-out,
// analytics rollups); and the indexes the account-wide events list needs on
// the shared events table.


export async function up(db: Kysely<unknown>): Promise<void> {
  await withPosition(db, db.schema.createTable('webhooks'))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('event_types', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_until', 'bigint')
    .addColumn('disabled_reason', 'text')
    .addColumn('disabled_at', 'bigint')
    .addColumn('failing_since', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhooks_ws_pos').on('webhooks').columns(['workspace_id', 'pos']).execute();

  await withPosition(db, db.schema.createTable('webhook_deliveries'))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('webhook_id', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text')
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('is_test', 'integer', (c) => c.notNull())
    .addColumn('attempt_count', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('lease_owner', 'text')
    .addColumn('last_error', 'text')
    .addColumn('replay_of', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_deliveries_hook_pos').on('webhook_deliveries').columns(['webhook_id', 'pos']).execute();
  // Only pending rows are in the due indexes: the "anything due?" probe and
  // each endpoint's claim stay small however much history is kept.
  await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').columns(['next_attempt_at'])
    .where(sql.ref('status'), '=', 'pending').execute();
  await db.schema.createIndex('webhook_deliveries_hook_due').on('webhook_deliveries').columns(['webhook_id', 'next_attempt_at'])
    .where(sql.ref('status'), '=', 'pending').execute();
  await db.schema.createIndex('webhook_deliveries_created').on('webhook_deliveries').columns(['created_at']).execute();

  await withPosition(db, db.schema.createTable('webhook_attempts'))
    .addColumn('delivery_id', 'text', (c) => c.notNull())
    .addColumn('webhook_id', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('attempted_at', 'bigint', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('succeeded', 'integer', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('response_body', 'text')
    .execute();
  await db.schema.createIndex('webhook_attempts_delivery').on('webhook_attempts').columns(['delivery_id', 'pos']).execute();

  await db.schema.createTable('event_watermarks')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('last_event_pos', 'bigint', (c) => c.notNull())
    .execute();
  // Webhook fan-out starts at the current end: every endpoint is newer than
  // the events already written, so there is nothing before it to send.
  await sql`INSERT INTO event_watermarks (name, last_event_pos) SELECT 'webhooks', coalesce(max(pos), 0) FROM events`.execute(db);

  // The account-wide events list: one index per equality filter, each ending
  // in pos so a filtered page is an index range walked newest first.
  // (workspace_id, type, pos) and (email_id, pos) come with the table.
  await db.schema.createIndex('events_ws_domain_pos').on('events').columns(['workspace_id', 'domain_id', 'pos']).execute();
  await db.schema.createIndex('events_ws_created').on('events').columns(['workspace_id', 'created_at']).execute();

  // Side indexes of the events list, filled in position order from the
  // 'events_index' watermark by the indexer in src/events/events-query.repo.ts
  // (reads cover the few events past the watermark from the rows themselves):
  //  - event_tags: the tags of each event's email, walked newest first per tag;
  //  - event_hours: the lowest and highest position written in each hour, so a
  //    created_after/created_before bound becomes a range of positions;
  //  - events_search: a trigram index over the recipient an event is about
  //    (or, for an event about the whole email, the email's recipients) and
  //    the from field, both lower-cased, for partial to/from matching.
  await clustered(db, db.schema.createTable('event_tags')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('tag', 'text', (c) => c.notNull())
    .addColumn('pos', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('event_tags_pk', ['workspace_id', 'tag', 'pos']))
    .execute();
  await clustered(db, db.schema.createTable('event_hours')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('hour_start', 'bigint', (c) => c.notNull())
    .addColumn('min_pos', 'bigint', (c) => c.notNull())
    .addColumn('max_pos', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('event_hours_pk', ['workspace_id', 'hour_start']))
    .execute();
  if (isPostgres(db)) {
    // A plain table of the indexed text (it is not a column of events: the
    // recipients may come from the email), searched with LIKE.
    await sql`CREATE TABLE events_search (pos bigint PRIMARY KEY, to_text text NOT NULL, from_text text NOT NULL)`.execute(db);
    await trigramIndexes(db, 'events_search', ['to_text', 'from_text']);
  } else {
    // rowid = events.pos. Contentless: the text is in events already.
    await sql`CREATE VIRTUAL TABLE events_search USING fts5(to_text, from_text, content='', tokenize='trigram')`.execute(db);
    // How many events (of a sample) hold each trigram: a needle is looked up
    // by its rarest trigrams, since FTS5 reads the whole doclist of a
    // trigram found in nearly every row ("use" of user@..., "@gm").
    await clustered(db, db.schema.createTable('event_trigram_stats')
      .addColumn('column_name', 'text', (c) => c.notNull())
      .addColumn('trigram', 'text', (c) => c.notNull())
      .addColumn('docs', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('event_trigram_stats_pk', ['column_name', 'trigram']))
      .execute();
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) await db.schema.dropTable('event_trigram_stats').execute();
  await sql`DROP TABLE events_search`.execute(db);
  await db.schema.dropIndex('events_ws_created').execute();
  await db.schema.dropIndex('events_ws_domain_pos').execute();
  for (const t of ['event_hours', 'event_tags', 'event_watermarks', 'webhook_attempts', 'webhook_deliveries', 'webhooks']) {
    await db.schema.dropTable(t).execute();
  }
}
