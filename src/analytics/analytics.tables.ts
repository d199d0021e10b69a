import type { Generated } from 'kysely';

// The rows of the tables this area writes (times are epoch milliseconds, JSON
// columns TEXT holding JSON, `pos` the internal position behind order and
// cursors), added to the store's Database type.

declare module '../store/tables.js' {
  interface Database {
    analytics_hourly: AnalyticsHourlyTable;
    analytics_tagsets: AnalyticsTagsetsTable;
    analytics_tagset_tags: AnalyticsTagsetTagsTable;
    analytics_first_engagement: AnalyticsFirstEngagementTable;
  }
}

export interface AnalyticsHourlyTable {
  workspace_id: string;
  /** Epoch ms of the UTC hour. */
  hour_start: number;
  /** The mode of the key that sent the emails counted: live and test mail are counted apart. */
  mode: 'live' | 'test';
  /** '*' for every domain (see migration 0007). */
  domain_id: string;
  /** analytics_tagsets.pos; -1 for every set of tags. */
  tagset: number;
  sent: number;
  delivered: number;
  bounced: number;
  opened: number;
  clicked: number;
  complained: number;
  failed: number;
  delayed: number;
  unique_opened: number;
  unique_clicked: number;
}

export interface AnalyticsTagsetsTable {
  pos: Generated<number>;
  workspace_id: string;
  tags_key: string;
}

export interface AnalyticsTagsetTagsTable {
  tagset: number;
  workspace_id: string;
  tag: string;
}

export interface AnalyticsFirstEngagementTable {
  workspace_id: string;
  email_id: string;
  recipient: string;
  kind: 'opened' | 'clicked';
}
