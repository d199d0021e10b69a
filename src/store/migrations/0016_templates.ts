import { sql, type Kysely } from 'kysely';
import { withPosition } from '../schema-helpers.js';

// Templates and their versions, and the template an email was made from.
// A version is immutable once written; the template row says which version
// is the latest and which one is published. An email keeps the id and
// version of its template, not a reference that cascades: its content was
// rendered when it was created, and stays when the template changes or goes.

export async function up(db: Kysely<unknown>): Promise<void> {
  await withPosition(db, db.schema.createTable('templates'))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    // Lower-cased name, for the partial-match filter.
    .addColumn('search_name', 'text', (c) => c.notNull())
    .addColumn('alias', 'text')
    .addColumn('latest_version', 'integer', (c) => c.notNull())
    .addColumn('published_version', 'integer')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('templates_ws_pos').on('templates').columns(['workspace_id', 'pos']).execute();
  // NULLs are distinct in both databases: templates without an alias never collide.
  await db.schema.createIndex('templates_ws_alias').on('templates').columns(['workspace_id', 'alias']).unique().execute();

  await db.schema.createTable('template_versions')
    .addColumn('template_id', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('html', 'text')
    .addColumn('text_body', 'text')
    .addColumn('from_address', 'text')
    .addColumn('reply_to_list', 'text')
    .addColumn('variables', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('published_at', 'bigint')
    .addPrimaryKeyConstraint('template_versions_pk', ['template_id', 'version'])
    .execute();

  await db.schema.alterTable('emails').addColumn('template_id', 'text').execute();
  await db.schema.alterTable('emails').addColumn('template_version', 'integer').execute();
  // Only emails made from a template are in it: a filter by template_id implies NOT NULL.
  await db.schema.createIndex('emails_ws_template_pos').on('emails').columns(['workspace_id', 'template_id', 'pos'])
    .where(sql.ref('template_id'), 'is not', null).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('emails_ws_template_pos').execute();
  await db.schema.alterTable('emails').dropColumn('template_version').execute();
  await db.schema.alterTable('emails').dropColumn('template_id').execute();
  await db.schema.dropTable('template_versions').execute();
  await db.schema.dropTable('templates').execute();
}
