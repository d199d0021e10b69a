import type { Generated } from 'kysely';

// The rows of the tables this area writes (times are epoch milliseconds, JSON
// columns TEXT holding JSON, `pos` the internal position behind order and
// cursors), added to the store's Database type.

declare module '../store/tables.js' {
  interface Database {
    broadcasts: BroadcastsTable;
    broadcast_skips: BroadcastSkipsTable;
  }
}

export type BroadcastStatus = 'draft' | 'scheduled' | 'sending' | 'paused' | 'sent' | 'cancelled';

export interface BroadcastsTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  name: string;
  from_address: string | null;
  /** JSON array of addresses. */
  reply_to_list: string;
  subject: string | null;
  preview_text: string | null;
  html: string | null;
  text_body: string | null;
  template_id: string | null;
  template_version: number | null;
  /** JSON: {tag_ids, exclude_tag_ids, engagement_tiers}. */
  audience: string;
  send_rate_per_minute: number | null;
  status: BroadcastStatus;
  status_reason: string | null;
  /** The mode of the key that sent it; null before. */
  mode: 'live' | 'test' | null;
  scheduled_at: number | null;
  resume_at: number | null;
  next_chunk_at: Generated<number>;
  audience_size: number | null;
  audience_max_pos: number | null;
  /** The position of the last contact whose email is made. */
  expanded_pos: Generated<number>;
  emails_created: Generated<number>;
  created_at: number;
  updated_at: number;
  started_at: number | null;
  sent_at: number | null;
  cancelled_at: number | null;
  locked_until: Generated<number>;
  lease_owner: string | null;
}

/** Why a contact of a broadcast got no email (migration 0037). */
export type SkipCode = 'render_failed' | 'invalid_address' | 'invalid_subject' | 'message_too_large';

/** A contact of a broadcast that got no email, written with the chunk it was in. */
export interface BroadcastSkipsTable {
  pos: Generated<number>;
  broadcast_id: string;
  workspace_id: string;
  contact_id: string;
  /** The contact's address when the chunk was made. */
  email: string;
  code: SkipCode;
  message: string;
  created_at: number;
}
