import type { Generated } from 'kysely';

// The rows of the tables this area writes (times are epoch milliseconds, JSON
// columns TEXT holding JSON, `pos` the internal position behind order and
// cursors), added to the store's Database type.

declare module '../store/tables.js' {
  interface Database {
    emails: EmailsTable;
    email_contents: EmailContentsTable;
    emails_search: EmailSearchTable;
    email_recipients: EmailRecipientsTable;
    email_tags: EmailTagsTable;
    email_attachments: EmailAttachmentsTable;
    email_messages: EmailMessagesTable;
    broadcast_stats: BroadcastStatsTable;
  }
}

export type EmailStatus = 'pending' | 'scheduled' | 'sent' | 'delivered' | 'failed' | 'cancelled';

/**
 * Where one recipient stands: queued (waiting for a first attempt), deferred
 * (a temporary failure, retried), then one final outcome.
 */
export type RecipientStatus = 'queued' | 'deferred' | 'delivered' | 'bounced' | 'suppressed' | 'failed' | 'cancelled';

export interface EmailsTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  domain_id: string | null;
  /** The mode of the key that sent it: test emails only ever reach the sink. */
  mode: 'live' | 'test';
  /** As given, display name included ("Ann <ann@x.test>"). */
  from_address: string;
  /** Lower-cased ASCII domain of the from address. */
  from_domain: string;
  /** JSON arrays of the address fields, as given. */
  to_list: string;
  cc_list: string;
  bcc_list: string;
  reply_to_list: string;
  subject: string;
  /** JSON array of strings. */
  tags: string;
  /** JSON array of {filename, content_type, size, content_id}; the bytes are in email_attachments. */
  attachments: string;
  status: EmailStatus;
  scheduled_at: number | null;
  /** When it was handed to delivery (pending -> sent). */
  sent_at: number | null;
  /** With angle brackets, on the sending domain. */
  message_id: string;
  resent_from: string | null;
  /** The template the content was rendered from, and its version; null for content given as is. */
  template_id: string | null;
  template_version: number | null;
  /** The broadcast the email is part of and the contact it was made for; unique together. */
  broadcast_id: string | null;
  contact_id: string | null;
  search_to: string;
  search_from: string;
  search_subject: string;
  created_at: number;
  updated_at: number;
}

/**
 * PostgreSQL: an email's search text, apart from its row, under the trigram
 * indexes of the list's text filters (migration 0032). The row is written
 * again at every change of status; this one, never. (On SQLite,
 * emails_search is an FTS5 table: see trigrams.ts.)
 */
export interface EmailSearchTable {
  /** The email's pos. */
  pos: number;
  search_to: string;
  search_from: string;
  search_subject: string;
}

/**
 * The content of an email, apart from its row: the row is written again at
 * every change of status, the content never.
 */
export interface EmailContentsTable {
  /** The email's pos. */
  pos: number;
  html: string | null;
  text_body: string | null;
  /** JSON object of custom header fields. */
  headers: string;
  /** JSON {to, cc}: the To and Cc fields as a submitting client wrote them (migration 0041); null when they are the recipients. */
  shown_recipients: string | null;
}

export interface EmailRecipientsTable {
  id: string;
  email_id: string;
  /** Order of the recipient in to, cc, bcc as given. */
  idx: number;
  workspace_id: string;
  /** Bare address as given (no display name). */
  address: string;
  kind: 'to' | 'cc' | 'bcc';
  /** Lower-cased ASCII domain: the queue row it belongs to. */
  domain: string;
  status: RecipientStatus;
  smtp_code: number | null;
  /** Reply text, suppression reason or error of the last attempt. */
  detail: string | null;
  updated_at: number;
  /** The email's broadcast, for the triggers that count its outcomes (see migration 0031). */
  broadcast_id: string | null;
}

export interface EmailTagsTable {
  email_id: string;
  /** The email's position, so a tag filter can walk newest first from this table. */
  email_pos: number;
  workspace_id: string;
  tag: string;
}

export interface EmailAttachmentsTable {
  email_id: string;
  idx: number;
  filename: string;
  content_type: string;
  content_id: string | null;
  content: Buffer;
}

/** An email's message as built at hand-off, while the email has attempts left (outbound-emails.ts). */
export interface EmailMessagesTable {
  email_id: string;
  /** RFC 5322, CRLF line ends, not yet signed. */
  raw: Buffer;
  built_at: number;
}

/**
 * A broadcast's emails counted: written by the database's triggers only
 * (migrations 0027, 0036 and 0037), in the transaction of the change counted,
 * each into one of the broadcast's slot rows. Only the sum of the slots
 * means anything.
 */
export interface BroadcastStatsTable {
  broadcast_id: string;
  slot: number;
  emails_created: number;
  sent: number;
  delivered: number;
  bounced: number;
  failed: number;
  suppressed: number;
  /** Emails with at least one event of the kind. */
  opened: number;
  clicked: number;
  complained: number;
  /** Emails whose contact unsubscribed at or after the email was made. */
  unsubscribed: number;
  /** Contacts of the broadcast that got no email (broadcast_skips, migration 0037). */
  skipped: number;
}
