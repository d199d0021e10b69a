import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { newId } from '../../src/core/ids.js';
import { engagementTier, ENGAGEMENT_TIERS } from '../../src/contacts/index.js';
import type { Tx } from '../../src/store/db.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/smtp-app.js';

const DAY_MS = 86_400_000;

/** Appends email events the way the sending and tracking sides record them. */
async function addEvents(t: TestApp, events: Array<{ ws?: string; type: string; to: string; at: number }>): Promise<void> {
  await t.mailroom.services.store.write(async (tx: Tx) => {
    for (let i = 0; i < events.length; i += 1000) {
      await tx.insertInto('events').values(events.slice(i, i + 1000).map((e) => ({
        id: newId('evt', e.at), workspace_id: e.ws ?? t.workspaceId, email_id: newId('em', e.at), domain_id: null,
        type: e.type, recipient: e.to, from_address: 'news@sender.example', subject: 'Hello', data: '{}', created_at: e.at,
      }))).execute();
    }
  });
}

/** Tier by address of every live contact of the default workspace. */
async function tiers(t: TestApp): Promise<Record<string, string>> {
  const rows = await t.mailroom.services.store.db.selectFrom('contacts').select(['email', 'engagement_tier'])
    .where('workspace_id', '=', t.workspaceId).where('deleted_at', 'is', null).execute();
  return Object.fromEntries(rows.map((c) => [c.email, c.engagement_tier]));
}

/**
 * Runs due scheduled tasks until the tiers are as expected, within a bounded
 * time: the app's own scheduler loop may hold a task's lease at the moment.
 */
async function tickUntil(t: TestApp, expected: Record<string, string>): Promise<void> {
  const deadline = Date.now() + 5_000;
  let got = await tiers(t);
  while (Date.now() < deadline) {
    await t.mailroom.scheduler.tick();
    got = await tiers(t);
    if (Object.entries(expected).every(([email, tier]) => got[email] === tier)) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(got).toMatchObject(expected);
}

describe('engagement tiers', () => {
  it('follow the events table through the scheduled tasks, and age with time', async () => {
    const clock = new ManualClock(Date.parse('2026-05-01T00:00:00Z'));
    await using t = await startTestApp({ clock });
    const now = clock.now();
    for (const email of ['fresh@example.com', 'opener@example.com', 'clicker@example.com', 'lapsed@example.com', 'silent@example.com', 'none@example.com']) {
      await t.api.post('/v1/contacts', { email });
    }
    const other = await t.seed.workspace();
    await addEvents(t, [
      { type: 'email.sent', to: 'fresh@example.com', at: now - 2 * DAY_MS },
      { type: 'email.sent', to: 'Opener@Example.com', at: now - 50 * DAY_MS },
      { type: 'email.opened', to: 'OPENER@example.com', at: now - 1 * DAY_MS },
      { type: 'email.delivered', to: 'clicker@example.com', at: now - 20 * DAY_MS },
      { type: 'email.clicked', to: 'clicker@example.com', at: now - 10 * DAY_MS },
      { type: 'email.sent', to: 'lapsed@example.com', at: now - 300 * DAY_MS },
      { type: 'email.opened', to: 'lapsed@example.com', at: now - 100 * DAY_MS },
      { type: 'email.sent', to: 'silent@example.com', at: now - 45 * DAY_MS },
      // Not engagement, and not this workspace: no effect.
      { type: 'email.bounced', to: 'none@example.com', at: now - DAY_MS },
      { ws: other.id, type: 'email.opened', to: 'none@example.com', at: now - DAY_MS },
    ]);
    expect(Object.values(await tiers(t)).every((x) => x === 'no_data')).toBe(true);

    // The tasks ran once at start-up; their next runs are due a minute and an hour on.
    clock.advance(60_000);
    const expected = {
      'fresh@example.com': 'new', 'opener@example.com': 'engaged', 'clicker@example.com': 'engaged',
      'lapsed@example.com': 'inactive', 'silent@example.com': 'at_risk', 'none@example.com': 'no_data',
    };
    await tickUntil(t, expected);
    expect(await tiers(t)).toEqual(expected);
    expect((await t.api.get('/v1/contacts?engagement_tier=engaged')).body.data).toHaveLength(2);

    // A later open moves the silent contact at the next fold.
    clock.advance(60_000);
    await addEvents(t, [{ type: 'email.opened', to: 'silent@example.com', at: clock.now() }]);
    await tickUntil(t, { 'silent@example.com': 'engaged' });

    // Time alone moves tiers: 40 days on, with no new events.
    clock.advance(40 * DAY_MS);
    await tickUntil(t, {
      'fresh@example.com': 'at_risk', 'opener@example.com': 'at_risk', 'clicker@example.com': 'at_risk',
      'lapsed@example.com': 'inactive', 'silent@example.com': 'at_risk', 'none@example.com': 'no_data',
    });
    clock.advance(100 * DAY_MS);
    await tickUntil(t, { 'lapsed@example.com': 'cold' });
  });

  it('counts whole-email events (the send, the tracking pixel, clicks) for each recipient the email went to', async () => {
    const clock = new ManualClock(Date.parse('2026-05-01T00:00:00Z'));
    await using t = await startTestApp({ clock });
    const { contacts, store } = t.mailroom.services;
    for (const email of ['to@example.com', 'cc@example.com', 'blocked@example.com', 'solo@example.com']) await t.api.post('/v1/contacts', { email });
    const now = clock.now();
    const group = newId('em', now);
    const solo = newId('em', now);
    await store.write(async (tx) => {
      await tx.insertInto('email_recipients').values([
        { address: 'To@Example.com', kind: 'to' as const, status: 'delivered' as const, email_id: group },
        { address: 'cc@example.com', kind: 'cc' as const, status: 'delivered' as const, email_id: group },
        { address: 'blocked@example.com', kind: 'to' as const, status: 'suppressed' as const, email_id: group },
        { address: 'solo@example.com', kind: 'to' as const, status: 'delivered' as const, email_id: solo },
      ].map((r, idx) => ({
        ...r, id: newId('rcpt', now), idx, workspace_id: t.workspaceId, domain: 'example.com', smtp_code: 250, detail: null, updated_at: now,
      }))).execute();
      await tx.insertInto('events').values([
        { email_id: group, type: 'email.sent', at: now - 50 * DAY_MS },
        { email_id: group, type: 'email.opened', at: now - 3 * DAY_MS },
        { email_id: solo, type: 'email.sent', at: now - 2 * DAY_MS },
      ].map((e) => ({
        id: newId('evt', e.at), workspace_id: t.workspaceId, email_id: e.email_id, domain_id: null, type: e.type, recipient: null,
        from_address: 'news@sender.example', subject: 'Hello', data: '{}', created_at: e.at,
      }))).execute();
    });
    await contacts.foldEvents();
    expect(await tiers(t)).toEqual({
      'to@example.com': 'engaged', 'cc@example.com': 'engaged', 'blocked@example.com': 'no_data', 'solo@example.com': 'new',
    });
  });

  it('marks a contact new once an email sent through the API reaches the events table', async () => {
    await using t = await startTestApp();
    await t.seed.activeDomain('sender.example');
    const c = (await t.api.post('/v1/contacts', { email: 'reader@remote.example' })).body;
    expect((await t.api.post('/v1/emails', { from: 'a@sender.example', to: 'Reader@remote.example', subject: 'Hi', text: 'x' })).status).toBe(201);
    const deadline = Date.now() + 5_000;
    let tier = 'no_data';
    while (Date.now() < deadline && tier === 'no_data') {
      await t.mailroom.services.contacts.foldEvents();
      tier = (await t.api.get(`/v1/contacts/${c.id}`)).body.engagement_tier;
      if (tier === 'no_data') await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(tier).toBe('new');
  });

  it('gives a new contact its tier at once from the history of its address', async () => {
    const clock = new ManualClock(Date.parse('2026-05-01T00:00:00Z'));
    await using t = await startTestApp({ clock });
    await addEvents(t, [
      { type: 'email.sent', to: 'later@example.com', at: clock.now() - 5 * DAY_MS },
      { type: 'email.opened', to: 'later@example.com', at: clock.now() - 4 * DAY_MS },
    ]);
    await t.mailroom.services.contacts.foldEvents();
    expect((await t.api.post('/v1/contacts', { email: 'Later@example.com' })).body.engagement_tier).toBe('engaged');
    const bulk = await t.api.post('/v1/contacts/bulk', { contacts: [{ email: 'later2@example.com' }] });
    expect(bulk.body.created).toBe(1);
    expect((await tiers(t))['later2@example.com']).toBe('no_data');
  });

  it('folds each event once, from a stored watermark, in bounded batches', async () => {
    const clock = new ManualClock(Date.parse('2026-05-01T00:00:00Z'));
    await using t = await startTestApp({ clock });
    const { contacts, store } = t.mailroom.services;
    // The app's scheduler must not fold beside the test: the test holds the
    // task's lease, as another node would, once no fold of the scheduler's is
    // under way (one may be as the app starts).
    const task = 'engagement-fold-events';
    await eventually(() => store.write(async (tx) => {
      await tx.insertInto('scheduled_tasks').values({ name: task, next_run_at: 0, locked_until: 0, lease_owner: null, last_run_at: null, last_error: null })
        .onConflict((oc) => oc.column('name').doNothing()).execute();
      const held = await tx.updateTable('scheduled_tasks').set({ locked_until: clock.now() + DAY_MS, lease_owner: 'the test' })
        .where('name', '=', task).where('locked_until', '<=', clock.now()).executeTakeFirst();
      return Number(held.numUpdatedRows) === 1 ? true : undefined;
    }), 5_000, 'the fold task\'s lease');
    await t.api.post('/v1/contacts', { email: 'w@example.com' });
    const events = Array.from({ length: 12_000 }, (_, i) => ({ type: i % 2 ? 'email.sent' : 'email.delivered', to: `bulk${i % 3000}@example.com`, at: clock.now() - 60 * DAY_MS }));
    await addEvents(t, events);
    await addEvents(t, [{ type: 'email.sent', to: 'w@example.com', at: clock.now() - 60 * DAY_MS }]);
    expect(await contacts.foldEvents()).toBe(12_001);
    expect(await contacts.foldEvents()).toBe(0);
    expect((await tiers(t))['w@example.com']).toBe('at_risk');
    const facts = await store.db.selectFrom('address_engagement').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    expect(Number(facts.n)).toBe(3001);
  });

  it('keeps tiers current when an event writer reports the event in its own transaction', async () => {
    const clock = new ManualClock(Date.parse('2026-05-01T00:00:00Z'));
    await using t = await startTestApp({ clock });
    const { contacts, store } = t.mailroom.services;
    const c = (await t.api.post('/v1/contacts', { email: 'live@example.com' })).body;
    await store.write((tx) => contacts.recordEvent(tx, t.workspaceId, 'LIVE@example.com', 'email.sent', clock.now() - DAY_MS));
    expect((await t.api.get(`/v1/contacts/${c.id}`)).body.engagement_tier).toBe('new');
    await store.write((tx) => contacts.recordEvent(tx, t.workspaceId, 'live@example.com', 'email.clicked', clock.now()));
    expect((await t.api.get(`/v1/contacts/${c.id}`)).body.engagement_tier).toBe('engaged');
    // Other types are ignored; an older open does not move the last engagement back.
    await store.write(async (tx) => {
      await contacts.recordEvent(tx, t.workspaceId, 'live@example.com', 'email.bounced', clock.now());
      await contacts.recordEvent(tx, t.workspaceId, 'live@example.com', 'email.opened', clock.now() - 200 * DAY_MS);
    });
    expect((await t.api.get(`/v1/contacts/${c.id}`)).body.engagement_tier).toBe('engaged');
  });

  it('computes the same tier in SQL as the documented rule, for every kind of history', async () => {
    const clock = new ManualClock(Date.parse('2026-05-01T00:00:00Z'));
    await using t = await startTestApp({ clock });
    const { contacts, store } = t.mailroom.services;
    const now = clock.now();
    const ages = [null, 0, 29, 30, 31, 89, 90, 91, 179, 180, 181, 400];
    const at = (days: number | null) => (days === null ? null : now - days * DAY_MS);
    const cases = ages.flatMap((sent) => ages.map((engaged) => ({ sent: at(sent), engaged: at(engaged) })));
    const emails = cases.map((_, i) => `case${i}@example.com`);
    await t.api.post('/v1/contacts/bulk', { contacts: emails.map((email) => ({ email })) });
    await store.write(async (tx) => {
      for (const [i, c] of cases.entries()) {
        if (c.sent !== null) await contacts.recordEvent(tx, t.workspaceId, emails[i], 'email.sent', c.sent);
        if (c.engaged !== null) await contacts.recordEvent(tx, t.workspaceId, emails[i], 'email.opened', c.engaged);
      }
    });
    // The reporting path computed the tiers in SQL; the ageing pass must agree with it.
    expect(await contacts.ageTiers()).toBe(0);
    const got = await tiers(t);
    const seen = new Set<string>();
    for (const [i, c] of cases.entries()) {
      const want = engagementTier({ firstSentAt: c.sent, lastEngagedAt: c.engaged }, now);
      seen.add(want);
      expect(got[emails[i]], JSON.stringify(c)).toBe(want);
    }
    expect([...seen].sort()).toEqual([...ENGAGEMENT_TIERS].sort());
  });

  it('refreshes 100,000 contacts cheaply', async ({ annotate }) => {
    const clock = new ManualClock(Date.parse('2026-05-01T00:00:00Z'));
    await using t = await startTestApp({ clock });
    const { contacts, store } = t.mailroom.services;
    const now = clock.now();
    const N = 100_000;
    await store.write(async (tx) => {
      for (let start = 0; start < N; start += 500) {
        const part = Array.from({ length: Math.min(500, N - start) }, (_, k) => start + k);
        await tx.insertInto('contacts').values(part.map((i) => ({
          id: newId('ct', now), workspace_id: t.workspaceId, email: `c${i}@scale.example`, name: null, status: 'subscribed' as const,
          engagement_tier: 'no_data' as const, unsubscribe_reason: null, unsubscribed_at: null, created_at: now, updated_at: now, deleted_at: null,
        }))).execute();
        // Half of the addresses have history: opened 20 days ago.
        await tx.insertInto('address_engagement').values(part.filter((i) => i % 2 === 0).map((i) => ({
          workspace_id: t.workspaceId, email: `c${i}@scale.example`, first_sent_at: now - 40 * DAY_MS, last_engaged_at: now - 20 * DAY_MS,
        }))).execute();
      }
    });
    let started = performance.now();
    expect(await contacts.ageTiers()).toBe(N / 2);
    const firstMs = performance.now() - started;
    started = performance.now();
    expect(await contacts.ageTiers()).toBe(0);
    const idleMs = performance.now() - started;

    await addEvents(t, Array.from({ length: 5_000 }, (_, i) => ({ type: 'email.clicked', to: `c${i * 2 + 1}@scale.example`, at: now })));
    started = performance.now();
    expect(await contacts.foldEvents()).toBe(5_000);
    const foldMs = performance.now() - started;
    await annotate(`100k contacts: re-tier ${firstMs.toFixed(0)} ms (50k changed), ${idleMs.toFixed(0)} ms (none changed); fold 5k events ${foldMs.toFixed(0)} ms`);

    const counts = await store.db.selectFrom('contacts').select(['engagement_tier', (eb) => eb.fn.countAll<number>().as('n')])
      .groupBy('engagement_tier').execute();
    expect(Object.fromEntries(counts.map((r) => [r.engagement_tier, Number(r.n)]))).toEqual({ engaged: 55_000, no_data: 45_000 });
  });
});
