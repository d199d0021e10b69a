import type { Clock } from './clock.js';
import { AppError } from './errors.js';

// A token bucket per workspace and traffic kind (live/test): it refills
// continuously at the plan's rate and holds at most a burst. Keys share
// their workspace's bucket, so more keys never mean more allowance. The API
// and SMTP submission take from the same buckets.

/** What a workspace's plan allows, per traffic kind (a config Plan is one). */
export interface RateAllowance {
  /** Live requests per second; the bucket refills at this rate. */
  requestsPerSecond: number;
  /** Live requests allowed in one burst (bucket size). */
  burst: number;
  testRequestsPerSecond: number;
  testBurst: number;
}

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until one more request is allowed (0 when one already is). */
  resetSeconds: number;
  /** Seconds until a request of this cost is allowed (for Retry-After). */
  retryAfterSeconds: number;
  policy: string;
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

export interface RateLimiter {
  /** One node's buckets answer at once; buckets shared by several nodes through the store answer once it has. */
  take(workspaceId: string, mode: 'live' | 'test', plan: RateAllowance, cost: number): RateDecision | Promise<RateDecision>;
}

/** The bucket a workspace's traffic of one kind takes from: its key, refill rate (tokens a second) and size. */
export function bucketOf(workspaceId: string, mode: 'live' | 'test', plan: RateAllowance): { key: string; rate: number; burst: number } {
  return mode === 'live'
    ? { key: `${workspaceId}:live`, rate: plan.requestsPerSecond, burst: plan.burst }
    : { key: `${workspaceId}:test`, rate: plan.testRequestsPerSecond, burst: plan.testBurst };
}

/** The decision, from the tokens left after a take and whether it was allowed. */
export function rateDecision(b: { rate: number; burst: number }, tokens: number, allowed: boolean, cost: number): RateDecision {
  const secondsFor = (n: number) => (tokens >= n ? 0 : Math.ceil((n - tokens) / b.rate));
  return {
    allowed,
    limit: b.burst,
    remaining: Math.max(0, Math.floor(tokens)),
    resetSeconds: secondsFor(1),
    retryAfterSeconds: Math.max(1, secondsFor(cost)),
    policy: `${b.burst};w=${Math.max(1, Math.ceil(b.burst / b.rate))}`,
  };
}

/** The buckets of one node, in memory: the limiter of a single process on SQLite. */
export function rateLimiter(clock: Clock): RateLimiter {
  const buckets = new Map<string, Bucket>();
  return {
    take(workspaceId, mode, plan, cost) {
      const b = bucketOf(workspaceId, mode, plan);
      const now = clock.now();
      const bucket = buckets.get(b.key) ?? { tokens: b.burst, updatedAt: now };
      bucket.tokens = Math.min(b.burst, bucket.tokens + ((now - bucket.updatedAt) / 1000) * b.rate);
      bucket.updatedAt = now;
      buckets.set(b.key, bucket);
      const allowed = bucket.tokens >= cost;
      if (allowed) bucket.tokens -= cost;
      return rateDecision(b, bucket.tokens, allowed, cost);
    },
  };
}

/** The error of a request over its workspace's allowance: 429 with Retry-After, 451 4.7.0 over SMTP. */
export function rateLimitExceeded(mode: 'live' | 'test', d: RateDecision): AppError {
  return new AppError('rate_limit_exceeded', `Too many requests for this workspace's ${mode} allowance; retry after ${d.retryAfterSeconds} s.`, {
    headers: { 'Retry-After': String(d.retryAfterSeconds) },
  });
}
