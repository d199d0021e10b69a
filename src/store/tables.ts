import type { Generated } from 'kysely';

// Row types of every table. Times are epoch milliseconds; JSON columns are
// TEXT holding JSON; `pos` is the internal monotonic position used for order
// and cursors, never shown to clients.

export interface WorkspacesTable {
  pos: Generated<number>;
  id: string;
  name: string;
  plan: string;
  created_at: number;
}

export interface ApiKeysTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  name: string;
  mode: 'live' | 'test';
  /** Public lookup part of the token: indexed, not secret on its own. */
  lookup: string;
  /** HMAC-SHA256 of the whole token under the API key pepper. */
  token_hash: Buffer;
  masked_token: string;
  scopes: string;
  created_by_key_id: string | null;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export interface ApiKeyActivityTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  api_key_id: string;
  operation_id: string;
  method: string;
  path: string;
  status: number;
  resource_id: string | null;
  request_id: string;
  ip: string | null;
  created_at: number;
}

export interface IdempotencyKeysTable {
  workspace_id: string;
  idem_key: string;
  operation_id: string;
  request_hash: string;
  status: number;
  response_body: string;
  created_at: number;
  expires_at: number;
}

export interface SendUsageTable {
  workspace_id: string;
  /** 'd:2026-11-21' or 'm:2026-11' (UTC). */
  period: string;
  count: number;
}

export interface ScheduledTasksTable {
  name: string;
  next_run_at: number;
  locked_until: number;
  /** Who holds the lease while the task runs (core/lease-owner.ts). */
  lease_owner: string | null;
  last_run_at: number | null;
  last_error: string | null;
}

export type ContactStatus = 'subscribed' | 'unsubscribed' | 'cleaned';
export type EngagementTier = 'no_data' | 'new' | 'engaged' | 'at_risk' | 'inactive' | 'cold';
export type SuppressionReason = 'hard_bounce' | 'complaint' | 'unsubscribe' | 'manual';

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

export interface TagsTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  name: string;
  /** Lower-cased name: names are unique per workspace regardless of case. */
  name_key: string;
  created_at: number;
}

export interface ContactTagsTable {
  contact_id: string;
  tag_id: string;
  workspace_id: string;
  created_at: number;
}

export interface SuppressionsTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  /** Normalised like contacts.email. */
  email: string;
  reason: SuppressionReason;
  created_at: number;
}

/** Per-address aggregates of email events, folded in incrementally. */
export interface AddressEngagementTable {
  workspace_id: string;
  email: string;
  first_sent_at: number | null;
  last_engaged_at: number | null;
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

export interface AttachmentsTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  filename: string;
  content_type: string;
  size: number;
  content: Buffer;
  created_at: number;
  expires_at: number;
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

export type DomainStatus = 'unverified' | 'verifying' | 'active';

export interface DomainsTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  /** Lower-case A-labels, no root dot: the form DKIM d= and DNS lookups use. */
  name: string;
  status: DomainStatus;
  /** Why the status last changed for the worse (a record gone, checks given up). */
  status_reason: string | null;
  region: string;
  return_path_subdomain: string;
  /** 0 or 1. */
  open_tracking: number;
  /** 0 or 1. */
  click_tracking: number;
  tracking_subdomain: string;
  /** 0 or 1. */
  inbound_enabled: number;
  /** JSON array of { selector, algorithm, public_txt, private_key }, private_key sealed (core/seal.ts). */
  dkim_keys: string;
  /** JSON array of the last check of each record: { record, name, value, status, detail? }. */
  record_checks: string;
  last_checked_at: number | null;
  /** When the re-check task next looks at the domain; null: never on its own. */
  next_check_at: number | null;
  /** Start of the current run of automatic checks of a verifying domain. */
  verifying_since: number | null;
  /** Automatic checks made since verifying_since; picks the step of the backoff. */
  check_attempts: number;
  created_at: number;
  updated_at: number;
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

export interface TemplatesTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  name: string;
  /** Lower-cased name, for the partial-match filter. */
  search_name: string;
  /** Unique in the workspace; usable wherever the id is. */
  alias: string | null;
  latest_version: number;
  published_version: number | null;
  created_at: number;
  updated_at: number;
}

/** One immutable version of a template: its Liquid sources and declared variables. */
export interface TemplateVersionsTable {
  template_id: string;
  /** 1, 2, … within the template. */
  version: number;
  workspace_id: string;
  subject: string;
  html: string | null;
  text_body: string | null;
  /** Default from and reply-to of sends by the version (a send's own fields win). */
  from_address: string | null;
  /** JSON array of addresses, or null. */
  reply_to_list: string | null;
  /** JSON array of { key, type, required, fallback }. */
  variables: string;
  created_at: number;
  /** When the version was last made the published one; null if never. */
  published_at: number | null;
}

/** How far a consumer of the events table has read, by position. */
/** Where each follower of the events table is (src/store/follower-positions.ts). */
export interface EventWatermarksTable {
  name: string;
  last_event_pos: number;
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

export interface Database {
  workspaces: WorkspacesTable;
  api_keys: ApiKeysTable;
  api_key_activity: ApiKeyActivityTable;
  idempotency_keys: IdempotencyKeysTable;
  send_usage: SendUsageTable;
  scheduled_tasks: ScheduledTasksTable;
  tracked_links: TrackedLinksTable;
  tracking_counts: TrackingCountsTable;
  contacts: ContactsTable;
  tags: TagsTable;
  contact_tags: ContactTagsTable;
  suppressions: SuppressionsTable;
  address_engagement: AddressEngagementTable;
  emails: EmailsTable;
  email_contents: EmailContentsTable;
  email_recipients: EmailRecipientsTable;
  email_tags: EmailTagsTable;
  email_attachments: EmailAttachmentsTable;
  events: EventsTable;
  attachments: AttachmentsTable;
  outbound_queue: OutboundQueueTable;
  sink_messages: SinkMessagesTable;
  domains: DomainsTable;
  inbound_messages: InboundMessagesTable;
  inbound_sources: InboundSourcesTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  event_watermarks: EventWatermarksTable;
  event_tags: EventTagsTable;
  event_hours: EventHoursTable;
  analytics_hourly: AnalyticsHourlyTable;
  analytics_tagsets: AnalyticsTagsetsTable;
  analytics_tagset_tags: AnalyticsTagsetTagsTable;
  analytics_first_engagement: AnalyticsFirstEngagementTable;
  templates: TemplatesTable;
  template_versions: TemplateVersionsTable;
  broadcasts: BroadcastsTable;
  queue_holds: QueueHoldsTable;
}
