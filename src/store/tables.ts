import type { Generated } from 'kysely';

// Row types of every table. Times are epoch milliseconds; JSON columns are
// TEXT holding JSON; `pos` is the internal monotonic position used for order
// and cursors, never shown to clients.

export interface WorkspacesTable {
  pos: Generated<number>;
  id: string;
  name: string;
  plan: string;
  created_at: number;
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

export interface IdempotencyKeysTable {
  workspace_id: string;
  idem_key: string;
  operation_id: string;
  request_hash: string;
  status: number;
  response_body: string;
  created_at: number;
  expires_at: number;
}

export interface SendUsageTable {
  workspace_id: string;
  /** 'd:2026-11-21' or 'm:2026-11' (UTC). */
  period: string;
  count: number;
}

export interface ScheduledTasksTable {
  name: string;
  next_run_at: number;
  locked_until: number;
  last_run_at: number | null;
  last_error: string | null;
}

export interface Database {
  workspaces: WorkspacesTable;
  api_keys: ApiKeysTable;
  api_key_activity: ApiKeyActivityTable;
  idempotency_keys: IdempotencyKeysTable;
  send_usage: SendUsageTable;
  scheduled_tasks: ScheduledTasksTable;
}
