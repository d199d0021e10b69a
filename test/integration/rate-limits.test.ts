import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { startTestApp } from '../helpers/app.js';

describe('rate limits', () => {
  it('counts and shows the allowance on every answer to a valid key: 403, unknown route, 405, 400, 413, 415, 422 and the OpenAPI document', async () => {
    const clock = new ManualClock();
    await using t = await startTestApp({ clock });
    const ws = await t.seed.workspace({ plan: 'pro' });
    const token = (await t.seed.key({ workspaceId: ws.id, scopes: ['emails:read', 'emails:send'] })).token;
    const api = t.api.as(token);
    const remaining: number[] = [];
    const expectCounted = (res: { status: number; headers: Headers }, status: number) => {
      expect(res.status).toBe(status);
      expect(res.headers.get('ratelimit-scope')).toBe('workspace');
      expect(res.headers.get('ratelimit-limit')).toBe('100');
      remaining.push(Number(res.headers.get('ratelimit-remaining')));
    };
    expectCounted(await api.get('/v1/api-keys'), 403);
    expectCounted(await api.get('/v1/no-such-area'), 404);
    expectCounted(await api.request('PUT', '/v1/emails'), 405);
    expectCounted(await api.request('POST', '/v1/emails', { rawBody: '{"from":', headers: { 'Content-Type': 'application/json' } }), 400);
    expectCounted(await api.request('PATCH', '/v1/emails/em_x', { rawBody: 'x'.repeat(2 * 1024 * 1024), headers: { 'Content-Type': 'application/json' } }), 413);
    expectCounted(await api.request('POST', '/v1/emails', { rawBody: 'from=a', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } }), 415);
    expectCounted(await api.post('/v1/emails', { from: 'not an address' }), 422);
    // The document needs no key, but one that is sent is counted as on any request under /v1.
    expectCounted(await fetch(`${t.url}/v1/openapi.json`, { headers: { Authorization: `Bearer ${token}` } }), 200);
    // Each one took one request from the bucket.
    expect(remaining).toEqual([99, 98, 97, 96, 95, 94, 93, 92]);

    // Without a valid key there is no workspace: a 401, an unknown route and the document carry no allowance.
    const anonymous = await api.as(null).get('/v1/no-such-area');
    expect(anonymous.status).toBe(404);
    expect(anonymous.headers.get('ratelimit-limit')).toBeNull();
    const anonymousDocument = await fetch(`${t.url}/v1/openapi.json`);
    expect(anonymousDocument.status).toBe(200);
    expect(anonymousDocument.headers.get('ratelimit-limit')).toBeNull();
    expect((await api.as('svc_live_nope').get('/v1/emails')).headers.get('ratelimit-limit')).toBeNull();
  });

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
