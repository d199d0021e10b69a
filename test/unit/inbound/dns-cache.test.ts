import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import { cachedResolver } from '../../../src/inbound/dns-cache.js';

const failure = (code: string) => Object.assign(new Error(code), { code });

describe('the DNS answer cache for authentication checks', () => {
  function counting(answer: (name: string, n: number) => Promise<string[][]>) {
    const calls: string[] = [];
    const resolve = (name: string, rrtype: string) => {
      calls.push(`${rrtype} ${name}`);
      return answer(name, calls.length);
    };
    return { calls, resolve };
  }

  it('answers repeated and concurrent look-ups from one query until it expires', async () => {
    const clock = new ManualClock();
    const upstream = counting(async () => [['v=spf1 -all']]);
    const resolve = cachedResolver(upstream.resolve, { ttlMs: 60_000, maxEntries: 100, clock });
    const [a, b] = await Promise.all([resolve('x.test', 'TXT'), resolve('X.test', 'TXT')]);
    expect(a).toEqual([['v=spf1 -all']]);
    expect(b).toBe(a);
    await resolve('x.test', 'MX');
    expect(upstream.calls).toEqual(['TXT x.test', 'MX x.test']);
    clock.advance(60_001);
    await resolve('x.test', 'TXT');
    expect(upstream.calls).toHaveLength(3);
  });

  it('keeps "no such name" answers but asks again after a temporary failure', async () => {
    const clock = new ManualClock();
    const upstream = counting(async (name) => {
      throw failure(name === 'gone.test' ? 'ENOTFOUND' : 'ETIMEOUT');
    });
    const resolve = cachedResolver(upstream.resolve, { ttlMs: 60_000, maxEntries: 100, clock });
    for (let i = 0; i < 2; i++) {
      await expect(resolve('gone.test', 'TXT')).rejects.toMatchObject({ code: 'ENOTFOUND' });
      await expect(resolve('slow.test', 'TXT')).rejects.toMatchObject({ code: 'ETIMEOUT' });
    }
    expect(upstream.calls).toEqual(['TXT gone.test', 'TXT slow.test', 'TXT slow.test']);
  });

  it('stays within its size by dropping the oldest entry', async () => {
    const clock = new ManualClock();
    const upstream = counting(async (name) => [[name]]);
    const resolve = cachedResolver(upstream.resolve, { ttlMs: 60_000, maxEntries: 2, clock });
    await resolve('a.test', 'TXT');
    await resolve('b.test', 'TXT');
    await resolve('c.test', 'TXT');
    await resolve('b.test', 'TXT');
    await resolve('a.test', 'TXT');
    expect(upstream.calls).toEqual(['TXT a.test', 'TXT b.test', 'TXT c.test', 'TXT a.test']);
  });
});
