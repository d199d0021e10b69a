import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../schema-helpers.js';
import { workspaceSearchTag } from '../trigrams.js';

// The email search index gains each row's workspace tag (see trigrams.ts), so
// a search looks only at its own workspace's entries. The index is rebuilt
// from the emails table. PostgreSQL's pg_trgm indexes sit on the emails rows
// and filter by workspace there already.

export async function up(db: Kysely<unknown>): Promise<void> {
  if (isPostgres(db)) return;
  await sql`DROP TABLE emails_search`.execute(db);
  await sql`CREATE VIRTUAL TABLE emails_search USING fts5(search_to, search_from, search_subject, ws_tag, content='', contentless_delete=1, tokenize='trigram')`.execute(db);
  const workspaces = await sql<{ workspace_id: string }>`SELECT DISTINCT workspace_id FROM emails`.execute(db);
  for (const { workspace_id: ws } of workspaces.rows) {
    await sql`INSERT INTO emails_search (rowid, search_to, search_from, search_subject, ws_tag)
      SELECT pos, search_to, search_from, search_subject, ${workspaceSearchTag(ws)} FROM emails WHERE workspace_id = ${ws}`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (isPostgres(db)) return;
  await sql`DROP TABLE emails_search`.execute(db);
  await sql`CREATE VIRTUAL TABLE emails_search USING fts5(search_to, search_from, search_subject, content='', contentless_delete=1, tokenize='trigram')`.execute(db);
  await sql`INSERT INTO emails_search (rowid, search_to, search_from, search_subject) SELECT pos, search_to, search_from, search_subject FROM emails`.execute(db);
}
