import type { Logger } from 'pino';
import { newLeaseOwner } from '../core/lease-owner.js';
import { workLoop } from '../core/work-loop.js';

// The background half of receiving: parses and checks the messages the
// listener stored, in batches. Messages this process accepts are handed to it
// leased, as they are stored (see attachProcessor); it claims from the store
// when none are waiting, and otherwise looks again every IDLE_POLL_MS, for
// retries that came due and for messages another process stored. A batch is
// finished before the loop looks at the signal, and a stop frees the leases
// of the messages still waiting; a crash leaves leases that expire
// (PROCESS_LEASE_MS) and the messages are taken up again.
// MIME parsing and the SPF/DKIM/DMARC checks run on the processor's own
// readers (the inbound area's parse threads), which end with the loop.
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

/** A claimed batch, being read on the readers and then stored. */
export interface ClaimedBatch {
  /** How many rows the claim took; 0 when nothing was pending. */
  claimed: number;
  /** The size of the messages being read. */
  bytes: number;
  /** Settles once every message has been read or has failed. */
  read: Promise<unknown>;
  store(): Promise<void>;
}

/** The inbound area, as the processor sees it; `Reader` is what reads messages, opaque here. */
export interface InboundProcessing<Reader> {
  /** Leases up to `limit` messages to `owner` and starts reading them on `reader`. */
  claimBatch(owner: string, limit: number, reader: Reader): Promise<ClaimedBatch>;
  /** Makes `owner` the processor of the messages this process accepts; `wake` is called after each accept. */
  attachProcessor(owner: string, wake: () => void): void;
  /** Ends that, and frees the leases of the messages still waiting. */
  detachProcessor(): Promise<void>;
  releaseGoneLeases(): Promise<unknown>;
}

export async function runInboundProcessor<Reader>(
  deps: { inbound: InboundProcessing<Reader>; readers: () => { read: Reader; close(): Promise<void> }; logger: Logger },
  signal: AbortSignal,
): Promise<void> {
  const owner = newLeaseOwner();
  // Messages a crashed process of this host held would otherwise wait out their lease.
  await deps.inbound.releaseGoneLeases();

  const pool = deps.readers();
  /** Bytes of the messages claimed and not yet stored. */
  let held = 0;
  // A claim made ahead of its round keeps its failure for that round to throw,
  // so the loop reports a store out of reach once, not at every poll.
  const claim = async (): Promise<ClaimedBatch | { failed: unknown }> => {
    try {
      const batch = await deps.inbound.claimBatch(owner, PROCESS_BATCH, pool.read);
      held += batch.bytes;
      return batch;
    } catch (err) {
      return { failed: err };
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
  const claims: Array<ReturnType<typeof claim>> = [];
  // Every accepted message wakes the loop.
  const loop = workLoop({
    idleMs: IDLE_POLL_MS,
    onError: (err) => deps.logger.error({ err }, 'inbound processing failed; trying again shortly'),
    async round() {
      if (claims.length === 0) claims.push(claim());
      const batch = await claims.shift()!;
      if ('failed' in batch) throw batch.failed;
      if (batch.claimed === 0) return claims.length > 0 ? 0 : undefined;
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
      if (!('failed' in batch) && batch.claimed > 0) await store(batch);
    }
  } finally {
    await deps.inbound.detachProcessor()
      .catch((err: unknown) => deps.logger.error({ err }, 'could not free the leases of the inbound messages waiting; they are taken up again when the leases run out'));
    await pool.close();
  }
}
