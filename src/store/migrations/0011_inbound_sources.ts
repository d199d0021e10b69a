import { sql, type Kysely } from 'kysely';
import { binaryType } from '../schema-helpers.js';

// The raw source of a received message moves to a table of its own. Its row
// in inbound_messages is written again when the processor leases it and when
// it becomes ready, and a database rewrites a row whole: with the source in
// it, every one of those writes copied the message as well.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createTable('inbound_sources')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('raw', binaryType(db), (c) => c.notNull())
    .execute();
  await sql`INSERT INTO inbound_sources (id, raw) SELECT id, raw FROM inbound_messages`.execute(db);
  await db.schema.alterTable('inbound_messages').dropColumn('raw').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('inbound_messages').addColumn('raw', binaryType(db)).execute();
  await sql`UPDATE inbound_messages SET raw = (SELECT raw FROM inbound_sources s WHERE s.id = inbound_messages.id)`.execute(db);
  await db.schema.dropTable('inbound_sources').execute();
}
