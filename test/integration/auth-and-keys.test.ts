import { describe, expect, it } from 'vitest';
import { startTestApp } from '../helpers/app.js';
import { withChecksum } from '../../src/api-keys/token.js';
import { FINE_SCOPES } from '../../src/core/scopes.js';

describe('authentication and API keys', () => {
  it('answers 401 for a missing, malformed, mistyped or unknown key, without rate-limit headers', async () => {
    await using t = await startTestApp();
    const anon = t.api.as(null);
    const missing = await anon.get('/v1/api-keys');
    expect(missing.status).toBe(401);
    expect(missing.body.error.code).toBe('unauthorized');
    expect(missing.headers.get('www-authenticate')).toBe('Bearer');
    expect(missing.headers.get('ratelimit-limit')).toBeNull();

    expect((await anon.get('/v1/api-keys', { headers: { Authorization: 'Basic abc' } })).status).toBe(401);
    // A valid-looking token whose checksum does not match, and a well-formed unknown one.
    const flipped = t.token.slice(0, 20) + (t.token[20] === 'a' ? 'b' : 'a') + t.token.slice(21);
    expect((await t.api.as(flipped).get('/v1/api-keys')).status).toBe(401);
    // The right lookup part and a valid checksum, but another secret: refused
    // even while the genuine token is fresh in the verified-key cache.
    expect((await t.api.get('/v1/api-keys')).status).toBe(200);
    const body = t.token.slice(0, -6);
    const forged = withChecksum(body.slice(0, -1) + (body.endsWith('a') ? 'b' : 'a'));
    expect((await t.api.as(forged).get('/v1/api-keys')).status).toBe(401);
    expect((await t.api.get('/v1/api-keys')).status).toBe(200);
    const { token: other } = await t.seed.key();
    await t.mailroom.services.apiKeys.revoke(t.workspaceId, (await t.api.get('/v1/api-keys')).body.data[0].id);
    expect((await t.api.as(other).get('/v1/api-keys')).status).toBe(401);
  });

  it('answers 403 when the key lacks the scope, and refuses scope escalation', async () => {
    await using t = await startTestApp();
    const { token: sender } = await t.seed.key({ scopes: ['sending_access'] });
    const denied = await t.api.as(sender).get('/v1/api-keys');
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('forbidden');

    const { token: keyAdmin } = await t.seed.key({ scopes: ['api_keys:read', 'api_keys:write', 'emails:send'] });
    const admin = t.api.as(keyAdmin);
    const escalate = await admin.post('/v1/api-keys', { name: 'x', scopes: ['full_access'] });
    expect(escalate.status).toBe(403);
    expect(escalate.body.error.param).toBe('scopes');
    expect((await admin.post('/v1/api-keys', { name: 'x', scopes: ['domains:write'] })).status).toBe(403);
    // Default scopes are full_access, which this key cannot grant either.
    expect((await admin.post('/v1/api-keys', { name: 'x' })).status).toBe(403);
    // sending_access is emails:send, which it holds.
    const ok = await admin.post('/v1/api-keys', { name: 'sender', scopes: ['sending_access'] });
    expect(ok.status).toBe(201);
    expect(ok.body.scopes).toEqual(['sending_access']);
  });

  it('revokes only keys whose scopes the calling key could grant, and always itself', async () => {
    await using t = await startTestApp();
    const owner = await t.seed.key({ name: 'owner', scopes: ['full_access'] });
    const broader = await t.seed.key({ name: 'broader', scopes: ['emails:send', 'domains:write'] });
    const narrower = await t.seed.key({ name: 'narrower', scopes: ['sending_access'] });
    const keyAdmin = await t.seed.key({ name: 'key admin', scopes: ['api_keys:read', 'api_keys:write', 'emails:send'] });
    const admin = t.api.as(keyAdmin.token);

    const ownerRefused = await admin.delete(`/v1/api-keys/${owner.id}`);
    expect(ownerRefused.status).toBe(403);
    expect(ownerRefused.body.error.code).toBe('forbidden');
    expect(ownerRefused.body.error.message).toMatch(/only keys whose scopes it holds itself/);
    expect((await admin.delete(`/v1/api-keys/${broader.id}`)).status).toBe(403);
    for (const refused of [owner, broader]) {
      expect((await t.api.get(`/v1/api-keys/${refused.id}`)).body.revoked_at).toBeNull();
      expect((await t.api.as(refused.token).get('/v1/api-keys/current')).status).toBe(200);
    }

    // sending_access is emails:send, which the admin holds.
    expect((await admin.delete(`/v1/api-keys/${narrower.id}`)).status).toBe(204);
    expect((await t.api.as(narrower.token).get('/v1/api-keys/current')).status).toBe(401);
    // A full-access key revokes any key; the admin may revoke itself.
    expect((await t.api.as(owner.token).delete(`/v1/api-keys/${broader.id}`)).status).toBe(204);
    expect((await admin.delete(`/v1/api-keys/${keyAdmin.id}`)).status).toBe(204);
    expect((await admin.get('/v1/api-keys/current')).status).toBe(401);
  });

  it('lets a test key revoke test keys and itself, never a live key', async () => {
    await using t = await startTestApp();
    const live = await t.seed.key({ name: 'production' });
    const otherTest = await t.seed.key({ name: 'ci', mode: 'test' });
    const testKey = await t.seed.key({ name: 'sandbox', mode: 'test' });
    const asTest = t.api.as(testKey.token);

    const refused = await asTest.delete(`/v1/api-keys/${live.id}`);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'forbidden', param: 'key_id', message: "A test key may only revoke test keys, and 'production' is a live key." });
    expect((await t.api.as(live.token).get('/v1/api-keys/current')).status).toBe(200);

    expect((await asTest.delete(`/v1/api-keys/${otherTest.id}`)).status).toBe(204);
    expect((await asTest.delete(`/v1/api-keys/${testKey.id}`)).status).toBe(204);
    expect((await asTest.get('/v1/api-keys/current')).status).toBe(401);
  });

  it('shows the raw token once; lists, gets and revokes with masked tokens', async () => {
    await using t = await startTestApp();
    const created = await t.api.post('/v1/api-keys', { name: 'ci', scopes: ['emails:send', 'emails:read'] });
    expect(created.status).toBe(201);
    const raw: string = created.body.token;
    expect(raw).toMatch(/^svc_live_[0-9A-Za-z]{46}$/);
    expect((await t.api.as(raw).get('/v1/api-keys')).status).toBe(403);  // works, lacks api_keys:read

    const list = await t.api.get('/v1/api-keys');
    const listed = list.body.data.find((k: { id: string }) => k.id === created.body.id);
    expect(listed.token).not.toBe(raw);
    expect(listed.token).toMatch(/^svc_live_.{4}….{4}$/);
    expect(JSON.stringify(list.body)).not.toContain(raw.slice(9, 30));
    expect((await t.api.get(`/v1/api-keys/${created.body.id}`)).body.token).toBe(listed.token);

    expect((await t.api.delete(`/v1/api-keys/${created.body.id}`)).status).toBe(204);
    expect((await t.api.as(raw).post('/v1/api-keys', { name: 'y' })).status).toBe(401);
    expect((await t.api.get(`/v1/api-keys/${created.body.id}`)).body.revoked_at).not.toBeNull();
    expect((await t.api.delete('/v1/api-keys/key_doesnotexist')).status).toBe(404);
  });

  it('tells any valid key what it is and may do, at /v1/api-keys/current, never its secret', async () => {
    await using t = await startTestApp();
    const other = await t.seed.workspace();
    const cases = [
      { scopes: ['full_access'], mode: 'live' as const, workspaceId: t.workspaceId, effective: FINE_SCOPES },
      { scopes: ['emails:read', 'domains:read', 'events:read'], mode: 'test' as const, workspaceId: other.id,
        effective: ['emails:read', 'domains:read', 'events:read'] },
      // sending_access amounts to emails:send alone; a key lacking api_keys:read still reads itself.
      { scopes: ['sending_access'], mode: 'live' as const, workspaceId: other.id, effective: ['emails:send'] },
      { scopes: ['webhooks:write'], mode: 'test' as const, workspaceId: t.workspaceId, effective: ['webhooks:write'] },
    ];
    for (const c of cases) {
      const { id, token } = await t.seed.key({ name: `key ${c.scopes.join(' ')}`, scopes: c.scopes, mode: c.mode, workspaceId: c.workspaceId });
      const me = await t.api.as(token).get('/v1/api-keys/current');
      expect(me.status, c.scopes.join()).toBe(200);
      expect(me.body).toEqual({
        id, object: 'current_api_key', name: `key ${c.scopes.join(' ')}`, mode: c.mode, workspace_id: c.workspaceId,
        scopes: c.scopes, effective_scopes: [...c.effective], created_at: expect.any(String),
      });
      const text = JSON.stringify(me.body);
      expect(text).not.toContain(token.slice(9, 30));
      expect(text).not.toContain('token');
    }

    // The literal segment never reaches getApiKey, and ids still do.
    const { id } = await t.seed.key({ name: 'looked up' });
    expect((await t.api.get(`/v1/api-keys/${id}`)).body.name).toBe('looked up');
    expect((await t.api.get('/v1/api-keys/current')).body.name).toBe('harness');
    expect((await t.api.get('/v1/api-keys/key_current')).status).toBe(404);

    const anon = await t.api.as(null).get('/v1/api-keys/current');
    expect(anon.status).toBe(401);
    expect(anon.body.error.code).toBe('unauthorized');
    const { id: doomedId, token: doomed } = await t.seed.key({ scopes: ['emails:read'] });
    expect((await t.api.as(doomed).get('/v1/api-keys/current')).status).toBe(200);
    expect((await t.api.delete(`/v1/api-keys/${doomedId}`)).status).toBe(204);
    expect((await t.api.as(doomed).get('/v1/api-keys/current')).status).toBe(401);
  });

  it('creates test keys from test keys and validates the create body', async () => {
    await using t = await startTestApp();
    const { token } = await t.seed.key({ mode: 'test' });
    const made = await t.api.as(token).post('/v1/api-keys', { name: 'child' });
    expect(made.status).toBe(201);
    expect(made.body.token).toMatch(/^svc_test_/);
    expect(made.body.mode).toBe('test');

    const bad = await t.api.post('/v1/api-keys', { name: 'x', scopes: ['root'] });
    expect(bad.status).toBe(422);
    expect(bad.body.error.param).toBe('scopes.0');
    expect((await t.api.post('/v1/api-keys', { name: '' })).body.error.param).toBe('name');
    expect((await t.api.post('/v1/api-keys', { name: 'x', extra: true })).body.error).toMatchObject({ code: 'validation_error', param: 'extra' });
    expect((await t.api.post('/v1/api-keys', {})).body.error).toMatchObject({ code: 'validation_error', param: 'name' });
    const malformed = await t.api.request('POST', '/v1/api-keys', { rawBody: '{"name":', headers: { 'Content-Type': 'application/json' } });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('invalid_json');
  });

  it('refuses a live key to a test key, and records the attempt in its trail', async () => {
    await using t = await startTestApp();
    const testKey = await t.seed.key({ mode: 'test' });
    const asTest = t.api.as(testKey.token);
    const refused = await asTest.post('/v1/api-keys', { name: 'escape', mode: 'live' });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'forbidden', param: 'mode' });
    expect((await t.api.get('/v1/api-keys?limit=100')).body.data.map((k: { name: string }) => k.name)).not.toContain('escape');
    let trail: any[] = [];
    for (const deadline = Date.now() + 5000; Date.now() < deadline && trail.length === 0;) {
      trail = (await t.api.get(`/v1/api-keys/${testKey.id}/activity`)).body.data;
    }
    expect(trail[0]).toMatchObject({ operation_id: 'createApiKey', method: 'POST', status: 403 });
    // A live key may still make either kind.
    expect((await t.api.post('/v1/api-keys', { name: 'sandbox', mode: 'test' })).body.mode).toBe('test');
    expect((await t.api.post('/v1/api-keys', { name: 'prod', mode: 'live' })).body.mode).toBe('live');
  });

  it('keeps an audit trail of the writes a key made', async () => {
    await using t = await startTestApp();
    const made = await t.api.post('/v1/api-keys', { name: 'audited', scopes: ['emails:read'] });
    const me = (await t.api.get('/v1/api-keys')).body.data.find((k: { name: string }) => k.name === 'harness');
    let trail: any[] = [];
    for (const deadline = Date.now() + 5000; Date.now() < deadline && trail.length === 0;) {
      trail = (await t.api.get(`/v1/api-keys/${me.id}/activity`)).body.data;
    }
    expect(trail[0]).toMatchObject({ operation_id: 'createApiKey', method: 'POST', status: 201, resource_id: made.body.id });
    expect(me.last_used_at).not.toBeNull();
  });

  it('leaves out of the trail the POSTs that store nothing: previews, renders and checks', async () => {
    await using t = await startTestApp();
    expect((await t.api.post('/v1/templates/render', { subject: 'Hi', text: 'Hello' })).status).toBe(200);
    expect((await t.api.post('/v1/emails/check', { from: 'a@shop.test', to: ['b@example.org'], subject: 'Hi', text: 'Hello' })).status).toBe(200);
    const tag = await t.api.post('/v1/tags', { name: 'after the previews' });
    expect(tag.status).toBe(201);
    const me = (await t.api.get('/v1/api-keys')).body.data.find((k: { name: string }) => k.name === 'harness');
    let trail: any[] = [];
    for (const deadline = Date.now() + 5000; Date.now() < deadline && trail.length === 0;) {
      trail = (await t.api.get(`/v1/api-keys/${me.id}/activity`)).body.data;
    }
    // Rows of one node's calls are listed in their order: had the previews been recorded, they would be here already.
    expect(trail.map((row) => row.operation_id)).toEqual(['createTag']);
  });

  it('answers unknown routes and wrong methods in the error shape', async () => {
    await using t = await startTestApp();
    const unknown = await t.api.get('/v1/nothing-here');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');
    expect(unknown.headers.get('x-request-id')).toBe(unknown.body.error.request_id);
    const wrong = await t.api.request('PUT', '/v1/api-keys');
    expect(wrong.status).toBe(405);
    expect(wrong.body.error.code).toBe('method_not_allowed');
    // A router late in the list still answers its own 405, with its methods.
    const late = await t.api.request('PUT', '/v1/webhooks');
    expect(late.status).toBe(405);
    expect(late.headers.get('allow')).toBe('HEAD, GET, POST');
  });

  it('matches routes without regard to the case of the path, under every prefix', async () => {
    await using t = await startTestApp();
    const headers = { Authorization: `Bearer ${t.token}` };
    for (const path of ['/V1/API-KEYS', '/v1/Webhooks', '/V1/EMAILS']) {
      const res = await fetch(`${t.url}${path}`, { headers });
      expect(res.status, path).toBe(200);
      expect(((await res.json()) as { data: unknown }).data, path).toBeInstanceOf(Array);
    }
  });

  it('serves the contract, and routes every operation it defines', async () => {
    await using t = await startTestApp();
    const doc = (await fetch(`${t.url}/v1/openapi.json`).then((r) => r.json())) as { paths: Record<string, any> };
    const defined = Object.values(doc.paths).flatMap((item: any) =>
      ['get', 'post', 'put', 'patch', 'delete'].filter((m) => item[m]).map((m) => item[m].operationId));
    expect(defined.length).toBeGreaterThan(0);
    expect([...t.mailroom.routedOperations].sort()).toEqual([...defined].sort());
  });
});
