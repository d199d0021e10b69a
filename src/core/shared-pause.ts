import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A pause of `ms` that every caller within it shares: one timer and one abort
 * listener on `signal` however many wait. Each caller sleeping on its own
 * would hold a listener apiece on a signal that lives as long as the process,
 * past Node's warning at the eleventh. A pause that has ended is not shared:
 * the next caller starts a new one. Rejects with the abort's reason when
 * `signal` aborts.
 */
export function sharedPause(ms: number, signal: AbortSignal): () => Promise<void> {
  let current: Promise<void> | undefined;
  return () => {
    current ??= sleep(ms, undefined, { signal }).finally(() => {
      current = undefined;
    });
    return current;
  };
}
