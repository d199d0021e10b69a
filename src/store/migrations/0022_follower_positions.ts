import { sql, type Kysely } from 'kysely';

// Every follower of the events table keeps its position in event_watermarks:
// engagement's moves there from a table of its own, under the name engagement.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`INSERT INTO event_watermarks (name, last_event_pos)
    SELECT 'engagement', last_event_pos FROM engagement_watermark WHERE name = 'events'`.execute(db);
  await db.schema.dropTable('engagement_watermark').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.createTable('engagement_watermark')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('last_event_pos', 'bigint', (c) => c.notNull())
    .execute();
  await sql`INSERT INTO engagement_watermark (name, last_event_pos)
    SELECT 'events', last_event_pos FROM event_watermarks WHERE name = 'engagement'`.execute(db);
  await sql`DELETE FROM event_watermarks WHERE name = 'engagement'`.execute(db);
}
