import type { Generated } from 'kysely';

// The rows of the tables this area writes (times are epoch milliseconds, JSON
// columns TEXT holding JSON, `pos` the internal position behind order and
// cursors), added to the store's Database type.

declare module '../store/tables.js' {
  interface Database {
    webhooks: WebhooksTable;
    webhook_deliveries: WebhookDeliveriesTable;
    webhook_attempts: WebhookAttemptsTable;
  }
}

export type WebhookDeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface WebhooksTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  url: string;
  description: string | null;
  /** JSON array of the event types the endpoint is subscribed to. */
  event_types: string;
  /** 0 or 1. */
  enabled: number;
  /** The whsec_ signing secret, sealed (core/seal.ts). */
  secret: string;
  /** After a rotation the old secret also signs until previous_secret_until, sealed. */
  previous_secret: string | null;
  previous_secret_until: number | null;
  /** Why the endpoint was disabled (410, failing for days, through the API). */
  disabled_reason: string | null;
  disabled_at: number | null;
  /** Start of the current run of failed attempts; null after a success. */
  failing_since: number | null;
  created_at: number;
  updated_at: number;
}

export interface WebhookDeliveriesTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  webhook_id: string;
  /** Sent as webhook-id: the event id (or msg_ for a test), the same on every retry and replay. */
  message_id: string;
  event_id: string | null;
  event_type: string;
  /** The exact JSON body POSTed. */
  payload: string;
  status: WebhookDeliveryStatus;
  /** 0 or 1: test deliveries are attempted once and never touch the endpoint's health. */
  is_test: number;
  attempt_count: number;
  /** When pending: the next attempt, or the end of the lease of the attempt in flight. */
  next_attempt_at: number;
  lease_owner: string | null;
  last_error: string | null;
  replay_of: string | null;
  created_at: number;
  updated_at: number;
}

export interface WebhookAttemptsTable {
  pos: Generated<number>;
  delivery_id: string;
  webhook_id: string;
  workspace_id: string;
  /** 1-based number of the attempt within its delivery. */
  attempt: number;
  attempted_at: number;
  duration_ms: number;
  response_status: number | null;
  /** 0 or 1. */
  succeeded: number;
  error: string | null;
  /** The first bytes of the response body. */
  response_body: string | null;
}
