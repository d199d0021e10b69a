import type { Logger } from 'pino';
import { newId } from '../core/ids.js';
import type { InboundService } from './inbound.service.js';
import { ParsePool } from './parse-pool.js';

// The background half of receiving: parses and checks the messages the
// listener stored, in batches. It starts at once when a message is accepted
// and otherwise looks again every IDLE_POLL_MS, for retries that came due and
// for messages another process stored. A batch is finished before the loop
// looks at the signal, so a stop leaves no lease held; a crash leaves leases
// that expire (PROCESS_LEASE_MS) and the messages are taken up again.
// MIME parsing runs on the processor's own threads (parse-pool.ts), which
// end with the loop.

/** Messages claimed and worked on together (their DNS look-ups overlap). */
export const PROCESS_BATCH = 64;
const IDLE_POLL_MS = 1_000;

export async function runInboundProcessor(deps: { inbound: InboundService; logger: Logger }, signal: AbortSignal): Promise<void> {
  const owner = newId('job');
  let woken = false;
  let wake: (() => void) | undefined;
  deps.inbound.onAccepted(() => {
    woken = true;
    wake?.();
  });

  const idle = () => new Promise<void>((resolve) => {
    if (woken || signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      wake = undefined;
      resolve();
    };
    const timer = setTimeout(done, IDLE_POLL_MS);
    signal.addEventListener('abort', done, { once: true });
    wake = done;
  });

  const pool = new ParsePool();
  try {
    while (!signal.aborted) {
      woken = false;
      let claimed = 0;
      try {
        claimed = await deps.inbound.processPending(owner, PROCESS_BATCH, pool.parse);
      } catch (err) {
        deps.logger.error({ err }, 'inbound processing failed; trying again shortly');
      }
      if (claimed === 0) await idle();
    }
  } finally {
    await pool.close();
  }
}
