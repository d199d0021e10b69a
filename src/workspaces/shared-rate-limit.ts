import { sql, type Kysely } from 'kysely';
import type { Clock } from '../core/clock.js';
import { bucketOf, rateDecision, type RateLimiter } from '../core/rate-limit.js';
import { runShaped, type Db, type Store, type Tx } from '../store/db.js';
import { isPostgres } from '../store/schema-helpers.js';

// The rate limiter of several nodes on one database: each take is one atomic
// upsert of the workspace's bucket row, so a workspace's allowance holds
// across the nodes, as the spec has it, instead of multiplying by their
// number. The refill is computed in the statement from the time the row was
// last taken from; a node whose clock is behind never refills it backwards.

export function sharedRateLimiter(store: Store, clock: Clock): RateLimiter {
  const onPostgres = isPostgres(store.db as unknown as Kysely<unknown>);
  return {
    async take(workspaceId, mode, plan, cost) {
      const b = bucketOf(workspaceId, mode, plan);
      const now = clock.now();
      const fits = b.burst >= cost;
      const params = [b.key, fits ? b.burst - cost : b.burst, now, fits ? 1 : 0, b.rate, b.burst, cost];
      const upsert = (db: Db | Tx) => runShaped(db, 'take rate bucket', params, (p) => {
        const [key, tokens, at, allowed, rate, burst, take] = p as [string, number, number, number, number, number, number];
        // A first take finds a full bucket; a later one refills the row from the
        // time it was last taken from. Every SET reads the row as it was, so
        // `refilled` is the same in each.
        const elapsed = sql`(CASE WHEN ${at} > rate_buckets.updated_at THEN ${at} - rate_buckets.updated_at ELSE 0 END)`;
        const grown = sql`(rate_buckets.tokens + ${elapsed} * CAST(${rate} AS double precision) / 1000.0)`;
        const refilled = sql`(CASE WHEN ${grown} > ${burst} THEN CAST(${burst} AS double precision) ELSE ${grown} END)`;
        const query = db.insertInto('rate_buckets')
          .values({ bucket: key, tokens, updated_at: at, allowed })
          .onConflict((oc) => oc.column('bucket').doUpdateSet({
            tokens: sql`CASE WHEN ${refilled} >= ${take} THEN ${refilled} - ${take} ELSE ${refilled} END`,
            allowed: sql`CASE WHEN ${refilled} >= ${take} THEN 1 ELSE 0 END`,
            updated_at: sql`CASE WHEN ${at} > rate_buckets.updated_at THEN ${at} ELSE rate_buckets.updated_at END`,
          }));
        // The statement is its own transaction, and its commit does not wait
        // for the WAL to reach the disk (as SET LOCAL synchronous_commit = off
        // would have it): a take lost in a crash does no harm.
        return onPostgres
          ? query.returning(['tokens', 'allowed', sql<string>`set_config('synchronous_commit', 'off', true)`.as('async_commit')])
          : query.returning(['tokens', 'allowed']);
      });
      // The row is every request's of the workspace, on every node. On
      // PostgreSQL the take is one statement outside a transaction: the row's
      // lock is let go as the statement ends, rather than a round trip of the
      // node later (the COMMIT of a transaction), which made all requests of
      // the workspace queue on it, the longer the busier the nodes.
      const { rows: [row] } = onPostgres ? await upsert(store.db) : await store.write((tx) => upsert(tx));
      return rateDecision(b, Number(row.tokens), Number(row.allowed) === 1, cost);
    },
  };
}
