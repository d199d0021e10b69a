import type { Kysely } from 'kysely';

// A scheduled task's lease names the process holding it, as the other leases
// do, so a process starting after a crash can free the tasks its predecessor
// held rather than wait ten minutes for their leases to run out.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('scheduled_tasks').addColumn('lease_owner', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('scheduled_tasks').dropColumn('lease_owner').execute();
}
