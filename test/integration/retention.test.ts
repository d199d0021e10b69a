import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/smtp-app.js';

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
    const [oldEvent] = (await deliveriesOf(answered.id)).filter((d) => d.id !== oldTest.id);
    expect(oldEvent).toMatchObject({ status: 'succeeded' });

    clock.advance(2 * DAY_MS);
    const recentTest = (await t.api.post(`/v1/webhooks/${answered.id}/test`)).body;
    clock.advance(29 * DAY_MS);
    await t.mailroom.scheduler.tick();
    expect((await deliveriesOf(answered.id)).map((d) => d.id)).toEqual([recentTest.id]);
    expect((await deliveriesOf(failed.id)).map((d) => d.id)).toEqual([pending.id]);
  });
});
