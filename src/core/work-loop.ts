// The loop every engine runs: a round of work, then a sleep that ends early
// when there is news (a message accepted, a slot freed, a retry asked for),
// or on stop. A wake that comes while a round runs is kept by default, so
// the next sleep is skipped: news is never missed between a claim that found
// nothing and the sleep after it. A round that throws is reported, and the
// loop rests before the next; the loop itself never throws. A round that
// fails as the one before it did (a store out of reach fails every round of
// every loop) is reported again only after REPEAT_REPORT_MS.

export interface WorkLoop {
  /** Runs rounds until `signal` aborts; resolves once the round under way has finished. */
  run(signal: AbortSignal): Promise<void>;
  /** Cuts the current sleep short, or the next one if a round is running. */
  wake(): void;
}

export interface WorkLoopOptions {
  /**
   * One round of work. Resolves to how long to sleep before the next round:
   * 0 goes on at once (after letting other work run), undefined sleeps `idleMs`.
   */
  round(): Promise<number | undefined>;
  /** The longest sleep: news from elsewhere (another process) is seen at least this often. */
  idleMs: number;
  onError(err: unknown): void;
  /**
   * 'dropped' lets a wake cut only a sleep under way: for a loop whose every
   * round fills all its free slots and whose wakes come from slots freeing,
   * where going again at once would add a claim commit per finished task.
   */
  wakesDuringRound?: 'kept' | 'dropped';
}

/** How often a failure that keeps repeating is reported again. */
export const REPEAT_REPORT_MS = 60_000;

/** What tells one failure from another: its code and message. */
const failureKey = (err: unknown): string =>
  err instanceof Error ? `${String((err as { code?: unknown }).code ?? '')}\n${err.message}` : String(err);

export function workLoop(o: WorkLoopOptions): WorkLoop {
  let woken = false;
  /** The failure last reported, while rounds keep failing. */
  let reported: { key: string; at: number } | undefined;
  let endSleep: (() => void) | undefined;

  function sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (woken || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        endSleep = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      endSleep = done;
    });
  }

  return {
    async run(signal) {
      while (!signal.aborted) {
        woken = false;
        let wait: number | undefined;
        try {
          wait = await o.round();
          reported = undefined;
        } catch (err) {
          const key = failureKey(err);
          const now = Date.now();
          if (reported?.key !== key || now - reported.at >= REPEAT_REPORT_MS) {
            reported = { key, at: now };
            o.onError(err);
          }
        }
        if (wait === 0) await new Promise((resolve) => setImmediate(resolve));
        else await sleep(wait ?? o.idleMs, signal);
      }
    },
    wake() {
      if (endSleep) endSleep();
      else if (o.wakesDuringRound !== 'dropped') woken = true;
    },
  };
}
