// When a deferred message is tried again. The schedule is data so that it can
// be read at a glance and tested; the cumulative time since the first attempt
// is in the comment of each step.

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

/** Delay after the n-th failed attempt (index n - 1); the last step repeats. */
export const RETRY_SCHEDULE_MS: readonly number[] = Object.freeze([
  5 * MINUTE_MS, //  attempt 2 at    5 min
  10 * MINUTE_MS, // attempt 3 at   15 min
  20 * MINUTE_MS, // attempt 4 at   35 min
  40 * MINUTE_MS, // attempt 5 at 1 h 15 min
  1 * HOUR_MS, //    attempt 6 at 2 h 15 min
  2 * HOUR_MS, //    attempt 7 at 4 h 15 min
  3 * HOUR_MS, //    attempt 8 at 7 h 15 min, then every 3 h (about 40 attempts in 5 days)
]);

/** Give up on a message this long after it was first queued (Postfix's maximal_queue_lifetime). */
export const DEFAULT_MAX_LIFETIME_MS = 5 * DAY_MS;

/** Spread of each delay, so messages deferred together do not all return together. */
export const RETRY_JITTER_RATIO = 0.1;

/** A server's "try again in N minutes" is honoured up to this bound, so a typo cannot park a message for weeks. */
export const MAX_SERVER_HINT_MS = DAY_MS;

/**
 * Delay before the next attempt, after `attempt` failed attempts (1 = the first
 * one failed). `rng` returns [0, 1) like Math.random; `serverHintMs` is what the
 * remote side asked for (see `retryHintMs`) and wins when it is longer.
 */
export function nextAttemptDelayMs(attempt: number, rng: () => number = Math.random, serverHintMs?: number): number {
  const step = Math.min(Math.max(Math.floor(attempt), 1), RETRY_SCHEDULE_MS.length) - 1;
  const base = RETRY_SCHEDULE_MS[step];
  const jittered = Math.round(base * (1 + (rng() * 2 - 1) * RETRY_JITTER_RATIO));
  return serverHintMs !== undefined && serverHintMs > jittered ? Math.min(serverHintMs, MAX_SERVER_HINT_MS) : jittered;
}

const UNIT_MS: Record<string, number> = { s: 1000, m: MINUTE_MS, h: HOUR_MS };

// "try again in 5 minutes", "retry in 300 seconds", "please try again after 2 hours",
// "try again in 60s": the forms large receivers put in 421/450/451 replies.
const HINT_RE = /\b(?:try|retry)(?:\s+again)?\s+(?:in|after)\s+(\d{1,6})\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?)\b/i;

/** The wait a reply asks for, in ms, or undefined when it names none. */
export function retryHintMs(reply: string): number | undefined {
  const m = HINT_RE.exec(reply);
  if (!m) return undefined;
  const ms = Number(m[1]) * UNIT_MS[m[2][0].toLowerCase()];
  return ms > 0 ? Math.min(ms, MAX_SERVER_HINT_MS) : undefined;
}

// What receivers say when a sender comes too fast: Gmail's "421 4.7.28 ... rate
// limited", Outlook's "451 4.7.500 Server busy", Yahoo's "421 4.7.0 [TSS04]
// Messages temporarily deferred due to unexpected volume", Postfix's
// "421 4.7.0 Error: too many connections", ZoneMTA's own "slow down".
const SLOW_DOWN_RE = /\b(?:rate[- ]?limit\w*|too many (?:connections|messages|concurrent|recipients|sessions)|slow down|throttl\w*|server busy|unexpected volume|try (?:again )?later)\b|\b4\.7\.28\b/i;

/** Whether a temporary reply asks the sender to slow down: any 421 (the server closes), or a 4xx that says so. */
export function isSlowDownReply(code: number | undefined, reply: string): boolean {
  if (code === 421) return true;
  return code !== undefined && code >= 400 && code < 500 && SLOW_DOWN_RE.test(reply);
}
