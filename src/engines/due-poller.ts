import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import { workLoop } from '../core/work-loop.js';

// The due-time poller for scheduled emails: an engine loop rather than a cron
// task, because "on time" means within a second and the cron registry ticks
// once a second at best. It sleeps until the earliest scheduled time, but at
// most `pollMs`, so emails scheduled meanwhile (or by another process) are seen.

export const DUE_POLL_MS = 250;

/** The emails area, as the poller sees it. */
export interface ScheduledEmails {
  /** Hands the scheduled emails whose time has come to delivery. */
  promoteDue(): Promise<unknown>;
  /** When the next scheduled email falls due, if any. */
  nextScheduledAt(): Promise<number | undefined>;
}

export async function runDuePoller(deps: { emails: ScheduledEmails; clock: Clock; logger: Logger; pollMs?: number }, signal: AbortSignal): Promise<void> {
  const pollMs = deps.pollMs ?? DUE_POLL_MS;
  await workLoop({
    idleMs: pollMs,
    onError: (err) => deps.logger.error({ err }, 'scheduled email poller failed'),
    async round() {
      // An idle round is this one read; promoteDue, a write unit, runs only when something is due.
      let next = await deps.emails.nextScheduledAt();
      if (next !== undefined && next <= deps.clock.now()) {
        await deps.emails.promoteDue();
        next = await deps.emails.nextScheduledAt();
      }
      return next === undefined ? undefined : Math.max(10, Math.min(pollMs, next - deps.clock.now()));
    },
  }).run(signal);
}
