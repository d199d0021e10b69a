import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import type { EmailsService } from './emails.service.js';

// The due-time poller for scheduled emails: an engine loop rather than a cron
// task, because "on time" means within a second and the cron registry ticks
// once a second at best. It sleeps until the earliest scheduled time, but at
// most `pollMs`, so emails scheduled meanwhile (or by another process) are seen.

export const DUE_POLL_MS = 250;

export async function runDuePoller(deps: { emails: EmailsService; clock: Clock; logger: Logger; pollMs?: number }, signal: AbortSignal): Promise<void> {
  const pollMs = deps.pollMs ?? DUE_POLL_MS;
  while (!signal.aborted) {
    let wait = pollMs;
    try {
      await deps.emails.promoteDue();
      const next = await deps.emails.nextScheduledAt();
      if (next !== undefined) wait = Math.max(10, Math.min(pollMs, next - deps.clock.now()));
    } catch (err) {
      deps.logger.error({ err }, 'scheduled email poller failed');
    }
    await sleep(wait, undefined, { signal }).catch(() => undefined);
  }
}
