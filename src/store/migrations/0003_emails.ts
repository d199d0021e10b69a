import { sql, type Kysely } from 'kysely';
import { binaryType, isPostgres, trigramIndexes, withPosition } from '../schema-helpers.js';

// The emails area and the outbound queue: emails with their recipients, tags
// and attachment parts; the shared events table; uploaded attachments; the
// queue the delivery worker claims from; and the sink's kept messages.

export async function up(db: Kysely<unknown>): Promise<void> {
  await withPosition(db, db.schema.createTable('emails'))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('domain_id', 'text')
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('from_address', 'text', (c) => c.notNull())
    .addColumn('from_domain', 'text', (c) => c.notNull())
    .addColumn('to_list', 'text', (c) => c.notNull())
    .addColumn('cc_list', 'text', (c) => c.notNull())
    .addColumn('bcc_list', 'text', (c) => c.notNull())
    .addColumn('reply_to_list', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('html', 'text')
    .addColumn('text_body', 'text')
    .addColumn('headers', 'text', (c) => c.notNull())
    .addColumn('tags', 'text', (c) => c.notNull())
    .addColumn('attachments', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('scheduled_at', 'bigint')
    .addColumn('sent_at', 'bigint')
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('resent_from', 'text')
    // Lower-cased text the partial-match filters search: the to addresses,
    // the from field as given, the subject.
    .addColumn('search_to', 'text', (c) => c.notNull())
    .addColumn('search_from', 'text', (c) => c.notNull())
    .addColumn('search_subject', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('emails_ws_pos').on('emails').columns(['workspace_id', 'pos']).execute();
  await db.schema.createIndex('emails_ws_status_pos').on('emails').columns(['workspace_id', 'status', 'pos']).execute();
  await db.schema.createIndex('emails_ws_domain_pos').on('emails').columns(['workspace_id', 'domain_id', 'pos']).execute();
  await db.schema.createIndex('emails_ws_created').on('emails').columns(['workspace_id', 'created_at']).execute();
  // The due poller's scan: only scheduled emails are in this index.
  await db.schema.createIndex('emails_scheduled_due').on('emails').columns(['scheduled_at'])
    .where(sql.ref('status'), '=', 'scheduled').execute();

  if (isPostgres(db)) {
    await trigramIndexes(db, 'emails', ['search_to', 'search_from', 'search_subject']);
  } else {
    // A trigram index over the searchable text (rowid = emails.pos), so a
    // partial match walks index entries newest first instead of every row.
    await sql`CREATE VIRTUAL TABLE emails_search USING fts5(search_to, search_from, search_subject, content='', contentless_delete=1, tokenize='trigram')`.execute(db);
  }

  await db.schema.createTable('email_recipients')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email_id', 'text', (c) => c.notNull())
    .addColumn('idx', 'integer', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('domain', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('smtp_code', 'integer')
    .addColumn('detail', 'text')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('email_recipients_email').on('email_recipients').columns(['email_id', 'domain']).execute();

  await db.schema.createTable('email_tags')
    .addColumn('email_id', 'text', (c) => c.notNull())
    .addColumn('email_pos', 'bigint', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('tag', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('email_tags_pk', ['email_id', 'tag'])
    .execute();
  await db.schema.createIndex('email_tags_ws_tag_pos').on('email_tags').columns(['workspace_id', 'tag', 'email_pos']).execute();

  await db.schema.createTable('email_attachments')
    .addColumn('email_id', 'text', (c) => c.notNull())
    .addColumn('idx', 'integer', (c) => c.notNull())
    .addColumn('filename', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('content_id', 'text')
    .addColumn('content', binaryType(db), (c) => c.notNull())
    .addPrimaryKeyConstraint('email_attachments_pk', ['email_id', 'idx'])
    .execute();

  await withPosition(db, db.schema.createTable('events'))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('email_id', 'text')
    .addColumn('domain_id', 'text')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('recipient', 'text')
    .addColumn('from_address', 'text')
    .addColumn('subject', 'text')
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('events_ws_pos').on('events').columns(['workspace_id', 'pos']).execute();
  await db.schema.createIndex('events_ws_type_pos').on('events').columns(['workspace_id', 'type', 'pos']).execute();
  await db.schema.createIndex('events_email_pos').on('events').columns(['email_id', 'pos']).execute();

  await withPosition(db, db.schema.createTable('attachments'))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('filename', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('content', binaryType(db), (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('attachments_expiry').on('attachments').column('expires_at').execute();

  // One row per email and destination domain while there is work left;
  // deleted when every recipient of the domain has a final outcome.
  await db.schema.createTable('outbound_queue')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('email_id', 'text', (c) => c.notNull())
    .addColumn('domain', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('locked_until', 'bigint', (c) => c.notNull())
    .addColumn('lease_owner', 'text')
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('outbound_queue_due').on('outbound_queue').columns(['next_attempt_at']).execute();
  await db.schema.createIndex('outbound_queue_email').on('outbound_queue').columns(['email_id', 'domain']).unique().execute();

  await withPosition(db, db.schema.createTable('sink_messages'))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('email_id', 'text', (c) => c.notNull())
    .addColumn('domain', 'text', (c) => c.notNull())
    .addColumn('mail_from', 'text', (c) => c.notNull())
    .addColumn('recipients', 'text', (c) => c.notNull())
    .addColumn('raw', binaryType(db), (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sink_messages_email').on('sink_messages').columns(['email_id', 'pos']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) await sql`DROP TABLE emails_search`.execute(db);
  for (const t of ['sink_messages', 'outbound_queue', 'attachments', 'events', 'email_attachments', 'email_tags', 'email_recipients', 'emails']) {
    await db.schema.dropTable(t).execute();
  }
}
