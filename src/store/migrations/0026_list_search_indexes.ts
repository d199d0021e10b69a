import { sql, type Kysely } from 'kysely';
import { isPostgres, trigramIndexes } from '../schema-helpers.js';

// The other partial-match filters of the API get PostgreSQL's trigram
// indexes too: the inbound list's to/from, the templates list's name and the
// contacts list's email, so a search there reads its matches instead of every
// row of the table. SQLite keeps matching these with LIKE on the rows within
// the workspace (only emails and events, the tables that grow with the mail
// sent, have FTS5 trigram tables there).

const SEARCHED = [
  ['inbound_messages', ['search_to', 'search_from']],
  ['templates', ['search_name']],
  ['contacts', ['email']],
] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  for (const [table, columns] of SEARCHED) await trigramIndexes(db, table, columns);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  for (const [table, columns] of SEARCHED) {
    for (const column of columns) await sql`DROP INDEX ${sql.id(`${table}_${column}_trgm`)}`.execute(db);
  }
}
