import type { Kysely } from 'kysely';

// The outbound queue by destination: a destination that cannot be reached
// has its waiting rows postponed together, and a queue view lists rows per
// domain.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('outbound_queue_domain').on('outbound_queue').columns(['domain', 'next_attempt_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('outbound_queue_domain').execute();
}
