import type { Generated } from 'kysely';

// The rows of the tables this area writes (times are epoch milliseconds, JSON
// columns TEXT holding JSON, `pos` the internal position behind order and
// cursors), added to the store's Database type.

declare module '../store/tables.js' {
  interface Database {
    tracked_links: TrackedLinksTable;
    tracking_counts: TrackingCountsTable;
  }
}

export interface TrackedLinksTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  email_id: string;
  url: string;
  created_at: number;
}

export interface TrackingCountsTable {
  email_id: string;
  opens: number;
  clicks: number;
}
