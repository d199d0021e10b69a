import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { newId } from '../../src/core/ids.js';
import { followerPosition } from '../../src/store/event-log.js';
import { onPostgres } from '../helpers/database.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { startTestApp, type ApiClient, type TestApp } from '../helpers/app.js';

// Webhooks end to end: real emails through the sink make events, the
// dispatcher POSTs them to a real HTTP receiver on loopback, and the receiver
// checks each signature the way a Standard Webhooks consumer would.

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** An HTTP receiver on 127.0.0.1 answering with the statuses given, in turn (the last one repeats). */
async function startReceiver(statuses: number[]) {
  const received: Received[] = [];
  let answers = [...statuses];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const status = answers.length > 1 ? answers.shift()! : answers[0];
      res.writeHead(status, { 'content-type': 'text/plain' }).end(`answered ${status}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `http://127.0.0.1:${port}/hook`,
    received,
    answer(next: number[]) {
      answers = [...next];
    },
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/**
 * A Standard Webhooks verifier, written from the specification rather than
 * from the signer: HMAC-SHA256 over "id.timestamp.body" keyed with the
 * base64-decoded secret, any one of the space-separated v1 signatures,
 * compared in constant time, with a timestamp tolerance.
 */
function verifies(secret: string, headers: IncomingHttpHeaders, body: string, nowSeconds: number): boolean {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') return false;
  if (!/^\d+$/.test(timestamp) || Math.abs(nowSeconds - Number(timestamp)) > 300) return false;
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return signatures.split(' ').some((entry) => {
    const [version, signature] = entry.split(',');
    if (version !== 'v1' || !signature) return false;
    const given = Buffer.from(signature, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

const ALLOW_PRIVATE = { MAILROOM_WEBHOOK_ALLOW_PRIVATE: 'true' };

async function sendTestEmail(t: TestApp, api: ApiClient, to = 'delivered@mailroom.test'): Promise<string> {
  const res = await api.post('/v1/emails', { from: 'dev@myapp.test', to, subject: 'Webhook test', text: 'x' });
  expect(res.status).toBe(201);
  await t.mailroom.delivery.drain();
  return res.body.id;
}

describe('webhook delivery of real events', () => {
  let t: TestApp;
  let testApi: ApiClient;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await startTestApp({ env: ALLOW_PRIVATE });
    testApi = t.api.as((await t.seed.key({ mode: 'test' })).token);
    receiver = await startReceiver([200]);
  });
  afterAll(async () => {
    await receiver.close();
    await t.close();
  });

  it('delivers the events of a sent email, signed so a standard verifier accepts them, and shows them in both event lists', async () => {
    const created = await t.api.post('/v1/webhooks', {
      url: receiver.url, event_types: ['email.sent', 'email.delivered'], description: 'all deliveries',
    });
    expect(created.status).toBe(201);
    const hook = created.body;
    expect(hook).toMatchObject({ object: 'webhook', url: receiver.url, enabled: true, event_types: ['email.sent', 'email.delivered'] });
    expect(hook.secret).toMatch(/^whsec_/);
    expect((await t.api.get(`/v1/webhooks/${hook.id}`)).body).not.toHaveProperty('secret');

    const emailId = await sendTestEmail(t, testApi);
    const timeline = (await t.api.get(`/v1/emails/${emailId}/events?limit=100`)).body.data;
    const listed = (await t.api.get(`/v1/events?email_id=${emailId}&limit=100`)).body.data;
    expect(listed.map((e: { id: string }) => e.id)).toEqual(timeline.map((e: { id: string }) => e.id));
    const wanted = listed.filter((e: { type: string }) => e.type === 'email.sent' || e.type === 'email.delivered').reverse();
    expect(wanted.map((e: { type: string }) => e.type)).toEqual(['email.sent', 'email.delivered']);

    await t.mailroom.services.webhookDispatcher.drain();
    expect(receiver.received).toHaveLength(2);
    // Each event once; not in order, as up to 4 POSTs to an endpoint are in flight at once.
    expect(receiver.received.map((r) => r.headers['webhook-id']).sort()).toEqual(wanted.map((e: { id: string }) => e.id).sort());
    for (const r of receiver.received) {
      expect(r.headers['content-type']).toBe('application/json');
      expect(verifies(hook.secret, r.headers, r.body, Math.floor(Date.now() / 1000))).toBe(true);
      // Any change to the body breaks the signature.
      expect(verifies(hook.secret, r.headers, r.body.replace('email.', 'email_'), Math.floor(Date.now() / 1000))).toBe(false);
      const payload = JSON.parse(r.body);
      const event = (await t.api.get(`/v1/events/${r.headers['webhook-id']}`)).body;
      expect(payload).toEqual({ type: event.type, created_at: event.created_at, data: event });
      expect(r.headers['webhook-id']).toBe(event.id);
    }

    const deliveries = (await t.api.get(`/v1/webhooks/${hook.id}/deliveries`)).body.data;
    expect(deliveries).toHaveLength(2);
    for (const d of deliveries) {
      expect(d).toMatchObject({ status: 'succeeded', attempt_count: 1, next_attempt_at: null, test: false, replay_of: null });
      expect(d.attempts).toEqual([expect.objectContaining({ attempt: 1, succeeded: true, response_status: 200, error: null, response_body: 'answered 200' })]);
      expect(d.attempts[0].duration_ms).toBeGreaterThanOrEqual(0);
    }
    expect((await t.api.get(`/v1/webhooks/${hook.id}/deliveries/${deliveries[0].id}`)).body).toEqual(deliveries[0]);

    // Replay: the same message again, same webhook-id and body, a new delivery.
    const replay = await t.api.post(`/v1/webhooks/${hook.id}/deliveries/${deliveries[0].id}/replay`);
    expect(replay.status).toBe(201);
    expect(replay.body).toMatchObject({ status: 'pending', attempt_count: 0, replay_of: deliveries[0].id, message_id: deliveries[0].message_id });
    await t.mailroom.services.webhookDispatcher.drain();
    expect(receiver.received).toHaveLength(3);
    const again = receiver.received[2];
    const original = receiver.received.find((r) => r.headers['webhook-id'] === deliveries[0].message_id)!;
    expect(again.body).toBe(original.body);
    expect(again.headers['webhook-id']).toBe(original.headers['webhook-id']);
    expect(verifies(hook.secret, again.headers, again.body, Math.floor(Date.now() / 1000))).toBe(true);
    expect((await t.api.get(`/v1/webhooks/${hook.id}/deliveries/${replay.body.id}`)).body.status).toBe('succeeded');
    await t.api.delete(`/v1/webhooks/${hook.id}`);
  });

  it('sends a test event at once, on demand, without touching the endpoint health', async () => {
    const hook = (await t.api.post('/v1/webhooks', { url: receiver.url, event_types: ['email.bounced'] })).body;
    const before = receiver.received.length;
    const res = await t.api.post(`/v1/webhooks/${hook.id}/test`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ test: true, status: 'succeeded', event_type: 'webhook.test', attempt_count: 1, event_id: null });
    expect(res.body.message_id).toMatch(/^msg_/);
    const r = receiver.received[before];
    expect(JSON.parse(r.body)).toMatchObject({ type: 'webhook.test', data: { webhook_id: hook.id } });
    expect(verifies(hook.secret, r.headers, r.body, Math.floor(Date.now() / 1000))).toBe(true);

    // A 410 to a test is reported but does not disable the endpoint.
    receiver.answer([410, 200]);
    const gone = await t.api.post(`/v1/webhooks/${hook.id}/test`);
    expect(gone.body).toMatchObject({ status: 'failed', attempts: [expect.objectContaining({ response_status: 410, succeeded: false })] });
    expect((await t.api.get(`/v1/webhooks/${hook.id}`)).body).toMatchObject({ enabled: true, failing_since: null });
    await t.api.delete(`/v1/webhooks/${hook.id}`);
  });

  it('signs with the old and the new secret for a day after a rotation', async () => {
    const hook = (await t.api.post('/v1/webhooks', { url: receiver.url, event_types: ['email.sent'] })).body;
    const rotated = await t.api.post(`/v1/webhooks/${hook.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(hook.secret);
    const before = receiver.received.length;
    await t.api.post(`/v1/webhooks/${hook.id}/test`);
    const r = receiver.received[before];
    expect(String(r.headers['webhook-signature']).split(' ')).toHaveLength(2);
    const now = Math.floor(Date.now() / 1000);
    expect(verifies(rotated.body.secret, r.headers, r.body, now)).toBe(true);
    expect(verifies(hook.secret, r.headers, r.body, now)).toBe(true);
    await t.api.delete(`/v1/webhooks/${hook.id}`);
  });
});

describe('a webhook response body with a NUL character', () => {
  it('is recorded with U+FFFD in its place, and the delivery settled', async () => {
    // PostgreSQL's text cannot hold U+0000: the attempt could not be written,
    // the row stayed leased, and the event was POSTed again once it lapsed.
    await using t = await startTestApp({ env: ALLOW_PRIVATE });
    const testApi = t.api.as((await t.seed.key({ mode: 'test' })).token);
    let posts = 0;
    const server = createServer((req, res) => {
      posts += 1;
      req.resume().on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\0done'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      const hook = (await t.api.post('/v1/webhooks', { url, event_types: ['email.sent'] })).body;
      const test = await t.api.post(`/v1/webhooks/${hook.id}/test`);
      expect(test.status).toBe(200);
      expect(test.body.attempts).toEqual([expect.objectContaining({ succeeded: true, response_body: 'ok\uFFFDdone' })]);

      await sendTestEmail(t, testApi);
      await t.mailroom.services.webhookDispatcher.drain();
      const deliveries = (await t.api.get(`/v1/webhooks/${hook.id}/deliveries`)).body.data;
      const event = deliveries.find((d: { test: boolean }) => !d.test);
      expect(event).toMatchObject({ status: 'succeeded', attempt_count: 1 });
      expect(event.attempts).toEqual([expect.objectContaining({ response_status: 200, response_body: 'ok\uFFFDdone' })]);
      expect(posts).toBe(2);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('webhook fan-out while no endpoint is enabled', () => {
  it('moves past the events without reading them into deliveries, and an endpoint enabled later hears only of what happens after', async () => {
    await using t = await startTestApp({ env: ALLOW_PRIVATE });
    const testApi = t.api.as((await t.seed.key({ mode: 'test' })).token);
    const receiver = await startReceiver([200]);
    try {
      const { db } = t.mailroom.services.store;
      const dispatcher = t.mailroom.services.webhookDispatcher;
      const watermark = () => followerPosition(db, 'webhooks');
      const lastEvent = async () => Number((await db.selectFrom('events').select((eb) => eb.fn.max('pos').as('pos')).executeTakeFirstOrThrow()).pos);
      const deliveries = async () => (await db.selectFrom('webhook_deliveries').select(['webhook_id', 'event_id']).execute());

      // No endpoint at all.
      await sendTestEmail(t, testApi);
      await dispatcher.fanOut();
      expect(await watermark()).toBe(await lastEvent());
      expect(await deliveries()).toEqual([]);

      // An endpoint that is disabled counts as none.
      const hook = (await t.api.post('/v1/webhooks', { url: receiver.url, event_types: ['email.sent'] })).body;
      expect((await t.api.patch(`/v1/webhooks/${hook.id}`, { enabled: false })).status).toBe(200);
      const whileDisabled = await sendTestEmail(t, testApi);
      await dispatcher.fanOut();
      expect(await watermark()).toBe(await lastEvent());
      expect(await deliveries()).toEqual([]);

      // Enabled again: it hears of the next email, and of nothing before it.
      expect((await t.api.patch(`/v1/webhooks/${hook.id}`, { enabled: true })).status).toBe(200);
      const afterwards = await sendTestEmail(t, testApi);
      await dispatcher.fanOut();
      expect(await watermark()).toBe(await lastEvent());
      const made = await deliveries();
      expect(made).toHaveLength(1);
      const sent = (await t.api.get(`/v1/events/${made[0].event_id}`)).body;
      expect(sent.type).toBe('email.sent');
      expect(sent.email_id).toBe(afterwards);
      expect(sent.email_id).not.toBe(whileDisabled);
    } finally {
      await receiver.close();
    }
  });
});

// Transactions side by side, each on a connection of its own: PostgreSQL's (SQLite has one writer).
describe.runIf(onPostgres)('draining webhooks while an event is still being committed', () => {
  it('waits for the event in flight instead of ending with the events after it not fanned out', async () => {
    await using t = await startTestApp({ env: ALLOW_PRIVATE });
    const receiver = await startReceiver([200]);
    try {
      const hook = (await t.api.post('/v1/webhooks', { url: receiver.url, event_types: ['email.sent'] })).body;
      const { db } = t.mailroom.services.store;
      const event = () => ({ id: newId('evt'), workspace_id: t.workspaceId, type: 'email.sent', data: '{}', created_at: Date.now() });
      // An event whose transaction is still open holds the position before a committed one.
      let commit!: () => void;
      const committing = new Promise<void>((resolve) => (commit = resolve));
      let inserted!: () => void;
      const holding = new Promise<void>((resolve) => (inserted = resolve));
      const inFlight = db.transaction().execute(async (tx) => {
        await tx.insertInto('events').values(event()).execute();
        inserted();
        await committing;
      });
      await holding;
      await db.insertInto('events').values(event()).execute();

      const drained = t.mailroom.services.webhookDispatcher.drain();
      setTimeout(commit, 200);
      await drained;
      await inFlight;
      const deliveries = (await t.api.get(`/v1/webhooks/${hook.id}/deliveries`)).body.data;
      expect(deliveries.map((d: { status: string }) => d.status)).toEqual(['succeeded', 'succeeded']);
      expect(receiver.received).toHaveLength(2);
    } finally {
      await receiver.close();
    }
  });
});

describe('webhook concurrency', () => {
  it('has at most 4 attempts in flight per endpoint', async () => {
    await using t = await startTestApp({ env: ALLOW_PRIVATE });
    const testApi = t.api.as((await t.seed.key({ mode: 'test' })).token);
    // A receiver that holds every request until released.
    const held: Array<() => void> = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const server = createServer((req, res) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      req.resume();
      held.push(() => {
        inFlight--;
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const hook = (await t.api.post('/v1/webhooks', { url: `http://127.0.0.1:${port}/`, event_types: ['email.delivered'] })).body;
      const to = Array.from({ length: 10 }, (_, i) => `delivered+${i}@mailroom.test`);
      expect((await testApi.post('/v1/emails', { from: 'dev@myapp.test', to, subject: 'many', text: 'x' })).status).toBe(201);
      await t.mailroom.delivery.drain();
      const dispatcher = t.mailroom.services.webhookDispatcher;
      await dispatcher.fanOut();
      await dispatcher.deliverDue();
      const deadline = Date.now() + 5_000;
      while (held.length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(held.length).toBe(4);
      // The cap is reached: nothing more is claimed until one finishes.
      expect(await dispatcher.deliverDue()).toBe(0);
      // Release what is held, round by round, until all ten have succeeded.
      const succeeded = async () => (await t.api.get(`/v1/webhooks/${hook.id}/deliveries?status=succeeded&limit=100`)).body.data.length;
      const releaseDeadline = Date.now() + 10_000;
      while ((await succeeded()) < 10 && Date.now() < releaseDeadline) {
        held.splice(0).forEach((done) => done());
        await dispatcher.deliverDue();
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(await succeeded()).toBe(10);
      expect(maxInFlight).toBe(4);
    } finally {
      held.splice(0).forEach((done) => done());
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    }
  });
});

describe('webhook retries and disabling', () => {
  const clock = new ManualClock();
  let t: TestApp;
  let testApi: ApiClient;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await startTestApp({ clock, env: ALLOW_PRIVATE });
    testApi = t.api.as((await t.seed.key({ mode: 'test' })).token);
    receiver = await startReceiver([200]);
  });
  afterAll(async () => {
    await receiver.close();
    await t.close();
  });
  const drain = () => t.mailroom.services.webhookDispatcher.drain();

  it('retries a 500 on the schedule and shows both attempts', async () => {
    const hook = (await t.api.post('/v1/webhooks', { url: receiver.url, event_types: ['email.sent'] })).body;
    receiver.answer([500, 200]);
    const before = receiver.received.length;
    await sendTestEmail(t, testApi);
    await drain();
    let [delivery] = (await t.api.get(`/v1/webhooks/${hook.id}/deliveries`)).body.data;
    expect(delivery).toMatchObject({ status: 'pending', attempt_count: 1, last_error: 'HTTP 500' });
    expect(delivery.attempts).toEqual([expect.objectContaining({ attempt: 1, succeeded: false, response_status: 500, error: 'HTTP 500' })]);
    const wait = Date.parse(delivery.next_attempt_at) - clock.now();
    expect(wait).toBeGreaterThanOrEqual(4_500);
    expect(wait).toBeLessThanOrEqual(5_500);
    expect((await t.api.get(`/v1/webhooks/${hook.id}`)).body.failing_since).not.toBeNull();

    // Not due yet: nothing is sent.
    await drain();
    expect(receiver.received.length - before).toBe(1);
    clock.advance(wait);
    await drain();
    [delivery] = (await t.api.get(`/v1/webhooks/${hook.id}/deliveries?status=succeeded`)).body.data;
    expect(delivery).toMatchObject({ status: 'succeeded', attempt_count: 2, next_attempt_at: null });
    expect(delivery.attempts.map((a: { response_status: number }) => a.response_status)).toEqual([500, 200]);
    const [first, second] = receiver.received.slice(before);
    expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(second.body).toBe(first.body);
    expect((await t.api.get(`/v1/webhooks/${hook.id}`)).body.failing_since).toBeNull();
    await t.api.delete(`/v1/webhooks/${hook.id}`);
  });

  it('disables an endpoint that answers 410, failing its pending deliveries, and sends it nothing more', async () => {
    const hook = (await t.api.post('/v1/webhooks', { url: receiver.url, event_types: ['email.sent', 'email.delivered'] })).body;
    receiver.answer([410]);
    const before = receiver.received.length;
    await sendTestEmail(t, testApi);
    await drain();
    const after = (await t.api.get(`/v1/webhooks/${hook.id}`)).body;
    expect(after).toMatchObject({ enabled: false, disabled_reason: 'The endpoint answered 410 Gone.' });
    expect(after.disabled_at).not.toBeNull();
    const deliveries = (await t.api.get(`/v1/webhooks/${hook.id}/deliveries`)).body.data;
    expect(deliveries.map((d: { status: string }) => d.status)).toEqual(['failed', 'failed']);
    // Both events may be in flight at once; the first 410 disables the endpoint.
    const sent = receiver.received.length - before;
    expect(sent).toBeGreaterThanOrEqual(1);
    expect(sent).toBeLessThanOrEqual(2);

    await sendTestEmail(t, testApi);
    await drain();
    expect(receiver.received.length - before).toBe(sent);
    const replay = await t.api.post(`/v1/webhooks/${hook.id}/deliveries/${deliveries[0].id}/replay`);
    expect(replay.status).toBe(422);
    expect(replay.body.error.code).toBe('invalid_state');

    // A test still reaches a disabled endpoint, to see whether it is back.
    receiver.answer([200]);
    expect((await t.api.post(`/v1/webhooks/${hook.id}/test`)).body.status).toBe('succeeded');
    expect((await t.api.get(`/v1/webhooks/${hook.id}`)).body.enabled).toBe(false);

    // Enabled again: the reason is cleared and replays go out.
    const enabled = (await t.api.patch(`/v1/webhooks/${hook.id}`, { enabled: true })).body;
    expect(enabled).toMatchObject({ enabled: true, disabled_reason: null, disabled_at: null });
    expect((await t.api.post(`/v1/webhooks/${hook.id}/deliveries/${deliveries[0].id}/replay`)).status).toBe(201);
    await drain();
    expect(receiver.received.length - before).toBe(sent + 2);
    await t.api.delete(`/v1/webhooks/${hook.id}`);
  });

  it('disables an endpoint after 5 days in which every attempt failed, saying why', async () => {
    const hook = (await t.api.post('/v1/webhooks', { url: receiver.url, event_types: ['email.sent'] })).body;
    receiver.answer([503]);
    await sendTestEmail(t, testApi);
    await drain();
    const since = (await t.api.get(`/v1/webhooks/${hook.id}`)).body.failing_since;
    expect(Date.parse(since)).toBe(clock.now());

    clock.advance(5 * 86_400_000 - 1_000);
    await sendTestEmail(t, testApi);
    await drain();
    expect((await t.api.get(`/v1/webhooks/${hook.id}`)).body.enabled).toBe(true);

    clock.advance(2_000);
    await sendTestEmail(t, testApi);
    await drain();
    const after = (await t.api.get(`/v1/webhooks/${hook.id}`)).body;
    expect(after.enabled).toBe(false);
    expect(after.disabled_reason).toContain(`failed since ${since}`);
    expect(after.disabled_reason).toContain('HTTP 503');
    expect((await t.api.get(`/v1/webhooks/${hook.id}/deliveries?status=pending`)).body.data).toEqual([]);
    await t.api.delete(`/v1/webhooks/${hook.id}`);
  });

  it('gives up after the last step of the schedule', async () => {
    const hook = (await t.api.post('/v1/webhooks', { url: receiver.url, event_types: ['email.sent'] })).body;
    receiver.answer([500]);
    await sendTestEmail(t, testApi);
    for (let i = 0; i < 10; i++) {
      await drain();
      const [d] = (await t.api.get(`/v1/webhooks/${hook.id}/deliveries`)).body.data;
      expect(d.attempt_count).toBe(i + 1);
      if (i < 9) clock.set(Date.parse(d.next_attempt_at));
      else expect(d).toMatchObject({ status: 'failed', next_attempt_at: null, last_error: 'HTTP 500' });
    }
    await t.api.delete(`/v1/webhooks/${hook.id}`);
  });
});

describe('webhook targets on private addresses', () => {
  let t: TestApp;
  let dns: TestDns;
  let receiver: Receiver;
  beforeAll(async () => {
    dns = await startDns();
    t = await startTestApp({ env: { MAILROOM_DNS_SERVERS: dns.server } });
    receiver = await startReceiver([200]);
  });
  afterAll(async () => {
    await receiver.close();
    await t?.close();
    await dns?.stop();
  });

  it.each([
    'http://127.0.0.1/hook', 'http://2130706433/', 'http://0x7f.1/', 'http://017700000001/', 'http://127.1/', 'http://0.0.0.0/',
    'http://localhost/', 'http://10.0.0.8/', 'http://172.20.1.1/', 'http://192.168.0.1/', 'http://169.254.169.254/latest/meta-data/',
    'http://100.64.0.1/', 'http://224.0.0.1/', 'http://[::1]/', 'http://[::]/', 'http://[fe80::1]/', 'http://[fd00::1]/',
    'http://[ff02::1]/', 'http://[::ffff:127.0.0.1]/', 'http://[::ffff:a9fe:a9fe]/', 'http://[64:ff9b::7f00:1]/',
    'http://[2002:7f00:1::1]/', 'http://[2002:c0a8:101::]/',
  ])('refuses %s at create and update', async (url) => {
    const res = await t.api.post('/v1/webhooks', { url, event_types: ['email.sent'] });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: 'validation_error', param: 'url' });
    // Whoever tries a receiver on their own machine learns what would allow it.
    expect(res.body.error.message).toMatch(/^The url points at .+\. Webhooks go to public addresses only, unless the server runs with MAILROOM_WEBHOOK_ALLOW_PRIVATE=true\.$/);
    const hook = (await t.api.post('/v1/webhooks', { url: 'https://hooks.example/in', event_types: ['email.sent'] })).body;
    const patched = await t.api.patch(`/v1/webhooks/${hook.id}`, { url });
    expect(patched.status).toBe(422);
    expect((await t.api.get(`/v1/webhooks/${hook.id}`)).body.url).toBe('https://hooks.example/in');
    await t.api.delete(`/v1/webhooks/${hook.id}`);
  });

  it('checks the resolved address at connect time, so a name pointing at loopback gets nothing', async () => {
    await dns.set([{ type: 'A', name: 'rebind.test', address: '127.0.0.1' }]);
    const url = `http://rebind.test:${receiver.port}/hook`;
    const hook = (await t.api.post('/v1/webhooks', { url, event_types: ['email.sent'] })).body;
    expect(hook.url).toBe(url);
    const res = await t.api.post(`/v1/webhooks/${hook.id}/test`);
    expect(res.body).toMatchObject({ status: 'failed', attempts: [expect.objectContaining({ response_status: null })] });
    expect(res.body.attempts[0].error).toBe('rebind.test resolves to 127.0.0.1, which is loopback (RFC 1122)');
    expect(receiver.received).toHaveLength(0);
  });
});

describe('webhook targets by name when private addresses are allowed', () => {
  it('connects to the address the name resolves to', async () => {
    await using dns = await startDns();
    await dns.set([{ type: 'A', name: 'hooks.test', address: '127.0.0.1' }]);
    await using t = await startTestApp({ env: { ...ALLOW_PRIVATE, MAILROOM_DNS_SERVERS: dns.server } });
    const receiver = await startReceiver([204]);
    try {
      const hook = (await t.api.post('/v1/webhooks', { url: `http://hooks.test:${receiver.port}/in`, event_types: ['email.sent'] })).body;
      const res = await t.api.post(`/v1/webhooks/${hook.id}/test`);
      expect(res.body).toMatchObject({ status: 'succeeded', attempts: [expect.objectContaining({ response_status: 204 })] });
      expect(receiver.received[0].headers.host).toBe(`hooks.test:${receiver.port}`);
    } finally {
      await receiver.close();
    }
  });
});

describe('the webhooks API', () => {
  let t: TestApp;
  let dns: TestDns;
  beforeAll(async () => {
    // Endpoints here are on .example names the local DNS rig answers NXDOMAIN: nothing leaves the machine.
    dns = await startDns();
    t = await startTestApp({ env: { MAILROOM_DNS_SERVERS: dns.server } });
  });
  afterAll(async () => {
    await t?.close();
    await dns?.stop();
  });

  it('creates, lists, updates and deletes endpoints', async () => {
    const a = (await t.api.post('/v1/webhooks', { url: 'https://a.example/in', event_types: ['email.delivered', 'email.received', 'email.opened'] })).body;
    const b = (await t.api.post('/v1/webhooks', { url: 'https://b.example/in', event_types: ['email.bounced'], enabled: false })).body;
    expect(b).toMatchObject({ enabled: false, disabled_reason: 'Disabled through the API.' });
    expect((await t.api.get('/v1/webhooks')).body.data.map((h: { id: string }) => h.id)).toEqual([b.id, a.id]);
    expect((await t.api.get('/v1/webhooks?enabled=false')).body.data.map((h: { id: string }) => h.id)).toEqual([b.id]);
    const page = (await t.api.get('/v1/webhooks?limit=1')).body;
    expect(page.has_more).toBe(true);
    expect((await t.api.get(`/v1/webhooks?limit=1&starting_after=${page.next_cursor}`)).body.data[0].id).toBe(a.id);

    const patched = await t.api.patch(`/v1/webhooks/${a.id}`, { url: 'https://a2.example/in', description: 'moved', event_types: ['email.opened'] });
    expect(patched.body).toMatchObject({ url: 'https://a2.example/in', description: 'moved', event_types: ['email.opened'], enabled: true });
    const off = await t.api.patch(`/v1/webhooks/${a.id}`, { enabled: false });
    expect(off.body).toMatchObject({ enabled: false, disabled_reason: 'Disabled through the API.' });

    expect((await t.api.delete(`/v1/webhooks/${a.id}`)).status).toBe(204);
    expect((await t.api.get(`/v1/webhooks/${a.id}`)).status).toBe(404);
    expect((await t.api.delete(`/v1/webhooks/${a.id}`)).status).toBe(404);
  });

  it('replays an idempotent create with the same secret', async () => {
    const headers = { 'Idempotency-Key': 'create-hook-1' };
    const body = { url: 'https://c.example/in', event_types: ['email.sent'] };
    const first = await t.api.post('/v1/webhooks', body, { headers });
    const second = await t.api.post('/v1/webhooks', body, { headers });
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
  });

  it('answers every bad request with the error object', async () => {
    const hook = (await t.api.post('/v1/webhooks', { url: 'https://d.example/in', event_types: ['email.sent'] })).body;
    const bad: Array<[string, unknown, string]> = [
      ['missing url', { event_types: ['email.sent'] }, 'url'],
      ['missing event types', { url: 'https://x.example/' }, 'event_types'],
      ['empty event types', { url: 'https://x.example/', event_types: [] }, 'event_types'],
      ['unknown event type', { url: 'https://x.example/', event_types: ['email.exploded'] }, 'event_types.0'],
      // Nothing writes contact events, so they are not offered.
      ['event type never written', { url: 'https://x.example/', event_types: ['email.sent', 'contact.created'] }, 'event_types.1'],
      ['repeated event type', { url: 'https://x.example/', event_types: ['email.sent', 'email.sent'] }, 'event_types'],
      ['unknown field', { url: 'https://x.example/', event_types: ['email.sent'], secret: 'whsec_x' }, 'secret'],
      ['wrong type', { url: 42, event_types: ['email.sent'] }, 'url'],
      ['not a URL', { url: 'hooks', event_types: ['email.sent'] }, 'url'],
      ['ftp', { url: 'ftp://x.example/', event_types: ['email.sent'] }, 'url'],
      ['credentials', { url: 'https://user:pw@x.example/', event_types: ['email.sent'] }, 'url'],
      ['too long', { url: `https://x.example/${'a'.repeat(2100)}`, event_types: ['email.sent'] }, 'url'],
      ['long description', { url: 'https://x.example/', event_types: ['email.sent'], description: 'd'.repeat(501) }, 'description'],
    ];
    for (const [what, body, param] of bad) {
      const res = await t.api.post('/v1/webhooks', body);
      expect(res.status, what).toBe(422);
      expect(res.body.error.param, what).toBe(param);
    }
    const notJson = await t.api.request('POST', '/v1/webhooks', { rawBody: '{"url":', headers: { 'Content-Type': 'application/json' } });
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.code).toBe('invalid_json');

    expect((await t.api.patch(`/v1/webhooks/${hook.id}`, {})).status).toBe(422);
    expect((await t.api.patch(`/v1/webhooks/${hook.id}`, { enabled: 'yes' })).status).toBe(422);
    expect((await t.api.patch(`/v1/webhooks/${hook.id}`, { event_types: ['nope'] })).status).toBe(422);
    expect((await t.api.patch('/v1/webhooks/wh_missing', { enabled: true })).status).toBe(404);

    for (const query of ['limit=0', 'limit=101', 'enabled=maybe', 'starting_after=garbage', 'starting_after=a&ending_before=b']) {
      expect((await t.api.get(`/v1/webhooks?${query}`)).status, query).toBe(400);
    }
    for (const query of ['status=done', 'limit=abc', 'ending_before=%21%21']) {
      expect((await t.api.get(`/v1/webhooks/${hook.id}/deliveries?${query}`)).status, query).toBe(400);
    }
    for (const path of ['/v1/webhooks/wh_missing', '/v1/webhooks/wh_missing/deliveries', `/v1/webhooks/${hook.id}/deliveries/whd_missing`]) {
      expect((await t.api.get(path)).status, path).toBe(404);
    }
    for (const path of ['/v1/webhooks/wh_missing/rotate-secret', '/v1/webhooks/wh_missing/test', `/v1/webhooks/${hook.id}/deliveries/whd_missing/replay`]) {
      expect((await t.api.post(path)).status, path).toBe(404);
    }
    expect((await t.api.get(`/v1/webhooks/${'x'.repeat(65)}`)).status).toBe(404);
    expect((await t.api.request('PUT', `/v1/webhooks/${hook.id}`, { body: {} })).status).toBe(405);
  });

  it('needs a key, and the webhooks scopes', async () => {
    expect((await t.api.as(null).get('/v1/webhooks')).status).toBe(401);
    expect((await t.api.as('svc_live_nope').post('/v1/webhooks', { url: 'https://x.example/', event_types: ['email.sent'] })).status).toBe(401);
    const reader = t.api.as((await t.seed.key({ scopes: ['webhooks:read'] })).token);
    const hook = (await t.api.post('/v1/webhooks', { url: 'https://e.example/in', event_types: ['email.sent'] })).body;
    expect((await reader.get(`/v1/webhooks/${hook.id}`)).status).toBe(200);
    expect((await reader.get(`/v1/webhooks/${hook.id}/deliveries`)).status).toBe(200);
    for (const [method, path] of [
      ['POST', '/v1/webhooks'], ['PATCH', `/v1/webhooks/${hook.id}`], ['DELETE', `/v1/webhooks/${hook.id}`],
      ['POST', `/v1/webhooks/${hook.id}/rotate-secret`], ['POST', `/v1/webhooks/${hook.id}/test`],
    ] as const) {
      const res = await reader.request(method, path, { body: method === 'DELETE' ? undefined : { url: 'https://x.example/', event_types: ['email.sent'] } });
      expect(res.status, `${method} ${path}`).toBe(403);
    }
    const sender = t.api.as((await t.seed.key({ scopes: ['sending_access'] })).token);
    expect((await sender.get('/v1/webhooks')).status).toBe(403);
  });

  it('keeps workspaces apart: endpoints, deliveries and events', async () => {
    const other = await t.seed.workspace();
    const them = t.api.as((await t.seed.key({ workspaceId: other.id })).token);
    const mine = (await t.api.post('/v1/webhooks', { url: 'https://f.example/in', event_types: ['email.sent'] })).body;
    const theirs = (await them.post('/v1/webhooks', { url: 'https://g.example/in', event_types: ['email.sent'] })).body;
    expect((await them.get('/v1/webhooks')).body.data.map((h: { id: string }) => h.id)).toEqual([theirs.id]);
    for (const res of [
      await them.get(`/v1/webhooks/${mine.id}`),
      await them.patch(`/v1/webhooks/${mine.id}`, { enabled: false }),
      await them.delete(`/v1/webhooks/${mine.id}`),
      await them.post(`/v1/webhooks/${mine.id}/rotate-secret`),
      await them.post(`/v1/webhooks/${mine.id}/test`),
      await them.get(`/v1/webhooks/${mine.id}/deliveries`),
    ]) expect(res.status).toBe(404);
    expect((await t.api.get(`/v1/webhooks/${mine.id}`)).body.enabled).toBe(true);

    // An email of this workspace is fanned out to this workspace's endpoints only.
    const testApi = t.api.as((await t.seed.key({ mode: 'test' })).token);
    await sendTestEmail(t, testApi);
    await t.mailroom.services.webhookDispatcher.fanOut();
    expect((await them.get(`/v1/webhooks/${theirs.id}/deliveries`)).body.data).toEqual([]);
    const [delivery] = (await t.api.get(`/v1/webhooks/${mine.id}/deliveries?limit=1`)).body.data;
    expect(delivery.event_type).toBe('email.sent');
    expect((await them.post(`/v1/webhooks/${theirs.id}/deliveries/${delivery.id}/replay`)).status).toBe(404);
    expect((await them.get(`/v1/webhooks/${mine.id}/deliveries/${delivery.id}`)).status).toBe(404);
  });
});
