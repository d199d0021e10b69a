import { describe, expect, it } from 'vitest';
import { startTestApp } from '../helpers/app.js';

describe('workspace isolation', () => {
  it('never shows one workspace the records or cursors of another', async () => {
    await using t = await startTestApp();
    const other = await t.seed.workspace();
    const { token } = await t.seed.key({ workspaceId: other.id });
    const them = t.api.as(token);

    for (let i = 0; i < 3; i++) await t.api.post('/v1/api-keys', { name: `mine-${i}` });
    const mine = (await t.api.get('/v1/api-keys?limit=2')).body;
    const theirs = (await them.get('/v1/api-keys')).body;
    expect(theirs.data).toHaveLength(1);
    expect(theirs.data[0].name).toBe('test key');

    const foreignId = mine.data[0].id;
    expect((await them.get(`/v1/api-keys/${foreignId}`)).status).toBe(404);
    expect((await them.delete(`/v1/api-keys/${foreignId}`)).status).toBe(404);
    expect((await them.get(`/v1/api-keys/${foreignId}/activity`)).status).toBe(404);
    const foreignCursor = await them.get(`/v1/api-keys?starting_after=${mine.next_cursor}`);
    expect(foreignCursor.status).toBe(400);
    expect(foreignCursor.body.error.code).toBe('invalid_cursor');
    // Still usable by its owner.
    expect((await t.api.get(`/v1/api-keys?starting_after=${mine.next_cursor}`)).status).toBe(200);
  });

  it('refuses a broadcast that names another workspace\'s template by its id', async () => {
    await using t = await startTestApp();
    const template = (await t.api.post('/v1/templates', { name: 'Welcome', subject: 'Hi', html: '<p>Hello</p>' })).body;
    const other = await t.seed.workspace();
    const them = t.api.as((await t.seed.key({ workspaceId: other.id })).token);
    const draft = { name: 'Borrowed', from: 'news@acme.test', audience: { tag_ids: [] } };

    const created = await them.post('/v1/broadcasts', { ...draft, template: { id: template.id } });
    expect(created.status).toBe(422);
    expect(created.body.error).toMatchObject({ code: 'validation_error', param: 'template.id' });

    const own = (await them.post('/v1/broadcasts', { ...draft, subject: 'Hi', html: '<p>Ours</p>' })).body;
    const edited = await them.patch(`/v1/broadcasts/${own.id}`, { template: { id: template.id } });
    expect(edited.status).toBe(422);
    expect(edited.body.error).toMatchObject({ code: 'validation_error', param: 'template.id' });
  });
});
