import type { Migration } from 'kysely';
import * as m0001 from './0001_platform.js';
import * as m0002 from './0002_scheduler.js';
import * as m0003 from './0003_emails.js';
import * as m0004 from './0004_audience.js';
import * as m0005 from './0005_domains.js';
import * as m0006 from './0006_webhooks.js';
import * as m0007 from './0007_analytics.js';
import * as m0008 from './0008_inbound.js';
import * as m0009 from './0009_tracking.js';
import * as m0010 from './0010_search_tags.js';
import * as m0011 from './0011_inbound_sources.js';
import * as m0012 from './0012_email_contents.js';
import * as m0013 from './0013_task_lease_owner.js';
import * as m0014 from './0014_queue_by_destination.js';
import * as m0015 from './0015_inbound_replies.js';
import * as m0016 from './0016_templates.js';
import * as m0017 from './0017_analytics_mode.js';
import * as m0019 from './0019_contact_properties.js';
import * as m0020 from './0020_broadcasts.js';
import * as m0021 from './0021_queue_holds.js';
import * as m0022 from './0022_follower_positions.js';
import * as m0023 from './0023_store_settings.js';
import * as m0024 from './0024_email_messages.js';
import * as m0025 from './0025_rate_buckets.js';
import * as m0026 from './0026_list_search_indexes.js';
import * as m0027 from './0027_broadcast_stats.js';
import * as m0028 from './0028_search_column_detail.js';
import * as m0029 from './0029_queue_destinations.js';
import * as m0030 from './0030_audience_index.js';
import * as m0031 from './0031_recipient_broadcast.js';
import * as m0032 from './0032_email_search_table.js';
import * as m0033 from './0033_emails_search_watermark.js';
import * as m0034 from './0034_events_created_index.js';
import * as m0035 from './0035_unsubscribe_race.js';
import * as m0036 from './0036_broadcast_stats_slots.js';
import * as m0037 from './0037_broadcast_skips.js';
import * as m0038 from './0038_keyed_return_paths.js';
import * as m0039 from './0039_tag_names_nfc.js';
import * as m0040 from './0040_idempotency_key_owner.js';
import * as m0041 from './0041_shown_recipients.js';

// Migrations are listed here rather than read from disk, so they run the same
// from src/ under tsx and from dist/. Names sort in the order they apply.
export const migrations: Record<string, Migration> = {
  '0001_platform': m0001,
  '0002_scheduler': m0002,
  '0003_emails': m0003,
  '0004_audience': m0004,
  '0005_domains': m0005,
  '0006_webhooks': m0006,
  '0007_analytics': m0007,
  '0008_inbound': m0008,
  '0009_tracking': m0009,
  '0010_search_tags': m0010,
  '0011_inbound_sources': m0011,
  '0012_email_contents': m0012,
  '0013_task_lease_owner': m0013,
  '0014_queue_by_destination': m0014,
  '0015_inbound_replies': m0015,
  '0016_templates': m0016,
  '0017_analytics_mode': m0017,
  '0019_contact_properties': m0019,
  '0020_broadcasts': m0020,
  '0021_queue_holds': m0021,
  '0022_follower_positions': m0022,
  '0023_store_settings': m0023,
  '0024_email_messages': m0024,
  '0025_rate_buckets': m0025,
  '0026_list_search_indexes': m0026,
  '0027_broadcast_stats': m0027,
  '0028_search_column_detail': m0028,
  '0029_queue_destinations': m0029,
  '0030_audience_index': m0030,
  '0031_recipient_broadcast': m0031,
  '0032_email_search_table': m0032,
  '0033_emails_search_watermark': m0033,
  '0034_events_created_index': m0034,
  '0035_unsubscribe_race': m0035,
  '0036_broadcast_stats_slots': m0036,
  '0037_broadcast_skips': m0037,
  '0038_keyed_return_paths': m0038,
  '0039_tag_names_nfc': m0039,
  '0040_idempotency_key_owner': m0040,
  '0041_shown_recipients': m0041,
};
