import { sql, type Kysely } from 'kysely';
import { binaryType, withPosition } from '../schema-helpers.js';

// Mail received on the MX port: the raw message is stored before the server
// answers 250, and parsed and checked afterwards by the inbound processor,
// which claims pending rows with a lease like the outbound queue does.

export async function up(db: Kysely<unknown>): Promise<void> {
  await withPosition(db, db.schema.createTable('inbound_messages'))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('domain_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('mail_from', 'text', (c) => c.notNull())
    .addColumn('rcpt_to', 'text', (c) => c.notNull())
    .addColumn('remote_ip', 'text', (c) => c.notNull())
    .addColumn('helo', 'text', (c) => c.notNull())
    .addColumn('tls', 'integer', (c) => c.notNull())
    .addColumn('raw', binaryType(db), (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('locked_until', 'bigint', (c) => c.notNull())
    .addColumn('lease_owner', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('last_error', 'text')
    .addColumn('received_at', 'bigint', (c) => c.notNull())
    .addColumn('processed_at', 'bigint')
    .addColumn('from_address', 'text')
    .addColumn('to_list', 'text')
    .addColumn('cc_list', 'text')
    .addColumn('reply_to_list', 'text')
    .addColumn('subject', 'text')
    .addColumn('text_body', 'text')
    .addColumn('html', 'text')
    .addColumn('message_id', 'text')
    .addColumn('headers', 'text')
    .addColumn('attachments', 'text')
    .addColumn('auth', 'text')
    .addColumn('search_to', 'text', (c) => c.notNull())
    .addColumn('search_from', 'text', (c) => c.notNull())
    .addColumn('detail', 'text')
    .execute();
  // The API's list: one workspace's ready messages, newest first.
  await db.schema.createIndex('inbound_ws_pos').on('inbound_messages').columns(['workspace_id', 'pos']).execute();
  await db.schema.createIndex('inbound_ws_domain_pos').on('inbound_messages').columns(['workspace_id', 'domain_id', 'pos']).execute();
  // The processor's claim: only pending rows are in this index.
  await db.schema.createIndex('inbound_pending').on('inbound_messages').columns(['locked_until', 'pos'])
    .where(sql.ref('status'), '=', 'pending').execute();
  // The retention task's scan.
  await db.schema.createIndex('inbound_received_at').on('inbound_messages').columns(['received_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('inbound_messages').execute();
}
