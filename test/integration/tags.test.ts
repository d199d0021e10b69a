import type { Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import { startTestApp } from '../helpers/app.js';
import * as tagNamesMigration from '../../src/store/migrations/0039_tag_names_nfc.js';

describe('tags', () => {
  it('creates tags with names unique per workspace regardless of case', async () => {
    await using t = await startTestApp();
    const vip = await t.api.post('/v1/tags', { name: '  VIP ' });
    expect(vip.status).toBe(201);
    expect(vip.body).toMatchObject({ object: 'tag', name: 'VIP' });
    expect(vip.body.id).toMatch(/^tag_/);

    for (const name of ['VIP', 'vip', ' Vip ']) {
      const dup = await t.api.post('/v1/tags', { name });
      expect(dup.status, name).toBe(422);
      expect(dup.body.error).toMatchObject({ code: 'already_exists', param: 'name', tag_id: vip.body.id });
    }
    // Another workspace may use the name.
    const other = await t.seed.workspace();
    const them = t.api.as((await t.seed.key({ workspaceId: other.id })).token);
    expect((await them.post('/v1/tags', { name: 'VIP' })).status).toBe(201);
    expect((await t.api.get('/v1/tags')).body.data.map((x: { id: string }) => x.id)).toEqual([vip.body.id]);
  });

  it('reads a name written composed (NFC) or decomposed (NFD) as one name, whichever comes first', async () => {
    await using t = await startTestApp();
    const composed = 'Caf\u00e9';
    const decomposed = 'Cafe\u0301';
    expect(composed).not.toBe(decomposed);
    for (const [first, second] of [[composed, decomposed], [decomposed, composed]]) {
      const ws = await t.seed.workspace();
      const api = t.api.as((await t.seed.key({ workspaceId: ws.id })).token);
      const made = await api.post('/v1/tags', { name: first });
      expect(made.status).toBe(201);
      expect(made.body.name).toBe(composed);
      const dup = await api.post('/v1/tags', { name: second });
      expect(dup.status).toBe(422);
      expect(dup.body.error).toMatchObject({ code: 'already_exists', param: 'name', tag_id: made.body.id });
      expect((await api.post('/v1/tags', { name: second.toUpperCase() })).status).toBe(422);

      // Tags given by name on contacts find the same tag, in either form.
      const one = await api.post('/v1/contacts', { email: 'one@example.com', tags: [second, first] });
      expect(one.status).toBe(201);
      expect(one.body.tags).toEqual([{ id: made.body.id, name: composed }]);
      const upserted = await api.put('/v1/contacts/by-email/two%40example.com', { tags: [second] });
      expect(upserted.body.tags).toEqual([{ id: made.body.id, name: composed }]);
      const patched = await api.patch(`/v1/contacts/${one.body.id}`, { tags: [second, 'Other'] });
      expect(patched.body.tags.map((x: { id: string }) => x.id)).toContain(made.body.id);
      const bulk = await api.post('/v1/contacts/bulk', { contacts: [
        { email: 'three@example.com', tags: [second] }, { email: 'four@example.com', tags: [first, second] },
      ] });
      expect(bulk.status).toBe(200);
      const listed = (await api.get(`/v1/contacts?tag_id=${made.body.id}&limit=100`)).body.data.map((c: { email: string }) => c.email);
      expect(listed.sort()).toEqual(['four@example.com', 'one@example.com', 'three@example.com', 'two@example.com']);
      expect((await api.get('/v1/tags')).body.data.map((x: { name: string }) => x.name).sort()).toEqual([composed, 'Other']);
    }
  });

  it('composes the names of tags kept decomposed before, unless that makes two tags one', async () => {
    await using t = await startTestApp();
    const { store } = t.mailroom.services;
    const ws = await t.seed.workspace();
    const api = t.api.as((await t.seed.key({ workspaceId: ws.id })).token);
    // Rows as they were written when names were compared as given.
    const row = (id: string, workspace_id: string, name: string) => ({ id, workspace_id, name, name_key: name.toLowerCase(), created_at: Date.now() });
    await store.write((tx) => tx.insertInto('tags').values([
      row('tag_lone', t.workspaceId, 'Cafe\u0301'),
      row('tag_twin_nfd', ws.id, 'Cafe\u0301'), row('tag_twin_nfc', ws.id, 'Caf\u00e9'),
    ]).execute());
    await tagNamesMigration.up(store.db as unknown as Kysely<unknown>);

    const lone = await t.api.post('/v1/contacts', { email: 'lone@example.com', tags: ['Caf\u00e9'] });
    expect(lone.body.tags).toEqual([{ id: 'tag_lone', name: 'Caf\u00e9' }]);
    expect((await t.api.post('/v1/tags', { name: 'Cafe\u0301' })).body.error).toMatchObject({ code: 'already_exists', tag_id: 'tag_lone' });
    // Two tags the workspace already had stay two; the name finds the composed one.
    const twin = await api.post('/v1/contacts', { email: 'twin@example.com', tags: ['Cafe\u0301'] });
    expect(twin.body.tags).toEqual([{ id: 'tag_twin_nfc', name: 'Caf\u00e9' }]);
    expect((await api.get('/v1/tags')).body.data.map((x: { id: string }) => x.id).sort()).toEqual(['tag_twin_nfc', 'tag_twin_nfd']);
  });

  it('refuses blank, long, missing and unknown fields', async () => {
    await using t = await startTestApp();
    for (const body of [{}, { name: '' }, { name: '   ' }, { name: 'x'.repeat(101) }, { name: 5 }, { name: 'a', colour: 'red' }]) {
      const r = await t.api.post('/v1/tags', body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body.error.code).toBe('validation_error');
    }
    expect((await t.api.get('/v1/tags')).body.data).toEqual([]);
  });

  it('takes a name of 100 characters however many UTF-16 units they need', async () => {
    await using t = await startTestApp();
    const name = '\u{1F3F7}'.repeat(100);
    const res = await t.api.post('/v1/tags', { name });
    expect(res.status).toBe(201);
    expect(res.body.name).toBe(name);
    const contact = await t.api.post('/v1/contacts', { email: 'a@example.com', tags: [name] });
    expect(contact.status).toBe(201);
    expect(contact.body.tags).toEqual([{ id: res.body.id, name }]);
  });

  it('checks a name\'s limits without the white space around it, which is not kept', async () => {
    await using t = await startTestApp();
    const fits = 'n'.repeat(100);
    const tag = await t.api.post('/v1/tags', { name: `  ${fits}\t ` });
    expect(tag.status).toBe(201);
    expect(tag.body.name).toBe(fits);
    for (const name of [' ', '\t\n', `${'n'.repeat(101)} `]) {
      const r = await t.api.post('/v1/tags', { name });
      expect(r.status, JSON.stringify(name)).toBe(422);
      expect(r.body.error).toMatchObject({ code: 'validation_error', param: 'name' });
    }
    const contact = await t.api.post('/v1/contacts', { email: 'a@example.com', tags: [` ${'m'.repeat(100)} `] });
    expect(contact.status).toBe(201);
    expect(contact.body.tags).toEqual([expect.objectContaining({ name: 'm'.repeat(100) })]);
    const blank = await t.api.patch(`/v1/contacts/${contact.body.id}`, { tags: ['  '] });
    expect(blank.status).toBe(422);
    expect(blank.body.error).toMatchObject({ code: 'validation_error', param: expect.stringMatching(/^tags/) });
  });

  it('counts a name\'s characters in NFC, as it is kept, wherever a tag name is given', async () => {
    await using t = await startTestApp();
    // Each accented letter written decomposed is two characters that compose to one.
    const decomposed = (letter: string, n: number) => `${letter}\u0301`.repeat(n);
    const composed = (letter: string, n: number) => decomposed(letter, n).normalize('NFC');
    expect(composed('e', 100)).toHaveLength(100);
    expect(decomposed('e', 100)).toHaveLength(200);

    const tag = await t.api.post('/v1/tags', { name: decomposed('e', 100) });
    expect(tag.status).toBe(201);
    expect(tag.body.name).toBe(composed('e', 100));
    for (const name of [decomposed('o', 101), composed('o', 101)]) {
      const r = await t.api.post('/v1/tags', { name });
      expect(r.status, name).toBe(422);
      expect(r.body.error).toMatchObject({ code: 'validation_error', param: 'name' });
    }

    const made = await t.api.post('/v1/contacts', { email: 'a@example.com', tags: [decomposed('a', 100), composed('e', 100)] });
    expect(made.status).toBe(201);
    expect(made.body.tags.map((x: { name: string }) => x.name).sort()).toEqual([composed('a', 100), composed('e', 100)]);
    const upserted = await t.api.put('/v1/contacts/by-email/b%40example.com', { tags: [decomposed('i', 100)] });
    expect(upserted.status).toBe(200);
    expect(upserted.body.tags).toEqual([expect.objectContaining({ name: composed('i', 100) })]);
    const patched = await t.api.patch(`/v1/contacts/${made.body.id}`, { tags: [decomposed('u', 100)] });
    expect(patched.status).toBe(200);
    expect(patched.body.tags).toEqual([expect.objectContaining({ name: composed('u', 100) })]);
    for (const name of [decomposed('y', 101), composed('y', 101)]) {
      for (const r of [
        await t.api.post('/v1/contacts', { email: 'c@example.com', tags: [name] }),
        await t.api.put('/v1/contacts/by-email/c%40example.com', { tags: [name] }),
        await t.api.patch(`/v1/contacts/${made.body.id}`, { tags: [name] }),
      ]) {
        expect(r.status, name).toBe(422);
        expect(r.body.error).toMatchObject({ code: 'validation_error', param: expect.stringMatching(/^tags/) });
      }
    }
    const bulk = await t.api.post('/v1/contacts/bulk', { contacts: [
      { email: 'd@example.com', tags: [decomposed('a', 100)] },
      { email: 'e@example.com', tags: [decomposed('y', 101)] },
      { email: 'f@example.com', tags: [composed('y', 101)] },
    ] });
    expect(bulk.status).toBe(200);
    expect(bulk.body).toMatchObject({ created: 1, failed: 2 });
    expect(bulk.body.errors.map((e: { index: number; code: string }) => [e.index, e.code])).toEqual([[1, 'validation_error'], [2, 'validation_error']]);
    expect((await t.api.get('/v1/tags?limit=100')).body.data.map((x: { name: string }) => x.name).sort())
      .toEqual(['a', 'e', 'i', 'u'].map((letter) => composed(letter, 100)));
  });

  it('deleting a tag removes it from every contact', async () => {
    await using t = await startTestApp();
    const a = (await t.api.post('/v1/contacts', { email: 'a@example.com', tags: ['gold', 'silver'] })).body;
    const b = (await t.api.post('/v1/contacts', { email: 'b@example.com', tags: ['gold'] })).body;
    const gold = a.tags.find((x: { name: string }) => x.name === 'gold');
    expect((await t.api.get(`/v1/contacts?tag_id=${gold.id}`)).body.data).toHaveLength(2);

    expect((await t.api.delete(`/v1/tags/${gold.id}`)).status).toBe(204);
    expect((await t.api.get(`/v1/contacts/${a.id}`)).body.tags.map((x: { name: string }) => x.name)).toEqual(['silver']);
    expect((await t.api.get(`/v1/contacts/${b.id}`)).body.tags).toEqual([]);
    expect((await t.api.get(`/v1/contacts?tag_id=${gold.id}`)).body.data).toEqual([]);
    const left = await t.mailroom.services.store.db.selectFrom('contact_tags').select('tag_id').where('tag_id', '=', gold.id).execute();
    expect(left).toEqual([]);

    expect((await t.api.delete(`/v1/tags/${gold.id}`)).status).toBe(404);
    expect((await t.api.post(`/v1/contacts/${a.id}/tags/${gold.id}`)).status).toBe(404);
    // The name is free again.
    expect((await t.api.post('/v1/tags', { name: 'Gold' })).status).toBe(201);
  });

  it('lists tags newest first with cursors both ways', async () => {
    await using t = await startTestApp();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await t.api.post('/v1/tags', { name: `t${i}` })).body.id);
    const newestFirst = [...ids].reverse();
    const p1 = (await t.api.get('/v1/tags?limit=2')).body;
    const p2 = (await t.api.get(`/v1/tags?limit=2&starting_after=${p1.next_cursor}`)).body;
    const p3 = (await t.api.get(`/v1/tags?limit=2&starting_after=${p2.next_cursor}`)).body;
    expect([...p1.data, ...p2.data, ...p3.data].map((x: { id: string }) => x.id)).toEqual(newestFirst);
    expect(p3.has_more).toBe(false);
    expect(p3.next_cursor).toBeUndefined();
    // p2's cursor marks its last record (the 4th newest); walking back gives the ones before it.
    const back = (await t.api.get(`/v1/tags?limit=2&ending_before=${p2.next_cursor}`)).body;
    expect(back.data.map((x: { id: string }) => x.id)).toEqual(newestFirst.slice(1, 3));
    expect(back.has_more).toBe(true);
    const back2 = (await t.api.get(`/v1/tags?limit=2&ending_before=${back.next_cursor}`)).body;
    expect(back2.data.map((x: { id: string }) => x.id)).toEqual(newestFirst.slice(0, 1));
    expect(back2.has_more).toBe(false);
    expect((await t.api.get('/v1/tags?starting_after=nope')).status).toBe(400);
  });

  it('needs the contacts scopes', async () => {
    await using t = await startTestApp();
    const reader = t.api.as((await t.seed.key({ scopes: ['contacts:read'] })).token);
    expect((await reader.get('/v1/tags')).status).toBe(200);
    expect((await reader.post('/v1/tags', { name: 'x' })).status).toBe(403);
    expect((await reader.delete('/v1/tags/tag_x')).status).toBe(403);
  });
});
