import type { Generated } from 'kysely';

// The rows of the tables this area writes (times are epoch milliseconds, JSON
// columns TEXT holding JSON, `pos` the internal position behind order and
// cursors), added to the store's Database type.

declare module '../store/tables.js' {
  interface Database {
    queue_holds: QueueHoldsTable;
    outbound_queue: OutboundQueueTable;
    sink_messages: SinkMessagesTable;
  }
}

/** A destination a workspace holds: its queue rows to the domain are not tried. */
export interface QueueHoldsTable {
  workspace_id: string;
  domain: string;
  held_at: number;
}

export interface OutboundQueueTable {
  id: string;
  workspace_id: string;
  email_id: string;
  /** Destination domain: the recipients of the email at this domain go in one SMTP transaction. */
  domain: string;
  /** Attempts made so far. */
  attempt: number;
  next_attempt_at: number;
  /** Lease: a worker holds the row until then; 0 when free. */
  locked_until: number;
  lease_owner: string | null;
  /** Give up (soft bounce) when a retry would start after this. */
  expires_at: number;
  last_error: string | null;
  created_at: number;
}

export interface SinkMessagesTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  email_id: string;
  domain: string;
  mail_from: string;
  /** JSON array of the envelope recipients. */
  recipients: string;
  raw: Buffer;
  created_at: number;
}
