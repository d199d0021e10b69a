import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { newId } from '../core/ids.js';
import { newLeaseOwner } from '../core/lease-owner.js';
import { workLoop } from '../core/work-loop.js';
import { toIso, type Clock } from '../core/clock.js';
import { unseal } from '../core/seal.js';
import type { Store } from '../store/db.js';
import { freeGoneLeases } from '../store/lease.js';
import { postJson, WEBHOOK_TIMEOUT_MS, type PostResult } from './http-post.js';
import { retryDelayMs } from './retry-schedule.js';
import { signatureHeader } from './signature.js';
import { TEST_EVENT_TYPE } from './event-types.js';
import type { ResolveHost } from './url-policy.js';
import {
  anyDue, anyEnabledWebhook, claimDue, deliveryExists, disableWebhook, enabledWebhookIds, enabledWebhooksOf,
  endpointForDelivery, insertAttempt, insertDeliveries, readWatermark, recordEndpointHealth, settleDelivery,
  writeWatermark, type DeliveryRow, type NewDelivery,
} from './webhooks.repo.js';

// The webhooks engine. Two steps, both restartable at any point:
//
// 1. Fan-out follows the events table by position from a stored watermark
//    (its follower position, 'webhooks'): each batch of events becomes one
//    delivery row per subscribed, enabled endpoint, and the watermark moves,
//    in one transaction. Nothing in the code that writes events knows about
//    webhooks; an event committed is an event delivered. While no endpoint
//    is enabled anywhere, the watermark just moves to the last event: no one
//    would hear of those events, and an endpoint made later hears only of
//    what happens after it was made.
//    On PostgreSQL, where positions are handed out before commit, the read
//    must stop below the oldest position still in flight (rows whose xmin is
//    not yet visible to every snapshot) so a late commit is not skipped.
// 2. Delivery claims due rows with a lease (next_attempt_at moved to the
//    lease's end), POSTs them outside any transaction, then records the
//    attempt and the next step of the retry schedule.
//
// At least once: a crash after the POST and before the record repeats the
// POST; the webhook-id header (the event id) is the same every time, so
// receivers can de-duplicate.

const FANOUT_BATCH = 500;
/** A claim outlives the request's own deadline, so a live attempt is never claimed twice. */
export const LEASE_MS = WEBHOOK_TIMEOUT_MS + 45_000;
/** Attempts in flight at once for one endpoint: a slow receiver is not flooded, and cannot take every slot. */
export const PER_ENDPOINT_CONCURRENCY = 4;
/** Attempts in flight at once in this process. */
export const MAX_IN_FLIGHT = 64;
/** An endpoint whose every attempt failed for this long is disabled. */
export const FAILING_DISABLE_AFTER_MS = 5 * 86_400_000;
const IDLE_MS = 250;
/** drain() gives up after this many rounds, so a test cannot spin forever. */
const MAX_DRAIN_ROUNDS = 200;
/** drain()'s pause while the events past the watermark are not settled yet (PostgreSQL). */
const DRAIN_SETTLE_PAUSE_MS = 5;
const USER_AGENT = 'Mailroom-Webhooks/1.0';

/** The shape of the events the dispatcher follows (a port: the events area provides it). */
export interface FollowedEvent {
  pos: number;
  workspaceId: string;
  createdAt: number;
  event: { id: string; type: string; created_at: string };
}

export interface DispatcherDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  sealKey: Buffer;
  allowPrivate: boolean;
  resolveHost: ResolveHost;
  readEventsAfter(afterPos: number, limit: number): Promise<FollowedEvent[]>;
  /** The position of the last event a reader can see (0 when there is none). */
  lastEventPos(): Promise<number>;
  random?: () => number;
}

export interface Dispatcher {
  /** Fans out one batch of events; returns how many events it consumed (positions passed over, when no endpoint is enabled). */
  fanOut(): Promise<number>;
  /** Claims due deliveries within the concurrency caps and starts them; returns how many. */
  deliverDue(): Promise<number>;
  /** Runs fan-out and delivery until nothing is due now and nothing is in flight (tests call it instead of waiting). */
  drain(): Promise<void>;
  /** Sends a test event to the endpoint now, once; returns the delivery id. */
  sendTest(workspaceId: string, webhookId: string): Promise<string>;
  /** Loops until `signal` aborts; in-flight POSTs are then cut and their leases left to lapse. */
  run(signal: AbortSignal): Promise<void>;
  /** Tells `observer` of every settled attempt (metrics): how it ended and how long the POST took. */
  observeAttempts(observer: (result: WebhookAttemptResult, seconds: number) => void): void;
}

/** How one POST ended: a test (counted apart, never retried), answered 2xx, to be retried, given up on, or disabled by a 410. */
export type WebhookAttemptResult = 'succeeded' | 'retrying' | 'failed' | 'gone' | 'test';

/** The body POSTed for an event: its type and time, and the event as GET /events/{id} shows it. */
export function eventPayload(event: FollowedEvent['event']): string {
  return JSON.stringify({ type: event.type, created_at: event.created_at, data: event });
}

export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { store, clock, logger } = deps;
  const owner = newLeaseOwner();
  const inFlight = new Set<Promise<void>>();
  const activeByEndpoint = new Map<string, number>();
  let observer: ((result: WebhookAttemptResult, seconds: number) => void) | undefined;
  const stopSends = new AbortController();
  // Every POST in flight listens for the stop and stops listening when it
  // settles: up to MAX_IN_FLIGHT of them at once, more with test sends, as
  // at a start that takes over a backlog. That is many listeners but no
  // leak, so Node's warning at the eleventh does not apply.
  setMaxListeners(0, stopSends.signal);
  let rotation = 0;
  // Fan-out and claiming run one at a time in this process (the loop and a
  // drain() may both call them), so a drain never looks between a claim and
  // the start of its sends.
  let turn: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(work: () => Promise<T>): Promise<T> => {
    const result = turn.then(work);
    turn = result.catch(() => undefined);
    return result;
  };

  // The watermark as last read or moved here. It only ever moves on, so
  // while the last event is not past it, nothing is new: an idle round
  // reads the last event's position and no more.
  let watermarkSeen = 0;

  /** One batch of fan-out: how many positions it consumed, and whether it read them or passed over them. */
  async function fanOutBatch(): Promise<{ consumed: number; passedOver: boolean }> {
    const hi = await deps.lastEventPos();
    if (hi <= watermarkSeen) return { consumed: 0, passedOver: false };
    const lo = await readWatermark(store.db);
    watermarkSeen = Math.max(watermarkSeen, lo);
    if (hi <= lo) return { consumed: 0, passedOver: false };
    if (!(await anyEnabledWebhook(store.db))) return { consumed: await passOver(lo, hi), passedOver: true };
    const events = await deps.readEventsAfter(lo, FANOUT_BATCH);
    if (events.length === 0) return { consumed: 0, passedOver: false };
    const now = clock.now();
    const moved = await store.write(async (tx) => {
      // Another fan-out (a second process) got here first: its rows stand.
      if ((await readWatermark(tx)) !== lo) return false;
      const hooks = await enabledWebhooksOf(tx, [...new Set(events.map((e) => e.workspaceId))]);
      const rows: NewDelivery[] = [];
      for (const e of events) {
        for (const h of hooks) {
          // An endpoint hears of what happens after it was made, not before.
          if (h.workspace_id !== e.workspaceId || h.created_at > e.createdAt || !h.event_types.includes(e.event.type)) continue;
          rows.push({
            id: newId('whd', now), workspace_id: e.workspaceId, webhook_id: h.id, message_id: e.event.id,
            event_id: e.event.id, event_type: e.event.type, payload: eventPayload(e.event), status: 'pending', is_test: 0,
            attempt_count: 0, next_attempt_at: now, lease_owner: null, last_error: null, replay_of: null,
            created_at: now, updated_at: now,
          });
        }
      }
      await insertDeliveries(tx, rows);
      await writeWatermark(tx, events.at(-1)!.pos);
      return true;
    });
    if (moved) watermarkSeen = Math.max(watermarkSeen, events.at(-1)!.pos);
    return { consumed: events.length, passedOver: false };
  }

  /** With no endpoint enabled, moves the watermark from `lo` past the last event, at `hi`, reading none; returns how many positions it passed. */
  async function passOver(lo: number, hi: number): Promise<number> {
    const passed = await store.write(async (tx) => {
      // Another fan-out moved first, or an endpoint was enabled meanwhile: the next round reads as usual.
      if ((await readWatermark(tx)) !== lo || (await anyEnabledWebhook(tx))) return 0;
      await writeWatermark(tx, hi);
      return hi - lo;
    });
    if (passed > 0) watermarkSeen = Math.max(watermarkSeen, hi);
    return passed;
  }

  function secretsFor(hook: NonNullable<Awaited<ReturnType<typeof endpointForDelivery>>>, now: number): string[] {
    const secrets = [unseal(hook.secret, deps.sealKey).toString('utf8')];
    if (hook.previous_secret && (hook.previous_secret_until ?? 0) > now) secrets.push(unseal(hook.previous_secret, deps.sealKey).toString('utf8'));
    return secrets;
  }

  async function attempt(row: DeliveryRow): Promise<void> {
    const hook = await endpointForDelivery(store.db, row.webhook_id);
    // Deleted meanwhile: its deliveries went with it.
    if (!hook) return;
    const startedAt = clock.now();
    const timestamp = Math.floor(startedAt / 1000);
    const headers = {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      'webhook-id': row.message_id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(secretsFor(hook, startedAt), row.message_id, timestamp, row.payload),
    };
    const result = await postJson(hook.url, headers, row.payload, {
      allowPrivate: deps.allowPrivate, resolveHost: deps.resolveHost, signal: stopSends.signal,
    });
    // Cut by shutdown: not an answer from the endpoint; the lease lapses and it is retried.
    if (stopSends.signal.aborted && result.status === null) return;
    await settle(row, result, startedAt);
  }

  async function settle(row: DeliveryRow, result: PostResult, startedAt: number): Promise<void> {
    const now = clock.now();
    const succeeded = result.status !== null && result.status >= 200 && result.status < 300;
    const error = succeeded ? null : result.error ?? `HTTP ${result.status}`;
    const gone = result.status === 410;
    const attemptNo = row.attempt_count + 1;
    const wait = succeeded || gone || row.is_test === 1 ? undefined : retryDelayMs(attemptNo, deps.random);
    const observe = () => observer?.(row.is_test === 1 ? 'test' : succeeded ? 'succeeded' : gone ? 'gone' : wait === undefined ? 'failed' : 'retrying',
      result.durationMs / 1000);
    await store.write(async (tx) => {
      const settled = await settleDelivery(tx, row.id, owner, {
        status: succeeded ? 'succeeded' : wait === undefined ? 'failed' : 'pending',
        attemptCount: attemptNo, nextAttemptAt: now + (wait ?? 0), lastError: error,
      }, now);
      // Deleted with its endpoint while the POST was out: nothing left to record.
      if (!settled && !(await deliveryExists(tx, row.id))) return;
      await insertAttempt(tx, {
        delivery_id: row.id, webhook_id: row.webhook_id, workspace_id: row.workspace_id, attempt: attemptNo,
        attempted_at: startedAt, duration_ms: result.durationMs, response_status: result.status,
        succeeded: succeeded ? 1 : 0, error, response_body: result.responseBody,
      });
      // A test says how the endpoint answers; it does not count toward its health.
      if (row.is_test === 1) return;
      if (gone) {
        await disableWebhook(tx, row.webhook_id, 'The endpoint answered 410 Gone.', now);
        return;
      }
      const failingSince = await recordEndpointHealth(tx, row.webhook_id, succeeded, now);
      if (failingSince !== null && now - failingSince >= FAILING_DISABLE_AFTER_MS) {
        await disableWebhook(tx, row.webhook_id,
          `Every attempt failed since ${toIso(failingSince)} (5 days); the last error: ${error}`, now);
      }
    });
    observe();
  }

  function start(row: DeliveryRow): void {
    activeByEndpoint.set(row.webhook_id, (activeByEndpoint.get(row.webhook_id) ?? 0) + 1);
    const p: Promise<void> = attempt(row)
      .catch((err) => logger.error({ err, delivery_id: row.id }, 'webhook attempt failed to run'))
      .finally(() => {
        inFlight.delete(p);
        const left = (activeByEndpoint.get(row.webhook_id) ?? 1) - 1;
        if (left > 0) activeByEndpoint.set(row.webhook_id, left);
        else activeByEndpoint.delete(row.webhook_id);
        loop.wake();
      });
    inFlight.add(p);
  }

  async function claimAndStart(): Promise<number> {
    const now = clock.now();
    const room = MAX_IN_FLIGHT - inFlight.size;
    if (room <= 0 || !(await anyDue(store.db, now))) return 0;
    const ids = await enabledWebhookIds(store.db);
    if (ids.length === 0) return 0;
    // Start each round at another endpoint, so a busy one cannot keep the
    // global slots from the others.
    rotation = (rotation + 1) % ids.length;
    const order = [...ids.slice(rotation), ...ids.slice(0, rotation)];
    const claimed = await store.write(async (tx) => {
      const out: DeliveryRow[] = [];
      for (const id of order) {
        const slots = Math.min(room - out.length, PER_ENDPOINT_CONCURRENCY - (activeByEndpoint.get(id) ?? 0));
        if (room - out.length <= 0) break;
        if (slots > 0) out.push(...await claimDue(tx, id, slots, owner, now, LEASE_MS));
      }
      return out;
    });
    for (const row of claimed) start(row);
    return claimed.length;
  }

  const fanOutOnce = () => exclusive(fanOutBatch);
  const fanOut = async () => (await fanOutOnce()).consumed;
  const deliverDue = () => exclusive(claimAndStart);

  // A finished attempt frees a slot and wakes the loop.
  const loop = workLoop({
    idleMs: IDLE_MS,
    onError: (err) => logger.error({ err }, 'webhook dispatcher round failed'),
    async round() {
      // Passing over is no reason to hurry back: with no endpoint enabled, a
      // pass per sleep keeps the watermark close behind, where a pass per
      // round would add a write to every commit of sends.
      const fanned = await fanOutOnce();
      const started = await deliverDue();
      return started > 0 || (fanned.consumed > 0 && !fanned.passedOver) ? 0 : undefined;
    },
  });

  const dispatcher: Dispatcher = {
    observeAttempts(fn) {
      observer = fn;
    },

    fanOut,
    deliverDue,

    async drain() {
      for (let round = 0; round < MAX_DRAIN_ROUNDS; round++) {
        const fanned = await fanOut();
        const started = await deliverDue();
        const waited = inFlight.size;
        await Promise.allSettled([...inFlight]);
        if (fanned === 0 && started === 0 && waited === 0) {
          // On PostgreSQL a batch stops before a position whose transaction
          // may still be open; it settles in a moment, and the events past it
          // are not drained until then.
          if ((await deps.lastEventPos()) <= (await readWatermark(store.db))) return;
          await sleep(DRAIN_SETTLE_PAUSE_MS);
        }
      }
      throw new Error(`webhook dispatcher still busy after ${MAX_DRAIN_ROUNDS} rounds`);
    },

    async sendTest(workspaceId, webhookId) {
      const now = clock.now();
      const id = newId('whd', now);
      const messageId = newId('msg', now);
      const payload = JSON.stringify({
        type: TEST_EVENT_TYPE, created_at: toIso(now),
        data: { webhook_id: webhookId, message: 'A test event, sent by POST /v1/webhooks/{id}/test.' },
      });
      // Inserted already leased to this process, so the loop does not also pick it up.
      const row: NewDelivery = {
        id, workspace_id: workspaceId, webhook_id: webhookId, message_id: messageId, event_id: null, event_type: TEST_EVENT_TYPE,
        payload, status: 'pending', is_test: 1, attempt_count: 0, next_attempt_at: now + LEASE_MS, lease_owner: owner,
        last_error: null, replay_of: null, created_at: now, updated_at: now,
      };
      await store.write((tx) => insertDeliveries(tx, [row]));
      await attempt({ ...row, pos: 0 });
      return id;
    },

    async run(signal) {
      signal.addEventListener('abort', () => stopSends.abort(), { once: true });
      // Deliveries a crashed process of this host held would otherwise wait out their lease.
      await freeGoneLeases(store, 'webhook_deliveries', logger, () => clock.now());
      await loop.run(signal);
      await Promise.allSettled([...inFlight]);
    },
  };

  return dispatcher;
}
