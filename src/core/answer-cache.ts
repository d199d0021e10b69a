// Remembered answers of slow look-ups (DNS, for outbound MX and for inbound
// authentication checks). Concurrent asks of one key share one look-up; an
// answer is kept as long as `keepFor` says, counted from when it came; a
// failure is kept only when `keepFailureFor` gives it a time ("no such name"
// is an answer; a timeout is not, and the next ask tries again). Past
// `maxEntries` the oldest entry goes.

export interface AnswerCacheOptions<T> {
  maxEntries: number;
  /** Epoch ms, for expiry. */
  now(): number;
  keepFor(answer: T): number;
  keepFailureFor(err: unknown): number | undefined;
}

export function answerCache<T>(o: AnswerCacheOptions<T>): (key: string, lookup: () => Promise<T>) => Promise<T> {
  const entries = new Map<string, { until: number; answer: Promise<T> }>();
  return (key, lookup) => {
    const hit = entries.get(key);
    if (hit && hit.until > o.now()) return hit.answer;
    entries.delete(key);
    if (entries.size >= o.maxEntries) entries.delete(entries.keys().next().value!);
    // Until it settles the entry only joins concurrent asks to the look-up in flight.
    const entry = { until: Number.POSITIVE_INFINITY, answer: lookup() };
    entries.set(key, entry);
    entry.answer.then(
      (answer) => { entry.until = o.now() + o.keepFor(answer); },
      (err: unknown) => {
        const keep = o.keepFailureFor(err);
        if (keep !== undefined) entry.until = o.now() + keep;
        else if (entries.get(key) === entry) entries.delete(key);
      },
    );
    return entry.answer;
  };
}
