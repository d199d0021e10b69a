import { sql } from 'kysely';
import type { Clock } from '../core/clock.js';
import { bucketOf, rateDecision, type RateLimiter } from '../core/rate-limit.js';
import type { Store } from '../store/db.js';

// The rate limiter of several nodes on one database: each take is one atomic
// upsert of the workspace's bucket row, so a workspace's allowance holds
// across the nodes, as the spec has it, instead of multiplying by their
// number. The refill is computed in the statement from the time the row was
// last taken from; a node whose clock is behind never refills it backwards.

export function sharedRateLimiter(store: Store, clock: Clock): RateLimiter {
  return {
    async take(workspaceId, mode, plan, cost) {
      const b = bucketOf(workspaceId, mode, plan);
      const now = clock.now();
      // A first take finds a full bucket; a later one refills the row from the
      // time it was last taken from. Every SET reads the row as it was, so
      // `refilled` is the same in each.
      const fits = b.burst >= cost;
      const elapsed = sql`(CASE WHEN ${now} > rate_buckets.updated_at THEN ${now} - rate_buckets.updated_at ELSE 0 END)`;
      const grown = sql`(rate_buckets.tokens + ${elapsed} * CAST(${b.rate} AS double precision) / 1000.0)`;
      const refilled = sql`(CASE WHEN ${grown} > ${b.burst} THEN CAST(${b.burst} AS double precision) ELSE ${grown} END)`;
      // Not durable: a take lost in a crash does no harm, and the row is every request's of the workspace.
      const row = await store.write((tx) => tx.insertInto('rate_buckets')
        .values({ bucket: b.key, tokens: fits ? b.burst - cost : b.burst, updated_at: now, allowed: fits ? 1 : 0 })
        .onConflict((oc) => oc.column('bucket').doUpdateSet({
          tokens: sql`CASE WHEN ${refilled} >= ${cost} THEN ${refilled} - ${cost} ELSE ${refilled} END`,
          allowed: sql`CASE WHEN ${refilled} >= ${cost} THEN 1 ELSE 0 END`,
          updated_at: sql`CASE WHEN ${now} > rate_buckets.updated_at THEN ${now} ELSE rate_buckets.updated_at END`,
        }))
        .returning(['tokens', 'allowed']).executeTakeFirstOrThrow(), { durable: false });
      return rateDecision(b, Number(row.tokens), Number(row.allowed) === 1, cost);
    },
  };
}
