import type { Kysely } from 'kysely';

// Settings of the store itself, shared by every node that uses it: the
// check value of the master secret it was set up under.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createTable('store_settings')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('store_settings').execute();
}
