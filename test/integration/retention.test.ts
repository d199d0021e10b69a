import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { onPostgres } from '../helpers/database.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { eventually, inboundDomain, sendRaw, startSmtpTestApp } from '../helpers/smtp-app.js';
import { startDns } from '../helpers/dns.js';

// What Mailroom forgets on its own, and when: the records that grow with the
// traffic are purged by the scheduler once their time is up, never before,
// and never while work on them is still pending.

const DAY_MS = 86_400_000;

/** An HTTP endpoint on 127.0.0.1 answering every request with `status`. */
async function startEndpoint(status: number) {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(status).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    [Symbol.asyncDispose]: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/**
 * Runs what is due, three times over, the clock moved past the purge's
 * period between: the followers of the events table (webhook fan-out runs on
 * its own, the rest are scheduled tasks) and the purge, which leaves what a
 * follower has not reached yet to a later run. On PostgreSQL a follower
 * stops before events of transactions still in flight, and catches up in
 * the next run.
 */
async function purgeDue(t: TestApp, clock: ManualClock): Promise<void> {
  for (let round = 0; round < 3; round++) {
    await t.mailroom.services.webhookDispatcher.drain();
    await t.mailroom.scheduler.tick();
    clock.advance(11 * 60_000);
  }
}

async function trailOf(t: TestApp, keyId: string): Promise<{ resource_id: string }[]> {
  return (await t.api.get(`/v1/api-keys/${keyId}/activity?limit=100`)).body.data;
}

describe('retention', () => {
  it('keeps a key\'s activity for 90 days', async () => {
    const clock = new ManualClock();
    await using t = await startTestApp({ clock });
    const me = (await t.api.get('/v1/api-keys')).body.data.find((k: { name: string }) => k.name === 'harness');
    const old = (await t.api.post('/v1/api-keys', { name: 'old' })).body;
    await eventually(async () => ((await trailOf(t, me.id)).length === 1 ? true : undefined));
    clock.advance(60 * DAY_MS);
    const recent = (await t.api.post('/v1/api-keys', { name: 'recent' })).body;
    await eventually(async () => ((await trailOf(t, me.id)).length === 2 ? true : undefined));

    clock.advance(29 * DAY_MS);
    await t.mailroom.scheduler.tick();
    expect((await trailOf(t, me.id)).map((a) => a.resource_id)).toEqual([recent.id, old.id]);

    clock.advance(2 * DAY_MS);
    await t.mailroom.scheduler.tick();
    expect((await trailOf(t, me.id)).map((a) => a.resource_id)).toEqual([recent.id]);
  });

  it('keeps finished webhook deliveries for 30 days, and a pending one until it finishes', async () => {
    const clock = new ManualClock();
    await using t = await startTestApp({ clock, env: { MAILROOM_WEBHOOK_ALLOW_PRIVATE: 'true' } });
    await using answering = await startEndpoint(200);
    await using failing = await startEndpoint(503);
    const deliveriesOf = async (hookId: string) => ((await t.api.get(`/v1/webhooks/${hookId}/deliveries?limit=100`)).body.data as { id: string; status: string }[]);

    const answered = (await t.api.post('/v1/webhooks', { url: answering.url, event_types: ['email.sent'] })).body;
    const oldTest = (await t.api.post(`/v1/webhooks/${answered.id}/test`)).body;
    expect(oldTest.status).toBe('succeeded');
    // An event's delivery to an endpoint that keeps failing stays pending, retried.
    const failed = (await t.api.post('/v1/webhooks', { url: failing.url, event_types: ['email.sent'] })).body;
    const sent = await t.api.post('/v1/emails', { from: 'dev@myapp.test', to: 'delivered@mailroom.test', subject: 'Kept', text: 'x' });
    expect(sent.status).toBe(201);
    await t.mailroom.delivery.drain();
    await t.mailroom.services.webhookDispatcher.drain();
    const [pending] = await deliveriesOf(failed.id);
    expect(pending).toMatchObject({ status: 'pending' });
    // Its next attempt put far off, so that it is still pending when the rest is past its time.
    await t.mailroom.services.store.db.updateTable('webhook_deliveries').set({ next_attempt_at: clock.now() + 365 * DAY_MS }).where('id', '=', pending.id).execute();
    const [oldEvent] = (await deliveriesOf(answered.id)).filter((d) => d.id !== oldTest.id);
    expect(oldEvent).toMatchObject({ status: 'succeeded' });

    clock.advance(2 * DAY_MS);
    const recentTest = (await t.api.post(`/v1/webhooks/${answered.id}/test`)).body;
    clock.advance(29 * DAY_MS);
    await t.mailroom.scheduler.tick();
    expect((await deliveriesOf(answered.id)).map((d) => d.id)).toEqual([recentTest.id]);
    expect((await deliveriesOf(failed.id)).map((d) => d.id)).toEqual([pending.id]);
  });

  it('deletes a sent email whole once it is past the retention, and keeps mail still at work and what was counted', async () => {
    const clock = new ManualClock();
    await using t = await startTestApp({ clock, env: { MAILROOM_EMAIL_RETENTION_DAYS: '30' } });
    const domain = await t.seed.activeDomain('keep.example');
    expect((await t.api.patch(`/v1/domains/${domain.id}`, { open_tracking: true, click_tracking: true })).status).toBe(200);
    const { db } = t.mailroom.services.store;
    const send = async (to: string[], subject: string) => {
      const res = await t.api.post('/v1/emails', {
        from: 'Shop <shop@keep.example>', to, subject, tags: ['spring'],
        html: '<p><a href="https://shop.example/spring">See the spring range</a></p>', text: 'See https://shop.example/spring',
      });
      expect(res.status).toBe(201);
      await t.mailroom.delivery.drain();
      return res.body.id as string;
    };
    const old = await send(['old.reader@example.net', 'complained@mailroom.test'], 'Old news');
    const raw = (await db.selectFrom('sink_messages').select('raw').where('email_id', '=', old).executeTakeFirstOrThrow()).raw.toString();
    const html = raw.replace(/=\r\n/g, '').replace(/=3D/g, '=');
    const link = /href="([^"]+\/t\/c\/[^"]+)"/.exec(html)![1];
    const pixel = /<img src="([^"]+\/t\/o\/[^"]+)"/.exec(html)![1];
    expect((await fetch(link, { redirect: 'manual' })).status).toBe(302);
    // Still at work when the rest is past its time (queued for a destination held meanwhile), or sent
    // later than it was made: scheduled, it is counted from when it went.
    expect((await t.api.post('/v1/queue/hold', { domain: 'held.example' })).status).toBe(200);
    const stillQueued = await send(['reader@held.example'], 'Still waiting');
    const later = await t.api.post('/v1/emails', {
      from: 'shop@keep.example', to: 'later@example.net', subject: 'Later', text: 'x', scheduled_at: new Date(clock.now() + 29 * DAY_MS).toISOString(),
    });
    expect(later.body).toMatchObject({ status: 'scheduled' });
    const scheduled = later.body.id as string;
    clock.advance(10 * DAY_MS);
    const recent = await send(['new.reader@example.net'], 'Recent news');
    await t.mailroom.scheduler.tick();
    const month = `from=${new Date(clock.now() - 40 * DAY_MS).toISOString()}&to=${new Date(clock.now() + DAY_MS).toISOString()}`;
    const counted = (await t.api.get(`/v1/analytics?${month}`)).body;
    expect(counted.totals ?? counted).toBeTruthy();
    const oldEvents = (await db.selectFrom('events').select('pos').where('email_id', '=', old).execute()).map((e) => Number(e.pos));
    expect(oldEvents.length).toBeGreaterThanOrEqual(4);

    clock.advance(21 * DAY_MS);
    await purgeDue(t, clock);

    expect((await t.api.get(`/v1/emails/${old}`)).status).toBe(404);
    expect((await t.api.get(`/v1/emails/${old}/events`)).status).toBe(404);
    expect((await t.api.get(`/v1/emails/${recent}`)).status).toBe(200);
    expect((await t.api.get(`/v1/emails/${stillQueued}`)).status).toBe(200);
    expect((await t.api.get(`/v1/emails/${scheduled}`)).status).toBe(200);
    const listed = async (query: string) => (await t.api.get(`/v1/emails?${query}`)).body.data.map((e: { id: string }) => e.id);
    expect(await listed('limit=100')).toEqual([recent, scheduled, stillQueued]);
    expect(await listed('to=reader@')).toEqual([recent, stillQueued]);
    expect(await listed('tags=spring')).toEqual([recent, stillQueued]);
    const eventsListed = async (query: string) => (await t.api.get(`/v1/events?limit=100&${query}`)).body.data.map((e: { email_id: string }) => e.email_id);
    expect(await eventsListed('')).not.toContain(old);
    expect(new Set(await eventsListed('to=reader@'))).toEqual(new Set([recent, stillQueued]));
    expect(new Set(await eventsListed('tags=spring'))).toEqual(new Set([recent, stillQueued]));
    // Its link leads nowhere now, said in a page to a person in a browser; its pixel is
    // still an image, counted nowhere; the counts it made stay.
    const expired = await fetch(link, { redirect: 'manual' });
    expect(expired.status).toBe(404);
    expect(((await expired.json()) as { error: unknown }).error).toMatchObject({ code: 'not_found', message: expect.stringContaining('expired') });
    const inBrowser = await fetch(link, { redirect: 'manual', headers: { Accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    expect(inBrowser.status).toBe(404);
    expect(inBrowser.headers.get('content-type')).toContain('text/html');
    expect(await inBrowser.text()).toContain('This link has expired');
    const opened = await fetch(pixel);
    expect(opened.status).toBe(200);
    expect(opened.headers.get('content-type')).toBe('image/gif');
    expect((await t.api.get(`/v1/analytics?${month}`)).body).toEqual(counted);

    // Nothing of it is left in any table, its search rows included.
    for (const table of ['email_recipients', 'email_tags', 'email_attachments', 'email_messages', 'events', 'tracked_links', 'tracking_counts', 'sink_messages', 'analytics_first_engagement'] as const) {
      expect(await db.selectFrom(table).select('email_id').where('email_id', '=', old).execute(), table).toEqual([]);
    }
    const searchRows = onPostgres
      ? (await db.selectFrom('events_search' as never).select('pos' as never).execute()).map((r) => Number((r as { pos: number }).pos))
      : (await sql<{ rowid: number }>`SELECT rowid FROM events_search WHERE events_search MATCH 'to_text : old'`.execute(db)).rows.map((r) => Number(r.rowid));
    expect(searchRows.filter((pos) => oldEvents.includes(pos))).toEqual([]);
    if (!onPostgres) {
      // The FTS5 index, whose rows are taken out by their text, is whole.
      await sql`INSERT INTO events_search (events_search) VALUES ('integrity-check')`.execute(db);
      await sql`INSERT INTO emails_search (emails_search) VALUES ('integrity-check')`.execute(db);
    }
  });

  it('deletes a backlog across workspaces in batches, the newer mail of each kept', async () => {
    const clock = new ManualClock();
    await using t = await startTestApp({ clock, env: { MAILROOM_EMAIL_RETENTION_DAYS: '7' } });
    const other = t.api.as((await t.seed.key({ workspaceId: (await t.seed.workspace()).id, mode: 'test' })).token);
    const mine = t.api.as((await t.seed.key({ mode: 'test' })).token);
    const sendBatches = async (api: typeof mine, batches: number, subject: string) => {
      for (let b = 0; b < batches; b++) {
        const emails = Array.from({ length: 100 }, (_, i) => ({ from: 'dev@myapp.test', to: `r${b}-${i}@example.net`, subject, text: 'x' }));
        const res = await api.post('/v1/emails/batch', { emails });
        expect(res.body.error).toBeUndefined();
      }
    };
    // More than one unit's worth (200 emails) in one workspace, less in the other.
    await sendBatches(mine, 5, 'old');
    await sendBatches(other, 1, 'old');
    await t.mailroom.delivery.drain();
    clock.advance(2 * DAY_MS);
    await sendBatches(mine, 1, 'recent');
    await sendBatches(other, 1, 'recent');
    await t.mailroom.delivery.drain();
    clock.advance(6 * DAY_MS);
    await purgeDue(t, clock);
    const subjects = async (api: typeof mine) => {
      const seen = new Map<string, number>();
      for (let page = (await api.get('/v1/emails?limit=100')).body; ; page = (await api.get(`/v1/emails?limit=100&starting_after=${page.next_cursor}`)).body) {
        expect(page.error).toBeUndefined();
        for (const e of page.data as { subject: string }[]) seen.set(e.subject, (seen.get(e.subject) ?? 0) + 1);
        if (!page.has_more) return Object.fromEntries(seen);
      }
    };
    expect(await subjects(mine)).toEqual({ recent: 100 });
    expect(await subjects(other)).toEqual({ recent: 100 });
  });

  it('deletes events of no email at the same age', async () => {
    const clock = new ManualClock();
    await using t = await startTestApp({ clock, env: { MAILROOM_EMAIL_RETENTION_DAYS: '30' } });
    const { db } = t.mailroom.services.store;
    const unsubscribe = async (email: string) => {
      const c = (await t.api.post('/v1/contacts', { email })).body;
      expect((await t.api.post(`/v1/contacts/${c.id}/unsubscribe`, {})).status).toBe(200);
    };
    const unsubscribed = async () => (await db.selectFrom('events').select('recipient').where('type', '=', 'contact.unsubscribed').orderBy('pos').execute()).map((e) => e.recipient);
    await unsubscribe('early@example.net');
    clock.advance(20 * DAY_MS);
    await unsubscribe('late@example.net');
    await t.mailroom.scheduler.tick();
    expect(await unsubscribed()).toEqual(['early@example.net', 'late@example.net']);
    clock.advance(11 * DAY_MS);
    await purgeDue(t, clock);
    expect(await unsubscribed()).toEqual(['late@example.net']);
    // The contact and its suppression stay: only the record of the moment went.
    expect((await t.api.get('/v1/suppressions?email=early@example.net')).body.data).toHaveLength(1);
  });

  it('keeps a reply, and its link to the email it answers, after that email is deleted', async () => {
    const clock = new ManualClock();
    await using dns = await startDns([]);
    await using t = await startSmtpTestApp({ clock, env: { MAILROOM_EMAIL_RETENTION_DAYS: '7', MAILROOM_DNS_SERVERS: dns.server } });
    await inboundDomain(t, 'shop.test');
    const sent = (await t.api.post('/v1/emails', { from: 'orders@shop.test', to: 'kim@customer.test', subject: 'Your order', text: 'Shipped.' })).body;
    await t.mailroom.delivery.drain();
    const raw = await new MailComposer({
      from: 'kim@customer.test', to: 'orders@shop.test', subject: 'Re: Your order', text: 'Thanks!', inReplyTo: sent.message_id,
    }).compile().build();
    await sendRaw(t.mxPort, { from: 'kim@customer.test', to: ['orders@shop.test'] }, raw);
    const reply = await eventually(async () => {
      const [received] = (await t.api.get('/v1/inbound?limit=1')).body.data;
      return received?.status === 'processed' ? received : undefined;
    }, 10_000, 'the reply to be processed');
    expect(reply.in_reply_to_email_id).toBe(sent.id);

    // Past the email's retention, within the reply's own (30 days).
    clock.advance(8 * DAY_MS);
    await purgeDue(t, clock);
    expect((await t.api.get(`/v1/emails/${sent.id}`)).status).toBe(404);
    expect((await t.api.get(`/v1/inbound/${reply.id}`)).body.in_reply_to_email_id).toBe(sent.id);
    const replies = (await t.api.get(`/v1/inbound?in_reply_to_email_id=${sent.id}`)).body.data;
    expect(replies.map((r: { id: string }) => r.id)).toEqual([reply.id]);
  });

  it('keeps sent email forever by default', async () => {
    const clock = new ManualClock();
    await using t = await startTestApp({ clock });
    const sent = await t.api.post('/v1/emails', { from: 'dev@myapp.test', to: 'delivered@mailroom.test', subject: 'Kept', text: 'x' });
    await t.mailroom.delivery.drain();
    clock.advance(3650 * DAY_MS);
    await t.mailroom.scheduler.tick();
    expect((await t.api.get(`/v1/emails/${sent.body.id}`)).status).toBe(200);
  });
});
