import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { analyticsService } from '../../src/analytics/index.js';
import { contactsService } from '../../src/contacts/index.js';
import { ManualClock } from '../../src/core/clock.js';
import { newId } from '../../src/core/ids.js';
import { eventsService } from '../../src/events/index.js';
import type { Store } from '../../src/store/db.js';
import { followerPosition, type Follower } from '../../src/store/event-log.js';
import { suppressionsService } from '../../src/suppressions/index.js';
import { tagsService } from '../../src/tags/index.js';
import { createDispatcher } from '../../src/webhooks/dispatcher.js';
import { insertWebhook } from '../../src/webhooks/webhooks.repo.js';
import { useTempStore } from '../helpers/store.js';

// Every follower of the events table, cut off as a crash would cut it (its
// transaction never commits), then run again: it resumes from its stored
// position, and each event has its effect exactly once.

const temp = useTempStore();
const EVENTS = 30;

/** The store, but the next `crashes` write units fail after their work, before the commit: a power cut. */
function crashing(store: Store) {
  let crashes = 0;
  const proxied: Store = {
    ...store,
    write: (work, options) => store.write(async (tx) => {
      const value = await work(tx);
      if (crashes > 0) {
        crashes--;
        throw new Error('the power went');
      }
      return value;
    }, options),
  };
  return { store: proxied, crashNext: () => void (crashes = 1) };
}

async function appendEvents(store: Store, clock: ManualClock): Promise<void> {
  await store.write(async (tx) => {
    await tx.insertInto('events').values(Array.from({ length: EVENTS }, (_, i) => ({
      id: newId('evt', clock.now()), workspace_id: 'ws_a', email_id: newId('em', clock.now()), domain_id: null,
      type: i % 2 ? 'email.delivered' : 'email.sent', recipient: `reader${i % 10}@example.com`, from_address: 'news@acme.test',
      subject: 'Hello', data: '{}', created_at: clock.now(),
    }))).execute();
  });
}

const lastPos = async (store: Store) => Number((await store.db.selectFrom('events').select((eb) => eb.fn.max('pos').as('pos')).executeTakeFirstOrThrow()).pos);

describe('followers of the events table, after a crash', () => {
  const followers: Array<{ name: Follower; run(store: Store, clock: ManualClock): Promise<unknown>; effect(store: Store): Promise<number>; expected: number }> = [
    {
      name: 'engagement',
      run: (store, clock) => contactsService({ store, clock, tags: tagsService({ store, clock, broadcastUsing: async () => undefined }), suppressions: suppressionsService({ store, clock }) }).foldEvents(),
      // One row of facts per address, each having seen its sends.
      effect: async (store) => Number((await store.db.selectFrom('address_engagement').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n),
      expected: 10,
    },
    {
      name: 'events_index',
      run: (store, clock) => eventsService({ store, clock }).indexEvents(),
      effect: async (store) => Number((await store.db.selectFrom('event_hours').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n),
      expected: 1,
    },
    {
      name: 'analytics',
      run: (store, clock) => analyticsService({ store, clock }).fold(),
      effect: async (store) => Number((await store.db.selectFrom('analytics_hourly').select((eb) => eb.fn.sum<number>(eb('sent', '+', eb.ref('delivered'))).as('n'))
        .where('domain_id', '=', '*').where('tagset', '=', -1).executeTakeFirstOrThrow()).n ?? 0),
      expected: EVENTS,
    },
    {
      name: 'webhooks',
      run: async (store, clock) => {
        const dispatcher = createDispatcher({
          store, clock, logger: pino({ level: 'silent' }), sealKey: Buffer.alloc(32), allowPrivate: true, resolveHost: async () => [],
          readEventsAfter: async (after, limit) => (await store.db.selectFrom('events').selectAll().where('pos', '>', after).orderBy('pos').limit(limit).execute())
            .map((r) => ({ pos: r.pos, workspaceId: r.workspace_id, createdAt: r.created_at, event: { id: r.id, type: r.type, created_at: new Date(r.created_at).toISOString() } })),
          lastEventPos: () => lastPos(store),
        });
        return dispatcher.fanOut();
      },
      // One delivery per event to the one endpoint subscribed.
      effect: async (store) => Number((await store.db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n),
      expected: EVENTS,
    },
  ];

  for (const f of followers) {
    it(`${f.name}: a crash leaves its position and its effect as they were, and the next run has each event counted once`, async () => {
      const clock = new ManualClock(Date.parse('2026-11-24T10:00:00Z'));
      await temp.store.write((tx) => insertWebhook(tx, {
        id: newId('wh'), workspace_id: 'ws_a', url: 'https://hooks.example/', description: null,
        event_types: JSON.stringify(['email.sent', 'email.delivered']), enabled: 1, secret: 'sealed', previous_secret: null,
        previous_secret_until: null, disabled_reason: null, disabled_at: null, failing_since: null, created_at: clock.now() - 1, updated_at: clock.now() - 1,
      }));
      await appendEvents(temp.store, clock);
      const { store, crashNext } = crashing(temp.store);

      crashNext();
      await expect(f.run(store, clock)).rejects.toThrow('the power went');
      expect(await followerPosition(temp.store.db, f.name)).toBe(0);
      expect(await f.effect(temp.store)).toBe(0);

      await f.run(store, clock);
      expect(await followerPosition(temp.store.db, f.name)).toBe(await lastPos(temp.store));
      expect(await f.effect(temp.store)).toBe(f.expected);
      // Caught up: another run changes nothing.
      await f.run(store, clock);
      expect(await f.effect(temp.store)).toBe(f.expected);
    });
  }
});
