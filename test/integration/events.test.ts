import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { appendEvents, appendReceivedEvents } from '../../src/events/index.js';
import { startTestApp, type ApiClient, type TestApp } from '../helpers/app.js';

// GET /v1/events over real emails (the sink with simulated outcomes, and a
// live send from an active domain) plus tracking events appended through the
// events repo, with every filter checked against the unfiltered list.

interface Ev {
  id: string;
  type: string;
  email_id: string;
  created_at: string;
  data: Record<string, unknown>;
}

const ids = (events: Ev[]) => events.map((e) => e.id);

/** What `to` matches: the event's own recipient, or every recipient of an event about the whole email. */
const toText = (e: Ev) => (Array.isArray(e.data.to) ? (e.data.to as string[]).join(' ') : String(e.data.to ?? '')).toLowerCase();

/** Every page of a filtered walk, newest first. */
async function walk(api: ApiClient, query: string, limit = 100): Promise<Ev[]> {
  const out: Ev[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const res = await api.get(`/v1/events?limit=${limit}${query ? `&${query}` : ''}${cursor ? `&starting_after=${cursor}` : ''}`);
    expect(res.status).toBe(200);
    out.push(...res.body.data);
    if (!res.body.has_more) return out;
    cursor = res.body.next_cursor;
  }
  throw new Error('walk did not end');
}

describe('the account-wide events list', () => {
  const clock = new ManualClock(Date.parse('2026-03-02T08:00:00Z'));
  let t: TestApp;
  let testApi: ApiClient;
  let all: Ev[];
  const emails: Record<string, string> = {};
  let domainId: string;

  beforeAll(async () => {
    t = await startTestApp({ clock });
    testApi = t.api.as((await t.seed.key({ mode: 'test' })).token);
    const send = async (name: string, body: Record<string, unknown>, api = testApi) => {
      const res = await api.post('/v1/emails', { subject: `Subject ${name}`, text: 'x', ...body });
      expect(res.status).toBe(201);
      emails[name] = res.body.id;
      await t.mailroom.delivery.drain();
      clock.advance(60_000);
    };
    await send('outcomes', {
      from: 'Ann Sender <ann@myapp.test>', tags: ['welcome'],
      to: ['delivered@mailroom.test', 'bounced@mailroom.test', 'delayed@mailroom.test', 'complained@mailroom.test'],
    });
    await send('receipt', { from: 'billing@shop.test', to: 'Buyer@Customer.test', tags: ['receipt', 'paid'] });
    await send('plain', { from: 'news@myapp.test', to: 'reader@other.test' });
    domainId = (await t.seed.activeDomain('acme.test')).id;
    await send('live', { from: 'Team <team@acme.test>', to: 'someone@remote.test', tags: ['welcome'] }, t.api);
    // Tracking and a suppression-style failure, through the events repo's append helper.
    const at = clock.now();
    await t.mailroom.services.store.write((tx) => appendEvents(tx, [
      { workspaceId: t.workspaceId, emailId: emails.receipt, domainId: null, kind: 'opened', recipient: 'Buyer@Customer.test',
        from: 'billing@shop.test', subject: 'Subject receipt', now: at, data: { to: 'Buyer@Customer.test', ip_address: '192.0.2.1', user_agent: 'x', open_count: 1 } },
      { workspaceId: t.workspaceId, emailId: emails.receipt, domainId: null, kind: 'clicked', recipient: 'Buyer@Customer.test',
        from: 'billing@shop.test', subject: 'Subject receipt', now: at + 1, data: { to: 'Buyer@Customer.test', url: 'https://shop.test/', ip_address: '192.0.2.1', user_agent: 'x', click_count: 1 } },
      { workspaceId: t.workspaceId, emailId: emails.plain, domainId: null, kind: 'failed', recipient: 'reader@other.test',
        from: 'news@myapp.test', subject: 'Subject plain', now: at + 2, data: { to: 'reader@other.test', from: 'news@myapp.test', subject: 'Subject plain', reason: 'suppressed' } },
    ]));
    all = await walk(t.api, '');
  });
  afterAll(() => t.close());

  it('lists every email event of the workspace, newest first, like each email timeline', async () => {
    expect(all.length).toBeGreaterThan(12);
    const times = all.map((e) => Date.parse(e.created_at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    // (The emails with tracking events are left out: tracking owns how a timeline shows those.)
    for (const name of ['outcomes', 'live']) {
      const timeline = (await t.api.get(`/v1/emails/${emails[name]}/events?limit=100`)).body.data;
      expect(ids(all.filter((e) => e.email_id === emails[name]))).toEqual(ids(timeline));
    }
    const one = all.find((e) => e.type === 'email.bounced')!;
    expect((await t.api.get(`/v1/events/${one.id}`)).body).toEqual(one);
  });

  it('filters by event type, one kind each', async () => {
    for (const kind of ['sent', 'delivered', 'bounced', 'opened', 'clicked', 'complained', 'failed', 'delayed']) {
      const got = await walk(t.api, `event_type=${kind}`);
      expect(got.length, kind).toBeGreaterThan(0);
      expect(ids(got), kind).toEqual(ids(all.filter((e) => e.type === `email.${kind}`)));
    }
  });

  it('filters by email and by domain', async () => {
    expect(ids(await walk(t.api, `email_id=${emails.outcomes}`))).toEqual(ids(all.filter((e) => e.email_id === emails.outcomes)));
    const byDomain = await walk(t.api, `domain_id=${domainId}`);
    expect(byDomain.length).toBeGreaterThan(0);
    expect(ids(byDomain)).toEqual(ids(all.filter((e) => e.email_id === emails.live)));
    expect(await walk(t.api, 'email_id=em_none')).toEqual([]);
  });

  it('matches to and from as case-insensitive substrings, before and after the search index catches up', async () => {
    const cases: Array<[string, (e: Ev) => boolean]> = [
      // Per-recipient events match their recipient; whole-email events (sent, queued) any recipient.
      ['to=BOUNCED%40mailroom', (e) => toText(e).includes('bounced@mailroom')],
      ['to=customer.TEST', (e) => e.email_id === emails.receipt],
      // Two characters: too short for the trigram index, matched by LIKE.
      ['to=er', (e) => toText(e).includes('er')],
      ['to=nobody-at-all', () => false],
      ['from=ann%20sender', (e) => e.email_id === emails.outcomes],
      ['from=%3Cteam%40', (e) => e.email_id === emails.live],
      ['from=p.t', (e) => e.email_id === emails.outcomes || e.email_id === emails.plain || e.email_id === emails.receipt],
      ['to=reader&from=NEWS', (e) => e.email_id === emails.plain],
      ['to=50%25', () => false],
      ['to=_', () => false],
      ['to=%22', () => false],
      ['to=a%22b%20OR%20x', () => false],
    ];
    const check = async () => {
      for (const [query, keep] of cases) expect(ids(await walk(t.api, query, 3)), query).toEqual(ids(all.filter(keep)));
    };
    await check();
    await t.mailroom.services.events.indexEvents();
    expect(await t.mailroom.services.events.indexEvents()).toBe(0);
    await check();
  });

  it('filters by tags, any of them', async () => {
    const tagged = (names: string[]) => all.filter((e) => names.some((n) => e.email_id === emails[n]));
    expect(ids(await walk(t.api, 'tags=welcome'))).toEqual(ids(tagged(['outcomes', 'live'])));
    expect(ids(await walk(t.api, 'tags=paid&tags=welcome'))).toEqual(ids(tagged(['outcomes', 'live', 'receipt'])));
    expect(ids(await walk(t.api, 'tags=paid,receipt'))).toEqual(ids(tagged(['receipt'])));
    expect(await walk(t.api, 'tags=Welcome')).toEqual([]);
  });

  it('filters by creation time, both bounds exclusive, and combines filters', async () => {
    const receiptSent = all.find((e) => e.email_id === emails.receipt && e.type === 'email.sent')!;
    const at = receiptSent.created_at;
    expect(ids(await walk(t.api, `created_after=${at}`))).toEqual(ids(all.filter((e) => Date.parse(e.created_at) > Date.parse(at))));
    expect(ids(await walk(t.api, `created_before=${at}`))).toEqual(ids(all.filter((e) => Date.parse(e.created_at) < Date.parse(at))));
    const combined = await walk(t.api, `event_type=delivered&tags=welcome&created_before=${encodeURIComponent('2030-01-01T00:00:00+02:00')}`);
    expect(ids(combined)).toEqual(ids(all.filter((e) => e.type === 'email.delivered' && (e.email_id === emails.outcomes || e.email_id === emails.live))));
  });

  it('pages both ways through a filtered list', async () => {
    const expected = all.filter((e) => e.email_id === emails.outcomes);
    const first = (await t.api.get(`/v1/events?email_id=${emails.outcomes}&limit=2`)).body;
    expect(ids(first.data)).toEqual(ids(expected.slice(0, 2)));
    const second = (await t.api.get(`/v1/events?email_id=${emails.outcomes}&limit=2&starting_after=${first.next_cursor}`)).body;
    expect(ids(second.data)).toEqual(ids(expected.slice(2, 4)));
    // Walking back from the end of page two: the two events before it, newest first.
    const back = (await t.api.get(`/v1/events?email_id=${emails.outcomes}&limit=2&ending_before=${second.next_cursor}`)).body;
    expect(ids(back.data)).toEqual(ids(expected.slice(1, 3)));
    expect(back.has_more).toBe(true);
    const start = (await t.api.get(`/v1/events?email_id=${emails.outcomes}&limit=2&ending_before=${first.next_cursor}`)).body;
    expect(ids(start.data)).toEqual(ids(expected.slice(0, 1)));
    expect(start.has_more).toBe(false);
  });

  it('answers bad queries with 400 and unknown or foreign events with 404', async () => {
    for (const query of [
      'event_type=email.sent', 'event_type=', 'limit=0', 'limit=101', 'limit=x', 'created_after=yesterday',
      'created_before=2026-13-01T00:00:00Z', `email_id=${'e'.repeat(65)}`, 'to=', `from=${'f'.repeat(321)}`,
      `tags=${Array.from({ length: 21 }, (_, i) => `t${i}`).join(',')}`, 'starting_after=bogus', 'ending_before=bogus',
      'starting_after=a&ending_before=b', 'unknown=1',
    ]) {
      const res = await t.api.get(`/v1/events?${query}`);
      expect(res.status, query).toBe(400);
    }
    const badEnum = await t.api.get('/v1/events?event_type=exploded');
    expect(badEnum.status).toBe(400);
    expect(badEnum.body.error).toMatchObject({ code: 'validation_error', param: 'event_type' });
    // A cursor from another list is refused.
    const timelineCursor = (await t.api.get(`/v1/emails/${emails.outcomes}/events?limit=1`)).body.next_cursor;
    expect((await t.api.get(`/v1/events?starting_after=${timelineCursor}`)).body.error.code).toBe('invalid_cursor');

    expect((await t.api.get('/v1/events/evt_missing')).status).toBe(404);
    expect((await t.api.get(`/v1/events/${'e'.repeat(65)}`)).status).toBe(404);
    expect((await t.api.as(null).get('/v1/events')).status).toBe(401);
    const noScope = t.api.as((await t.seed.key({ scopes: ['emails:read'] })).token);
    expect((await noScope.get('/v1/events')).status).toBe(403);
    expect((await noScope.get(`/v1/events/${all[0].id}`)).status).toBe(403);
    const reader = t.api.as((await t.seed.key({ scopes: ['events:read'] })).token);
    expect((await reader.get(`/v1/events/${all[0].id}`)).status).toBe(200);
  });

  it('keeps workspaces apart', async () => {
    const other = await t.seed.workspace();
    const them = t.api.as((await t.seed.key({ workspaceId: other.id })).token);
    expect((await them.get('/v1/events')).body.data).toEqual([]);
    expect((await them.get(`/v1/events?email_id=${emails.outcomes}`)).body.data).toEqual([]);
    expect((await them.get(`/v1/events/${all[0].id}`)).status).toBe(404);
    const mine = (await t.api.get('/v1/events?limit=1')).body.next_cursor;
    expect((await them.get(`/v1/events?starting_after=${mine}`)).status).toBe(400);

    // A search of theirs reads only their entries of the search index, and mine only mine.
    const theirTest = t.api.as((await t.seed.key({ workspaceId: other.id, mode: 'test' })).token);
    const theirs = (await theirTest.post('/v1/emails', { from: 'a@other.test', to: 'delivered@mailroom.test', subject: 's', text: 'x' })).body.id;
    while (await t.mailroom.services.events.indexEvents() > 0);
    const found = (await them.get('/v1/events?to=delivered%40mailroom')).body.data.map((e: Ev) => e.email_id);
    expect(found.length).toBeGreaterThan(0);
    expect(new Set(found)).toEqual(new Set([theirs]));
    expect((await t.api.get('/v1/events?to=delivered%40mailroom&limit=100')).body.data.map((e: Ev) => e.email_id)).not.toContain(theirs);
  });

  it('pages through matches of which some are indexed and some are not yet', async () => {
    await t.mailroom.services.events.indexEvents();
    const cut = clock.now();
    clock.advance(1);
    await testApi.post('/v1/emails', { from: 'ann@myapp.test', to: 'delivered@mailroom.test', subject: 'later', text: 'x', tags: ['welcome'] });
    await t.mailroom.delivery.drain();
    const latest = await walk(t.api, '');
    const indexed = new Set(ids(all));
    const fresh = latest.filter((e) => !indexed.has(e.id));
    expect(fresh.length).toBeGreaterThan(0);
    const welcome = new Set([emails.outcomes, emails.live, ...fresh.map((e) => e.email_id)]);
    const cases: Array<[string, (e: Ev) => boolean]> = [
      ['to=delivered%40mailroom', (e) => toText(e).includes('delivered@mailroom')],
      ['from=ann%40myapp', (e) => e.email_id === emails.outcomes || fresh.some((x) => x.email_id === e.email_id)],
      ['tags=welcome', (e) => welcome.has(e.email_id)],
      ['tags=welcome,receipt', (e) => welcome.has(e.email_id) || e.email_id === emails.receipt],
      [`created_after=${new Date(cut - 120_000).toISOString()}`, (e) => Date.parse(e.created_at) > cut - 120_000],
      [`created_before=${new Date(cut + 1).toISOString()}`, (e) => Date.parse(e.created_at) < cut + 1],
      [`tags=welcome&to=delivered&created_after=${new Date(cut - 600_000).toISOString()}`,
        (e) => welcome.has(e.email_id) && toText(e).includes('delivered') && Date.parse(e.created_at) > cut - 600_000],
      ['event_type=delivered&tags=welcome', (e) => e.type === 'email.delivered' && welcome.has(e.email_id)],
    ];
    for (const [query, keep] of cases) {
      const expected = latest.filter(keep);
      const got = await walk(t.api, query, 2);
      expect(ids(got), query).toEqual(ids(expected));
      // Walking back from the last row but one gives the rows before it.
      if (expected.length > 2) {
        const last = (await t.api.get(`/v1/events?${query}&limit=${expected.length - 1}`)).body;
        const back = (await t.api.get(`/v1/events?${query}&limit=100&ending_before=${last.next_cursor}`)).body;
        expect(ids(back.data), `${query} backwards`).toEqual(ids(expected.slice(0, -2)));
      }
    }
    expect(fresh.some((e) => toText(e).includes('delivered@mailroom'))).toBe(true);
  });
});

describe('every kind of event', () => {
  it('can be asked for by event_type, and each matches its documented data', async () => {
    const clock = new ManualClock(Date.parse('2026-03-02T08:00:00Z'));
    await using t = await startTestApp({ clock });
    const testApi = t.api.as((await t.seed.key({ mode: 'test' })).token);
    const domainId = (await t.seed.activeDomain('acme.test')).id;
    const sent = await testApi.post('/v1/emails', {
      from: 'ann@myapp.test', subject: 'Outcomes', text: 'x',
      to: ['delivered@mailroom.test', 'bounced@mailroom.test', 'delayed@mailroom.test', 'complained@mailroom.test'],
    });
    await t.mailroom.delivery.drain();
    const later = await testApi.post('/v1/emails', { from: 'news@myapp.test', to: 'later@other.test', subject: 'Later', text: 'x', scheduled_at: 'in 2 hours' });
    expect((await testApi.post(`/v1/emails/${later.body.id}/cancel`)).body.cancelled).toBe(true);
    const at = clock.now();
    const about = { workspaceId: t.workspaceId, emailId: sent.body.id, domainId: null, recipient: 'delivered@mailroom.test', from: 'ann@myapp.test', subject: 'Outcomes' };
    await t.mailroom.services.store.write(async (tx) => {
      await appendEvents(tx, [
        { ...about, kind: 'opened', now: at, data: { to: 'delivered@mailroom.test', ip_address: '192.0.2.1', user_agent: 'x', open_count: 1 } },
        { ...about, kind: 'clicked', now: at + 1, data: { to: 'delivered@mailroom.test', url: 'https://shop.test/', ip_address: '192.0.2.1', user_agent: 'x', click_count: 1 } },
        { ...about, kind: 'failed', now: at + 2, data: { to: 'delivered@mailroom.test', from: 'ann@myapp.test', subject: 'Outcomes', reason: 'suppressed' } },
        { ...about, kind: 'replied', now: at + 3, data: {
          to: 'delivered@mailroom.test', from: 'ann@myapp.test', subject: 'Outcomes', reply_from: 'D <delivered@mailroom.test>', reply_subject: 'Re: Outcomes', inbound_id: 'in_reply',
        } },
      ]);
      await appendReceivedEvents(tx, [{
        workspaceId: t.workspaceId, inboundId: 'in_received', domainId, from: 'Kim <kim@outside.test>', subject: 'Hello', now: at + 4,
        data: { from: 'Kim <kim@outside.test>', to: ['desk@acme.test'], subject: 'Hello', message_id: '<m1@outside.test>', attachment_count: 0, spf: 'pass', dkim: ['pass'], dmarc: 'pass' },
      }]);
    });

    // The client checks each page against the contract, data shapes included.
    const all = await walk(t.api, '');
    const kinds = ['scheduled', 'queued', 'sent', 'delivered', 'delayed', 'bounced', 'complained', 'opened', 'clicked', 'replied', 'failed', 'cancelled', 'received'];
    expect(new Set(all.map((e) => e.type.replace(/^email\./, '')))).toEqual(new Set(kinds));
    for (const kind of kinds) {
      const got = await walk(t.api, `event_type=${kind}`);
      expect(got.length, kind).toBeGreaterThan(0);
      expect(ids(got), kind).toEqual(ids(all.filter((e) => e.type === `email.${kind}`)));
    }
  });
});

