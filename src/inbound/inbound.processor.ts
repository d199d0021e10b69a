import type { Logger } from 'pino';
import { newLeaseOwner } from '../core/lease-owner.js';
import { workLoop } from '../core/work-loop.js';
import type { ClaimedBatch, InboundService } from './inbound.service.js';
import { ParsePool } from './parse-pool.js';

// The background half of receiving: parses and checks the messages the
// listener stored, in batches. Messages this process accepts are handed to it
// leased, as they are stored (see attachProcessor); it claims from the store
// when none are waiting, and otherwise looks again every IDLE_POLL_MS, for
// retries that came due and for messages another process stored. A batch is
// finished before the loop looks at the signal, and a stop frees the leases
// of the messages still waiting; a crash leaves leases that expire
// (PROCESS_LEASE_MS) and the messages are taken up again.
// MIME parsing and the SPF/DKIM/DMARC checks run on the processor's own
// threads (parse-pool.ts), which end with the loop.
//
// Up to CLAIMS_AHEAD more batches are claimed and handed to the threads
// while one is read and stored, so the threads are not left idle while a
// commit or a look-up is under way.

/** Messages claimed and worked on together (their DNS look-ups overlap). */
export const PROCESS_BATCH = 64;
/** Batches claimed beyond the one being read… */
export const CLAIMS_AHEAD = 2;
/** …while the messages claimed and not yet stored are smaller than this, so large mail is not held many batches at a time. */
export const READ_AHEAD_BYTES = 32 * 1024 * 1024;
const IDLE_POLL_MS = 1_000;

export async function runInboundProcessor(deps: { inbound: InboundService; logger: Logger }, signal: AbortSignal): Promise<void> {
  const owner = newLeaseOwner();
  // Messages a crashed process of this host held would otherwise wait out their lease.
  await deps.inbound.releaseGoneLeases();

  const pool = new ParsePool();
  /** Bytes of the messages claimed and not yet stored. */
  let held = 0;
  const claim = async (): Promise<ClaimedBatch | undefined> => {
    try {
      const batch = await deps.inbound.claimBatch(owner, PROCESS_BATCH, pool.read);
      held += batch.bytes;
      return batch;
    } catch (err) {
      deps.logger.error({ err }, 'inbound processing failed; trying again shortly');
      return undefined;
    }
  };
  const store = async (batch: ClaimedBatch) => {
    await batch.read;
    await batch.store()
      .catch((err: unknown) => deps.logger.error({ err }, 'inbound batch could not be stored; its messages are taken up again when their leases run out'))
      .finally(() => { held -= batch.bytes; });
  };

  // Claims under way, oldest first: while one batch is read the next ones
  // are already on the threads, so they have work while a batch waits on
  // DNS or a commit.
  const claims: Array<Promise<ClaimedBatch | undefined>> = [];
  // Every accepted message wakes the loop.
  const loop = workLoop({
    idleMs: IDLE_POLL_MS,
    onError: (err) => deps.logger.error({ err }, 'inbound processing failed; trying again shortly'),
    async round() {
      if (claims.length === 0) claims.push(claim());
      const batch = await claims.shift()!;
      if (!batch || batch.claimed === 0) return claims.length > 0 ? 0 : undefined;
      while (!signal.aborted && claims.length < CLAIMS_AHEAD && held < READ_AHEAD_BYTES) claims.push(claim());
      await store(batch);
      return 0;
    },
  });
  deps.inbound.attachProcessor(owner, loop.wake);

  try {
    await loop.run(signal);
    // Batches claimed before the stop are finished: their messages are on the threads already.
    for (const pending of claims.splice(0)) {
      const batch = await pending;
      if (batch && batch.claimed > 0) await store(batch);
    }
  } finally {
    await deps.inbound.detachProcessor()
      .catch((err: unknown) => deps.logger.error({ err }, 'could not free the leases of the inbound messages waiting; they are taken up again when the leases run out'));
    await pool.close();
  }
}
