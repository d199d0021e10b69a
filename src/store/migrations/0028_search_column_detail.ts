import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../schema-helpers.js';
import { workspaceSearchTag } from '../trigrams.js';

// The trigram search indexes of emails and events keep, per trigram, the
// rows and columns that hold it, no longer its positions in the text: every
// query names single trigrams in one column (`col : "abc"`, see trigrams.ts)
// and checks the needle itself with LIKE on the row, so positions were never
// read, and without them an insert writes less. FTS5 cannot change a table's
// detail, and these tables keep no content: both are rebuilt from the rows,
// as 0010 built them (events_search up to the indexer's watermark).

const EVENT_TO_TEXT = sql`coalesce(lower(events.recipient), (SELECT search_to FROM emails WHERE emails.id = events.email_id), '')`;
const EVENT_FROM_TEXT = sql`lower(coalesce(events.from_address, ''))`;

async function indexedUpTo(db: Kysely<unknown>): Promise<number> {
  const { rows } = await sql<{ last_event_pos: number }>`SELECT last_event_pos FROM event_watermarks WHERE name = 'events_index'`.execute(db);
  return Number(rows[0]?.last_event_pos ?? 0);
}

async function rebuild(db: Kysely<unknown>, detail: 'column' | 'full'): Promise<void> {
  await sql`DROP TABLE emails_search`.execute(db);
  await sql`CREATE VIRTUAL TABLE emails_search USING fts5(search_to, search_from, search_subject, ws_tag,
    content='', contentless_delete=1, tokenize='trigram', detail=${sql.raw(detail)})`.execute(db);
  await sql`DROP TABLE events_search`.execute(db);
  await sql`CREATE VIRTUAL TABLE events_search USING fts5(to_text, from_text, ws_tag, content='', tokenize='trigram', detail=${sql.raw(detail)})`.execute(db);
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

export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) await rebuild(db, 'column');
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) await rebuild(db, 'full');
}
