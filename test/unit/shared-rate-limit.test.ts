import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { rateLimiter, type RateLimiter } from '../../src/core/rate-limit.js';
import { sharedRateLimiter } from '../../src/workspaces/shared-rate-limit.js';
import { useTempStore } from '../helpers/store.js';

// Several nodes on one database take from one bucket a workspace: its
// allowance holds across them, and they decide as one node's limiter would.

const temp = useTempStore();
const plan = { requestsPerSecond: 2, burst: 5, testRequestsPerSecond: 1, testBurst: 2 };

describe('the rate limiter shared through the store', () => {
  it('gives two nodes one allowance between them, refilled at the plan\'s rate', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const [a, b] = [sharedRateLimiter(temp.store, clock), sharedRateLimiter(temp.store, clock)];
    const allowed = async (node: RateLimiter) => (await node.take('ws_1', 'live', plan, 1)).allowed;
    // Five between them, whichever node each request reaches.
    const decisions: boolean[] = [];
    for (const node of [a, b, a, b, a, b]) decisions.push(await allowed(node));
    expect(decisions).toEqual([true, true, true, true, true, false]);
    const refused = await b.take('ws_1', 'live', plan, 1);
    expect(refused).toMatchObject({ allowed: false, remaining: 0, retryAfterSeconds: 1, limit: 5 });
    clock.advance(1_000);
    // Taken at once, from both nodes: still two a second.
    expect((await Promise.all([b, a, a, b, a].map(allowed))).filter(Boolean)).toHaveLength(2);
    // Another workspace, and the same workspace's test traffic, have buckets of their own.
    expect(await allowed(a)).toBe(false);
    expect((await a.take('ws_2', 'live', plan, 1)).remaining).toBe(4);
    expect((await b.take('ws_1', 'test', plan, 1)).remaining).toBe(1);
  });

  it('decides as one node\'s limiter does, costs and all', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const shared = sharedRateLimiter(temp.store, clock);
    const local = rateLimiter(clock);
    for (const [advance, cost] of [[0, 3], [0, 3], [400, 1], [1_600, 4], [0, 1], [10_000, 2]]) {
      clock.advance(advance);
      expect(await shared.take('ws_1', 'live', plan, cost)).toEqual(await local.take('ws_1', 'live', plan, cost));
    }
  });

  it('decides takes made at once, of one cost and of several, as one after another', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const shared = sharedRateLimiter(temp.store, clock);
    const local = rateLimiter(clock);
    const wide = { ...plan, burst: 20 };
    // The first statement takes one; the rest gather while it runs and go in the next, by cost.
    const costs = [1, 1, 1, 3, 1, 1, 3, 1, 1, 1, 1, 4, 1, 1, 1];
    const decisions = await Promise.all(costs.map((cost) => shared.take('ws_1', 'live', wide, cost)));
    const inTurn = [];
    for (const cost of [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 4]) inTurn.push(await local.take('ws_1', 'live', wide, cost));
    // Ones first (the first, then the gathered ones in their order), then the threes, then the four.
    const order = [0, 1, 2, 4, 5, 7, 8, 9, 10, 12, 13, 14, 3, 6, 11];
    expect(order.map((i) => decisions[i])).toEqual(inTurn);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(inTurn.filter((d) => d.allowed).length);
    expect(decisions[11]).toMatchObject({ allowed: false, remaining: 2 });

    // A full bucket's first statement grants as many of its gathered takes as fit.
    clock.advance(60_000);
    const burst = await Promise.all(Array.from({ length: 30 }, () => shared.take('ws_1', 'live', wide, 1)));
    expect(burst.map((d) => d.allowed)).toEqual([...Array(20).fill(true), ...Array(10).fill(false)]);
    expect(burst.slice(0, 20).map((d) => d.remaining)).toEqual(Array.from({ length: 20 }, (_, i) => 19 - i));
  });

  it('never refills backwards for a node whose clock is behind', async () => {
    const ahead = new ManualClock(1_700_000_010_000);
    const behind = new ManualClock(1_700_000_000_000);
    await sharedRateLimiter(temp.store, ahead).take('ws_1', 'live', plan, 5);
    expect(await sharedRateLimiter(temp.store, behind).take('ws_1', 'live', plan, 1)).toMatchObject({ allowed: false, remaining: 0 });
  });
});
