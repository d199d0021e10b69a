import { describe, expect, it } from 'vitest';
import { startTestApp } from '../helpers/app.js';

describe('bulk contacts', () => {
  it('applies the valid items of a mixed request and reports each invalid one by index', async () => {
    await using t = await startTestApp();
    const existing = (await t.api.post('/v1/contacts', { email: 'known@example.com', name: 'Old', tags: ['keep'] })).body;
    const { status, body } = await t.api.post('/v1/contacts/bulk', {
      contacts: [
        { email: 'New1@Example.com', name: 'One', tags: ['imported', 'VIP'] },
        { email: 'not an address' },
        { email: 'KNOWN@example.com', name: 'New name' },
        { name: 'no email' },
        'just a string',
        { email: 'new1@example.com', name: 'second time' },
        { email: 'extra@example.com', colour: 'red' },
        { email: 'tags@example.com', tags: 'vip' },
        { email: 'new2@example.com' },
        { email: 'long@example.com', name: 'x'.repeat(201) },
      ],
    });
    expect(status).toBe(200);
    expect(body).toMatchObject({ created: 2, updated: 1, failed: 7 });
    expect(body.errors.map((e: { index: number; code: string }) => [e.index, e.code])).toEqual([
      [1, 'validation_error'], [3, 'validation_error'], [4, 'validation_error'], [5, 'duplicate_in_request'],
      [6, 'validation_error'], [7, 'validation_error'], [9, 'validation_error'],
    ]);
    expect(body.errors[0]).toMatchObject({ email: 'not an address' });
    expect(body.errors[0].message).toContain('not a valid email address');
    expect(body.errors[1].email).toBeNull();
    expect(body.errors[4].message).toContain('colour');

    const list = (await t.api.get('/v1/contacts')).body.data;
    expect(list.map((c: { email: string }) => c.email).sort()).toEqual(['known@example.com', 'new1@example.com', 'new2@example.com']);
    const one = list.find((c: { email: string }) => c.email === 'new1@example.com');
    expect(one).toMatchObject({ name: 'One', status: 'subscribed' });
    expect(one.tags.map((x: { name: string }) => x.name)).toEqual(['imported', 'VIP']);
    // An update changes the given fields only: the tags of the known contact stay.
    const known = list.find((c: { email: string }) => c.email === 'known@example.com');
    expect(known).toMatchObject({ id: existing.id, name: 'New name', tags: existing.tags });
  });

  it('refuses more than 1000 items, or none, with 422 and applies nothing', async () => {
    await using t = await startTestApp();
    const tooMany = Array.from({ length: 1001 }, (_, i) => ({ email: `c${i}@example.com` }));
    const r = await t.api.post('/v1/contacts/bulk', { contacts: tooMany });
    expect(r.status).toBe(422);
    expect(r.body.error.param).toBe('contacts');
    expect((await t.api.post('/v1/contacts/bulk', { contacts: [] })).status).toBe(422);
    expect((await t.api.post('/v1/contacts/bulk', {})).status).toBe(422);
    expect((await t.api.post('/v1/contacts/bulk', { contacts: [], extra: 1 })).status).toBe(422);
    expect((await t.api.get('/v1/contacts')).body.data).toEqual([]);
  });

  it('creates 1000 contacts and then updates them all, each in one request', async ({ annotate }) => {
    await using t = await startTestApp();
    const contacts = Array.from({ length: 1000 }, (_, i) => ({
      email: `person${i}@bulk${i % 7}.example`, name: `Person ${i}`, tags: [`cohort-${i % 10}`, 'imported'],
    }));
    let started = performance.now();
    const created = await t.api.post('/v1/contacts/bulk', { contacts });
    const createMs = performance.now() - started;
    expect(created.status).toBe(200);
    expect(created.body).toEqual({ created: 1000, updated: 0, failed: 0, errors: [] });

    started = performance.now();
    const updated = await t.api.post('/v1/contacts/bulk', { contacts: contacts.map((c) => ({ ...c, name: c.name.toUpperCase() })) });
    const updateMs = performance.now() - started;
    expect(updated.body).toEqual({ created: 0, updated: 1000, failed: 0, errors: [] });
    await annotate(`1000 contacts with 2 tags each: create ${createMs.toFixed(0)} ms, update ${updateMs.toFixed(0)} ms (HTTP round trip included)`);

    const { store } = t.mailroom.services;
    const count = await store.db.selectFrom('contacts').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(1000);
    const tagged = await store.db.selectFrom('contact_tags').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    expect(Number(tagged.n)).toBe(2000);
    expect((await t.api.get('/v1/tags?limit=100')).body.data).toHaveLength(11);
    const sample = (await t.api.get('/v1/contacts?email=person999@')).body.data;
    expect(sample).toMatchObject([{ name: 'PERSON 999' }]);
  });

  it('replays a bulk request with the same Idempotency-Key instead of applying it twice', async () => {
    await using t = await startTestApp();
    const body = { contacts: [{ email: 'idem@example.com' }] };
    const headers = { 'Idempotency-Key': 'bulk-1' };
    const first = await t.api.post('/v1/contacts/bulk', body, { headers });
    const second = await t.api.post('/v1/contacts/bulk', body, { headers });
    expect(first.body).toEqual({ created: 1, updated: 0, failed: 0, errors: [] });
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
  });
});
