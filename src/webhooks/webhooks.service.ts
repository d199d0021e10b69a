import { AppError, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import type { Clock } from '../core/clock.js';
import { seal } from '../core/seal.js';
import { writeInBatches, type Store } from '../store/db.js';
import type { Page, PageQuery } from '../store/paging.js';
import type { WebhookDeliveryStatus } from './webhooks.tables.js';
import type { Dispatcher } from './dispatcher.js';
import { newSecret } from './signature.js';
import { checkWebhookUrl } from './url-policy.js';
import {
  deleteWebhook, disableWebhook, findDelivery, findDeliveryRow, findWebhook, findWebhookRowForUpdate, insertDeliveries, insertWebhook,
  listDeliveries, listWebhooks, purgeFinishedDeliveries, rotateWebhookSecret, updateWebhook,
  type Webhook, type WebhookChanges, type WebhookDelivery,
} from './webhooks.repo.js';
import type { RequestBody } from '../contract/operations.js';

export type WebhookWithSecret = Webhook & { secret: string };

export interface WebhooksService {
  list(ws: string, filter: { enabled?: boolean }, page: PageQuery): Promise<Page<Webhook>>;
  create(ws: string, input: RequestBody<'createWebhook'>): Promise<WebhookWithSecret>;
  get(ws: string, id: string): Promise<Webhook>;
  update(ws: string, id: string, changes: RequestBody<'updateWebhook'>): Promise<Webhook>;
  remove(ws: string, id: string): Promise<void>;
  rotateSecret(ws: string, id: string): Promise<WebhookWithSecret>;
  sendTest(ws: string, id: string): Promise<WebhookDelivery>;
  deliveries(ws: string, id: string, filter: { status?: WebhookDeliveryStatus }, page: PageQuery): Promise<Page<WebhookDelivery>>;
  delivery(ws: string, id: string, deliveryId: string): Promise<WebhookDelivery>;
  replay(ws: string, id: string, deliveryId: string): Promise<WebhookDelivery>;
  /** Deletes finished deliveries past the retention; returns how many. */
  purgeOldDeliveries(now: number): Promise<number>;
}

/** After a rotation the old secret keeps signing (as a second signature) this long, so receivers can switch over. */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;
/** Finished deliveries and their attempts are kept this long. */
export const DELIVERY_RETENTION_MS = 30 * 86_400_000;
const PURGE_BATCH = 1_000;
const PURGE_MAX_BATCHES = 20;
const DISABLED_BY_API = 'Disabled through the API.';

export function webhooksService(deps: { store: Store; clock: Clock; sealKey: Buffer; allowPrivate: boolean; dispatcher: Dispatcher }): WebhooksService {
  const { store, clock, sealKey } = deps;

  function checkedUrl(raw: string): string {
    const verdict = checkWebhookUrl(raw, deps.allowPrivate);
    if (!verdict.ok) {
      // Said for whoever tries a receiver on their own machine: the setting is the operator's.
      const allowing = verdict.nonPublic ? ' Webhooks go to public addresses only, unless the server runs with MAILROOM_WEBHOOK_ALLOW_PRIVATE=true.' : '';
      throw new AppError('validation_error', `The url ${verdict.reason}.${allowing}`, { param: 'url' });
    }
    return verdict.url;
  }

  async function mustFind(ws: string, id: string): Promise<Webhook> {
    const hook = await findWebhook(store.db, ws, id);
    if (!hook) throw notFound('webhook', id);
    return hook;
  }

  return {
    list: (ws, filter, page) => listWebhooks(store.db, ws, filter, page),

    async create(ws, input) {
      const url = checkedUrl(input.url);
      const secret = newSecret();
      const now = clock.now();
      const enabled = input.enabled ?? true;
      const hook = await store.write((tx) => insertWebhook(tx, {
        id: newId('wh', now), workspace_id: ws, url, description: input.description ?? null,
        event_types: JSON.stringify([...new Set(input.event_types)]), enabled: enabled ? 1 : 0,
        secret: seal(secret, sealKey), previous_secret: null, previous_secret_until: null,
        disabled_reason: enabled ? null : DISABLED_BY_API, disabled_at: enabled ? null : now, failing_since: null,
        created_at: now, updated_at: now,
      }));
      return { ...hook, secret };
    },

    get: (ws, id) => mustFind(ws, id),

    async update(ws, id, changes) {
      const url = changes.url === undefined ? undefined : checkedUrl(changes.url);
      const now = clock.now();
      return store.write(async (tx) => {
        const row = await findWebhookRowForUpdate(tx, ws, id);
        if (!row) throw notFound('webhook', id);
        const set: WebhookChanges = {
          ...(url !== undefined && { url }),
          ...(changes.description !== undefined && { description: changes.description }),
          ...(changes.event_types !== undefined && { event_types: JSON.stringify([...new Set(changes.event_types)]) }),
        };
        // Re-enabling starts afresh: the reason and the run of failures are cleared.
        if (changes.enabled === true && row.enabled === 0) Object.assign(set, { enabled: 1, disabled_reason: null, disabled_at: null, failing_since: null });
        if (changes.enabled === false && row.enabled === 1) await disableWebhook(tx, id, DISABLED_BY_API, now);
        return (await updateWebhook(tx, ws, id, set, now))!;
      });
    },

    async remove(ws, id) {
      const deleted = await store.write((tx) => deleteWebhook(tx, ws, id));
      if (!deleted) throw notFound('webhook', id);
    },

    async rotateSecret(ws, id) {
      const secret = newSecret();
      const now = clock.now();
      const hook = await store.write((tx) => rotateWebhookSecret(tx, ws, id, seal(secret, sealKey), now + ROTATION_OVERLAP_MS, now));
      if (!hook) throw notFound('webhook', id);
      return { ...hook, secret };
    },

    async sendTest(ws, id) {
      await mustFind(ws, id);
      const deliveryId = await deps.dispatcher.sendTest(ws, id);
      // Gone only if the endpoint was deleted while the test was out.
      const delivery = await findDelivery(store.db, ws, id, deliveryId);
      if (!delivery) throw notFound('webhook', id);
      return delivery;
    },

    async deliveries(ws, id, filter, page) {
      await mustFind(ws, id);
      return listDeliveries(store.db, ws, id, filter, page);
    },

    async delivery(ws, id, deliveryId) {
      await mustFind(ws, id);
      const delivery = await findDelivery(store.db, ws, id, deliveryId);
      if (!delivery) throw notFound('webhook delivery', deliveryId);
      return delivery;
    },

    async replay(ws, id, deliveryId) {
      const now = clock.now();
      const newDeliveryId = newId('whd', now);
      await store.write(async (tx) => {
        // Locked: a disabling under way (which fails the pending deliveries) is waited for, not slipped past.
        const hook = await findWebhookRowForUpdate(tx, ws, id);
        if (!hook) throw notFound('webhook', id);
        const original = await findDeliveryRow(tx, ws, id, deliveryId);
        if (!original) throw notFound('webhook delivery', deliveryId);
        if (hook.enabled === 0) {
          throw new AppError('invalid_state', 'The webhook is disabled; enable it (PATCH enabled: true) before replaying.', { param: 'webhook_id' });
        }
        // The same message again: same webhook-id and body, a fresh schedule.
        await insertDeliveries(tx, [{
          id: newDeliveryId, workspace_id: ws, webhook_id: id, message_id: original.message_id, event_id: original.event_id,
          event_type: original.event_type, payload: original.payload, status: 'pending', is_test: original.is_test,
          attempt_count: 0, next_attempt_at: now, lease_owner: null, last_error: null, replay_of: original.id,
          created_at: now, updated_at: now,
        }]);
      });
      const delivery = await findDelivery(store.db, ws, id, newDeliveryId);
      if (!delivery) throw notFound('webhook', id);
      return delivery;
    },

    purgeOldDeliveries: (now) => writeInBatches(store, { size: PURGE_BATCH, maxBatches: PURGE_MAX_BATCHES },
      (tx, size) => purgeFinishedDeliveries(tx, now - DELIVERY_RETENTION_MS, size)),
  };
}
