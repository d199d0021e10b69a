import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../schema-helpers.js';
import { workspaceSearchTag } from '../trigrams.js';

// On SQLite, emails_search is filled after the fact by an indexer from a
// watermark (an emails.pos kept in event_watermarks as 'emails_index'), a
// batch at a time, no longer by each write unit; the emails list reads past
// the watermark on the rows themselves. Every email there is now was indexed
// by the unit that wrote it, so the watermark starts at the last one.
// PostgreSQL's emails_search is written with each email and needs none.

export async function up(db: Kysely<unknown>): Promise<void> {
  if (isPostgres(db)) return;
  await sql`INSERT INTO event_watermarks (name, last_event_pos) SELECT 'emails_index', coalesce(max(pos), 0) FROM emails`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (isPostgres(db)) return;
  // The code before this migration reads emails_search alone: the emails past the watermark go in first.
  const { rows } = await sql<{ mark: number }>`SELECT last_event_pos AS mark FROM event_watermarks WHERE name = 'emails_index'`.execute(db);
  const mark = Number(rows[0]?.mark ?? 0);
  const workspaces = await sql<{ ws: string }>`SELECT DISTINCT workspace_id AS ws FROM emails WHERE pos > ${mark}`.execute(db);
  for (const { ws } of workspaces.rows) {
    await sql`INSERT INTO emails_search (rowid, search_to, search_from, search_subject, ws_tag)
      SELECT pos, search_to, search_from, search_subject, ${workspaceSearchTag(ws)} FROM emails WHERE workspace_id = ${ws} AND pos > ${mark}`.execute(db);
  }
  await sql`DELETE FROM event_watermarks WHERE name = 'emails_index'`.execute(db);
}
