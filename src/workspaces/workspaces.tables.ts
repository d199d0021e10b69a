import type { Generated } from 'kysely';

// The rows of the tables this area writes (times are epoch milliseconds, JSON
// columns TEXT holding JSON, `pos` the internal position behind order and
// cursors), added to the store's Database type.

declare module '../store/tables.js' {
  interface Database {
    workspaces: WorkspacesTable;
    send_usage: SendUsageTable;
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
