import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { appendEvents, type NewEvent } from '../../src/events/events.repo.js';
import { startTestApp, type ApiClient, type TestApp } from '../helpers/app.js';

// GET /v1/analytics against the events it counts: real emails through the
// sink (simulated outcomes by recipient) and opens and clicks appended
// through the events repo, read before, while and after the rollups catch up.

const HOUR = 3_600_000;
const START = Date.parse('2026-04-06T09:00:00Z');
const KINDS = ['sent', 'delivered', 'bounced', 'opened', 'clicked', 'complained', 'failed', 'delayed'] as const;

interface Ev {
  id: string;
  type: string;
  email_id: string;
  created_at: string;
  data: { to?: unknown };
}

async function allEvents(api: ApiClient): Promise<Ev[]> {
  const out: Ev[] = [];
  let cursor = '';
  for (let page = 0; page < 100; page++) {
    const body = (await api.get(`/v1/events?limit=100${cursor}`)).body;
    out.push(...body.data);
    if (!body.has_more) return out;
    cursor = `&starting_after=${body.next_cursor}`;
  }
  throw new Error('walk did not end');
}

/** The counts the API should give, computed from the event list the way the description says. */
function expectedCounts(events: Ev[], keep: (e: Ev) => boolean, from: number, to: number) {
  const counts: Record<string, number> = Object.fromEntries([...KINDS, 'unique_opened', 'unique_clicked'].map((k) => [k, 0]));
  const firsts = new Map<string, number>();
  for (const e of [...events].reverse()) {
    if (!keep(e)) continue;
    const kind = e.type.slice('email.'.length);
    const at = Date.parse(e.created_at);
    if (kind === 'opened' || kind === 'clicked') {
      const pair = `${e.email_id}|${String(e.data.to).toLowerCase()}|${kind}`;
      if (!firsts.has(pair)) firsts.set(pair, at);
    }
    if ((KINDS as readonly string[]).includes(kind) && at >= from && at < to) counts[kind]++;
  }
  for (const [pair, at] of firsts) if (at >= from && at < to) counts[pair.endsWith('opened') ? 'unique_opened' : 'unique_clicked']++;
  return counts;
}

describe('analytics', () => {
  const clock = new ManualClock(START + 20 * 60_000);
  let t: TestApp;
  let testApi: ApiClient;
  const emails: Record<string, string> = {};
  let domainId: string;

  const track = (emailId: string, kind: 'opened' | 'clicked', to: string, at: number): NewEvent => ({
    workspaceId: t.workspaceId, emailId, domainId: null, kind, recipient: to, from: 'x@myapp.test', subject: 's', now: at,
    data: kind === 'opened'
      ? { to, ip_address: '192.0.2.7', user_agent: 'test', open_count: 1 }
      : { to, url: 'https://shop.test/', ip_address: '192.0.2.7', user_agent: 'test', click_count: 1 },
  });

  beforeAll(async () => {
    t = await startTestApp({ clock });
    testApi = t.api.as((await t.seed.key({ mode: 'test' })).token);
    // Live mail through the sink, whose recipients simulate outcomes; test mail is counted apart (see below).
    await t.seed.activeDomain('myapp.test');
    const send = async (name: string, body: Record<string, unknown>, api = t.api) => {
      const res = await api.post('/v1/emails', { from: 'dev@myapp.test', subject: name, text: 'x', ...body });
      expect(res.status).toBe(201);
      emails[name] = res.body.id;
      await t.mailroom.delivery.drain();
    };
    // Hour 0 (09:20): four outcomes, tagged a.
    await send('outcomes', { tags: ['a'], to: ['delivered@mailroom.test', 'bounced@mailroom.test', 'delayed@mailroom.test', 'complained@mailroom.test'] });
    // Hour 1: tagged a and b, two recipients.
    clock.set(START + HOUR + 5 * 60_000);
    await send('both', { tags: ['a', 'b'], to: ['delivered@mailroom.test', 'Second@Mailroom.test'] });
    // Hour 2: from an active domain, untagged, live.
    clock.set(START + 2 * HOUR + 10 * 60_000);
    domainId = (await t.seed.activeDomain('acme.test')).id;
    await send('live', { from: 'team@acme.test', to: 'someone@remote.test' }, t.api);
  });
  afterAll(() => t.close());

  const get = async (query: string) => {
    const res = await t.api.get(`/v1/analytics?${query}`);
    expect(res.status, query).toBe(200);
    return res.body;
  };

  it('counts what the events list shows, before, during and after the rollups catch up', async () => {
    const base = START - HOUR;
    // Opens and clicks: a repeat, a second recipient, and a first open in hour 2 of an email of hour 0.
    await t.mailroom.services.store.write((tx) => appendEvents(tx, [
      track(emails.both, 'opened', 'delivered@mailroom.test', START + HOUR + 30 * 60_000),
      track(emails.both, 'opened', 'Delivered@Mailroom.test', START + HOUR + 40 * 60_000),
      track(emails.both, 'opened', 'second@mailroom.test', START + 2 * HOUR + 1),
      track(emails.both, 'clicked', 'second@mailroom.test', START + 2 * HOUR + 2),
      track(emails.outcomes, 'opened', 'delivered@mailroom.test', START + 2 * HOUR + 3),
    ]));
    const from = new Date(base).toISOString();
    const to = new Date(START + 4 * HOUR).toISOString();
    const check = async () => {
      const events = await allEvents(t.api);
      const cases: Array<[string, (e: Ev) => boolean]> = [
        ['', () => true],
        [`&domain_id=${domainId}`, (e) => e.email_id === emails.live],
        ['&tags=a', (e) => e.email_id === emails.outcomes || e.email_id === emails.both],
        ['&tags=b,a', (e) => e.email_id === emails.outcomes || e.email_id === emails.both],
        ['&tags=b', (e) => e.email_id === emails.both],
        ['&tags=zzz', () => false],
      ];
      for (const [filter, keep] of cases) {
        for (const granularity of ['hour', 'day']) {
          const body = await get(`from=${from}&to=${to}&granularity=${granularity}${filter}`);
          expect(body.totals, filter).toEqual(expectedCounts(events, keep, base, START + 4 * HOUR));
          // The series adds up to the totals, bucket by bucket.
          for (const b of body.series) {
            const { start, end, ...counts } = b;
            expect(counts, `${filter} ${start}`).toEqual(expectedCounts(events, keep, Date.parse(start), Date.parse(end)));
          }
        }
      }
      const hourly = await get(`from=${from}&to=${to}&granularity=hour`);
      expect(hourly.series.map((b: { start: string }) => b.start)).toEqual([0, 1, 2, 3, 4].map((h) => new Date(base + h * HOUR).toISOString()));
      return hourly;
    };

    const before = await check();
    expect(before.totals).toMatchObject({ sent: 3, bounced: 1, complained: 1, delayed: 1, opened: 4, clicked: 1, unique_opened: 3, unique_clicked: 1 });
    // Unique opens land in the hour of the first open: hour 2 has the first opens of two pairs.
    expect(before.series[3]).toMatchObject({ opened: 2, unique_opened: 2, clicked: 1, unique_clicked: 1 });
    expect(before.series[2]).toMatchObject({ opened: 2, unique_opened: 1 });

    await t.mailroom.services.analytics.fold();
    expect(await t.mailroom.services.analytics.fold()).toBe(0);
    expect(await check()).toEqual(before);

    // Folded rollups plus a tail: a repeat open (not unique) and a first click.
    await t.mailroom.services.store.write((tx) => appendEvents(tx, [
      track(emails.both, 'opened', 'second@mailroom.test', START + 3 * HOUR),
      track(emails.outcomes, 'clicked', 'delivered@mailroom.test', START + 3 * HOUR + 1),
    ]));
    const mixed = await check();
    expect(mixed.totals).toMatchObject({ opened: 5, unique_opened: 3, clicked: 2, unique_clicked: 2 });
    await t.mailroom.services.analytics.fold();
    expect(await check()).toEqual(mixed);
  });

  it('counts the mail of test keys apart, and live mail by default', async () => {
    const before = await get('');
    expect(before.mode).toBe('live');
    const res = await testApi.post('/v1/emails', { from: 'dev@sandbox.test', subject: 'test mail', text: 'x', to: ['delivered@mailroom.test', 'bounced@mailroom.test'] });
    expect(res.status).toBe(201);
    await t.mailroom.delivery.drain();
    const live = await get('');
    expect(live.totals).toEqual(before.totals);
    const test = await get('mode=test');
    expect(test.mode).toBe('test');
    expect(test.totals).toMatchObject({ sent: 1, delivered: 1, bounced: 1 });
    await t.mailroom.services.analytics.fold();
    expect((await get('')).totals).toEqual(before.totals);
    expect((await get('mode=test')).totals).toEqual(test.totals);
    expect((await t.api.get('/v1/analytics?mode=both')).status).toBe(400);
  });

  it('counts unique opens in the period of the first open only', async () => {
    // Hour 3 alone: the repeat open of a pair first opened in hour 2 is not unique there.
    const body = await get(`from=${new Date(START + 3 * HOUR).toISOString()}&to=${new Date(START + 4 * HOUR).toISOString()}&granularity=hour`);
    expect(body.totals).toMatchObject({ opened: 1, unique_opened: 0, clicked: 1, unique_clicked: 1 });
    expect(body.series).toHaveLength(1);
  });

  it('widens the range to whole hours and defaults to the last 7 days', async () => {
    const body = await get(`from=${new Date(START + 90_000).toISOString()}&to=${new Date(START + 2 * HOUR + 1).toISOString()}&granularity=hour`);
    expect(body.from).toBe(new Date(START).toISOString());
    expect(body.to).toBe(new Date(START + 3 * HOUR).toISOString());
    expect(body.series).toHaveLength(3);

    const now = clock.now();
    const defaults = await get('');
    expect(defaults.granularity).toBe('day');
    expect(Date.parse(defaults.to)).toBe(Math.ceil(now / HOUR) * HOUR);
    expect(Date.parse(defaults.to) - Date.parse(defaults.from)).toBe(7 * 24 * HOUR);
    // Days are UTC days, the first and last cut to the range.
    expect(defaults.series).toHaveLength(8);
    expect(defaults.series[0].start).toBe(defaults.from);
    expect(defaults.series.at(-1).end).toBe(defaults.to);
    expect(defaults.series[1].start).toMatch(/T00:00:00.000Z$/);
    expect(defaults.totals.sent).toBe(3);
    expect(defaults).toMatchObject({ domain_id: null, tags: [] });
    const filtered = await get(`domain_id=${domainId}&tags=a&tags=b`);
    expect(filtered).toMatchObject({ domain_id: domainId, tags: ['a', 'b'] });
    expect(filtered.totals.sent).toBe(0);
  });

  it('answers bad ranges and parameters with 400', async () => {
    const iso = (ms: number) => new Date(ms).toISOString();
    for (const query of [
      `from=${iso(START)}&to=${iso(START)}`,
      `from=${iso(START + HOUR)}&to=${iso(START)}`,
      `from=${iso(START)}&to=${iso(START + 32 * 24 * HOUR)}&granularity=hour`,
      `from=${iso(START)}&to=${iso(START + 401 * 24 * HOUR)}`,
      'granularity=week', 'granularity=', 'from=yesterday', 'to=2026-02-30T00:00:00', `domain_id=${'d'.repeat(65)}`,
      `tags=${Array.from({ length: 21 }, (_, i) => `t${i}`).join(',')}`, 'tags=', 'tags=a,,b', 'tags=a&tags=', 'limit=5', 'unknown=1',
    ]) {
      const res = await t.api.get(`/v1/analytics?${query}`);
      expect(res.status, query).toBe(400);
    }
    const res = await t.api.get(`/v1/analytics?from=${iso(START + HOUR)}&to=${iso(START)}`);
    expect(res.body.error).toMatchObject({ code: 'validation_error', param: 'from' });
    // Exactly the longest range is fine.
    expect((await t.api.get(`/v1/analytics?from=${iso(START)}&to=${iso(START + 31 * 24 * HOUR)}&granularity=hour`)).status).toBe(200);
  });

  it('needs the analytics scope and counts one workspace only', async () => {
    expect((await t.api.as(null).get('/v1/analytics')).status).toBe(401);
    const noScope = t.api.as((await t.seed.key({ scopes: ['events:read'] })).token);
    expect((await noScope.get('/v1/analytics')).status).toBe(403);
    const reader = t.api.as((await t.seed.key({ scopes: ['analytics:read'] })).token);
    expect((await reader.get('/v1/analytics')).status).toBe(200);

    const other = await t.seed.workspace();
    const them = t.api.as((await t.seed.key({ workspaceId: other.id })).token);
    const theirs = (await them.get(`/v1/analytics?domain_id=${domainId}`)).body;
    expect(Object.values(theirs.totals).every((n) => n === 0)).toBe(true);
    expect(Object.values((await them.get('/v1/analytics')).body.totals).every((n) => n === 0)).toBe(true);
  });
});
