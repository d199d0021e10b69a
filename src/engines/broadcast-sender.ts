import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import { workLoop } from '../core/work-loop.js';

// The broadcast sender: an engine loop that starts scheduled broadcasts when
// their time comes, resumes those paused by the quota after its reset, and
// makes sending broadcasts' emails a chunk at a time. It goes straight on
// while there is work, and otherwise sleeps until the next start or chunk is
// due, but at most `pollMs`, so a broadcast sent meanwhile (or on another
// node) is seen.

export const BROADCAST_POLL_MS = 250;

/** The broadcasts area, as the sender sees it. */
export interface BroadcastSending {
  /** Frees the leases stopped processes of this host left. */
  releaseGoneLeases(): Promise<unknown>;
  /** Starts the scheduled broadcasts whose time has come, and resumes those whose pause has run out. */
  startDue(): Promise<number>;
  /** Makes the next due chunk of a sending broadcast under `owner`'s lease; false when none was due. */
  sendNextChunk(owner: string): Promise<boolean>;
  /**
   * When the sender next has work, as far as the broadcasts say now: a
   * broadcast to start or resume (`startAt`), a chunk due (`chunkAt`).
   */
  nextWork(): Promise<{ startAt?: number; chunkAt?: number }>;
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
      // A read says whether to start anything or claim a chunk (a write
      // transaction each): an idle round is this one read.
      let { startAt = Infinity, chunkAt = Infinity } = await deps.broadcasts.nextWork();
      const now = deps.clock.now();
      if (startAt <= now) {
        // A broadcast started has its first chunk due: the next round claims it.
        if ((await deps.broadcasts.startDue()) > 0) return 0;
        // A person's cancel or pause came first, or another node's start: the next poll sees which.
        startAt = Infinity;
      }
      if (chunkAt <= now) {
        if (await deps.broadcasts.sendNextChunk(deps.owner)) return 0;
        // Another sender took it first.
        chunkAt = (await deps.broadcasts.nextWork()).chunkAt ?? Infinity;
      }
      const next = Math.min(startAt, chunkAt);
      return next === Infinity ? undefined : Math.max(10, Math.min(pollMs, next - deps.clock.now()));
    },
  }).run(signal);
}
