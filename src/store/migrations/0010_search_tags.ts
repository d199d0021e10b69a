import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../schema-helpers.js';
import { workspaceSearchTag } from '../trigrams.js';

// The trigram search indexes of emails and events gain each row's workspace
// tag (see trigrams.ts), so a search looks only at its own workspace's
// entries. The sampled trigram counts of events go: both indexes rank a
// needle's trigrams by probing the index itself (rareTrigramTerms). Both are rebuilt: emails_search from the emails table,
// events_search from the events the indexer had reached (its watermark
// stays), with the text expressions of the indexer in events-query.repo.ts.
// PostgreSQL's pg_trgm indexes filter by workspace on the rows themselves.

const EVENT_TO_TEXT = sql`coalesce(lower(events.recipient), (SELECT search_to FROM emails WHERE emails.id = events.email_id), '')`;
const EVENT_FROM_TEXT = sql`lower(coalesce(events.from_address, ''))`;

async function indexedUpTo(db: Kysely<unknown>): Promise<number> {
  const { rows } = await sql<{ last_event_pos: number }>`SELECT last_event_pos FROM event_watermarks WHERE name = 'events_index'`.execute(db);
  return Number(rows[0]?.last_event_pos ?? 0);
}

export async function up(db: Kysely<unknown>): Promise<void> {
  if (isPostgres(db)) return;
  await sql`DROP TABLE emails_search`.execute(db);
  await sql`CREATE VIRTUAL TABLE emails_search USING fts5(search_to, search_from, search_subject, ws_tag, content='', contentless_delete=1, tokenize='trigram')`.execute(db);
  await sql`DROP TABLE events_search`.execute(db);
  await sql`CREATE VIRTUAL TABLE events_search USING fts5(to_text, from_text, ws_tag, content='', tokenize='trigram')`.execute(db);
  await sql`DROP TABLE event_trigram_stats`.execute(db);
  const mark = await indexedUpTo(db);
  const emailWorkspaces = await sql<{ ws: string }>`SELECT DISTINCT workspace_id AS ws FROM emails`.execute(db);
  for (const { ws } of emailWorkspaces.rows) {
    await sql`INSERT INTO emails_search (rowid, search_to, search_from, search_subject, ws_tag)
      SELECT pos, search_to, search_from, search_subject, ${workspaceSearchTag(ws)} FROM emails WHERE workspace_id = ${ws}`.execute(db);
  }
  const eventWorkspaces = await sql<{ ws: string }>`SELECT DISTINCT workspace_id AS ws FROM events WHERE pos <= ${mark}`.execute(db);
  for (const { ws } of eventWorkspaces.rows) {
    await sql`INSERT INTO events_search (rowid, to_text, from_text, ws_tag)
      SELECT pos, ${EVENT_TO_TEXT}, ${EVENT_FROM_TEXT}, ${workspaceSearchTag(ws)} FROM events WHERE workspace_id = ${ws} AND pos <= ${mark}`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (isPostgres(db)) return;
  await sql`DROP TABLE emails_search`.execute(db);
  await sql`CREATE VIRTUAL TABLE emails_search USING fts5(search_to, search_from, search_subject, content='', contentless_delete=1, tokenize='trigram')`.execute(db);
  await sql`INSERT INTO emails_search (rowid, search_to, search_from, search_subject) SELECT pos, search_to, search_from, search_subject FROM emails`.execute(db);
  await sql`DROP TABLE events_search`.execute(db);
  await sql`CREATE VIRTUAL TABLE events_search USING fts5(to_text, from_text, content='', tokenize='trigram')`.execute(db);
  await sql`INSERT INTO events_search (rowid, to_text, from_text)
    SELECT pos, ${EVENT_TO_TEXT}, ${EVENT_FROM_TEXT} FROM events WHERE pos <= ${await indexedUpTo(db)}`.execute(db);
  // Empty: the indexer of that version counts from here on.
  await sql`CREATE TABLE event_trigram_stats (column_name text NOT NULL, trigram text NOT NULL, docs bigint NOT NULL,
    CONSTRAINT event_trigram_stats_pk PRIMARY KEY (column_name, trigram)) WITHOUT ROWID`.execute(db);
}
