import type { Kysely } from 'kysely';
import { binaryType, withPosition } from '../schema-helpers.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  await withPosition(db, db.schema.createTable('workspaces'))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('plan', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await withPosition(db, db.schema.createTable('api_keys'))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('lookup', 'text', (c) => c.notNull().unique())
    .addColumn('token_hash', binaryType(db), (c) => c.notNull())
    .addColumn('masked_token', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('created_by_key_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema.createIndex('api_keys_ws_pos').on('api_keys').columns(['workspace_id', 'pos']).execute();

  await withPosition(db, db.schema.createTable('api_key_activity'))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('api_key_id', 'text', (c) => c.notNull())
    .addColumn('operation_id', 'text', (c) => c.notNull())
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('status', 'integer', (c) => c.notNull())
    .addColumn('resource_id', 'text')
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('ip', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('api_key_activity_key_pos').on('api_key_activity').columns(['api_key_id', 'pos']).execute();

  await db.schema.createTable('idempotency_keys')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('idem_key', 'text', (c) => c.notNull())
    .addColumn('operation_id', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('status', 'integer', (c) => c.notNull())
    .addColumn('response_body', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['workspace_id', 'idem_key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_expiry').on('idempotency_keys').column('expires_at').execute();

  await db.schema.createTable('send_usage')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('period', 'text', (c) => c.notNull())
    .addColumn('count', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('send_usage_pk', ['workspace_id', 'period'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['send_usage', 'idempotency_keys', 'api_key_activity', 'api_keys', 'workspaces']) {
    await db.schema.dropTable(t).execute();
  }
}
