import { sql, type Kysely } from 'kysely';
import { withPosition } from '../schema-helpers.js';

// Sending domains: their settings, DKIM keys (private halves sealed), the
// outcome of the last DNS check per record, and the re-check schedule.
// Booleans are 0/1 integers, which both SQLite and PostgreSQL store as such.

export async function up(db: Kysely<unknown>): Promise<void> {
  await withPosition(db, db.schema.createTable('domains'))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('status_reason', 'text')
    .addColumn('region', 'text', (c) => c.notNull())
    .addColumn('return_path_subdomain', 'text', (c) => c.notNull())
    .addColumn('open_tracking', 'integer', (c) => c.notNull())
    .addColumn('click_tracking', 'integer', (c) => c.notNull())
    .addColumn('tracking_subdomain', 'text', (c) => c.notNull())
    .addColumn('inbound_enabled', 'integer', (c) => c.notNull())
    .addColumn('dkim_keys', 'text', (c) => c.notNull())
    .addColumn('record_checks', 'text', (c) => c.notNull())
    .addColumn('last_checked_at', 'bigint')
    .addColumn('next_check_at', 'bigint')
    .addColumn('verifying_since', 'bigint')
    .addColumn('check_attempts', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('domains_ws_name').on('domains').columns(['workspace_id', 'name']).unique().execute();
  await db.schema.createIndex('domains_ws_pos').on('domains').columns(['workspace_id', 'pos']).execute();
  await db.schema.createIndex('domains_ws_status_pos').on('domains').columns(['workspace_id', 'status', 'pos']).execute();
  // The re-check task's scan: only domains with a planned check are in it.
  await db.schema.createIndex('domains_next_check').on('domains').columns(['next_check_at'])
    .where(sql.ref('next_check_at'), 'is not', null).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('domains').execute();
}
