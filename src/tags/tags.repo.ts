import type { Selectable } from 'kysely';
import type { Db, Tx } from '../store/db.js';
import type { TagsTable } from './tags.tables.js';
import { fetchPage, type Page, type PageQuery } from '../store/paging.js';
import { lockedForShare, lockedForUpdate } from '../store/lease.js';
import { toIso } from '../core/clock.js';

export interface Tag {
  id: string;
  object: 'tag';
  name: string;
  created_at: string;
}

export const toTag = (r: Selectable<TagsTable>): Tag => ({ id: r.id, object: 'tag', name: r.name, created_at: toIso(r.created_at) });

// Well below the bound-parameter limits of SQLite (32766) and PostgreSQL (65535).
const IN_CHUNK = 500;

/**
 * Inserts the tags whose name the workspace has no tag for; returns the names
 * (lower-cased) it inserted. Rows go in name order: two transactions adding
 * some of the same names wait for each other's in one order.
 */
export async function insertTags(tx: Tx, rows: Omit<Selectable<TagsTable>, 'pos'>[]): Promise<Set<string>> {
  const sorted = [...rows].sort((a, b) => (a.name_key < b.name_key ? -1 : a.name_key > b.name_key ? 1 : 0));
  const inserted = new Set<string>();
  for (let i = 0; i < sorted.length; i += IN_CHUNK) {
    const added = await tx.insertInto('tags').values(sorted.slice(i, i + IN_CHUNK))
      .onConflict((oc) => oc.columns(['workspace_id', 'name_key']).doNothing()).returning('name_key').execute();
    for (const r of added) inserted.add(r.name_key);
  }
  return inserted;
}

const tagById = (db: Db | Tx, ws: string, id: string) => db.selectFrom('tags').selectAll().where('workspace_id', '=', ws).where('id', '=', id);

export async function findTag(db: Db | Tx, ws: string, id: string): Promise<Tag | undefined> {
  const row = await tagById(db, ws, id).executeTakeFirst();
  return row && toTag(row);
}

/** The tag, locked until the transaction ends (on PostgreSQL): a broadcast that starts sending with it waits, or is waited for. */
export async function findTagForUpdate(tx: Tx, ws: string, id: string): Promise<Tag | undefined> {
  const row = await lockedForUpdate(tx, tagById(tx, ws, id)).executeTakeFirst();
  return row && toTag(row);
}

/** Which of these ids are tags of the workspace; inside a write (`locked`), they stay so until it ends. */
export async function existingTagIds(db: Db | Tx, ws: string, ids: string[], locked = false): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const query = db.selectFrom('tags').select('id').where('workspace_id', '=', ws).where('id', 'in', ids);
  const rows = await (locked ? lockedForShare(db, query) : query).execute();
  return new Set(rows.map((r) => r.id));
}

/** Tags by lower-cased name. */
export async function findTagsByKeys(db: Db | Tx, ws: string, keys: string[]): Promise<Map<string, Tag>> {
  const out = new Map<string, Tag>();
  const unique = [...new Set(keys)];
  for (let i = 0; i < unique.length; i += IN_CHUNK) {
    const rows = await db.selectFrom('tags').selectAll()
      .where('workspace_id', '=', ws).where('name_key', 'in', unique.slice(i, i + IN_CHUNK)).execute();
    for (const r of rows) out.set(r.name_key, toTag(r));
  }
  return out;
}

/** Deletes the tag; its contact assignments go with it (ON DELETE CASCADE). */
export async function deleteTag(tx: Tx, ws: string, id: string): Promise<boolean> {
  const res = await tx.deleteFrom('tags').where('workspace_id', '=', ws).where('id', '=', id).executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

export async function listTags(db: Db, ws: string, page: PageQuery): Promise<Page<Tag>> {
  return fetchPage(page, (bound, order, take) => db.selectFrom('tags').selectAll()
    .where('workspace_id', '=', ws)
    .$if(bound !== undefined, (q) => q.where('pos', bound!.op, bound!.pos))
    .orderBy('pos', order).limit(take).execute(), toTag);
}
