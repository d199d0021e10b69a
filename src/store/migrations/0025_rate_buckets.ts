import type { Kysely } from 'kysely';

// The rate-limit buckets of every workspace, shared by the nodes of one
// database: on several nodes a workspace's allowance is the same whichever
// node a request reaches (a single node keeps its buckets in memory).

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createTable('rate_buckets')
    .addColumn('bucket', 'text', (c) => c.primaryKey())
    .addColumn('tokens', 'double precision', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('allowed', 'integer', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('rate_buckets').execute();
}
