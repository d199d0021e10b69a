import type { Generated } from 'kysely';

// The rows of the tables this area writes (times are epoch milliseconds, JSON
// columns TEXT holding JSON, `pos` the internal position behind order and
// cursors), added to the store's Database type.

declare module '../store/tables.js' {
  interface Database {
    events: EventsTable;
    event_tags: EventTagsTable;
    event_hours: EventHoursTable;
  }
}

export interface EventsTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  email_id: string | null;
  domain_id: string | null;
  /** 'email.<kind>': email.sent, email.delivered, email.bounced, ... */
  type: string;
  /** The one recipient a per-recipient event is about; null for events about the whole email. */
  recipient: string | null;
  from_address: string | null;
  subject: string | null;
  /** JSON object: the kind-specific details shown as `data`. */
  data: string;
  created_at: number;
}

/** The tags of each event's email, by event position (a side index of the events list). */
export interface EventTagsTable {
  workspace_id: string;
  tag: string;
  pos: number;
}

/** The lowest and highest event position written in each UTC hour (a side index of the events list). */
export interface EventHoursTable {
  workspace_id: string;
  hour_start: number;
  min_pos: number;
  max_pos: number;
}
