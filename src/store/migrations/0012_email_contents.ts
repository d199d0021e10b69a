import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../schema-helpers.js';

// An email's content (html, text, custom headers) moves to a table of its
// own, keyed by the email's position. The email row is written again at
// every change of status, and a database rewrites a row whole: with the
// content in it, each of those writes copied the html as well, tens of
// kilobytes for a typical newsletter.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createTable('email_contents')
    // On SQLite an INTEGER PRIMARY KEY is the rowid itself: no second index.
    .addColumn('pos', isPostgres(db) ? 'bigint' : 'integer', (c) => c.primaryKey())
    .addColumn('html', 'text')
    .addColumn('text_body', 'text')
    .addColumn('headers', 'text', (c) => c.notNull())
    .execute();
  await sql`INSERT INTO email_contents (pos, html, text_body, headers) SELECT pos, html, text_body, headers FROM emails`.execute(db);
  for (const column of ['html', 'text_body', 'headers']) await db.schema.alterTable('emails').dropColumn(column).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('emails').addColumn('html', 'text').execute();
  await db.schema.alterTable('emails').addColumn('text_body', 'text').execute();
  await db.schema.alterTable('emails').addColumn('headers', 'text', (c) => c.notNull().defaultTo('{}')).execute();
  await sql`UPDATE emails SET (html, text_body, headers) =
    (SELECT c.html, c.text_body, c.headers FROM email_contents c WHERE c.pos = emails.pos)`.execute(db);
  await db.schema.dropTable('email_contents').execute();
}
