import { sql, type Kysely } from 'kysely';
import { clustered } from '../schema-helpers.js';

// Analytics count live and test mail apart: the hourly rollups gain the
// email's mode as a key. The rollups are rebuilt from the events: the table
// is made anew, the first-engagement pairs are cleared and the fold's
// watermark goes back to the start, so the background fold counts every
// event again, by mode (reads stay exact meanwhile: what the fold has not
// reached is counted from the events at read time).

const COUNTS = ['sent', 'delivered', 'bounced', 'opened', 'clicked', 'complained', 'failed', 'delayed', 'unique_opened', 'unique_clicked'];

async function rollupsTable(db: Kysely<unknown>, withMode: boolean): Promise<void> {
  let table = db.schema.createTable('analytics_hourly')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('hour_start', 'bigint', (c) => c.notNull());
  if (withMode) table = table.addColumn('mode', 'text', (c) => c.notNull());
  table = table.addColumn('domain_id', 'text', (c) => c.notNull()).addColumn('tagset', 'bigint', (c) => c.notNull());
  for (const name of COUNTS) table = table.addColumn(name, 'bigint', (c) => c.notNull());
  const key: string[] = withMode ? ['workspace_id', 'mode', 'domain_id', 'tagset', 'hour_start'] : ['workspace_id', 'domain_id', 'tagset', 'hour_start'];
  await clustered(db, table.addPrimaryKeyConstraint('analytics_hourly_pk', key as never)).execute();
}

async function refold(db: Kysely<unknown>): Promise<void> {
  await sql`DELETE FROM analytics_first_engagement`.execute(db);
  await sql`UPDATE event_watermarks SET last_event_pos = 0 WHERE name = 'analytics'`.execute(db);
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('analytics_hourly').execute();
  await rollupsTable(db, true);
  await refold(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('analytics_hourly').execute();
  await rollupsTable(db, false);
  await refold(db);
}
