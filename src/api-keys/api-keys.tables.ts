import type { Generated } from 'kysely';

// The rows of the tables this area writes (times are epoch milliseconds, JSON
// columns TEXT holding JSON, `pos` the internal position behind order and
// cursors), added to the store's Database type.

declare module '../store/tables.js' {
  interface Database {
    api_keys: ApiKeysTable;
    api_key_activity: ApiKeyActivityTable;
  }
}

export interface ApiKeysTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  name: string;
  mode: 'live' | 'test';
  /** Public lookup part of the token: indexed, not secret on its own. */
  lookup: string;
  /** HMAC-SHA256 of the whole token under the API key pepper. */
  token_hash: Buffer;
  masked_token: string;
  scopes: string;
  created_by_key_id: string | null;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export interface ApiKeyActivityTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  api_key_id: string;
  operation_id: string;
  method: string;
  path: string;
  status: number;
  resource_id: string | null;
  request_id: string;
  ip: string | null;
  created_at: number;
}
