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
  take(workspaceId: string, mode: 'live' | 'test', plan: RateAllowance, cost: number): RateDecision;
}

export function rateLimiter(clock: Clock): RateLimiter {
  const buckets = new Map<string, Bucket>();
  return {
    take(workspaceId, mode, plan, cost) {
      const rate = mode === 'live' ? plan.requestsPerSecond : plan.testRequestsPerSecond;
      const burst = mode === 'live' ? plan.burst : plan.testBurst;
      const now = clock.now();
      const key = `${workspaceId}:${mode}`;
      const bucket = buckets.get(key) ?? { tokens: burst, updatedAt: now };
      bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.updatedAt) / 1000) * rate);
      bucket.updatedAt = now;
      buckets.set(key, bucket);
      const allowed = bucket.tokens >= cost;
      if (allowed) bucket.tokens -= cost;
      const secondsFor = (n: number) => (bucket.tokens >= n ? 0 : Math.ceil((n - bucket.tokens) / rate));
      return {
        allowed,
        limit: burst,
        remaining: Math.max(0, Math.floor(bucket.tokens)),
        resetSeconds: secondsFor(1),
        retryAfterSeconds: Math.max(1, secondsFor(cost)),
        policy: `${burst};w=${Math.max(1, Math.ceil(burst / rate))}`,
      };
    },
  };
}

/** The error of a request over its workspace's allowance: 429 with Retry-After, 451 4.7.0 over SMTP. */
export function rateLimitExceeded(mode: 'live' | 'test', d: RateDecision): AppError {
  return new AppError('rate_limit_exceeded', `Too many requests for this workspace's ${mode} allowance; retry after ${d.retryAfterSeconds} s.`, {
    headers: { 'Retry-After': String(d.retryAfterSeconds) },
  });
}
