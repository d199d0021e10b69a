import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { SENDING_ENV, startTestApp } from '../helpers/app.js';

describe('Idempotency-Key', () => {
  it('replays the first response for the same request and 409s a different one', async () => {
    const clock = new ManualClock();
    await using t = await startTestApp({ clock });
    const headers = { 'Idempotency-Key': 'create-ci-key-1' };
    const first = await t.api.post('/v1/api-keys', { name: 'ci' }, { headers });
    expect(first.status).toBe(201);
    const again = await t.api.post('/v1/api-keys', { name: 'ci' }, { headers });
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');

    const different = await t.api.post('/v1/api-keys', { name: 'other' }, { headers });
    expect(different.status).toBe(409);
    expect(different.body.error).toMatchObject({ code: 'idempotency_conflict', param: 'Idempotency-Key' });

    const names = (await t.api.get('/v1/api-keys?limit=100')).body.data.map((k: { name: string }) => k.name);
    expect(names.filter((n: string) => n === 'ci')).toHaveLength(1);

    // The raw token in the stored response is not readable in the database.
    const rows = await t.mailroom.services.store.db.selectFrom('idempotency_keys').select('response_body').execute();
    expect(rows.map((r) => r.response_body).join('')).not.toContain(first.body.token);

    // Keys are per workspace: another workspace may use the same key.
    const ws = await t.seed.workspace();
    const { token } = await t.seed.key({ workspaceId: ws.id });
    expect((await t.api.as(token).post('/v1/api-keys', { name: 'other' }, { headers })).status).toBe(201);

    // After 24 h the key is forgotten.
    clock.advance(24 * 3600 * 1000 + 1);
    const later = await t.api.post('/v1/api-keys', { name: 'other' }, { headers });
    expect(later.status).toBe(201);
    expect(later.body.id).not.toBe(first.body.id);
  });

  it('replays an answer only to the API key that asked: another key of the workspace gets 409, not its token', async () => {
    await using t = await startTestApp();
    const headers = { 'Idempotency-Key': 'make-admin-1' };
    const made = await t.api.post('/v1/api-keys', { name: 'admin', scopes: ['full_access'] }, { headers });
    expect(made.status).toBe(201);
    // A key that manages keys but may not grant full access, using the same Idempotency-Key and body.
    const { token: manager } = await t.seed.key({ scopes: ['api_keys:write', 'emails:read'] });
    const replayed = await t.api.as(manager).post('/v1/api-keys', { name: 'admin', scopes: ['full_access'] }, { headers });
    expect(replayed.status).toBe(409);
    expect(replayed.body.error).toMatchObject({ code: 'idempotency_conflict', param: 'Idempotency-Key' });
    expect(JSON.stringify(replayed.body)).not.toContain(made.body.token);
    // Nor the other way: the manager's refusal is its own, and the first key's retry still gets its answer.
    const refused = await t.api.as(manager).post('/v1/api-keys', { name: 'root', scopes: ['full_access'] }, { headers: { 'Idempotency-Key': 'make-root-1' } });
    expect(refused.status).toBe(403);
    const own = await t.api.post('/v1/api-keys', { name: 'root', scopes: ['full_access'] }, { headers: { 'Idempotency-Key': 'make-root-1' } });
    expect(own.status).toBe(409);
    expect((await t.api.post('/v1/api-keys', { name: 'admin', scopes: ['full_access'] }, { headers })).body).toEqual(made.body);
  });

  it('counts the headers that change a request, and the key\'s mode, as part of the request', async () => {
    await using t = await startTestApp();
    const good = { from: 'ann@example.test', to: 'bob@example.org', subject: 'Hello', text: 'Hi' };
    const batch = { emails: [good, { ...good, colour: 'red' }] };
    const as = (validation: string | undefined, key = 'batch-validation-1') =>
      ({ headers: { 'Idempotency-Key': key, ...(validation !== undefined && { 'Mailroom-Batch-Validation': validation }) } });

    const strict = await t.api.post('/v1/emails/batch', batch, as('strict'));
    expect(strict.status).toBe(422);
    const partial = await t.api.post('/v1/emails/batch', batch, as('partial'));
    expect(partial.status).toBe(409);
    expect(partial.body.error).toMatchObject({ code: 'idempotency_conflict', param: 'Idempotency-Key' });
    // No header is the default, partial; a header spelt otherwise than the first time names the same request.
    expect((await t.api.post('/v1/emails/batch', batch, as(undefined))).status).toBe(409);
    const again = await t.api.post('/v1/emails/batch', batch, as(' Strict '));
    expect(again.status).toBe(422);
    expect(again.headers.get('idempotent-replayed')).toBe('true');

    // The other order: partial first (by default), then strict.
    const sent = await t.api.post('/v1/emails/batch', batch, as(undefined, 'batch-validation-2'));
    expect(sent.status).toBe(200);
    expect(sent.body.data.map((r: { id?: string }) => Boolean(r.id))).toEqual([true, false]);
    expect((await t.api.post('/v1/emails/batch', batch, as('partial', 'batch-validation-2'))).body).toEqual(sent.body);
    expect((await t.api.post('/v1/emails/batch', batch, as('strict', 'batch-validation-2'))).status).toBe(409);

    // A test key's request (sent to the sink) is not the live key's, though the body is the same.
    const { token: testKey } = await t.seed.key({ mode: 'test' });
    const single = { headers: { 'Idempotency-Key': 'send-1' } };
    const live = await t.api.post('/v1/emails', good, single);
    expect(live.status).toBe(201);
    const fromTest = await t.api.as(testKey).post('/v1/emails', good, single);
    expect(fromTest.status).toBe(409);
    expect(fromTest.body.error.code).toBe('idempotency_conflict');
  });

  it('replays a 4xx too, answers 409 while the first is in flight, and refuses keys over 255 characters', async () => {
    await using t = await startTestApp();
    const invalid = await t.api.post('/v1/api-keys', { name: 'x', scopes: ['nope'] }, { headers: { 'Idempotency-Key': 'bad-1' } });
    expect(invalid.status).toBe(422);
    const replay = await t.api.post('/v1/api-keys', { name: 'x', scopes: ['nope'] }, { headers: { 'Idempotency-Key': 'bad-1' } });
    expect(replay.status).toBe(422);
    expect(replay.body).toEqual(invalid.body);

    // Six at once with one key: the first runs, the others get 409 while it is in flight or
    // its answer once it is done. A loaded machine may finish the first before the others
    // arrive, so rounds with fresh keys go on until one overlaps.
    const seen = new Set<number>();
    for (let round = 0; round < 10 && !seen.has(409); round++) {
      const headers = { 'Idempotency-Key': `race-${round}` };
      const results = await Promise.all(Array.from({ length: 6 }, () => t.api.post('/v1/api-keys', { name: 'race' }, { headers })));
      for (const r of results) seen.add(r.status);
      expect(results.every((r) => r.status === 201 || r.status === 409)).toBe(true);
      expect(new Set(results.filter((r) => r.status === 201).map((r) => r.body.id)).size).toBe(1);
    }
    expect([...seen].sort()).toEqual([201, 409]);

    const long = await t.api.post('/v1/api-keys', { name: 'x' }, { headers: { 'Idempotency-Key': 'k'.repeat(256) } });
    expect(long.status).toBe(400);
    expect(long.body.error.param).toBe('Idempotency-Key');
    expect((await t.api.post('/v1/api-keys', { name: 'x' }, { headers: { 'Idempotency-Key': 'k'.repeat(255) } })).status).toBe(201);
  });
});

describe('Idempotency-Key on a send refused for its quota', () => {
  it('keeps no quota refusal: a retry under the same key gets a fresh Retry-After, and sends once the quota resets', async () => {
    const clock = new ManualClock(Date.parse('2026-11-30T22:00:00Z'));
    await using t = await startTestApp({ clock, env: { ...SENDING_ENV, MAILROOM_PLANS: JSON.stringify({ tiny: { dailySendQuota: 1, monthlySendQuota: 100 } }) } });
    const ws = await t.seed.workspace({ plan: 'tiny' });
    await t.seed.activeDomain('acme.test', { workspaceId: ws.id });
    const api = t.api.as((await t.seed.key({ workspaceId: ws.id })).token);
    const email = { from: 'ann@acme.test', to: 'bob@example.org', subject: 'Hello', text: 'Hi' };
    const headers = { 'Idempotency-Key': 'send-over-quota' };
    expect((await api.post('/v1/emails', email)).status).toBe(201);

    const refused = await api.post('/v1/emails', email, { headers });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('daily_quota_exceeded');
    expect(refused.headers.get('retry-after')).toBe('7200');

    // Nothing ran, so nothing is replayed: the retry is refused afresh, with the wait as it is now.
    clock.advance(3600_000);
    const retried = await api.post('/v1/emails', email, { headers });
    expect(retried.status).toBe(429);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(retried.headers.get('retry-after')).toBe('3600');

    clock.set(Date.parse('2026-12-01T00:00:05Z'));
    const sent = await api.post('/v1/emails', email, { headers });
    expect(sent.status).toBe(201);
    const replayed = await api.post('/v1/emails', email, { headers });
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body.id).toBe(sent.body.id);
  });
});
