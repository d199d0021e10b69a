import type { Generated } from 'kysely';

// The rows of the tables this area writes (times are epoch milliseconds, JSON
// columns TEXT holding JSON, `pos` the internal position behind order and
// cursors), added to the store's Database type.

declare module '../store/tables.js' {
  interface Database {
    contacts: ContactsTable;
    contact_tags: ContactTagsTable;
    address_engagement: AddressEngagementTable;
  }
}

export type ContactStatus = 'subscribed' | 'unsubscribed' | 'cleaned';

export type EngagementTier = 'no_data' | 'new' | 'engaged' | 'at_risk' | 'inactive' | 'cold';

export interface ContactsTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  /** Normalised: trimmed and lower-cased. */
  email: string;
  name: string | null;
  status: ContactStatus;
  engagement_tier: EngagementTier;
  unsubscribe_reason: string | null;
  unsubscribed_at: number | null;
  created_at: number;
  updated_at: number;
  /** Soft delete: set rows are hidden from the API but kept. */
  deleted_at: number | null;
  /** JSON object of names and string, number or boolean values. */
  properties: Generated<string>;
}

export interface ContactTagsTable {
  contact_id: string;
  tag_id: string;
  workspace_id: string;
  created_at: number;
}

/** Per-address aggregates of email events, folded in incrementally. */
export interface AddressEngagementTable {
  workspace_id: string;
  email: string;
  first_sent_at: number | null;
  last_engaged_at: number | null;
}
