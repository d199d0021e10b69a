// When a webhook delivery is attempted, as data. Entry n is the wait before
// attempt n + 1, counted from the failure of attempt n (the first attempt goes
// at once). Cumulative time since the event, without jitter, in the comments.
export const RETRY_SCHEDULE_MS: readonly number[] = [
  0, //               attempt 1 at once
  5_000, //           attempt 2: 5 s
  5 * 60_000, //      attempt 3: 5 min 5 s
  30 * 60_000, //     attempt 4: 35 min 5 s
  2 * 3_600_000, //   attempt 5: 2 h 35 min
  5 * 3_600_000, //   attempt 6: 7 h 35 min
  10 * 3_600_000, //  attempt 7: 17 h 35 min
  14 * 3_600_000, //  attempt 8: 1 d 7 h 35 min
  20 * 3_600_000, //  attempt 9: 2 d 3 h 35 min
  24 * 3_600_000, //  attempt 10: 3 d 3 h 35 min, the last
];

/** Waits are spread by up to this fraction either way, so endpoints that failed together do not retry together. */
export const RETRY_JITTER = 0.1;

/**
 * The wait before the next attempt after `attemptsMade` attempts failed, or
 * undefined when the schedule is used up. `random` is in [0, 1).
 */
export function retryDelayMs(attemptsMade: number, random: () => number = Math.random): number | undefined {
  const base = RETRY_SCHEDULE_MS[attemptsMade];
  if (base === undefined) return undefined;
  return Math.round(base * (1 + RETRY_JITTER * (2 * random() - 1)));
}
