import { sql, type Kysely } from 'kysely';
import type { Clock } from '../core/clock.js';
import { bucketOf, rateDecision, type RateAllowance, type RateDecision, type RateLimiter } from '../core/rate-limit.js';
import { runShaped, type Db, type Store, type Tx } from '../store/db.js';
import { isPostgres } from '../store/schema-helpers.js';

// The rate limiter of several nodes on one database: each take is one atomic
// upsert of the workspace's bucket row, so a workspace's allowance holds
// across the nodes, as the spec has it, instead of multiplying by their
// number. The refill is computed in the statement from the time the row was
// last taken from; a node whose clock is behind never refills it backwards.
//
// A node sends one statement a bucket at a time: the takes of the same cost
// that arrive meanwhile go together in the next one, which grants them in
// their order while the bucket holds their cost, as takes one after another
// would. Under load that is one statement for many requests, not a round
// trip each on a row every request of the workspace updates.

interface Waiting {
  resolve(decision: RateDecision): void;
  reject(err: unknown): void;
}

/** The takes of one bucket and cost that wait for the statement under way. */
type Gathering = Map<number, Waiting[]>;

export function sharedRateLimiter(store: Store, clock: Clock): RateLimiter {
  const onPostgres = isPostgres(store.db as unknown as Kysely<unknown>);
  /** Buckets with a statement under way, and the takes gathered for the next. */
  const busy = new Map<string, Gathering>();

  /** Takes `count` times `cost` from the bucket, in order while it holds them: the tokens left after, and how many were granted. */
  async function takeMany(b: ReturnType<typeof bucketOf>, cost: number, count: number): Promise<{ tokens: number; granted: number }> {
    const now = clock.now();
    const grantedFromFull = Math.min(count, Math.floor(b.burst / cost));
    const params = [b.key, b.burst - grantedFromFull * cost, now, grantedFromFull, b.rate, b.burst, cost, count];
    const upsert = (db: Db | Tx) => runShaped(db, 'take rate bucket', params, (p) => {
      const [key, tokens, at, granted, rate, burst, take, times] = p as [string, number, number, number, number, number, number, number];
      // A first take finds a full bucket; a later one refills the row from the
      // time it was last taken from. Every SET reads the row as it was, so
      // `refilled` is the same in each.
      const elapsed = sql`(CASE WHEN ${at} > rate_buckets.updated_at THEN ${at} - rate_buckets.updated_at ELSE 0 END)`;
      const grown = sql`(rate_buckets.tokens + ${elapsed} * CAST(${rate} AS double precision) / 1000.0)`;
      const refilled = sql`(CASE WHEN ${grown} > ${burst} THEN CAST(${burst} AS double precision) ELSE ${grown} END)`;
      const fitting = sql`(CASE WHEN FLOOR(${refilled} / ${take}) < ${times} THEN FLOOR(${refilled} / ${take}) ELSE ${times} END)`;
      const query = db.insertInto('rate_buckets')
        .values({ bucket: key, tokens, updated_at: at, allowed: granted })
        .onConflict((oc) => oc.column('bucket').doUpdateSet({
          tokens: sql`${refilled} - ${fitting} * ${take}`,
          allowed: sql`CAST(${fitting} AS integer)`,
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
    return { tokens: Number(row.tokens), granted: Number(row.allowed) };
  }

  /** Runs the takes of `waiting` as one statement; the i-th is granted if the bucket held i + 1 of them, and sees what it left. */
  async function decide(b: ReturnType<typeof bucketOf>, cost: number, waiting: Waiting[]): Promise<void> {
    try {
      const { tokens, granted } = await takeMany(b, cost, waiting.length);
      waiting.forEach((w, i) => w.resolve(i < granted
        ? rateDecision(b, tokens + (granted - 1 - i) * cost, true, cost)
        : rateDecision(b, tokens, false, cost)));
    } catch (err) {
      for (const w of waiting) w.reject(err);
    }
  }

  /** Sends the bucket's statements one after another while takes keep arriving, each carrying all gathered so far. */
  async function drain(b: ReturnType<typeof bucketOf>, gathering: Gathering): Promise<void> {
    while (gathering.size > 0) {
      const groups = [...gathering];
      gathering.clear();
      for (const [cost, waiting] of groups) await decide(b, cost, waiting);
    }
    busy.delete(b.key);
  }

  return {
    take(workspaceId: string, mode: 'live' | 'test', plan: RateAllowance, cost: number): Promise<RateDecision> {
      const b = bucketOf(workspaceId, mode, plan);
      return new Promise<RateDecision>((resolve, reject) => {
        const gathering = busy.get(b.key);
        if (gathering) {
          const same = gathering.get(cost);
          if (same) same.push({ resolve, reject });
          else gathering.set(cost, [{ resolve, reject }]);
          return;
        }
        const started: Gathering = new Map([[cost, [{ resolve, reject }]]]);
        busy.set(b.key, started);
        void drain(b, started);
      });
    },
  };
}
