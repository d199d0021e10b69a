import type { Kysely } from 'kysely';

// Destinations a workspace holds: its queued mail to such a domain waits,
// untried and not ageing, until the hold is released.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createTable('queue_holds')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('domain', 'text', (c) => c.notNull())
    .addColumn('held_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('queue_holds_pk', ['workspace_id', 'domain'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('queue_holds').execute();
}
