import { describe, expect, it } from 'vitest';
import { startTestApp } from '../helpers/app.js';

describe('contacts', () => {
  it('creates a contact with a normalised address, tags by name, and reads it back', async () => {
    await using t = await startTestApp();
    const created = await t.api.post('/v1/contacts', { email: '  Ann.Lee@Example.COM ', name: ' Ann ', tags: ['VIP', 'news', 'vip'] });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      object: 'contact', email: 'ann.lee@example.com', name: 'Ann', status: 'subscribed', engagement_tier: 'no_data',
      unsubscribed_at: null, unsubscribe_reason: null,
    });
    expect(created.body.id).toMatch(/^ct_/);
    // "VIP" and "vip" are one tag; tags come back sorted by name.
    expect(created.body.tags.map((x: { name: string }) => x.name)).toEqual(['news', 'VIP']);
    const tags = (await t.api.get('/v1/tags')).body.data;
    expect(tags.map((x: { name: string }) => x.name).sort()).toEqual(['VIP', 'news']);

    const got = await t.api.get(`/v1/contacts/${created.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created.body);
  });

  it('refuses invalid input with 422 and the field named', async () => {
    await using t = await startTestApp();
    for (const email of ['not-an-address', 'a@localhost', 'a@b.123', '.a@example.com', 'a..b@example.com', 'a b@example.com', '"q"@example.com', '@example.com', `${'x'.repeat(65)}@example.com`]) {
      const r = await t.api.post('/v1/contacts', { email });
      expect(r.status, email).toBe(422);
      expect(r.body.error).toMatchObject({ code: 'validation_error', param: 'email' });
    }
    const cases: Array<[unknown, string]> = [
      [{}, 'email'],
      [{ email: 'a@example.com', colour: 'red' }, 'colour'],
      [{ email: 'a@example.com', name: 'x'.repeat(201) }, 'name'],
      [{ email: 'a@example.com', tags: ['   '] }, 'tags.0'],
      [{ email: 'a@example.com', tags: ['x'.repeat(101)] }, 'tags.0'],
      [{ email: 'a@example.com', tags: 'vip' }, 'tags'],
    ];
    for (const [body, param] of cases) {
      const r = await t.api.post('/v1/contacts', body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body.error.param, JSON.stringify(body)).toContain(param);
    }
    const bad = await t.api.request('POST', '/v1/contacts', { rawBody: '{"email":', headers: { 'Content-Type': 'application/json' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_json');
    expect((await t.api.get('/v1/contacts')).body.data).toEqual([]);
  });

  it('gives 422 for an address that already has a contact, whatever its case', async () => {
    await using t = await startTestApp();
    const first = await t.api.post('/v1/contacts', { email: 'dup@example.com' });
    const again = await t.api.post('/v1/contacts', { email: 'DUP@example.com ' });
    expect(again.status).toBe(422);
    expect(again.body.error).toMatchObject({ code: 'already_exists', param: 'email', contact_id: first.body.id });
  });

  it('takes an address written decomposed (NFD) as the one written composed (NFC), and keeps it composed', async () => {
    await using t = await startTestApp();
    // "jörg" as macOS may paste it: o and a combining diaeresis.
    const decomposed = 'jo\u0308rg@example.com';
    const created = await t.api.post('/v1/contacts', { email: decomposed });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.email).toBe('j\u00f6rg@example.com');
    const again = await t.api.post('/v1/contacts', { email: 'J\u00d6RG@example.com' });
    expect(again.body.error).toMatchObject({ code: 'already_exists', contact_id: created.body.id });
    const upserted = await t.api.put(`/v1/contacts/by-email/${encodeURIComponent(decomposed)}`, { name: 'J\u00f6rg' });
    expect(upserted.body).toMatchObject({ id: created.body.id, name: 'J\u00f6rg' });
    const bulk = await t.api.post('/v1/contacts/bulk', { contacts: [{ email: 'J\u00f6rg@example.com' }, { email: 'JO\u0308RG@example.com' }] });
    expect(bulk.body).toMatchObject({ created: 0, updated: 1, failed: 1, errors: [{ index: 1, code: 'duplicate_in_request' }] });
    expect((await t.api.get(`/v1/contacts?email=${encodeURIComponent('o\u0308rg')}`)).body.data.map((c: { id: string }) => c.id)).toEqual([created.body.id]);
  });

  it('takes addresses written with combining marks: Devanagari vowels, and an İ lower-cased', async () => {
    await using t = await startTestApp();
    const hindi = await t.api.post('/v1/contacts', { email: '\u0905\u0928\u0941\u0930\u093e\u0917@example.com' });
    expect(hindi.status, JSON.stringify(hindi.body)).toBe(201);
    expect(hindi.body.email).toBe('\u0905\u0928\u0941\u0930\u093e\u0917@example.com');
    const turkish = await t.api.post('/v1/contacts', { email: '\u0130nci@example.com' });
    expect(turkish.status, JSON.stringify(turkish.body)).toBe(201);
    // Folded as the whole address is, so that the same address in capitals finds it.
    expect(turkish.body.email).toBe('i\u0307nci@example.com');
    expect((await t.api.post('/v1/contacts', { email: '\u0130NCI@example.com' })).body.error).toMatchObject({ code: 'already_exists', contact_id: turkish.body.id });
    expect((await t.api.post('/v1/suppressions', { email: '\u0130nci@example.com' })).status).toBe(201);
    expect((await t.api.get('/v1/suppressions')).body.data.map((x: { email: string }) => x.email)).toEqual(['i\u0307nci@example.com']);
  });

  it('soft-deletes: gone from gets and lists, the address can be re-created, the old record is kept', async () => {
    await using t = await startTestApp();
    const old = (await t.api.post('/v1/contacts', { email: 'gone@example.com', tags: ['a'] })).body;
    expect((await t.api.delete(`/v1/contacts/${old.id}`)).status).toBe(204);
    expect((await t.api.get(`/v1/contacts/${old.id}`)).status).toBe(404);
    expect((await t.api.delete(`/v1/contacts/${old.id}`)).status).toBe(404);
    expect((await t.api.patch(`/v1/contacts/${old.id}`, { name: 'x' })).status).toBe(404);
    expect((await t.api.post(`/v1/contacts/${old.id}/unsubscribe`)).status).toBe(404);
    expect((await t.api.get('/v1/contacts')).body.data).toEqual([]);
    expect((await t.api.get('/v1/contacts?email=gone')).body.data).toEqual([]);

    const again = await t.api.post('/v1/contacts', { email: 'gone@example.com' });
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(old.id);
    expect(again.body.tags).toEqual([]);
    expect((await t.api.get('/v1/contacts')).body.data.map((c: { id: string }) => c.id)).toEqual([again.body.id]);

    const kept = await t.mailroom.services.store.db.selectFrom('contacts').select(['id', 'deleted_at'])
      .where('email', '=', 'gone@example.com').orderBy('pos').execute();
    expect(kept.map((r) => r.id)).toEqual([old.id, again.body.id]);
    expect(kept[0].deleted_at).not.toBeNull();
    expect(kept[1].deleted_at).toBeNull();
    const keptTags = await t.mailroom.services.store.db.selectFrom('contact_tags').select('contact_id').execute();
    expect(keptTags.map((r) => r.contact_id)).toEqual([old.id]);
  });

  it('updates name and tags with PATCH; tags replace the set', async () => {
    await using t = await startTestApp();
    const c = (await t.api.post('/v1/contacts', { email: 'p@example.com', name: 'P', tags: ['a', 'b'] })).body;
    const renamed = await t.api.patch(`/v1/contacts/${c.id}`, { name: 'Pat' });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe('Pat');
    expect(renamed.body.tags.map((x: { name: string }) => x.name)).toEqual(['a', 'b']);
    const retagged = await t.api.patch(`/v1/contacts/${c.id}`, { tags: ['b', 'c'] });
    expect(retagged.body.name).toBe('Pat');
    expect(retagged.body.tags.map((x: { name: string }) => x.name)).toEqual(['b', 'c']);
    const cleared = await t.api.patch(`/v1/contacts/${c.id}`, { name: null, tags: [] });
    expect(cleared.body).toMatchObject({ name: null, tags: [] });
    expect(Date.parse(cleared.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(c.updated_at));

    expect((await t.api.patch(`/v1/contacts/${c.id}`, { email: 'other@example.com' })).status).toBe(422);
    expect((await t.api.patch(`/v1/contacts/${c.id}`, { status: 'subscribed' })).status).toBe(422);
    expect((await t.api.patch('/v1/contacts/ct_missing', { name: 'x' })).status).toBe(404);
  });

  it('upserts by URL-encoded address with PUT, answering 200 for both create and update', async () => {
    await using t = await startTestApp();
    const path = `/v1/contacts/by-email/${encodeURIComponent('Zoë+news@Example.com')}`;
    const created = await t.api.put(path, { name: 'Zoë', tags: ['x'] });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ email: 'zoë+news@example.com', name: 'Zoë', status: 'subscribed' });
    const updated = await t.api.put(path, { tags: ['y'] });
    expect(updated.status).toBe(200);
    expect(updated.body.id).toBe(created.body.id);
    // Absent fields are kept.
    expect(updated.body.name).toBe('Zoë');
    expect(updated.body.tags.map((x: { name: string }) => x.name)).toEqual(['y']);
    expect((await t.api.put(`/v1/contacts/by-email/${encodeURIComponent('ZOË+NEWS@example.com')}`, {})).body.id).toBe(created.body.id);

    // "/" is a valid address character; encoded, it stays inside the path segment.
    const slash = await t.api.put(`/v1/contacts/by-email/${encodeURIComponent('a/b@example.com')}`, {});
    expect(slash.status).toBe(200);
    expect(slash.body.email).toBe('a/b@example.com');
    await t.api.delete(`/v1/contacts/${slash.body.id}`);

    const invalid = await t.api.put(`/v1/contacts/by-email/${encodeURIComponent('no at sign')}`, {});
    expect(invalid.status).toBe(422);
    expect(invalid.body.error.param).toBe('email');
    expect((await t.api.put(path, { email: 'x@example.com' })).status).toBe(422);
    expect((await t.api.get('/v1/contacts')).body.data).toHaveLength(1);
  });

  it('unsubscribes with an optional reason of at most 500 characters, and suppresses the address', async () => {
    await using t = await startTestApp();
    const c = (await t.api.post('/v1/contacts', { email: 'u@example.com' })).body;
    const tooLong = await t.api.post(`/v1/contacts/${c.id}/unsubscribe`, { reason: 'x'.repeat(501) });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.error.param).toBe('reason');
    expect((await t.api.get(`/v1/contacts/${c.id}`)).body.status).toBe('subscribed');

    const done = await t.api.post(`/v1/contacts/${c.id}/unsubscribe`, { reason: 'x'.repeat(500) });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: 'unsubscribed', unsubscribe_reason: 'x'.repeat(500) });
    expect(done.body.unsubscribed_at).not.toBeNull();
    const sup = (await t.api.get('/v1/suppressions?email=u@example.com')).body.data;
    expect(sup).toMatchObject([{ email: 'u@example.com', reason: 'unsubscribe' }]);

    // Again, without a body: unchanged, still one suppression.
    const again = await t.api.post(`/v1/contacts/${c.id}/unsubscribe`);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(done.body);
    expect((await t.api.get('/v1/suppressions')).body.data).toHaveLength(1);
    expect((await t.api.post('/v1/contacts/ct_nope/unsubscribe')).status).toBe(404);
  });

  it('counts the limits of a reason, a name and a property value in characters, as the schema does: an emoji is one', async () => {
    await using t = await startTestApp();
    const emoji = '\u{1F600}';
    const c = await t.api.post('/v1/contacts', { email: 'e@example.com', name: emoji.repeat(200), properties: { mood: emoji.repeat(500) } });
    expect(c.status).toBe(201);
    expect(c.body.name).toBe(emoji.repeat(200));
    expect((await t.api.patch(`/v1/contacts/${c.body.id}`, { name: emoji.repeat(201) })).body.error).toMatchObject({ code: 'validation_error', param: 'name' });

    const done = await t.api.post(`/v1/contacts/${c.body.id}/unsubscribe`, { reason: emoji.repeat(500) });
    expect(done.status).toBe(200);
    expect(done.body.unsubscribe_reason).toBe(emoji.repeat(500));
    const other = (await t.api.post('/v1/contacts', { email: 'f@example.com' })).body;
    const tooLong = await t.api.post(`/v1/contacts/${other.id}/unsubscribe`, { reason: emoji.repeat(501) });
    expect(tooLong.body.error).toMatchObject({ code: 'validation_error', param: 'reason' });
  });

  it('a re-created contact keeps the suppression status of its address', async () => {
    await using t = await startTestApp();
    const c = (await t.api.post('/v1/contacts', { email: 'back@example.com' })).body;
    await t.api.post(`/v1/contacts/${c.id}/unsubscribe`);
    await t.api.delete(`/v1/contacts/${c.id}`);
    const again = (await t.api.post('/v1/contacts', { email: 'back@example.com' })).body;
    expect(again.status).toBe('unsubscribed');

    await t.mailroom.services.store.write((tx) => t.mailroom.services.suppressions.addFromBounce(tx, t.workspaceId, 'Bounced@Example.com', 'hard_bounce'));
    expect((await t.api.post('/v1/contacts', { email: 'bounced@example.com' })).body.status).toBe('cleaned');
    await t.api.post('/v1/suppressions', { email: 'manual@example.com' });
    expect((await t.api.post('/v1/contacts', { email: 'manual@example.com' })).body.status).toBe('subscribed');
  });

  it('adds and removes tags, answering 404 that names the missing contact or tag', async () => {
    await using t = await startTestApp();
    const c = (await t.api.post('/v1/contacts', { email: 't@example.com' })).body;
    const tag = (await t.api.post('/v1/tags', { name: 'Customers' })).body;
    expect((await t.api.post(`/v1/contacts/${c.id}/tags/${tag.id}`)).status).toBe(204);
    expect((await t.api.post(`/v1/contacts/${c.id}/tags/${tag.id}`)).status).toBe(204);
    expect((await t.api.get(`/v1/contacts/${c.id}`)).body.tags).toEqual([{ id: tag.id, name: 'Customers' }]);

    const noContact = await t.api.post(`/v1/contacts/ct_missing/tags/${tag.id}`);
    expect(noContact.status).toBe(404);
    expect(noContact.body.error).toMatchObject({ code: 'not_found', param: 'contact_id' });
    expect(noContact.body.error.message).toContain('contact');
    const noTag = await t.api.delete(`/v1/contacts/${c.id}/tags/tag_missing`);
    expect(noTag.status).toBe(404);
    expect(noTag.body.error).toMatchObject({ code: 'not_found', param: 'tag_id' });
    expect(noTag.body.error.message).toContain('tag');

    expect((await t.api.delete(`/v1/contacts/${c.id}/tags/${tag.id}`)).status).toBe(204);
    expect((await t.api.delete(`/v1/contacts/${c.id}/tags/${tag.id}`)).status).toBe(204);
    expect((await t.api.get(`/v1/contacts/${c.id}`)).body.tags).toEqual([]);
  });

  it('needs the contacts scopes', async () => {
    await using t = await startTestApp();
    const reader = t.api.as((await t.seed.key({ scopes: ['contacts:read'] })).token);
    const sender = t.api.as((await t.seed.key({ scopes: ['sending_access'] })).token);
    expect((await reader.get('/v1/contacts')).status).toBe(200);
    expect((await reader.post('/v1/contacts', { email: 'a@example.com' })).status).toBe(403);
    expect((await sender.get('/v1/contacts')).status).toBe(403);
    expect((await t.api.as(null).get('/v1/contacts')).status).toBe(401);
  });

  it("keeps each workspace's contacts and tags to itself", async () => {
    await using t = await startTestApp();
    const other = await t.seed.workspace();
    const them = t.api.as((await t.seed.key({ workspaceId: other.id })).token);
    const c = (await t.api.post('/v1/contacts', { email: 'mine@example.com', tags: ['mine'] })).body;
    const tag = c.tags[0];

    expect((await them.get('/v1/contacts')).body.data).toEqual([]);
    expect((await them.get('/v1/tags')).body.data).toEqual([]);
    expect((await them.get(`/v1/contacts?tag_id=${tag.id}`)).body.data).toEqual([]);
    for (const r of [
      await them.get(`/v1/contacts/${c.id}`),
      await them.patch(`/v1/contacts/${c.id}`, { name: 'x' }),
      await them.delete(`/v1/contacts/${c.id}`),
      await them.post(`/v1/contacts/${c.id}/unsubscribe`),
      await them.post(`/v1/contacts/${c.id}/tags/${tag.id}`),
      await them.delete(`/v1/tags/${tag.id}`),
    ]) expect(r.status).toBe(404);

    // The same address is a separate contact in the other workspace.
    const theirs = await them.post('/v1/contacts', { email: 'mine@example.com' });
    expect(theirs.status).toBe(201);
    const mineTagOnTheirs = await them.post(`/v1/contacts/${theirs.body.id}/tags/${tag.id}`);
    expect(mineTagOnTheirs.body.error.param).toBe('tag_id');
    await them.post(`/v1/contacts/${theirs.body.id}/unsubscribe`);
    expect((await t.api.get(`/v1/contacts/${c.id}`)).body).toMatchObject({ status: 'subscribed', name: null });
    expect((await t.api.get('/v1/suppressions')).body.data).toEqual([]);
  });
});
