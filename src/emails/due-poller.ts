import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import { workLoop } from '../core/work-loop.js';
import type { EmailsService } from './emails.service.js';

// The due-time poller for scheduled emails: an engine loop rather than a cron
// task, because "on time" means within a second and the cron registry ticks
// once a second at best. It sleeps until the earliest scheduled time, but at
// most `pollMs`, so emails scheduled meanwhile (or by another process) are seen.

export const DUE_POLL_MS = 250;

export async function runDuePoller(deps: { emails: EmailsService; clock: Clock; logger: Logger; pollMs?: number }, signal: AbortSignal): Promise<void> {
  const pollMs = deps.pollMs ?? DUE_POLL_MS;
  await workLoop({
    idleMs: pollMs,
    onError: (err) => deps.logger.error({ err }, 'scheduled email poller failed'),
    async round() {
      await deps.emails.promoteDue();
      const next = await deps.emails.nextScheduledAt();
      return next === undefined ? undefined : Math.max(10, Math.min(pollMs, next - deps.clock.now()));
    },
  }).run(signal);
}
