import { sql, type Selectable } from 'kysely';
import { claimLeases, lockedForUpdate } from '../store/lease.js';
import { compiledOn, literalStatus, runShaped, runSql, type Db, type Tx } from '../store/db.js';
import type { WebhookAttemptsTable, WebhookDeliveriesTable, WebhookDeliveryStatus, WebhooksTable } from './webhooks.tables.js';
import { fetchPage, type Page, type PageQuery } from '../store/paging.js';
import { toIso, toIsoOrNull } from '../core/clock.js';
import { followerPosition, saveFollowerPosition } from '../store/event-log.js';

// Webhook endpoints, their deliveries (one per message per endpoint) and the
// attempts of each delivery. Rows are mapped to API shapes here; secrets stay
// sealed and leave only through endpointForDelivery.

export interface Webhook {
  id: string;
  object: 'webhook';
  url: string;
  description: string | null;
  event_types: string[];
  enabled: boolean;
  disabled_reason: string | null;
  disabled_at: string | null;
  /** Start of the current run of failed attempts; null while the endpoint is healthy. */
  failing_since: string | null;
  created_at: string;
  updated_at: string;
}

export interface WebhookAttempt {
  attempt: number;
  attempted_at: string;
  succeeded: boolean;
  response_status: number | null;
  duration_ms: number;
  error: string | null;
  response_body: string | null;
}

export interface WebhookDelivery {
  id: string;
  object: 'webhook_delivery';
  webhook_id: string;
  message_id: string;
  event_id: string | null;
  event_type: string;
  status: WebhookDeliveryStatus;
  test: boolean;
  attempt_count: number;
  next_attempt_at: string | null;
  last_error: string | null;
  replay_of: string | null;
  payload: Record<string, unknown>;
  attempts: WebhookAttempt[];
  created_at: string;
  updated_at: string;
}

export type WebhookRow = Selectable<WebhooksTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable>;

const toWebhook = (r: WebhookRow): Webhook => ({
  id: r.id,
  object: 'webhook',
  url: r.url,
  description: r.description,
  event_types: JSON.parse(r.event_types) as string[],
  enabled: r.enabled === 1,
  disabled_reason: r.disabled_reason,
  disabled_at: toIsoOrNull(r.disabled_at),
  failing_since: toIsoOrNull(r.failing_since),
  created_at: toIso(r.created_at),
  updated_at: toIso(r.updated_at),
});

const toAttempt = (r: Selectable<WebhookAttemptsTable>): WebhookAttempt => ({
  attempt: r.attempt,
  attempted_at: toIso(r.attempted_at),
  succeeded: r.succeeded === 1,
  response_status: r.response_status,
  duration_ms: r.duration_ms,
  error: r.error,
  response_body: r.response_body,
});

const toDelivery = (r: DeliveryRow, attempts: WebhookAttempt[]): WebhookDelivery => ({
  id: r.id,
  object: 'webhook_delivery',
  webhook_id: r.webhook_id,
  message_id: r.message_id,
  event_id: r.event_id,
  event_type: r.event_type,
  status: r.status,
  test: r.is_test === 1,
  attempt_count: r.attempt_count,
  next_attempt_at: r.status === 'pending' ? toIso(r.next_attempt_at) : null,
  last_error: r.last_error,
  replay_of: r.replay_of,
  payload: JSON.parse(r.payload) as Record<string, unknown>,
  attempts,
  created_at: toIso(r.created_at),
  updated_at: toIso(r.updated_at),
});

// ---- endpoints ----

export async function insertWebhook(tx: Tx, row: Omit<WebhookRow, 'pos'>): Promise<Webhook> {
  await tx.insertInto('webhooks').values(row).execute();
  return toWebhook({ ...row, pos: 0 });
}

export async function findWebhookRow(db: Db | Tx, ws: string, id: string): Promise<WebhookRow | undefined> {
  return db.selectFrom('webhooks').selectAll().where('workspace_id', '=', ws).where('id', '=', id).executeTakeFirst();
}

/** The endpoint, read to change it: its row stays locked until the transaction ends. */
export async function findWebhookRowForUpdate(tx: Tx, ws: string, id: string): Promise<WebhookRow | undefined> {
  return lockedForUpdate(tx, tx.selectFrom('webhooks').selectAll().where('workspace_id', '=', ws).where('id', '=', id)).executeTakeFirst();
}

export async function findWebhook(db: Db | Tx, ws: string, id: string): Promise<Webhook | undefined> {
  const row = await findWebhookRow(db, ws, id);
  return row && toWebhook(row);
}

export async function listWebhooks(db: Db, ws: string, filter: { enabled?: boolean }, page: PageQuery): Promise<Page<Webhook>> {
  return fetchPage(page, (bound, order, take) => db.selectFrom('webhooks').selectAll()
    .where('workspace_id', '=', ws)
    .$if(filter.enabled !== undefined, (q) => q.where('enabled', '=', filter.enabled ? 1 : 0))
    .$if(bound !== undefined, (q) => q.where('pos', bound!.op, bound!.pos))
    .orderBy('pos', order).limit(take).execute(), toWebhook);
}

export type WebhookChanges = Partial<Pick<WebhookRow,
  'url' | 'description' | 'event_types' | 'enabled' | 'secret' | 'previous_secret' | 'previous_secret_until' |
  'disabled_reason' | 'disabled_at' | 'failing_since'>>;

export async function updateWebhook(tx: Tx, ws: string, id: string, changes: WebhookChanges, now: number): Promise<Webhook | undefined> {
  await tx.updateTable('webhooks').set({ ...changes, updated_at: now }).where('workspace_id', '=', ws).where('id', '=', id).execute();
  return findWebhook(tx, ws, id);
}

/**
 * Gives the endpoint a new signing secret; the one it had becomes the
 * previous secret until `previousUntil`. One statement: of two rotations at
 * once, the second keeps the first's secret as the previous one.
 */
export async function rotateWebhookSecret(tx: Tx, ws: string, id: string, sealedSecret: string, previousUntil: number, now: number): Promise<Webhook | undefined> {
  await tx.updateTable('webhooks')
    .set((eb) => ({ previous_secret: eb.ref('secret'), secret: sealedSecret, previous_secret_until: previousUntil, updated_at: now }))
    .where('workspace_id', '=', ws).where('id', '=', id).execute();
  return findWebhook(tx, ws, id);
}

/** Deletes the endpoint with its deliveries and their attempts. */
export async function deleteWebhook(tx: Tx, ws: string, id: string): Promise<boolean> {
  const res = await tx.deleteFrom('webhooks').where('workspace_id', '=', ws).where('id', '=', id).executeTakeFirst();
  if (Number(res.numDeletedRows) === 0) return false;
  await tx.deleteFrom('webhook_attempts').where('webhook_id', '=', id).execute();
  await tx.deleteFrom('webhook_deliveries').where('webhook_id', '=', id).execute();
  return true;
}

/**
 * Disables an endpoint and fails its pending deliveries (they stay
 * replayable). Guarded on `enabled`, so two workers racing to disable record
 * one reason.
 */
export async function disableWebhook(tx: Tx, id: string, reason: string, now: number): Promise<boolean> {
  const res = await tx.updateTable('webhooks').set({ enabled: 0, disabled_reason: reason, disabled_at: now, updated_at: now })
    .where('id', '=', id).where('enabled', '=', 1).executeTakeFirst();
  if (Number(res.numUpdatedRows) === 0) return false;
  await tx.updateTable('webhook_deliveries')
    .set({ status: 'failed', last_error: `Endpoint disabled: ${reason}`, lease_owner: null, updated_at: now })
    .where('webhook_id', '=', id).where('status', '=', 'pending').execute();
  return true;
}

/** Enabled endpoints of these workspaces, for fan-out. */
export async function enabledWebhooksOf(db: Db | Tx, workspaceIds: string[]): Promise<Array<{ id: string; workspace_id: string; event_types: string[]; created_at: number }>> {
  if (workspaceIds.length === 0) return [];
  const rows = await db.selectFrom('webhooks').select(['id', 'workspace_id', 'event_types', 'created_at'])
    .where('workspace_id', 'in', workspaceIds).where('enabled', '=', 1).execute();
  return rows.map((r) => ({ ...r, event_types: JSON.parse(r.event_types) as string[] }));
}

// ---- deliveries ----

export type NewDelivery = Omit<DeliveryRow, 'pos'>;

// SQLite binds at most 32766 parameters per statement; 16 columns a row.
const INSERT_CHUNK = 500;

export async function insertDeliveries(tx: Tx, rows: NewDelivery[]): Promise<void> {
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
    await tx.insertInto('webhook_deliveries').values(rows.slice(i, i + INSERT_CHUNK)).execute();
  }
}

async function withAttempts(db: Db | Tx, rows: DeliveryRow[]): Promise<Map<string, WebhookAttempt[]>> {
  const byDelivery = new Map<string, WebhookAttempt[]>(rows.map((r) => [r.id, []]));
  if (rows.length === 0) return byDelivery;
  const attempts = await db.selectFrom('webhook_attempts').selectAll()
    .where('delivery_id', 'in', rows.map((r) => r.id)).orderBy('pos', 'asc').execute();
  for (const a of attempts) byDelivery.get(a.delivery_id)!.push(toAttempt(a));
  return byDelivery;
}

export async function findDelivery(db: Db | Tx, ws: string, webhookId: string, id: string): Promise<WebhookDelivery | undefined> {
  const row = await findDeliveryRow(db, ws, webhookId, id);
  if (!row) return undefined;
  return toDelivery(row, (await withAttempts(db, [row])).get(row.id)!);
}

export async function findDeliveryRow(db: Db | Tx, ws: string, webhookId: string, id: string): Promise<DeliveryRow | undefined> {
  return db.selectFrom('webhook_deliveries').selectAll()
    .where('workspace_id', '=', ws).where('webhook_id', '=', webhookId).where('id', '=', id).executeTakeFirst();
}

export async function listDeliveries(db: Db, ws: string, webhookId: string, filter: { status?: WebhookDeliveryStatus },
  page: PageQuery): Promise<Page<WebhookDelivery>> {
  const result = await fetchPage(page, (bound, order, take) => db.selectFrom('webhook_deliveries').selectAll()
    .where('webhook_id', '=', webhookId).where('workspace_id', '=', ws)
    .$if(filter.status !== undefined, (q) => q.where('status', '=', filter.status!))
    .$if(bound !== undefined, (q) => q.where('pos', bound!.op, bound!.pos))
    .orderBy('pos', order).limit(take).execute(), (r) => r);
  const attempts = await withAttempts(db, result.data);
  return { ...result, data: result.data.map((r) => toDelivery(r, attempts.get(r.id)!)) };
}

/** Whether any pending delivery is due: one probe of the due index, so an idle dispatcher costs nothing. */
export async function anyDue(db: Db, now: number): Promise<boolean> {
  // The dispatcher's look four times a second: compiled once, the status written into the text (bound, SQLite
  // would plan the statement anew at every run, to see whether the value allows the partial index of pending rows).
  const { rows } = await runShaped(db, 'any webhook delivery due', [now], ([at]) => compiledOn(db, sql<{ id: string }>`
    SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ${at} LIMIT 1`));
  return rows.length > 0;
}

/** Whether any workspace has an enabled endpoint: when none has, fan-out has nothing to read. */
export async function anyEnabledWebhook(db: Db | Tx): Promise<boolean> {
  const { rows } = await runSql<{ id: string }>(db, 'SELECT id FROM webhooks WHERE enabled = 1 LIMIT 1', []);
  return rows.length > 0;
}

export async function enabledWebhookIds(db: Db): Promise<string[]> {
  const rows = await db.selectFrom('webhooks').select('id').where('enabled', '=', 1).orderBy('pos').execute();
  return rows.map((r) => r.id);
}

/**
 * Claims up to `take` due deliveries of one endpoint: the lease is the
 * next_attempt_at moved to the lease's end, so a crashed worker's claim
 * simply comes due again. Returned in the order they were made (an
 * UPDATE … RETURNING has no order of its own on PostgreSQL), so the
 * endpoint is sent events of the same moment in the order they happened.
 */
export async function claimDue(tx: Tx, webhookId: string, take: number, owner: string, now: number, leaseMs: number): Promise<DeliveryRow[]> {
  const due = tx.selectFrom('webhook_deliveries').select('id')
    .where('webhook_id', '=', webhookId).where('status', '=', literalStatus('pending'))
    .orderBy('next_attempt_at').orderBy('pos').limit(sql.lit(take));
  const rows = await claimLeases(tx, 'webhook_deliveries', due, { now, until: now + leaseMs, owner });
  return rows.sort((a, b) => a.pos - b.pos);
}

/** What sending needs of the endpoint: its URL and sealed secrets. */
export async function endpointForDelivery(db: Db | Tx, webhookId: string): Promise<Pick<WebhookRow,
  'id' | 'url' | 'enabled' | 'secret' | 'previous_secret' | 'previous_secret_until' | 'failing_since'> | undefined> {
  return db.selectFrom('webhooks')
    .select(['id', 'url', 'enabled', 'secret', 'previous_secret', 'previous_secret_until', 'failing_since'])
    .where('id', '=', webhookId).executeTakeFirst();
}

export async function deliveryExists(db: Db | Tx, id: string): Promise<boolean> {
  return (await db.selectFrom('webhook_deliveries').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
}

export async function insertAttempt(tx: Tx, row: Omit<Selectable<WebhookAttemptsTable>, 'pos'>): Promise<void> {
  await tx.insertInto('webhook_attempts').values(row).execute();
}

/**
 * Records the outcome of the attempt a lease holder made. Returns false when
 * the lease was lost meanwhile (it expired and another worker took the row):
 * then the attempt is logged but the other worker owns the state.
 */
export async function settleDelivery(tx: Tx, id: string, owner: string, changes: {
  status: WebhookDeliveryStatus; attemptCount: number; nextAttemptAt: number; lastError: string | null;
}, now: number): Promise<boolean> {
  const res = await tx.updateTable('webhook_deliveries').set({
    status: changes.status, attempt_count: changes.attemptCount, next_attempt_at: changes.nextAttemptAt,
    last_error: changes.lastError, lease_owner: null, updated_at: now,
  }).where('id', '=', id).where('lease_owner', '=', owner).where('status', '=', 'pending').executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Marks the endpoint healthy, or starts its run of failures; returns when the run started. */
export async function recordEndpointHealth(tx: Tx, id: string, succeeded: boolean, now: number): Promise<number | null> {
  if (succeeded) {
    await tx.updateTable('webhooks').set({ failing_since: null }).where('id', '=', id).where('failing_since', 'is not', null).execute();
    return null;
  }
  await tx.updateTable('webhooks').set({ failing_since: now }).where('id', '=', id).where('failing_since', 'is', null).execute();
  const row = await tx.selectFrom('webhooks').select('failing_since').where('id', '=', id).executeTakeFirst();
  return row?.failing_since ?? null;
}

/** Deletes up to `limit` finished deliveries created before `cutoff`, with their attempts; returns how many. */
export async function purgeFinishedDeliveries(tx: Tx, cutoff: number, limit: number): Promise<number> {
  const old = await tx.selectFrom('webhook_deliveries').select('id')
    .where('created_at', '<', cutoff).where('status', '!=', 'pending').orderBy('created_at').limit(limit).execute();
  if (old.length === 0) return 0;
  const ids = old.map((r) => r.id);
  await tx.deleteFrom('webhook_attempts').where('delivery_id', 'in', ids).execute();
  await tx.deleteFrom('webhook_deliveries').where('id', 'in', ids).execute();
  return ids.length;
}

// ---- fan-out watermark ----

export const readWatermark = (db: Db | Tx): Promise<number> => followerPosition(db, 'webhooks');

export const writeWatermark = (tx: Tx, pos: number): Promise<void> => saveFollowerPosition(tx, 'webhooks', pos);
