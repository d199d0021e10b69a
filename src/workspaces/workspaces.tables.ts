import type { Generated } from 'kysely';

// The rows of the tables this area writes (times are epoch milliseconds, JSON
// columns TEXT holding JSON, `pos` the internal position behind order and
// cursors), added to the store's Database type.

declare module '../store/tables.js' {
  interface Database {
    workspaces: WorkspacesTable;
    send_usage: SendUsageTable;
    rate_buckets: RateBucketsTable;
  }
}

export interface WorkspacesTable {
  pos: Generated<number>;
  id: string;
  name: string;
  plan: string;
  created_at: number;
}

export interface SendUsageTable {
  workspace_id: string;
  /** 'd:2026-11-21' or 'm:2026-11' (UTC). */
  period: string;
  count: number;
}

/** A workspace's rate-limit bucket of one kind of traffic, shared by every node (workspaces/shared-rate-limit.ts). */
export interface RateBucketsTable {
  /** `<workspace id>:live` or `<workspace id>:test`. */
  bucket: string;
  tokens: number;
  updated_at: number;
  /** How many takes the last statement granted, of the takes of one cost it carried (1 or 0 for one take). */
  allowed: number;
}
