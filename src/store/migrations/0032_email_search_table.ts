import { sql, type Kysely } from 'kysely';
import { isPostgres, trigramIndexes } from '../schema-helpers.js';

// On PostgreSQL the trigram indexes of the emails list's text filters move
// off emails to a table of their own, emails_search, written once when the
// email is made. Delivery writes an email's row again at each change of
// status, and status is indexed, so each new version of the row wrote fresh
// entries for every trigram of its text into all three GIN indexes, though
// the text never changes. SQLite keeps its FTS5 table of the same name.

const COLUMNS = ['search_to', 'search_from', 'search_subject'] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`CREATE TABLE emails_search (pos bigint PRIMARY KEY, search_to text NOT NULL, search_from text NOT NULL, search_subject text NOT NULL)`.execute(db);
  await sql`INSERT INTO emails_search (pos, search_to, search_from, search_subject) SELECT pos, search_to, search_from, search_subject FROM emails`.execute(db);
  await trigramIndexes(db, 'emails_search', COLUMNS);
  for (const column of COLUMNS) await db.schema.dropIndex(`emails_${column}_trgm`).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await trigramIndexes(db, 'emails', COLUMNS);
  await sql`DROP TABLE emails_search`.execute(db);
}
