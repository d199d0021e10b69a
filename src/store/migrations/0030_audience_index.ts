import type { Kysely } from 'kysely';

// An audience is read through the workspace's subscribed, live contacts in
// the order they were made (the sender's walk and its count). With the
// deletion mark and the engagement tier in the index beside the status, both
// read the index alone: counting 100,000 contacts no longer visits every
// row. It serves the contacts list filtered by status as the index it
// replaces did.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('contacts_ws_status_live_pos').on('contacts')
    .columns(['workspace_id', 'status', 'deleted_at', 'pos', 'engagement_tier']).execute();
  await db.schema.dropIndex('contacts_ws_status_pos').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('contacts_ws_status_pos').on('contacts').columns(['workspace_id', 'status', 'pos']).execute();
  await db.schema.dropIndex('contacts_ws_status_live_pos').execute();
}
