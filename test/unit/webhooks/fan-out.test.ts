import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import { newId } from '../../../src/core/ids.js';
import { createDispatcher, type FollowedEvent } from '../../../src/webhooks/dispatcher.js';
import { claimDue, insertDeliveries, insertWebhook, readWatermark } from '../../../src/webhooks/webhooks.repo.js';
import { useTempStore } from '../../helpers/store.js';

// Fan-out reads the event stream through a port; here the port is a list in
// memory, so the test sees exactly which reads fan-out makes.

const temp = useTempStore();

function rig() {
  const clock = new ManualClock();
  const events: FollowedEvent[] = [];
  const reads: number[] = [];
  let lastPosReads = 0;
  const makeDispatcher = () => createDispatcher({
    store: temp.store, clock, logger: pino({ level: 'silent' }), sealKey: Buffer.alloc(32), allowPrivate: true,
    resolveHost: async () => [],
    readEventsAfter: async (afterPos, limit) => {
      reads.push(afterPos);
      return events.filter((e) => e.pos > afterPos).slice(0, limit);
    },
    lastEventPos: async () => {
      lastPosReads++;
      return events.at(-1)?.pos ?? 0;
    },
  });
  const dispatcher = makeDispatcher();
  const happen = (workspaceId: string, type: string) => {
    const pos = (events.at(-1)?.pos ?? 0) + 1;
    events.push({ pos, workspaceId, createdAt: clock.now(), event: { id: newId('evt', clock.now()), type, created_at: new Date(clock.now()).toISOString() } });
  };
  const addEndpoint = (workspaceId: string, enabled: boolean) => temp.store.write((tx) => insertWebhook(tx, {
    id: newId('wh'), workspace_id: workspaceId, url: 'https://hooks.example/', description: null, event_types: JSON.stringify(['email.sent']),
    enabled: enabled ? 1 : 0, secret: 'sealed', previous_secret: null, previous_secret_until: null, disabled_reason: null, disabled_at: null,
    failing_since: null, created_at: clock.now(), updated_at: clock.now(),
  }));
  const watermark = () => readWatermark(temp.store.db);
  const deliveries = () => temp.store.db.selectFrom('webhook_deliveries').select(['webhook_id', 'event_id']).execute();
  // Another node's dispatcher: the same store and events.
  const other = () => makeDispatcher();
  return { clock, events, reads, dispatcher, other, happen, addEndpoint, watermark, deliveries, lastPosReads: () => lastPosReads };
}

describe('webhook fan-out', () => {
  it('passes over the events without reading them while no endpoint is enabled anywhere', async () => {
    const r = rig();
    expect(await r.dispatcher.fanOut()).toBe(0);
    for (let i = 0; i < 3; i++) r.happen('ws_a', 'email.sent');
    expect(await r.dispatcher.fanOut()).toBe(3);
    expect(await r.watermark()).toBe(3);
    // A disabled endpoint counts as none.
    await r.addEndpoint('ws_a', false);
    r.happen('ws_a', 'email.sent');
    expect(await r.dispatcher.fanOut()).toBe(1);
    expect(await r.dispatcher.fanOut()).toBe(0);
    expect(await r.watermark()).toBe(4);
    expect(r.reads).toEqual([]);
    expect(await r.deliveries()).toEqual([]);
  });

  it('reads and fans out as soon as an endpoint is enabled, from where the watermark stands', async () => {
    const r = rig();
    r.happen('ws_a', 'email.sent');
    await r.dispatcher.fanOut();
    r.clock.advance(1_000);
    const hook = await r.addEndpoint('ws_a', true);
    r.clock.advance(1_000);
    r.happen('ws_a', 'email.sent');
    r.happen('ws_b', 'email.sent');
    expect(await r.dispatcher.fanOut()).toBe(2);
    expect(r.reads).toEqual([1]);
    expect(await r.watermark()).toBe(3);
    expect(await r.deliveries()).toEqual([{ webhook_id: hook.id, event_id: r.events[1].event.id }]);
  });

  it('passes over once a nap while running, not once a round, while events keep coming and no endpoint is enabled', async () => {
    const r = rig();
    const stop = new AbortController();
    const steady = setInterval(() => r.happen('ws_a', 'email.sent'), 1);
    const running = r.dispatcher.run(stop.signal);
    await new Promise((done) => setTimeout(done, 600));
    clearInterval(steady);
    stop.abort();
    await running;
    // Naps are 250 ms: three passes at most in 600 ms, where a pass per round made dozens.
    expect(r.lastPosReads()).toBeGreaterThanOrEqual(1);
    expect(r.lastPosReads()).toBeLessThanOrEqual(4);
    expect(await r.watermark()).toBeGreaterThan(0);
    expect(r.reads).toEqual([]);
  });
});

describe('webhook fan-out beside another node', () => {
  it('fans out each event once, whichever node moves the watermark, and an idle round reads no events', async () => {
    const r = rig();
    await r.addEndpoint('ws_a', true);
    r.clock.advance(1_000);
    r.happen('ws_a', 'email.sent');
    r.happen('ws_a', 'email.sent');
    expect(await r.dispatcher.fanOut()).toBe(2);
    expect(await r.dispatcher.fanOut()).toBe(0);
    expect(r.reads).toEqual([0]);
    // The other node fans out the next event; this one then finds nothing left, and takes the one after.
    r.happen('ws_a', 'email.sent');
    expect(await r.other().fanOut()).toBe(1);
    expect(await r.dispatcher.fanOut()).toBe(0);
    r.happen('ws_a', 'email.sent');
    expect(await r.dispatcher.fanOut()).toBe(1);
    expect(r.reads).toEqual([0, 2, 3]);
    expect(await r.watermark()).toBe(4);
    expect((await r.deliveries()).map((d) => d.event_id).sort()).toEqual(r.events.map((e) => e.event.id).sort());
  });
});

describe('claiming deliveries', () => {
  it('leases the due pending ones, earliest first, up to the number asked, and never one already leased or not due', async () => {
    const now = 1_000_000;
    const webhookId = 'wh_claims';
    const delivery = (id: string, nextAttemptAt: number, status: 'pending' | 'succeeded' = 'pending') => ({
      id, workspace_id: 'ws_a', webhook_id: webhookId, message_id: `msg_${id}`, event_id: null, event_type: 'email.sent', payload: '{}',
      status, is_test: 0, attempt_count: 0, next_attempt_at: nextAttemptAt, lease_owner: null, last_error: null, replay_of: null,
      created_at: now, updated_at: now,
    });
    await temp.store.write((tx) => insertDeliveries(tx, [
      delivery('d3', now - 10), delivery('d1', now - 30), delivery('d2', now - 20), delivery('later', now + 1), delivery('done', now - 40, 'succeeded'),
    ]));
    const first = await temp.store.write((tx) => claimDue(tx, webhookId, 2, 'owner-a', now, 60_000));
    expect(first.map((d) => [d.id, d.lease_owner, d.next_attempt_at])).toEqual([['d1', 'owner-a', now + 60_000], ['d2', 'owner-a', now + 60_000]]);
    const second = await temp.store.write((tx) => claimDue(tx, webhookId, 10, 'owner-b', now, 60_000));
    expect(second.map((d) => d.id)).toEqual(['d3']);
    expect(await temp.store.write((tx) => claimDue(tx, webhookId, 10, 'owner-c', now, 60_000))).toEqual([]);
  });
});
