import type { Clock } from '../core/clock.js';
import { forgetFirstEngagementOf } from '../analytics/index.js';
import { forgetSinkMessagesOf } from '../delivery/sink.js';
import { deleteEmails, expiredEmails } from '../emails/index.js';
import { deleteIndexedEvents, eventsOfEmails, expiredEventsOfNoEmail, lastPositionOfHoursBefore } from '../events/index.js';
import { slowestEventFollower } from '../store/event-log.js';
import { writeInBatches, type Store } from '../store/db.js';
import { forgetTrackingOf } from '../tracking/index.js';

// Sent mail is kept for MAILROOM_EMAIL_RETENTION_DAYS, then deleted whole:
// the email, its content, recipients and tags, its events, its tracked
// links, the message the sink kept of it. An email still at work (pending,
// scheduled, queued) waits until its work is over, and one with an event a
// follower of the events table has not seen yet (webhook fan-out, the
// rollups) until it has. What was counted stays counted: analytics and a
// broadcast's stats are rollups of their own. Events about no email of the
// table (a broadcast's, a contact's, a received message's) go at the same
// age.

export interface RetentionService {
  /** Deletes a bounded amount of what is past its time; returns how many emails and events went. */
  purgeExpired(): Promise<number>;
}

const DAY_MS = 86_400_000;
/**
 * Emails (or events) a write unit deletes, and units a run. A unit of 100
 * emails with their rows took 10 to 30 ms, its commit included: about what
 * the events indexer's batches hold the writer for. A run every 10 minutes
 * deletes up to 20,000 emails, nearly 3 million a day.
 */
const PURGE_BATCH = 100;
const PURGE_MAX_BATCHES = 200;

export function retentionService(deps: { store: Store; clock: Clock; days: number }): RetentionService {
  const { store, clock, days } = deps;
  return {
    async purgeExpired() {
      if (days === 0) return 0;
      const cutoff = clock.now() - days * DAY_MS;
      const batches = { size: PURGE_BATCH, maxBatches: PURGE_MAX_BATCHES };
      const emails = await writeInBatches(store, batches, async (tx, size) => {
        const expired = await expiredEmails(tx, cutoff, await slowestEventFollower(tx), size);
        if (expired.length === 0) return 0;
        const ids = expired.map((e) => e.id);
        // The events first: on SQLite their search rows are taken out with their email's text.
        await deleteIndexedEvents(tx, await eventsOfEmails(tx, ids));
        await forgetTrackingOf(tx, ids);
        await forgetFirstEngagementOf(tx, ids);
        await forgetSinkMessagesOf(tx, ids);
        await deleteEmails(tx, expired);
        return expired.length;
      });
      // Until the emails are through, the events of no email would be looked for among theirs.
      if (emails === PURGE_BATCH * PURGE_MAX_BATCHES) return emails;
      const events = await writeInBatches(store, batches, async (tx, size) => {
        const upTo = Math.min(await slowestEventFollower(tx), await lastPositionOfHoursBefore(tx, cutoff));
        const positions = await expiredEventsOfNoEmail(tx, cutoff, upTo, size);
        await deleteIndexedEvents(tx, positions);
        return positions.length;
      });
      return emails + events;
    },
  };
}
