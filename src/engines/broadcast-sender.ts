import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import { workLoop } from '../core/work-loop.js';

// The broadcast sender: an engine loop that starts scheduled broadcasts when
// their time comes, resumes those paused by the quota after its reset, and
// makes sending broadcasts' emails a chunk at a time. It goes straight on
// while there is work, and otherwise sleeps until the next chunk is due, but
// at most `pollMs`, so a broadcast sent meanwhile (or on another node) is seen.

export const BROADCAST_POLL_MS = 250;

/** The broadcasts area, as the sender sees it. */
export interface BroadcastSending {
  /** Frees the leases stopped processes of this host left. */
  releaseGoneLeases(): Promise<unknown>;
  /** Starts the scheduled broadcasts whose time has come, and resumes those whose pause has run out. */
  startDue(): Promise<unknown>;
  /** Makes the next due chunk of a sending broadcast under `owner`'s lease; false when none was due. */
  sendNextChunk(owner: string): Promise<boolean>;
  /** When the next chunk of a sending broadcast falls due, if any. */
  nextChunkDue(): Promise<number | undefined>;
}

export async function runBroadcastSender(deps: { broadcasts: BroadcastSending; clock: Clock; logger: Logger; owner: string; pollMs?: number },
  signal: AbortSignal): Promise<void> {
  const pollMs = deps.pollMs ?? BROADCAST_POLL_MS;
  // Broadcasts a crashed process of this host held would otherwise wait out their lease.
  await deps.broadcasts.releaseGoneLeases();
  await workLoop({
    idleMs: pollMs,
    onError: (err) => deps.logger.error({ err }, 'broadcast sender failed'),
    async round() {
      await deps.broadcasts.startDue();
      if (await deps.broadcasts.sendNextChunk(deps.owner)) return 0;
      const next = await deps.broadcasts.nextChunkDue();
      return next === undefined ? undefined : Math.max(10, Math.min(pollMs, next - deps.clock.now()));
    },
  }).run(signal);
}
