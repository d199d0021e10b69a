import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { startTestApp, type ApiClient } from '../helpers/app.js';

interface Walked {
  ids: string[];
  /** next_cursor of each page that had one, with the id of that page's last record. */
  cursors: Array<{ cursor: string; lastId: string }>;
}

/** Walks a list forward with small pages, repeating the filters on every request. */
async function walkForward(api: ApiClient, path: string, filters: string, limit = 2): Promise<Walked> {
  const out: Walked = { ids: [], cursors: [] };
  let cursor: string | undefined;
  for (let i = 0; i < 50; i++) {
    const q = [filters, `limit=${limit}`, cursor && `starting_after=${cursor}`].filter(Boolean).join('&');
    const { status, body } = await api.get(`${path}?${q}`);
    expect(status).toBe(200);
    expect(body.data.length).toBeLessThanOrEqual(limit);
    out.ids.push(...body.data.map((r: { id: string }) => r.id));
    if (!body.has_more) {
      expect(body.next_cursor).toBeUndefined();
      return out;
    }
    out.cursors.push({ cursor: body.next_cursor, lastId: body.data.at(-1).id });
    cursor = body.next_cursor;
  }
  throw new Error('walk did not end');
}

/** Walks back from a cursor to the newest record; returns ids newest first. */
async function walkBackward(api: ApiClient, path: string, filters: string, from: string, limit = 2): Promise<string[]> {
  const pages: string[][] = [];
  let cursor = from;
  for (let i = 0; i < 50; i++) {
    const q = [filters, `limit=${limit}`, `ending_before=${cursor}`].filter(Boolean).join('&');
    const { status, body } = await api.get(`${path}?${q}`);
    expect(status).toBe(200);
    pages.unshift(body.data.map((r: { id: string }) => r.id));
    if (!body.has_more) return pages.flat();
    cursor = body.next_cursor;
  }
  throw new Error('walk did not end');
}

describe('listing contacts', () => {
  it('walks forward and backward through every filter without gaps or repeats', async () => {
    const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'));
    await using t = await startTestApp({ clock });
    const { store, contacts } = t.mailroom.services;
    const t0 = clock.now();
    const gold = (await t.api.post('/v1/tags', { name: 'gold' })).body;

    const made: Array<{ id: string; i: number; email: string }> = [];
    for (let i = 0; i < 11; i++) {
      const email = `user${i}@${i % 2 ? 'alpha' : 'beta'}.example`;
      const c = (await t.api.post('/v1/contacts', { email, ...(i % 3 === 0 && { tags: ['gold'] }) })).body;
      made.push({ id: c.id, i, email });
      clock.advance(1000);
    }
    for (const i of [2, 5, 9]) await t.api.post(`/v1/contacts/${made[i].id}/unsubscribe`);
    await store.write((tx) => t.mailroom.services.suppressions.addFromBounce(tx, t.workspaceId, made[7].email, 'complaint'));
    await store.write(async (tx) => {
      for (const i of [1, 4, 8, 10]) await contacts.recordEvent(tx, t.workspaceId, made[i].email, 'email.opened', clock.now());
      await contacts.recordEvent(tx, t.workspaceId, made[3].email, 'email.sent', clock.now());
    });

    const status = (i: number) => ([2, 5, 9].includes(i) ? 'unsubscribed' : i === 7 ? 'cleaned' : 'subscribed');
    const tier = (i: number) => ([1, 4, 8, 10].includes(i) ? 'engaged' : i === 3 ? 'new' : 'no_data');
    const iso = (ms: number) => encodeURIComponent(new Date(ms).toISOString());
    const cases: Array<[string, (i: number) => boolean]> = [
      ['', () => true],
      ['email=ALPHA', (i) => i % 2 === 1],
      ['email=user1', (i) => i === 1 || i === 10],
      ['status=subscribed', (i) => status(i) === 'subscribed'],
      ['status=unsubscribed', (i) => status(i) === 'unsubscribed'],
      ['status=cleaned', (i) => status(i) === 'cleaned'],
      ['engagement_tier=engaged', (i) => tier(i) === 'engaged'],
      ['engagement_tier=new', (i) => tier(i) === 'new'],
      ['engagement_tier=no_data', (i) => tier(i) === 'no_data'],
      ['engagement_tier=cold', () => false],
      [`tag_id=${gold.id}`, (i) => i % 3 === 0],
      [`created_after=${iso(t0 + 2500)}`, (i) => i >= 3],
      [`created_before=${iso(t0 + 6500)}`, (i) => i <= 6],
      [`created_after=${iso(t0 + 2500)}&created_before=${iso(t0 + 6500)}&email=alpha&status=subscribed`, (i) => i >= 3 && i <= 6 && i % 2 === 1 && status(i) === 'subscribed'],
    ];
    for (const [filters, keep] of cases) {
      const expected = made.filter((m) => keep(m.i)).map((m) => m.id).reverse();
      const forward = await walkForward(t.api, '/v1/contacts', filters);
      expect(forward.ids, filters).toEqual(expected);
      for (const { cursor, lastId } of forward.cursors) {
        const back = await walkBackward(t.api, '/v1/contacts', filters, cursor);
        expect(back, `${filters} back from ${lastId}`).toEqual(expected.slice(0, expected.indexOf(lastId)));
      }
    }
  });

  it('does not repeat or skip records when contacts arrive during a walk', async () => {
    await using t = await startTestApp();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await t.api.post('/v1/contacts', { email: `w${i}@example.com` })).body.id);
    const first = (await t.api.get('/v1/contacts?limit=2')).body;
    await t.api.post('/v1/contacts', { email: 'late@example.com' });
    const rest = await walkForward(t.api, '/v1/contacts', '', 2);
    const second = (await t.api.get(`/v1/contacts?limit=10&starting_after=${first.next_cursor}`)).body;
    expect([...first.data, ...second.data].map((c: { id: string }) => c.id)).toEqual([...ids].reverse());
    expect(rest.ids).toHaveLength(6);
  });

  it('answers 400 for bad cursors and bad query parameters', async () => {
    await using t = await startTestApp();
    for (let i = 0; i < 3; i++) await t.api.post('/v1/contacts', { email: `q${i}@example.com` });
    await t.api.post('/v1/tags', { name: 'a' });
    await t.api.post('/v1/tags', { name: 'b' });
    const page = (await t.api.get('/v1/contacts?limit=1')).body;
    const tagCursor = (await t.api.get('/v1/tags?limit=1')).body.next_cursor;

    const bad: Array<[string, string]> = [
      ['starting_after=bogus', 'invalid_cursor'],
      [`starting_after=${page.next_cursor.slice(0, -2)}xx`, 'invalid_cursor'],
      [`ending_before=${tagCursor}`, 'invalid_cursor'],
      [`starting_after=${page.next_cursor}&ending_before=${page.next_cursor}`, 'bad_request'],
      ['limit=0', 'validation_error'],
      ['limit=101', 'validation_error'],
      ['status=gone', 'validation_error'],
      ['engagement_tier=hot', 'validation_error'],
      ['created_after=yesterday', 'validation_error'],
      ['colour=red', 'validation_error'],
    ];
    for (const [q, code] of bad) {
      const r = await t.api.get(`/v1/contacts?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.error.code, q).toBe(code);
    }
    expect((await t.api.get(`/v1/contacts?starting_after=${page.next_cursor}`)).body.data).toHaveLength(2);
    expect((await t.api.get('/v1/contacts?tag_id=tag_unknown')).body.data).toEqual([]);
  });
});
