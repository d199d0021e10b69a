import type { Generated } from 'kysely';

// The rows of the tables this area writes (times are epoch milliseconds, JSON
// columns TEXT holding JSON, `pos` the internal position behind order and
// cursors), added to the store's Database type.

declare module '../store/tables.js' {
  interface Database {
    inbound_messages: InboundMessagesTable;
    inbound_sources: InboundSourcesTable;
  }
}

export type InboundKind = 'message' | 'report';

/** pending: stored, waiting for parsing and checks; ready: done; failed: processing gave up. */
export type InboundStatus = 'pending' | 'ready' | 'failed';

/**
 * One message received on the MX port for one receiving domain (a message
 * for several of our domains is stored once per domain). `report` rows came
 * to a return path: they become bounce and complaint events and are not
 * listed in the API.
 */
export interface InboundMessagesTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  domain_id: string;
  kind: InboundKind;
  status: InboundStatus;
  /** The envelope: MAIL FROM ('' for the null sender) and the JSON array of RCPT TO addresses for this domain. */
  mail_from: string;
  rcpt_to: string;
  remote_ip: string;
  helo: string;
  /** 0 or 1: whether the message came over TLS. */
  tls: number;
  /** Bytes of the message as stored (its source is in inbound_sources). */
  size: number;
  /** Processing lease, as in the outbound queue: 0 when free. */
  locked_until: number;
  lease_owner: string | null;
  attempts: number;
  last_error: string | null;
  received_at: number;
  processed_at: number | null;
  /** Parsed fields, set when status becomes ready. Address lists are JSON arrays of "Name <addr>" strings. */
  from_address: string | null;
  to_list: string | null;
  cc_list: string | null;
  reply_to_list: string | null;
  subject: string | null;
  text_body: string | null;
  html: string | null;
  message_id: string | null;
  /** The email this message answers (In-Reply-To or References naming its Message-ID), if any. */
  in_reply_to_email_id: string | null;
  /** JSON array of { name, value } in message order. */
  headers: string | null;
  /** JSON array of { filename, content_type, size, content_id, disposition }. */
  attachments: string | null;
  /** JSON object: SPF, DKIM and DMARC results. */
  auth: string | null;
  /** Lower-cased text the to/from filters search: envelope and header addresses. */
  search_to: string;
  search_from: string;
  /** What processing a report led to, for the log and support. */
  detail: string | null;
}

/** The source of a received message, apart from the row the processor rewrites. */
export interface InboundSourcesTable {
  /** The inbound_messages id. */
  id: string;
  /** The message as stored: trace fields prepended, line endings normalised. */
  raw: Buffer;
}
