import type { Kysely } from 'kysely';

// A claim walks the outbound queue by destination (a workspace's mail to a
// domain), a seek per destination, so that the backlog of a destination it
// leaves out (at its share, or held) costs it nothing. The index by domain
// alone gives way to this one, which serves its readers as well.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('outbound_queue_destination').on('outbound_queue').columns(['domain', 'workspace_id', 'next_attempt_at']).execute();
  await db.schema.dropIndex('outbound_queue_domain').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('outbound_queue_domain').on('outbound_queue').columns(['domain', 'next_attempt_at']).execute();
  await db.schema.dropIndex('outbound_queue_destination').execute();
}
