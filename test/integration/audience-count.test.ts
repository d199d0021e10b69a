import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audiencePage, countAudience, type AudienceFilter } from '../../src/contacts/index.js';
import { startTestApp, type ApiClient, type TestApp } from '../helpers/app.js';

// An audience is counted as the contacts it would hold without suppressions,
// less the suppressed among them. The count must be exactly the number of
// contacts the sender's walk of the audience yields, whatever the filter and
// whatever the other workspaces hold: suppressions are per workspace, a
// deleted contact's address can come back as a new contact, and only
// subscribed contacts count.

describe('audience count', () => {
  let t: TestApp;
  let ws: string;
  const tagIds: Record<string, string> = {};

  async function contact(api: ApiClient, email: string, tags: string[] = []) {
    const res = await api.post('/v1/contacts', { email, tags });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body as { id: string };
  }

  async function walked(f: AudienceFilter, maxPos?: number): Promise<number> {
    let seen = 0;
    for (let afterPos = 0; ;) {
      const page = await audiencePage(t.mailroom.services.store.db, ws, f, { afterPos, maxPos, limit: 3 });
      if (page.length === 0) return seen;
      seen += page.length;
      afterPos = page.at(-1)!.pos;
    }
  }

  beforeAll(async () => {
    t = await startTestApp();
    ws = t.workspaceId;
    for (let i = 0; i < 12; i++) await contact(t.api, `reader${i}@example.com`, i % 3 === 0 ? ['news'] : i % 3 === 1 ? ['news', 'vip'] : []);
    // Suppressed here: two tagged contacts and one untagged; one address suppressed has no contact.
    for (const email of ['reader0@example.com', 'reader4@example.com', 'reader5@example.com', 'nobody@example.com']) {
      expect((await t.api.post('/v1/suppressions', { email })).status).toBe(201);
    }
    // Unsubscribed, which suppresses the address too: counted out once, not twice.
    const gone = await contact(t.api, 'gone@example.com', ['news']);
    expect((await t.api.post(`/v1/contacts/${gone.id}/unsubscribe`, {})).status).toBe(200);
    expect((await t.api.post('/v1/suppressions', { email: 'gone@example.com' })).body.error.code).toBe('already_exists');
    // Deleted, then the same address made again: only the live one counts.
    const deleted = await contact(t.api, 'again@example.com', ['news']);
    expect((await t.api.delete(`/v1/contacts/${deleted.id}`)).status).toBe(204);
    await contact(t.api, 'again@example.com', ['news']);
    // Another workspace suppresses addresses this one holds, and holds them too.
    const other = await t.seed.workspace();
    const theirs = t.api.as((await t.seed.key({ workspaceId: other.id })).token);
    for (const email of ['reader1@example.com', 'reader2@example.com']) {
      await contact(theirs, email, ['news']);
      expect((await theirs.post('/v1/suppressions', { email })).status).toBe(201);
    }
    for (const tag of (await t.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>) tagIds[tag.name] = tag.id;
  });

  afterAll(async () => {
    await t?.close();
  });

  it('equals the contacts the audience walk yields, for every kind of filter', async () => {
    const filters: Array<[AudienceFilter, number]> = [
      [{ tagIds: [], excludeTagIds: [], engagementTiers: null }, 10],
      [{ tagIds: [tagIds.news], excludeTagIds: [], engagementTiers: null }, 7],
      [{ tagIds: [tagIds.news], excludeTagIds: [tagIds.vip], engagementTiers: null }, 4],
      [{ tagIds: [], excludeTagIds: [tagIds.news], engagementTiers: null }, 3],
      [{ tagIds: [], excludeTagIds: [], engagementTiers: ['no_data'] }, 10],
      [{ tagIds: [], excludeTagIds: [], engagementTiers: ['engaged', 'at_risk'] }, 0],
    ];
    for (const [filter, expected] of filters) {
      expect(await walked(filter), JSON.stringify(filter)).toBe(expected);
      expect(await countAudience(t.mailroom.services.store.db, ws, filter), JSON.stringify(filter)).toBe(expected);
    }
  });

  it('stops at the position an audience was fixed at', async () => {
    const all: AudienceFilter = { tagIds: [], excludeTagIds: [], engagementTiers: null };
    const first = await audiencePage(t.mailroom.services.store.db, ws, all, { afterPos: 0, limit: 6 });
    const maxPos = first.at(-1)!.pos;
    expect(await countAudience(t.mailroom.services.store.db, ws, all, maxPos)).toBe(6);
    expect(await walked(all, maxPos)).toBe(6);
  });
});
