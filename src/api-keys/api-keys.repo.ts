import type { Selectable } from 'kysely';
import { insertRows, type Db, type Tx } from '../store/db.js';
import type { ApiKeysTable, ApiKeyActivityTable } from './api-keys.tables.js';
import { fetchPage, type Page, type PageQuery } from '../store/paging.js';
import { toIso, toIsoOrNull } from '../core/clock.js';
import type { KeyMode } from './token.js';

export interface ApiKey {
  id: string;
  object: 'api_key';
  name: string;
  mode: KeyMode;
  token: string;
  scopes: string[];
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface ApiKeyActivity {
  id: string;
  operation_id: string;
  method: string;
  path: string;
  status: number;
  resource_id: string | null;
  request_id: string;
  ip: string | null;
  created_at: string;
}

export interface KeyForAuth {
  id: string;
  workspace_id: string;
  plan: string;
  mode: KeyMode;
  token_hash: Buffer;
  scopes: string[];
  revoked_at: number | null;
  last_used_at: number | null;
}

/** The columns an API key is shown from: never the token's hash. */
const SHOWN_COLUMNS = ['pos', 'id', 'name', 'mode', 'masked_token', 'scopes', 'created_at', 'last_used_at', 'revoked_at'] as const;

export const toApiKey = (r: Pick<Selectable<ApiKeysTable>, (typeof SHOWN_COLUMNS)[number]>): ApiKey => ({
  id: r.id,
  object: 'api_key',
  name: r.name,
  mode: r.mode,
  token: r.masked_token,
  scopes: JSON.parse(r.scopes) as string[],
  created_at: toIso(r.created_at),
  last_used_at: toIsoOrNull(r.last_used_at),
  revoked_at: toIsoOrNull(r.revoked_at),
});

const toActivity = (r: Selectable<ApiKeyActivityTable>): ApiKeyActivity => ({
  id: r.id, operation_id: r.operation_id, method: r.method, path: r.path, status: r.status,
  resource_id: r.resource_id, request_id: r.request_id, ip: r.ip, created_at: toIso(r.created_at),
});

export async function insertApiKey(tx: Tx, row: Omit<Selectable<ApiKeysTable>, 'pos'>): Promise<ApiKey> {
  await tx.insertInto('api_keys').values(row).execute();
  return toApiKey({ ...row, pos: 0 });
}

export async function findKeyForAuth(db: Db, lookup: string): Promise<KeyForAuth | undefined> {
  const row = await db.selectFrom('api_keys')
    .innerJoin('workspaces', 'workspaces.id', 'api_keys.workspace_id')
    .select(['api_keys.id', 'api_keys.workspace_id', 'workspaces.plan', 'api_keys.mode', 'api_keys.token_hash',
      'api_keys.scopes', 'api_keys.revoked_at', 'api_keys.last_used_at'])
    .where('api_keys.lookup', '=', lookup)
    .executeTakeFirst();
  return row && { ...row, scopes: JSON.parse(row.scopes) as string[] };
}

export async function listApiKeys(db: Db, ws: string, filter: { mode?: KeyMode }, page: PageQuery): Promise<Page<ApiKey>> {
  return fetchPage(page, (bound, order, take) => db.selectFrom('api_keys').select(SHOWN_COLUMNS)
    .where('workspace_id', '=', ws)
    .$if(filter.mode !== undefined, (q) => q.where('mode', '=', filter.mode!))
    .$if(bound !== undefined, (q) => q.where('pos', bound!.op, bound!.pos))
    .orderBy('pos', order).limit(take).execute(), toApiKey);
}

export async function findApiKey(db: Db | Tx, ws: string, id: string): Promise<ApiKey | undefined> {
  const row = await db.selectFrom('api_keys').select(SHOWN_COLUMNS).where('workspace_id', '=', ws).where('id', '=', id).executeTakeFirst();
  return row && toApiKey(row);
}

/** Whether any workspace of the store has a key not revoked: the server's start says how to make one until then. */
export async function anyUsableKey(db: Db): Promise<boolean> {
  return (await db.selectFrom('api_keys').select('id').where('revoked_at', 'is', null).limit(1).executeTakeFirst()) !== undefined;
}

export async function revokeApiKey(tx: Tx, ws: string, id: string, now: number): Promise<boolean> {
  const res = await tx.updateTable('api_keys').set({ revoked_at: now })
    .where('workspace_id', '=', ws).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

export async function touchApiKey(tx: Tx, id: string, now: number): Promise<void> {
  await tx.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', id).execute();
}

export type ActivityRow = Omit<Selectable<ApiKeyActivityTable>, 'pos'>;

export async function insertActivity(tx: Tx, rows: ActivityRow[]): Promise<void> {
  await insertRows(tx, 'api_key_activity', rows);
}

/**
 * Deletes the rows among the oldest `limit` (by position, the order they were
 * written in) that were written before `cutoff`; returns how many. Looking
 * only at the oldest rows keeps each run's scan to `limit` rows on a table
 * with no index on time.
 */
export async function purgeActivityBefore(tx: Tx, cutoff: number, limit: number): Promise<number> {
  const oldest = tx.selectFrom('api_key_activity').select('pos').orderBy('pos').limit(limit);
  const res = await tx.deleteFrom('api_key_activity').where('pos', 'in', oldest).where('created_at', '<', cutoff).executeTakeFirst();
  return Number(res.numDeletedRows);
}

export async function listActivity(db: Db, ws: string, keyId: string, page: PageQuery): Promise<Page<ApiKeyActivity>> {
  return fetchPage(page, (bound, order, take) => db.selectFrom('api_key_activity').selectAll()
    .where('workspace_id', '=', ws).where('api_key_id', '=', keyId)
    .$if(bound !== undefined, (q) => q.where('pos', bound!.op, bound!.pos))
    .orderBy('pos', order).limit(take).execute(), toActivity);
}
