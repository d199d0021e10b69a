import { describe, expect, it } from 'vitest';
import { workLoop } from '../../src/core/work-loop.js';

// The one loop the engines run: rounds, sleeps that news cuts short, errors
// reported and outlived, and a stop that waits for the round under way.

const LONG = 60_000;

describe('the work loop', () => {
  it('sleeps after an idle round until woken, and keeps a wake that comes during a round', async () => {
    const stop = new AbortController();
    let rounds = 0;
    let release: (() => void) | undefined;
    const loop = workLoop({
      idleMs: LONG,
      onError: (err) => { throw err; },
      async round() {
        rounds++;
        // The second round is woken while it runs: the sleep after it must not happen.
        if (rounds === 2) loop.wake();
        if (rounds === 3) await new Promise<void>((resolve) => { release = resolve; });
        return undefined;
      },
    });
    const running = loop.run(stop.signal);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(rounds).toBe(1);
    loop.wake();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(rounds).toBe(3);
    // A stop during a round ends the loop once the round is done, without a sleep.
    stop.abort();
    release!();
    await running;
    expect(rounds).toBe(3);
  });

  it('lets a wake cut only a sleep under way when wakes during a round are dropped', async () => {
    const stop = new AbortController();
    let rounds = 0;
    const loop = workLoop({
      idleMs: 40,
      wakesDuringRound: 'dropped',
      onError: (err) => { throw err; },
      async round() {
        rounds++;
        loop.wake();
        return undefined;
      },
    });
    const running = loop.run(stop.signal);
    await new Promise((resolve) => setTimeout(resolve, 10));
    // The wake inside the first round was dropped: the loop sleeps.
    expect(rounds).toBe(1);
    loop.wake();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(rounds).toBe(2);
    stop.abort();
    await running;
  });

  it('goes straight on after a round that asks for it, and sleeps the time a round names', async () => {
    const stop = new AbortController();
    const at: number[] = [];
    const loop = workLoop({
      idleMs: LONG,
      onError: (err) => { throw err; },
      async round() {
        at.push(performance.now());
        if (at.length === 5) stop.abort();
        return at.length < 3 ? 0 : 30;
      },
    });
    // A sleep of idleMs anywhere would outlast the test's timeout.
    await loop.run(stop.signal);
    expect(at).toHaveLength(5);
    expect(at[4] - at[3]).toBeGreaterThanOrEqual(25);
  });

  it('reports a failed round and rests before the next', async () => {
    const stop = new AbortController();
    const errors: string[] = [];
    let rounds = 0;
    const loop = workLoop({
      idleMs: 15,
      onError: (err) => errors.push((err as Error).message),
      async round() {
        if (++rounds <= 2) throw new Error(`round ${rounds}`);
        stop.abort();
        return 0;
      },
    });
    await loop.run(stop.signal);
    expect(errors).toEqual(['round 1', 'round 2']);
    expect(rounds).toBe(3);
  });

  it('reports a failure that repeats round after round once, and again once a round has gone through', async () => {
    const stop = new AbortController();
    const errors: string[] = [];
    let rounds = 0;
    const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const loop = workLoop({
      idleMs: 1,
      onError: (err) => errors.push(`${(err as { code?: string }).code ?? ''} ${(err as Error).message}`),
      async round() {
        rounds++;
        if (rounds <= 5) throw refused();
        if (rounds === 6) throw new Error('something else');
        if (rounds === 7) return 0;
        if (rounds <= 9) throw refused();
        stop.abort();
        return 0;
      },
    });
    await loop.run(stop.signal);
    expect(errors).toEqual([
      'ECONNREFUSED connect ECONNREFUSED 127.0.0.1:5432', ' something else', 'ECONNREFUSED connect ECONNREFUSED 127.0.0.1:5432',
    ]);
  });

  it('ends a sleep at once on stop', async () => {
    const stop = new AbortController();
    const loop = workLoop({ idleMs: LONG, onError: () => undefined, round: async () => undefined });
    const running = loop.run(stop.signal);
    await new Promise((resolve) => setTimeout(resolve, 10));
    const start = performance.now();
    stop.abort();
    await running;
    expect(performance.now() - start).toBeLessThan(1_000);
  });
});
