import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDns, type TestDns } from '../helpers/dns.js';
import { directDeliveryEnv, startScriptedMx, type ScriptedMx } from '../helpers/mx.js';
import { startTestApp, type ApiClient, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/smtp-app.js';

// The outbound queue as an operator steers it, over HTTP against a real MX
// found through dnsmasq: what waits for each domain and why, retrying a
// deferral at once, holding a destination and releasing it, per workspace.

const DOMAINS = ['slow.test', 'held.test', 'shared.test'];

describe('the outbound queue', () => {
  let dns: TestDns;
  let mx: ScriptedMx;
  let t: TestApp;
  /** Domains whose recipients the MX defers with 451. */
  const deferring = new Set<string>(['slow.test']);
  /** Domains whose recipients the MX asks to slow down. */
  const slowingDown = new Set<string>();

  beforeAll(async () => {
    mx = await startScriptedMx({
      reply: (stage, ctx) => {
        if (stage !== 'rcpt') return undefined;
        const domain = ctx.address!.split('@')[1];
        if (slowingDown.has(domain)) return '451 4.7.0 Too many messages, try again later';
        return deferring.has(domain) ? '451 4.7.1 Greylisted, please come back' : undefined;
      },
    });
    dns = await startDns(DOMAINS.flatMap((d) => [
      { type: 'MX' as const, name: d, exchange: `mx.${d}`, priority: 10 }, { type: 'A' as const, name: `mx.${d}`, address: '127.0.0.1' },
    ]));
    t = await startTestApp({ env: directDeliveryEnv(dns.server, mx.port) });
    await t.seed.activeDomain('acme.test');
  });

  afterAll(async () => {
    await t?.close();
    await mx?.stop();
    await dns?.stop();
  });

  const send = async (to: string[], api: ApiClient = t.api, from = 'ann@acme.test') => {
    const res = await api.post('/v1/emails', { from, to, subject: `To ${to.join(', ')}`, text: 'Hello.' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.id as string;
  };
  const recipientStatuses = async (id: string) => ((await t.api.get(`/v1/emails/${id}`)).body.recipients as Array<{ status: string }>).map((r) => r.status);
  const receivedFor = (domain: string) => mx.received.filter((m) => m.rcptTo.some((r) => r.endsWith(`@${domain}`)));

  it('lists each domain with its waiting recipients, the oldest, the next attempt and the last reply, and retries at once', async () => {
    const first = await send(['a@slow.test', 'b@slow.test']);
    const second = await send(['c@slow.test']);
    for (const id of [first, second]) {
      await eventually(async () => ((await recipientStatuses(id)).every((s) => s === 'deferred') ? true : undefined), 10_000, 'a deferral');
    }
    const queue = await t.api.get('/v1/queue');
    expect(queue.status).toBe(200);
    expect(queue.body.data).toHaveLength(1);
    const slow = queue.body.data[0];
    expect(slow).toMatchObject({
      object: 'queue_destination', domain: 'slow.test', queued: 0, deferred: 3, leased: 0, lease_ends_at: null, emails: 2, held: false, held_at: null,
      last_reply: { code: 451, text: expect.stringMatching(/^451 4\.7\.1 Greylisted/) },
    });
    // The first retry is minutes away.
    expect(Date.parse(slow.next_attempt_at) - Date.now()).toBeGreaterThan(60_000);

    const items = await t.api.get('/v1/queue/items?domain=slow.test&state=deferred');
    expect(items.body.data.map((i: { email_id: string }) => i.email_id)).toEqual([second, first]);
    expect(items.body.data[1]).toMatchObject({ object: 'queue_item', domain: 'slow.test', recipients: ['a@slow.test', 'b@slow.test'], state: 'deferred', attempts: 1 });
    expect((await t.api.get('/v1/queue/items?domain=slow.test&state=queued')).body.data).toEqual([]);

    // The remote is fixed: a retry delivers now, not in minutes.
    deferring.delete('slow.test');
    const retried = await t.api.post('/v1/queue/retry', { domain: 'slow.test' });
    expect(retried.body).toEqual({ object: 'queue_retry', retried: 2, leased: 0, lease_ends_at: null });
    await mx.waitFor(2, 10_000);
    expect(receivedFor('slow.test').flatMap((m) => m.rcptTo).sort()).toEqual(['a@slow.test', 'b@slow.test', 'c@slow.test']);
    await eventually(async () => ((await t.api.get('/v1/queue')).body.data.length === 0 ? true : undefined), 10_000, 'an empty queue');
  });

  it('retries one email by its id, and refuses an id it does not know', async () => {
    deferring.add('slow.test');
    const id = await send(['d@slow.test']);
    await eventually(async () => ((await recipientStatuses(id)).every((s) => s === 'deferred') ? true : undefined), 10_000, 'a deferral');
    deferring.delete('slow.test');
    expect((await t.api.post('/v1/queue/retry', { email_id: id })).body.retried).toBe(1);
    await eventually(async () => ((await recipientStatuses(id)).every((s) => s === 'delivered') ? true : undefined), 10_000, 'delivery');
    const unknown = await t.api.post('/v1/queue/retry', { email_id: 'em_00000000000000000000000000' });
    expect(unknown.status).toBe(404);
  });

  it('retries at once a destination resting after it asked to slow down', async () => {
    slowingDown.add('slow.test');
    const id = await send(['j@slow.test']);
    await eventually(async () => ((await recipientStatuses(id)).every((s) => s === 'deferred') ? true : undefined), 10_000, 'a slow-down reply');
    slowingDown.delete('slow.test');
    const before = mx.received.length;
    await t.api.post('/v1/queue/retry', { domain: 'slow.test' });
    // Without the retry the destination would rest 30 seconds, and the message wait minutes.
    await eventually(async () => (mx.received.length > before ? true : undefined), 5_000, 'delivery after the retry');
    // The outcome is recorded once the MX's reply is in.
    await eventually(async () => ((await recipientStatuses(id)).every((s) => s === 'delivered') ? true : undefined), 5_000, 'the delivery recorded');
  });

  it('holds a domain: nothing goes there, the time held does not age the mail, and a release sends it', async () => {
    const held = await t.api.post('/v1/queue/hold', { domain: 'Held.Test' });
    expect(held.status).toBe(200);
    expect(held.body).toMatchObject({ object: 'queue_hold', domain: 'held.test', held: true });
    // Holding again keeps the first hold's time.
    expect((await t.api.post('/v1/queue/hold', { domain: 'held.test' })).body.held_at).toBe(held.body.held_at);
    const id = await send(['e@held.test']);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(receivedFor('held.test')).toHaveLength(0);
    const listed = (await t.api.get('/v1/queue')).body.data.find((d: { domain: string }) => d.domain === 'held.test');
    expect(listed).toMatchObject({ held: true, held_at: held.body.held_at, queued: 1, next_attempt_at: null });
    const [item] = (await t.api.get('/v1/queue/items?domain=held.test')).body.data;
    expect(item).toMatchObject({ email_id: id, state: 'held', next_attempt_at: null });
    expect((await t.api.get('/v1/queue/items?domain=held.test&state=queued')).body.data).toEqual([]);
    // A retry does not get past a hold.
    await t.api.post('/v1/queue/retry', { domain: 'held.test' });
    await new Promise((r) => setTimeout(r, 500));
    expect(receivedFor('held.test')).toHaveLength(0);

    // Released into a deferral, the row stays to show its lifetime moved on by the time held.
    deferring.add('held.test');
    const released = await t.api.post('/v1/queue/release', { domain: 'held.test' });
    expect(released.body).toEqual({ object: 'queue_hold', domain: 'held.test', held: false, held_at: null });
    await eventually(async () => ((await recipientStatuses(id)).every((s) => s === 'deferred') ? true : undefined), 10_000, 'the attempt after the release');
    const [after] = (await t.api.get('/v1/queue/items?domain=held.test')).body.data;
    expect(Date.parse(after.expires_at) - Date.parse(item.expires_at)).toBeGreaterThanOrEqual(1_900);
    deferring.delete('held.test');
    await t.api.post('/v1/queue/retry', { domain: 'held.test' });
    // Delivered is recorded after the MX has the message: the next tests start from an empty queue.
    await eventually(async () => ((await recipientStatuses(id)).every((s) => s === 'delivered') ? true : undefined), 10_000, 'the held mail delivered');
    expect(receivedFor('held.test')).toHaveLength(1);

    const notHeld = await t.api.post('/v1/queue/release', { domain: 'held.test' });
    expect(notHeld.status).toBe(422);
    expect(notHeld.body.error).toMatchObject({ code: 'invalid_state', param: 'domain' });
  });

  it('keeps each workspace to its own queue: what one holds or sees, another does not', async () => {
    const other = await t.seed.workspace();
    const theirs = t.api.as((await t.seed.key({ workspaceId: other.id })).token);
    await t.seed.activeDomain('beta.test', { workspaceId: other.id });
    // We hold shared.test; their mail to it still goes.
    await t.api.post('/v1/queue/hold', { domain: 'shared.test' });
    const ours = await send(['f@shared.test']);
    const theirId = await send(['g@shared.test'], theirs, 'bob@beta.test');
    // Their queue is empty once their mail's delivery is recorded, which follows the MX's receipt.
    await eventually(async () => ((await theirs.get(`/v1/emails/${theirId}`)).body.status === 'delivered' ? true : undefined), 10_000, 'their mail');
    expect(receivedFor('shared.test').some((m) => m.rcptTo.includes('g@shared.test'))).toBe(true);
    expect(receivedFor('shared.test').some((m) => m.rcptTo.includes('f@shared.test'))).toBe(false);
    expect((await theirs.get('/v1/queue')).body.data).toEqual([]);
    expect((await theirs.get('/v1/queue/items?domain=shared.test')).body.data).toEqual([]);
    expect((await theirs.post('/v1/queue/retry', { email_id: ours })).status).toBe(404);
    expect((await theirs.post('/v1/queue/release', { domain: 'shared.test' })).status).toBe(422);
    expect((await t.api.get('/v1/queue')).body.data.map((d: { domain: string }) => d.domain)).toContain('shared.test');
    expect((await t.api.post('/v1/queue/retry', { email_id: theirId })).status).toBe(404);
    await t.api.post('/v1/queue/release', { domain: 'shared.test' });
    await eventually(async () => ((await recipientStatuses(ours)).every((s) => s === 'delivered') ? true : undefined), 10_000, 'our mail after the release');
    expect(receivedFor('shared.test').some((m) => m.rcptTo.includes('f@shared.test'))).toBe(true);
  });

  it('needs the queue scopes, refuses bad input with the field named, and keeps the calls in the key\'s activity', async () => {
    const reader = await t.seed.key({ scopes: ['queue:read'] });
    expect((await t.api.as(reader.token).get('/v1/queue')).status).toBe(200);
    const denied = await t.api.as(reader.token).post('/v1/queue/hold', { domain: 'x.test' });
    expect(denied.status).toBe(403);
    expect(denied.body.error.message).toMatch(/queue:write/);
    expect((await t.api.as((await t.seed.key({ scopes: ['emails:read'] })).token).get('/v1/queue')).status).toBe(403);

    for (const [path, body, param] of [
      ['/v1/queue/hold', { domain: 'not a domain' }, 'domain'],
      ['/v1/queue/hold', { domain: '10.0.0.1' }, 'domain'],
      ['/v1/queue/retry', { domain: 'bad..name' }, 'domain'],
      ['/v1/queue/hold', {}, 'domain'],
      ['/v1/queue/hold', { domain: 'x.test', extra: 1 }, 'extra'],
    ] as const) {
      const res = await t.api.post(path, body);
      expect(res.status, JSON.stringify(body)).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(res.body.error.param, JSON.stringify(body)).toBe(param);
    }
    expect((await t.api.get('/v1/queue/items')).status).toBe(400);
    expect((await t.api.get('/v1/queue/items?domain=x.test&state=lost')).status).toBe(400);
    expect((await t.api.get('/v1/queue?starting_after=forged')).status).toBe(400);

    const operator = await t.seed.key({ scopes: ['queue:write'] });
    await t.api.as(operator.token).post('/v1/queue/hold', { domain: 'audit.test' });
    await t.api.as(operator.token).post('/v1/queue/release', { domain: 'audit.test' });
    const trail = await eventually(async () => {
      const data = (await t.api.get(`/v1/api-keys/${operator.id}/activity`)).body.data as Array<{ operation_id: string; status: number }>;
      return data.length >= 2 ? data : undefined;
    }, 5_000, 'the activity trail');
    expect(trail.map((a) => [a.operation_id, a.status])).toEqual([['releaseQueue', 200], ['holdQueue', 200]]);
  });

  it('pages the destinations, what waits longest first', async () => {
    deferring.add('slow.test').add('held.test');
    await send(['h@slow.test']);
    await new Promise((r) => setTimeout(r, 20));
    await send(['i@held.test']);
    const page = await t.api.get('/v1/queue?limit=1');
    expect(page.body.data.map((d: { domain: string }) => d.domain)).toEqual(['slow.test']);
    expect(page.body.has_more).toBe(true);
    const next = await t.api.get(`/v1/queue?limit=1&starting_after=${page.body.next_cursor}`);
    expect(next.body.data.map((d: { domain: string }) => d.domain)).toEqual(['held.test']);
    expect(next.body.has_more).toBe(false);
  });
});
