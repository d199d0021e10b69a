import type { Kysely } from 'kysely';

// events_ws_created served nothing: the events list turns a time filter into
// a range of positions (event_hours) and reads events_ws_pos, and every
// other reader of events goes by position, email or type. Each event written
// (one a send, two or more a delivered message) still updated it.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('events_ws_created').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('events_ws_created').on('events').columns(['workspace_id', 'created_at']).execute();
}
