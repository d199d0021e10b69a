import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

// A contact's properties over HTTP: set on create, merged on update, upsert
// and bulk (null removes one), bounded in names, values and number, and
// refused with the field named.

describe('contact properties', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('are set on create and read back, {} when none were given', async () => {
    const res = await t.api.post('/v1/contacts', { email: 'ann@example.com', properties: { company: 'Acme', seats: 12, trial: false } });
    expect(res.status).toBe(201);
    expect(res.body.properties).toEqual({ company: 'Acme', seats: 12, trial: false });
    expect((await t.api.get(`/v1/contacts/${res.body.id}`)).body.properties).toEqual({ company: 'Acme', seats: 12, trial: false });
    expect((await t.api.get('/v1/contacts?email=ann@')).body.data[0].properties).toEqual({ company: 'Acme', seats: 12, trial: false });
    expect((await t.api.post('/v1/contacts', { email: 'plain@example.com' })).body.properties).toEqual({});
  });

  it('are merged on update and upsert, a null removing one', async () => {
    const id = (await t.api.post('/v1/contacts', { email: 'bob@example.com', properties: { company: 'Acme', plan: 'pro' } })).body.id;
    const patched = await t.api.patch(`/v1/contacts/${id}`, { properties: { plan: 'team', city: 'Oslo', company: null } });
    expect(patched.status).toBe(200);
    expect(patched.body.properties).toEqual({ plan: 'team', city: 'Oslo' });
    const upserted = await t.api.put('/v1/contacts/by-email/bob@example.com', { properties: { vip: true } });
    expect(upserted.body.properties).toEqual({ plan: 'team', city: 'Oslo', vip: true });
    // A change of name alone keeps them.
    expect((await t.api.patch(`/v1/contacts/${id}`, { name: 'Bob' })).body.properties).toEqual({ plan: 'team', city: 'Oslo', vip: true });
  });

  it('are merged by bulk, where an item that cannot take them fails alone', async () => {
    const many = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`p${i}`, i]));
    await t.api.post('/v1/contacts', { email: 'full@example.com', properties: many });
    const res = await t.api.post('/v1/contacts/bulk', {
      contacts: [
        { email: 'bob@example.com', properties: { city: null, score: 7.5 } },
        { email: 'new@example.com', properties: { source: 'import' } },
        { email: 'full@example.com', properties: { one_more: 'x' } },
        { email: 'bad@example.com', properties: { 'not a name': 1 } },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ created: 1, updated: 1, failed: 2 });
    expect(res.body.errors.map((e: { index: number }) => e.index)).toEqual([2, 3]);
    expect(res.body.errors[0].message).toMatch(/at most 50 properties/);
    const bob = (await t.api.get('/v1/contacts?email=bob@')).body.data[0];
    expect(bob.properties).toEqual({ plan: 'team', vip: true, score: 7.5 });
    expect((await t.api.get('/v1/contacts?email=new@')).body.data[0].properties).toEqual({ source: 'import' });
    expect(Object.keys((await t.api.get('/v1/contacts?email=full@')).body.data[0].properties)).toHaveLength(50);
  });

  it('refuse names, values and numbers past the limits, naming the field', async () => {
    const id = (await t.api.post('/v1/contacts', { email: 'eve@example.com' })).body.id;
    const many = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v']));
    await t.api.patch(`/v1/contacts/${id}`, { properties: many });
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ properties: { nested: { a: 1 } } }, /properties/],
      [{ properties: { list: [1, 2] } }, /properties/],
      [{ properties: { long: 'x'.repeat(501) } }, /properties/],
      [{ properties: { '1st': 'x' } }, /properties/],
      [{ properties: { __proto__x: 'x' } }, /properties/],
      [{ properties: 'company=Acme' }, /properties/],
      [{ properties: { k50: 'one too many' } }, /^properties$/],
    ];
    for (const [body, param] of cases) {
      const res = await t.api.patch(`/v1/contacts/${id}`, body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.error.code).toBe('validation_error');
      expect(res.body.error.param, JSON.stringify(body)).toMatch(param);
    }
    const proto = await fetch(`${t.url}/v1/contacts/${id}`, {
      method: 'PATCH', headers: { Authorization: `Bearer ${t.token}`, 'Content-Type': 'application/json' },
      body: '{"properties": {"__proto__": {"polluted": true}}}',
    });
    expect(proto.status).toBe(422);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // Removing one makes room again.
    const room = await t.api.patch(`/v1/contacts/${id}`, { properties: { k0: null, k50: 'fits' } });
    expect(room.status).toBe(200);
    expect(room.body.properties.k50).toBe('fits');
  });
});
