import { describe, expect, it } from 'vitest';
import { startTestApp, type ApiClient } from '../helpers/app.js';

async function walkForward(api: ApiClient, query: string, limit: number, between?: () => Promise<void>) {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const res = await api.get(`/v1/api-keys?limit=${limit}${query}${cursor ? `&starting_after=${cursor}` : ''}`);
    expect(res.status).toBe(200);
    ids.push(...res.body.data.map((k: { id: string }) => k.id));
    if (!res.body.has_more) {
      expect(res.body.next_cursor).toBeUndefined();
      return ids;
    }
    cursor = res.body.next_cursor;
    await between?.();
  }
  throw new Error('walk did not end');
}

describe('pagination', () => {
  it('walks forward newest first with a filter, unaffected by records inserted during the walk', async () => {
    await using t = await startTestApp();
    for (let i = 0; i < 17; i++) await t.seed.key({ mode: i % 3 === 0 ? 'test' : 'live', name: `k${i}` });
    const before = (await t.mailroom.services.apiKeys.list(t.workspaceId, { mode: 'live' }, { limit: 100, cursor: String }));
    const expected = before.data.map((k) => k.id);

    let inserted = 0;
    const walked = await walkForward(t.api, '&mode=live', 4, async () => {
      await Promise.all([t.seed.key({ name: `during-${inserted++}` }), t.seed.key({ mode: 'test' })]);
    });
    expect(inserted).toBeGreaterThan(0);
    expect(walked).toEqual(expected);
    expect(new Set(walked).size).toBe(walked.length);
  });

  it('walks backward with ending_before and next_cursor', async () => {
    await using t = await startTestApp();
    for (let i = 0; i < 20; i++) await t.seed.key({ name: `k${i}` });
    const all = await walkForward(t.api, '', 100);
    expect(all).toHaveLength(21);

    // Go forward three pages of 5, then walk back from there.
    let cursor: string | undefined;
    for (let i = 0; i < 3; i++) cursor = (await t.api.get(`/v1/api-keys?limit=5${cursor ? `&starting_after=${cursor}` : ''}`)).body.next_cursor;
    const back: string[][] = [];
    for (let pages = 0; pages < 10; pages++) {
      const res = await t.api.get(`/v1/api-keys?limit=4&ending_before=${cursor}`);
      back.push(res.body.data.map((k: { id: string }) => k.id));
      if (!res.body.has_more) break;
      cursor = res.body.next_cursor;
    }
    // Each page is newest first; walking back, pages come in reverse.
    expect(back.reverse().flat()).toEqual(all.slice(0, 14));
    expect(back.at(0)).toHaveLength(2);
  });

  it('rejects bad limits, both cursors at once, and forged or foreign cursors with 400', async () => {
    await using t = await startTestApp();
    for (let i = 0; i < 3; i++) await t.seed.key();
    for (const limit of ['0', '101', 'abc', '-1', '2.5']) {
      const res = await t.api.get(`/v1/api-keys?limit=${limit}`);
      expect(res.status, `limit=${limit}`).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'validation_error', param: 'limit' });
    }
    expect((await t.api.get('/v1/api-keys?limit=100')).status).toBe(200);
    expect((await t.api.get('/v1/api-keys?limit=1')).body.data).toHaveLength(1);
    expect((await t.api.get('/v1/api-keys')).body.data.length).toBeLessThanOrEqual(25);

    const { next_cursor: cursor } = (await t.api.get('/v1/api-keys?limit=1')).body;
    const both = await t.api.get(`/v1/api-keys?starting_after=${cursor}&ending_before=${cursor}`);
    expect(both.status).toBe(400);

    const tampered = cursor.slice(0, -2) + (cursor.endsWith('AA') ? 'BB' : 'AA');
    for (const bad of [tampered, 'not-a-cursor', 'x'.repeat(200), '%00']) {
      const res = await t.api.get(`/v1/api-keys?starting_after=${bad}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_cursor', param: 'starting_after' });
    }
    // A cursor of one list is refused by another.
    const { id: keyId } = (await t.api.get('/v1/api-keys?limit=1')).body.data[0];
    const other = await t.api.get(`/v1/api-keys/${keyId}/activity?ending_before=${cursor}`);
    expect(other.body.error.code).toBe('invalid_cursor');
    expect((await t.api.get('/v1/api-keys?unknown_param=1')).status).toBe(400);
  });
});
