import { sql, type Selectable } from 'kysely';
import { runShaped, type Db, type Tx } from '../store/db.js';
import type { TemplateVersionsTable, TemplatesTable } from './templates.tables.js';
import { fetchPage, type Page, type PageQuery } from '../store/paging.js';
import { lockedForShare, lockedForUpdate } from '../store/lease.js';
import { containsText } from '../store/trigrams.js';
import { toIso, toIsoOrNull } from '../core/clock.js';
import type { VariableDeclaration } from './variables.js';

// Templates and their versions. Rows are mapped to API shapes here, next to
// the queries. A template is named by its id (tpl_…) or by its alias; an
// alias never starts with tpl_, so the form of the name says which it is.

export interface TemplateVersionSummary {
  object: 'template_version';
  template_id: string;
  version: number;
  subject: string;
  from: string | null;
  reply_to: string[] | null;
  variables: VariableDeclaration[];
  created_at: string;
  published_at: string | null;
}

export interface TemplateVersion extends TemplateVersionSummary {
  html: string | null;
  text: string | null;
}

export interface TemplateSummary {
  id: string;
  object: 'template';
  name: string;
  alias: string | null;
  published_version: number | null;
  latest_version: number;
  /** Those of the published version, or of the latest while none is published. */
  variables: VariableDeclaration[];
  created_at: string;
  updated_at: string;
}

export interface Template extends TemplateSummary {
  latest: TemplateVersion;
  published: TemplateVersion | null;
}

export type TemplateRow = Selectable<TemplatesTable>;
export type VersionRow = Selectable<TemplateVersionsTable>;

/** What the rules need of a template. */
export interface TemplateHead {
  id: string;
  name: string;
  alias: string | null;
  latestVersion: number;
  publishedVersion: number | null;
}

const json = <T>(text: string): T => JSON.parse(text) as T;

const toHead = (r: Pick<TemplateRow, 'id' | 'name' | 'alias' | 'latest_version' | 'published_version'>): TemplateHead => ({
  id: r.id, name: r.name, alias: r.alias, latestVersion: r.latest_version, publishedVersion: r.published_version,
});

const toVersionSummary = (r: Omit<VersionRow, 'html' | 'text_body'>): TemplateVersionSummary => ({
  object: 'template_version', template_id: r.template_id, version: r.version, subject: r.subject, from: r.from_address,
  reply_to: r.reply_to_list === null ? null : json(r.reply_to_list), variables: json(r.variables),
  created_at: toIso(r.created_at), published_at: toIsoOrNull(r.published_at),
});

const toVersion = (r: VersionRow): TemplateVersion => ({ ...toVersionSummary(r), html: r.html, text: r.text_body });

const toSummary = (r: TemplateRow, variables: string): TemplateSummary => ({
  id: r.id, object: 'template', name: r.name, alias: r.alias, published_version: r.published_version,
  latest_version: r.latest_version, variables: json(variables), created_at: toIso(r.created_at), updated_at: toIso(r.updated_at),
});

/** Narrows a query to the template `ref` names (id or alias) in the workspace. */
const byRef = (ref: string) => (ref.startsWith('tpl_') ? 'id' : 'alias') as 'id' | 'alias';

async function templateHead(db: Db | Tx, ws: string, ref: string, lock: 'update' | 'share' | null): Promise<TemplateHead | undefined> {
  const column = byRef(ref);
  const { rows } = await runShaped(db, `template head by ${column}${lock ? `, locked for ${lock}` : ''}`, [ws, ref], (p) => {
    const read = db.selectFrom('templates').select(['id', 'name', 'alias', 'latest_version', 'published_version'])
      .where('workspace_id', '=', p[0] as string).where(column, '=', p[1] as string);
    return lock === 'update' ? lockedForUpdate(db, read) : lock === 'share' ? lockedForShare(db, read) : read;
  });
  return rows[0] && toHead(rows[0]);
}

export const findTemplateHead = (db: Db | Tx, ws: string, ref: string) => templateHead(db, ws, ref, null);

/** The same, read to change the template: its row stays locked until the transaction ends. */
export const findTemplateHeadForUpdate = (tx: Tx, ws: string, ref: string) => templateHead(tx, ws, ref, 'update');

/** The same, read to rely on: the template cannot be deleted or changed until the transaction ends. */
export const findTemplateHeadForShare = (tx: Tx, ws: string, ref: string) => templateHead(tx, ws, ref, 'share');

/** The id of the workspace's template with this alias, if any. */
export async function aliasOwner(db: Db | Tx, ws: string, alias: string): Promise<string | undefined> {
  const row = await db.selectFrom('templates').select('id').where('workspace_id', '=', ws).where('alias', '=', alias).executeTakeFirst();
  return row?.id;
}

export async function insertTemplate(tx: Tx, row: Omit<TemplateRow, 'pos'>): Promise<void> {
  await tx.insertInto('templates').values(row).execute();
}

export async function insertVersion(tx: Tx, row: VersionRow): Promise<void> {
  await tx.insertInto('template_versions').values(row).execute();
}

export async function updateTemplate(tx: Tx, id: string,
  changes: Partial<Pick<TemplateRow, 'name' | 'search_name' | 'alias' | 'latest_version' | 'published_version'>>, now: number): Promise<void> {
  await tx.updateTable('templates').set({ ...changes, updated_at: now }).where('id', '=', id).execute();
}

export async function markPublished(tx: Tx, templateId: string, version: number, now: number): Promise<void> {
  await tx.updateTable('template_versions').set({ published_at: now })
    .where('template_id', '=', templateId).where('version', '=', version).execute();
}

export async function findVersionRow(db: Db | Tx, templateId: string, version: number): Promise<VersionRow | undefined> {
  const { rows } = await runShaped(db, 'template version', [templateId, version], (p) => db.selectFrom('template_versions').selectAll()
    .where('template_id', '=', p[0] as string).where('version', '=', p[1] as number));
  return rows[0];
}

export async function findVersion(db: Db | Tx, templateId: string, version: number): Promise<TemplateVersion | undefined> {
  const row = await findVersionRow(db, templateId, version);
  return row && toVersion(row);
}

/** The template with its latest and published versions. */
export async function getTemplate(db: Db | Tx, ws: string, ref: string): Promise<Template | undefined> {
  const row = await db.selectFrom('templates').selectAll().where('workspace_id', '=', ws).where(byRef(ref), '=', ref).executeTakeFirst();
  if (!row) return undefined;
  const wanted = [...new Set([row.latest_version, row.published_version ?? row.latest_version])];
  const versions = await db.selectFrom('template_versions').selectAll()
    .where('template_id', '=', row.id).where('version', 'in', wanted).execute();
  const byNumber = new Map(versions.map((v) => [v.version, toVersion(v)]));
  const latest = byNumber.get(row.latest_version)!;
  const published = row.published_version === null ? null : byNumber.get(row.published_version)!;
  return { ...toSummary(row, JSON.stringify((published ?? latest).variables)), latest, published };
}

export async function listTemplates(db: Db, ws: string, filter: { name?: string }, page: PageQuery): Promise<Page<TemplateSummary>> {
  return fetchPage(page, (bound, order, take) => db.selectFrom('templates')
    .innerJoin('template_versions', (j) => j.onRef('template_versions.template_id', '=', 'templates.id')
      .on('template_versions.version', '=', sql<number>`coalesce(templates.published_version, templates.latest_version)`))
    .selectAll('templates').select('template_versions.variables')
    .where('templates.workspace_id', '=', ws)
    .$if(filter.name !== undefined, (q) => q.where(containsText(sql.ref('templates.search_name'), filter.name!.toLowerCase())))
    .$if(bound !== undefined, (q) => q.where('templates.pos', bound!.op, bound!.pos))
    .orderBy('templates.pos', order).limit(take).execute(), (r) => toSummary(r, r.variables));
}

/** Versions newest first; the version number is the position. */
export async function listVersions(db: Db, templateId: string, page: PageQuery): Promise<Page<TemplateVersionSummary>> {
  return fetchPage(page, (bound, order, take) => db.selectFrom('template_versions')
    .select(['template_id', 'version', 'workspace_id', 'subject', 'from_address', 'reply_to_list', 'variables', 'created_at', 'published_at'])
    .select('version as pos')
    .where('template_id', '=', templateId)
    .$if(bound !== undefined, (q) => q.where('version', bound!.op, bound!.pos))
    .orderBy('version', order).limit(take).execute(), (r) => toVersionSummary(r));
}

/** Deletes the template and its versions; emails made from it keep their content. */
export async function deleteTemplate(tx: Tx, id: string): Promise<void> {
  await tx.deleteFrom('template_versions').where('template_id', '=', id).execute();
  await tx.deleteFrom('templates').where('id', '=', id).execute();
}
