import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Migrator, sql } from 'kysely';
import { ManualClock } from '../../src/core/clock.js';
import { migrations } from '../../src/store/migrations/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { onPostgres } from '../helpers/database.js';
import { eventually } from '../helpers/smtp-app.js';

// GET /v1/emails: every filter of the spec, alone and combined, walked with
// cursors forwards and backwards; and the paged event timeline of one email.

interface Sent { id: string; from: string; to: string; subject: string; tags: string[]; at: number }

describe('GET /v1/emails', () => {
  const clock = new ManualClock(Date.parse('2026-11-01T00:00:00Z'));
  let t: TestApp;
  let domainId: string;
  const sent: Sent[] = [];

  beforeAll(async () => {
    t = await startTestApp({ clock, env: { MAILROOM_SEND_DELAY: '3600' } });
    domainId = (await t.seed.activeDomain('acme.test')).id;
    await t.seed.activeDomain('other.test');
    const testApi = t.api.as((await t.seed.key({ mode: 'test' })).token);
    for (let i = 0; i < 24; i++) {
      const e = {
        from: i % 3 === 0 ? 'Support <help@other.test>' : 'Ann Lee <ann@acme.test>',
        to: i % 4 === 0 ? `Client${i}@Example.ORG` : `user${i}@mail.example.net`,
        subject: i % 2 === 0 ? `Invoice #${1000 + i} ready` : `Weekly digest ${i}`,
        tags: i % 5 === 0 ? ['billing', 'monthly'] : i % 5 === 1 ? ['digest'] : [],
      };
      const api = i === 23 ? testApi : t.api;
      const res = await api.post('/v1/emails', { ...e, text: 'x', ...(i % 6 === 5 && { scheduled_at: 'in 3 days' }) });
      expect(res.status).toBe(201);
      sent.push({ ...e, id: res.body.id, at: clock.now() });
      clock.advance(60_000);
    }
  });
  afterAll(() => t.close());

  /** Every id of the filtered list, walking forwards with `limit`. */
  async function walk(query: string, limit = 5): Promise<string[]> {
    const ids: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 50; page++) {
      const res = await t.api.get(`/v1/emails?limit=${limit}${query}${cursor ? `&starting_after=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(limit);
      ids.push(...res.body.data.map((e: { id: string }) => e.id));
      if (!res.body.has_more) {
        expect(res.body.next_cursor).toBeUndefined();
        return ids;
      }
      cursor = res.body.next_cursor;
    }
    throw new Error('walk did not end');
  }

  const expected = (pick: (e: Sent, i: number) => boolean) => sent.filter(pick).map((e) => e.id).reverse();

  it('lists newest first and walks every page without duplicates', async () => {
    expect(await walk('')).toEqual(expected(() => true));
    const first = (await t.api.get('/v1/emails?limit=3')).body;
    expect(first.data[0]).not.toHaveProperty('html');
    expect(first.data[0]).not.toHaveProperty('recipients');
  });

  it('walks back with ending_before', async () => {
    const all = expected(() => true);
    const page2 = (await t.api.get(`/v1/emails?limit=5&starting_after=${(await t.api.get('/v1/emails?limit=5')).body.next_cursor}`)).body;
    expect(page2.data.map((e: { id: string }) => e.id)).toEqual(all.slice(5, 10));
    // Walking back from the oldest row of page 2 gives the rows just newer than it, newest first.
    const back = (await t.api.get(`/v1/emails?limit=3&ending_before=${page2.next_cursor}`)).body;
    expect(back.data.map((e: { id: string }) => e.id)).toEqual(all.slice(6, 9));
    expect(back.has_more).toBe(true);
    const further = (await t.api.get(`/v1/emails?limit=10&ending_before=${back.next_cursor}`)).body;
    expect(further.data.map((e: { id: string }) => e.id)).toEqual(all.slice(0, 6));
    expect(further.has_more).toBe(false);
  });

  it('filters by partial to, from and subject, ignoring case', async () => {
    expect(await walk('&to=example.org')).toEqual(expected((e) => e.to.toLowerCase().includes('example.org')));
    expect(await walk('&to=CLIENT1')).toEqual(expected((e) => e.to.toLowerCase().includes('client1')));
    expect(await walk('&from=support')).toEqual(expected((e) => e.from.startsWith('Support')));
    expect(await walk(`&subject=${encodeURIComponent('invoice #10')}`)).toEqual(expected((e) => e.subject.startsWith('Invoice #10')));
    expect(await walk('&subject=zzz-nothing')).toEqual([]);
  });

  it('matches needles shorter than a trigram too', async () => {
    expect(await walk('&to=r1')).toEqual(expected((e) => e.to.toLowerCase().includes('r1')));
    expect(await walk('&subject=%23')).toEqual(expected((e) => e.subject.includes('#')));
    expect(await walk('&subject=_')).toEqual([]); // LIKE wildcards match themselves only
    // Three UTF-16 units but two characters: no trigram to look up, so matched on the rows, on emails and on events.
    for (const needle of ['a😀', '😀😀', 'ü😀']) {
      expect(await walk(`&to=${encodeURIComponent(needle)}&subject=${encodeURIComponent(needle)}`), needle).toEqual([]);
      const events = await t.api.get(`/v1/events?from=${encodeURIComponent(needle)}&to=${encodeURIComponent(needle)}`);
      expect(events.status, needle).toBe(200);
      expect(events.body.data).toEqual([]);
    }
  });

  it('filters by tags (any of), status, domain and creation time, also combined', async () => {
    expect(await walk('&tags=digest,monthly')).toEqual(expected((e) => e.tags.includes('digest') || e.tags.includes('monthly')));
    expect(await walk('&tags=billing&tags=nothing')).toEqual(expected((e) => e.tags.includes('billing')));
    expect(await walk('&status=scheduled')).toEqual(expected((_, i) => i % 6 === 5));
    // The test-key email from acme.test has the domain too: the domain is the workspace's, whatever the key.
    expect(await walk(`&domain_id=${domainId}`)).toEqual(expected((e) => e.from.includes('acme.test')));
    const after = new Date(sent[10].at).toISOString();
    const before = new Date(sent[20].at).toISOString();
    expect(await walk(`&created_after=${after}&created_before=${before}`)).toEqual(expected((_, i) => i > 10 && i < 20));
    expect(await walk(`&created_after=${after}&subject=invoice&tags=billing`, 2))
      .toEqual(expected((e, i) => i > 10 && e.subject.startsWith('Invoice') && e.tags.includes('billing')));
  });

  it('refuses bad query parameters and cursors with 400', async () => {
    for (const query of ['status=sending', 'limit=0', 'limit=101', 'created_after=yesterday', 'starting_after=nonsense', 'colour=red']) {
      const res = await t.api.get(`/v1/emails?${query}`);
      expect(res.status, query).toBe(400);
    }
    // An empty tag filters by nothing the client meant: refused, not read as no filter.
    for (const query of ['tags=', 'tags=billing,,digest', 'tags=billing&tags=']) {
      expect((await t.api.get(`/v1/emails?${query}`)).body.error, query).toMatchObject({ code: 'validation_error', param: 'tags' });
    }
    const cursor = (await t.api.get('/v1/emails?limit=1')).body.next_cursor;
    expect((await t.api.get(`/v1/emails?starting_after=${cursor}&ending_before=${cursor}`)).status).toBe(400);
    // A cursor belongs to its list: not valid for an email's events.
    expect((await t.api.get(`/v1/emails/${sent[0].id}/events?starting_after=${cursor}`)).status).toBe(400);
  });

  it('pages through the events of one email', async () => {
    const e = sent[0];
    await t.api.patch(`/v1/emails/${e.id}`, { scheduled_at: 'in 1 hour' });
    await t.api.patch(`/v1/emails/${e.id}`, { scheduled_at: 'in 2 hours' });
    await t.api.post(`/v1/emails/${e.id}/cancel`);
    const first = (await t.api.get(`/v1/emails/${e.id}/events?limit=2`)).body;
    expect(first.data.map((x: { type: string }) => x.type)).toEqual(['email.cancelled', 'email.scheduled']);
    expect(first.data[0].data).toMatchObject({ previous_status: 'scheduled', subject: e.subject });
    const rest = (await t.api.get(`/v1/emails/${e.id}/events?limit=2&starting_after=${first.next_cursor}`)).body;
    expect(rest.data.map((x: { type: string }) => x.type)).toEqual(['email.scheduled', 'email.queued']);
    expect(rest.has_more).toBe(false);
    expect((await t.api.get('/v1/emails/em_unknown/events')).status).toBe(404);
  });
});

describe('GET /v1/emails partial match', () => {
  it('finds the needle itself, not rows that only hold its pieces apart', async () => {
    await using t = await startTestApp({ env: { MAILROOM_SEND_DELAY: '3600' } });
    await t.seed.activeDomain('acme.test');
    // "abcxbcd" holds both trigrams of "abcd" (abc, bcd) but not "abcd".
    const ids: Record<string, string> = {};
    for (const to of ['abcd@mail.test', 'abcxbcd@mail.test', 'other@mail.test']) {
      ids[to] = (await t.api.post('/v1/emails', { from: 'a@acme.test', to, subject: 's', text: 'x' })).body.id;
    }
    expect((await t.api.get('/v1/emails?to=abcd')).body.data.map((e: { id: string }) => e.id)).toEqual([ids['abcd@mail.test']]);
    expect((await t.api.get('/v1/emails?to=bcd@')).body.data.map((e: { id: string }) => e.id))
      .toEqual([ids['abcxbcd@mail.test'], ids['abcd@mail.test']]);
    expect((await t.api.get('/v1/emails?to=xyz')).body.data).toEqual([]);
  });
});

describe('search across workspaces', () => {
  it('finds only the calling workspace\'s emails and events, also after the indexes are rebuilt by their migration', async () => {
    await using t = await startTestApp({ env: { MAILROOM_SEND_DELAY: '3600' } });
    await t.seed.activeDomain('acme.test');
    const other = await t.seed.workspace();
    await t.seed.activeDomain('other.test', { workspaceId: other.id });
    const theirs = t.api.as((await t.seed.key({ workspaceId: other.id })).token);
    const mine = (await t.api.post('/v1/emails', { from: 'a@acme.test', to: 'shared@mail.test', subject: 's', text: 'x' })).body.id;
    const their = (await theirs.post('/v1/emails', { from: 'a@other.test', to: 'shared@mail.test', subject: 's', text: 'x' })).body.id;
    const ids = async (api: typeof t.api) => (await api.get('/v1/emails?to=shared@mail')).body.data.map((e: { id: string }) => e.id);
    expect(await ids(t.api)).toEqual([mine]);
    expect(await ids(theirs)).toEqual([their]);

    const eventEmails = async (api: typeof t.api) => [...new Set((await api.get('/v1/events?to=shared@mail')).body.data.map((e: { email_id: string }) => e.email_id))];
    while (await t.mailroom.services.events.indexEvents() > 0);
    const { store } = t.mailroom.services;
    const migrator = new Migrator({ db: store.db, provider: { getMigrations: async () => migrations } });
    // Every migration after 0009 down and up again, the search indexes' among them.
    const later = Object.keys(migrations).filter((name) => name > '0009_tracking').map((name) => [name, 'Success']);
    expect(later.map(([name]) => name)).toContain('0010_search_tags');
    expect((await migrator.migrateTo('0009_tracking')).results?.map((r) => [r.migrationName, r.status])).toEqual([...later].reverse());
    expect((await migrator.migrateToLatest()).results?.map((r) => [r.migrationName, r.status])).toEqual(later);
    if (!onPostgres) {
      // SQLite's trigram tables keep which rows and columns hold a trigram, not where in the text.
      const { rows } = await sql<{ sql: string }>`SELECT sql FROM sqlite_master WHERE name IN ('emails_search', 'events_search')`.execute(store.db);
      expect(rows.map((r) => r.sql)).toEqual([expect.stringContaining('detail=column'), expect.stringContaining('detail=column')]);
    }
    expect(await ids(t.api)).toEqual([mine]);
    expect(await ids(theirs)).toEqual([their]);
    // The events index was rebuilt up to where the indexer had come, with tags too.
    expect(await eventEmails(t.api)).toEqual([mine]);
    expect(await eventEmails(theirs)).toEqual([their]);
    expect(await t.mailroom.services.events.indexEvents()).toBe(0);
  });
});

describe('search text through delivery', () => {
  it('finds an email by its text once delivered, its search text as it was written when the email was made', async () => {
    await using t = await startTestApp();
    await t.seed.activeDomain('acme.test');
    const { db } = t.mailroom.services.store;
    const id = (await t.api.post('/v1/emails', { from: 'Ann Lee <ann@acme.test>', to: 'Zed.Quill@Example.org', subject: 'Parcel 7731 shipped', text: 'x' })).body.id;
    // On PostgreSQL the text is in emails_search, apart from the row each change of status writes again: its row version stays the one first written.
    const versions = async () => onPostgres
      ? (await sql<{ email: string; search: string }>`SELECT e.xmin::text AS email, s.xmin::text AS search
          FROM emails e JOIN emails_search s ON s.pos = e.pos WHERE e.id = ${id}`.execute(db)).rows
      : [];
    const made = await versions();
    await eventually(async () => ((await t.api.get(`/v1/emails/${id}`)).body.status === 'delivered' ? true : undefined));
    const delivered = await versions();
    if (onPostgres) {
      expect(delivered).toEqual([{ email: expect.any(String), search: made[0].search }]);
      expect(delivered[0].email).not.toBe(made[0].email);
      // No trigram index is left on emails for its status changes to write into.
      const { rows } = await sql<{ name: string }>`SELECT indexname AS name FROM pg_indexes WHERE tablename = 'emails' AND indexdef LIKE '%gin%'`.execute(db);
      expect(rows).toEqual([]);
    }
    for (const query of ['to=zed.quill@example', 'to=ZED', 'from=ann@acme', 'subject=7731%20ship', 'status=delivered&subject=parcel']) {
      expect((await t.api.get(`/v1/emails?${query}`)).body.data.map((e: { id: string }) => e.id)).toEqual([id]);
    }
  });
});

describe('GET /v1/emails by outcome', () => {
  let t: TestApp;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestApp();
    await t.seed.activeDomain('acme.test');
    // The sink's simulated outcomes, by local part.
    const recipients: Record<string, string[]> = {
      partly: ['delivered@mailroom.test', 'bounced@mailroom.test'],
      complained: ['complained@mailroom.test', 'delivered@mailroom.test'],
      delivered: ['delivered@mailroom.test'],
      bounced: ['bounced@mailroom.test'],
    };
    for (const [name, to] of Object.entries(recipients)) {
      const res = await t.api.post('/v1/emails', { from: 'ann@acme.test', to, subject: name, text: 'x' });
      expect(res.status).toBe(201);
      ids[name] = res.body.id;
    }
    await t.mailroom.delivery.drain();
  });
  afterAll(() => t.close());

  const list = async (query: string) => {
    const res = await t.api.get(`/v1/emails?${query}`);
    expect(res.status).toBe(200);
    return res.body.data as Array<{ id: string; status: string; bounced_recipients: number; complained_recipients: number }>;
  };

  it('counts the recipients that bounced and complained on each email, whose status says delivered when any was', async () => {
    const byId = new Map((await list('limit=10')).map((e) => [e.id, e]));
    expect(byId.get(ids.partly)).toMatchObject({ status: 'delivered', bounced_recipients: 1, complained_recipients: 0 });
    expect(byId.get(ids.complained)).toMatchObject({ status: 'delivered', bounced_recipients: 0, complained_recipients: 1 });
    expect(byId.get(ids.delivered)).toMatchObject({ status: 'delivered', bounced_recipients: 0, complained_recipients: 0 });
    expect(byId.get(ids.bounced)).toMatchObject({ status: 'failed', bounced_recipients: 1, complained_recipients: 0 });
    expect((await t.api.get(`/v1/emails/${ids.partly}`)).body).toMatchObject({ bounced_recipients: 1, complained_recipients: 0 });
    expect((await t.api.get(`/v1/emails/${ids.complained}`)).body).toMatchObject({ bounced_recipients: 0, complained_recipients: 1 });
  });

  it('filters by outcome, alone and with the status, and refuses an outcome it does not know with 400', async () => {
    expect((await list('outcome=bounced')).map((e) => e.id)).toEqual([ids.bounced, ids.partly]);
    expect((await list('outcome=bounced&status=delivered')).map((e) => e.id)).toEqual([ids.partly]);
    expect((await list('outcome=complained')).map((e) => e.id)).toEqual([ids.complained]);
    for (const query of ['outcome=opened', 'outcome=', 'outcome=bounced&outcome=complained']) {
      const res = await t.api.get(`/v1/emails?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error, query).toMatchObject({ code: 'validation_error', param: 'outcome' });
    }
  });
});
