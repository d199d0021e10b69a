import type { Kysely } from 'kysely';

// A contact's properties: a JSON object of names and plain values, `{}` for
// none, read when a broadcast personalises its message.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('contacts').addColumn('properties', 'text', (c) => c.notNull().defaultTo('{}')).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('contacts').dropColumn('properties').execute();
}
