import type { Generated } from 'kysely';

// The rows of the tables this area writes (times are epoch milliseconds, JSON
// columns TEXT holding JSON, `pos` the internal position behind order and
// cursors), added to the store's Database type.

declare module '../store/tables.js' {
  interface Database {
    tags: TagsTable;
  }
}

export interface TagsTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  name: string;
  /** Lower-cased name: names are unique per workspace regardless of case. */
  name_key: string;
  created_at: number;
}
