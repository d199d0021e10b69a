import type { Generated } from 'kysely';

// The rows of the tables this area writes (times are epoch milliseconds, JSON
// columns TEXT holding JSON, `pos` the internal position behind order and
// cursors), added to the store's Database type.

declare module '../store/tables.js' {
  interface Database {
    suppressions: SuppressionsTable;
  }
}

export type SuppressionReason = 'hard_bounce' | 'complaint' | 'unsubscribe' | 'manual';

export interface SuppressionsTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  /** Normalised like contacts.email. */
  email: string;
  reason: SuppressionReason;
  created_at: number;
}
