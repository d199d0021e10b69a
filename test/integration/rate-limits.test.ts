import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { startTestApp } from '../helpers/app.js';

describe('rate limits', () => {
  it('sends the headers on every response and 429s over the burst, live and test separately', async () => {
    const clock = new ManualClock();
    // free: burst 10 at 2/s, for live and for test traffic.
    await using t = await startTestApp({ clock });
    const ws = await t.seed.workspace({ plan: 'free' });
    const live = t.api.as((await t.seed.key({ workspaceId: ws.id })).token);
    const liveTwo = t.api.as((await t.seed.key({ workspaceId: ws.id })).token);
    const test = t.api.as((await t.seed.key({ workspaceId: ws.id, mode: 'test' })).token);

    const first = await live.get('/v1/api-keys');
    expect(first.headers.get('ratelimit-limit')).toBe('10');
    expect(first.headers.get('ratelimit-remaining')).toBe('9');
    expect(first.headers.get('ratelimit-reset')).toBe('0');
    expect(first.headers.get('ratelimit-policy')).toBe('10;w=5');
    expect(first.headers.get('ratelimit-scope')).toBe('workspace');

    // A second key of the same workspace draws from the same bucket.
    for (let i = 0; i < 9; i++) expect((await (i % 2 ? live : liveTwo).get('/v1/api-keys')).status).toBe(200);
    const limited = await liveTwo.get('/v1/api-keys');
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('rate_limit_exceeded');
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
    expect(limited.headers.get('ratelimit-reset')).toBe('1');
    // Errors after authentication carry the headers too.
    expect((await live.get('/v1/api-keys/key_nope')).headers.get('ratelimit-scope')).toBe('workspace');

    // Test traffic has its own allowance.
    expect((await test.get('/v1/api-keys')).status).toBe(200);
    // Another workspace is untouched.
    expect((await t.api.get('/v1/api-keys')).status).toBe(200);

    clock.advance(1000);  // refills 2 tokens
    expect((await live.get('/v1/api-keys')).status).toBe(200);
    expect((await live.get('/v1/api-keys')).status).toBe(200);
    expect((await live.get('/v1/api-keys')).status).toBe(429);
  });
});
