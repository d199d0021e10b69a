import { describe, expect, it } from 'vitest';
import {
  DEFAULT_MAX_LIFETIME_MS,
  MAX_SERVER_HINT_MS,
  nextAttemptDelayMs,
  RETRY_SCHEDULE_MS,
  isSlowDownReply,
  retryHintMs,
} from '../../../src/delivery/retry-schedule.js';

const MIN = 60_000;
const mid = () => 0.5; // no jitter

describe('retry schedule', () => {
  it('is 5, 10, 20, 40 min, 1 h, 2 h, 3 h, then every 3 h', () => {
    expect(RETRY_SCHEDULE_MS).toEqual([5, 10, 20, 40, 60, 120, 180].map((m) => m * MIN));
    expect([1, 2, 3, 7, 8, 30].map((n) => nextAttemptDelayMs(n, mid))).toEqual([5, 10, 20, 180, 180, 180].map((m) => m * MIN));
  });

  it('keeps a message for five days', () => {
    expect(DEFAULT_MAX_LIFETIME_MS).toBe(5 * 24 * 60 * MIN);
  });

  it('treats attempts below one as the first', () => {
    expect(nextAttemptDelayMs(0, mid)).toBe(5 * MIN);
  });

  it('jitters by at most ten percent either way', () => {
    expect(nextAttemptDelayMs(1, () => 0)).toBe(4.5 * MIN);
    expect(nextAttemptDelayMs(1, () => 0.999_999)).toBeCloseTo(5.5 * MIN, -1);
  });

  it('honours a longer server hint, ignores a shorter one, caps an absurd one', () => {
    expect(nextAttemptDelayMs(1, mid, 30 * MIN)).toBe(30 * MIN);
    expect(nextAttemptDelayMs(4, mid, 1 * MIN)).toBe(40 * MIN);
    expect(nextAttemptDelayMs(1, mid, 90 * 24 * 60 * MIN)).toBe(MAX_SERVER_HINT_MS);
  });
});

describe('server retry hints', () => {
  it.each([
    ['451 4.7.1 Greylisted, please try again in 300 seconds', 300_000],
    ['421 4.7.0 Try again in 5 minutes', 5 * MIN],
    ['450 4.2.1 please retry after 2 hours', 120 * MIN],
    ['451 Temporary failure, retry in 60s', 60_000],
    ['451 4.7.1 Please try again later', undefined],
    ['550 5.1.1 no such user', undefined],
  ])('%j -> %s', (reply, ms) => {
    expect(retryHintMs(reply)).toBe(ms);
  });
});

describe('replies that ask to slow down', () => {
  it.each([
    [421, '421 4.7.0 Error: too many connections from 192.0.2.1', true],
    [421, '421 4.3.2 Service shutting down', true],
    [421, '421-4.7.28 Our system has detected an unusual rate of unsolicited mail', true],
    [451, '451 4.7.500 Server busy. Please try again later', true],
    [450, '450 4.7.1 Rate limited, try again in 5 minutes', true],
    [421, '421 4.7.0 [TSS04] Messages temporarily deferred due to unexpected volume', true],
    [452, '452 4.5.3 Too many recipients', true],
    [451, '451 4.7.1 Greylisted, please come back later', false],
    [450, '450 4.2.1 Mailbox busy', false],
    [550, '550 5.7.1 Rate limit exceeded permanently', false],
    [undefined, 'connect ECONNREFUSED', false],
  ])('%s %j -> %s', (code, reply, slowDown) => {
    expect(isSlowDownReply(code, reply)).toBe(slowDown);
  });
});
