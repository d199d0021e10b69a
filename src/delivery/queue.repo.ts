import { sql, type Kysely } from 'kysely';
import { insertRows, runShaped, type Db, type Tx } from '../store/db.js';
import { isPostgres } from '../store/schema-helpers.js';
import { newId } from '../core/ids.js';

// The outbound queue: one row per email and destination domain while there is
// work left, written in the same transaction as the email (a transactional
// outbox) and deleted in the transaction that records the final outcome.
//
// A claim leases rows: locked_until and next_attempt_at both move to the end
// of the lease, so a worker that dies mid-delivery leaves rows that fall due
// again when the lease lapses, and a live worker renews its lease while it
// works. Nothing is lost; a message is only tried again when its outcome was
// never recorded.

export interface QueueItem {
  id: string;
  workspaceId: string;
  emailId: string;
  domain: string;
  /** Attempts made before this one. */
  attempt: number;
  /** Give up when the next try would start after this. */
  expiresAt: number;
  createdAt: number;
}

export interface EnqueueInput {
  workspaceId: string;
  emailId: string;
  domains: string[];
  dueAt: number;
  /** How long delivery may keep trying, from the first due time. */
  lifetimeMs: number;
  now: number;
}

const onPostgres = (db: Db | Tx) => isPostgres(db as unknown as Kysely<unknown>);

export async function enqueue(tx: Tx, q: EnqueueInput): Promise<void> {
  if (q.domains.length === 0) return;
  await insertRows(tx, 'outbound_queue', [...new Set(q.domains)].map((domain) => ({
    id: newId('job', q.now), workspace_id: q.workspaceId, email_id: q.emailId, domain, attempt: 0,
    next_attempt_at: q.dueAt, locked_until: 0, lease_owner: null, expires_at: q.dueAt + q.lifetimeMs,
    last_error: null, created_at: q.now,
  })));
}

/** A due row a claim may choose. */
export interface DueRow {
  id: string;
  domain: string;
}

/**
 * Up to `limit` due rows that no one holds, earliest due first, leaving out
 * the domains in `skipDomains`: the candidates a claim chooses from. On
 * PostgreSQL the rows are locked until the claim's transaction ends, and rows
 * another claim has locked are skipped.
 */
export async function dueRows(tx: Tx, c: { now: number; limit: number; skipDomains: readonly string[] }): Promise<DueRow[]> {
  const skip = [...c.skipDomains];
  const { rows } = await runShaped(tx, `due queue rows, limit ${c.limit}, skipping ${skip.length}`, [c.now, ...skip],
    ([now, ...domains]) => tx.selectFrom('outbound_queue').select(['id', 'domain'])
      .where('next_attempt_at', '<=', now as number).where('locked_until', '<=', now as number)
      .$if(domains.length > 0, (q) => q.where('domain', 'not in', domains as string[]))
      .orderBy('next_attempt_at').limit(sql.lit(c.limit))
      .$if(onPostgres(tx), (q) => q.forUpdate().skipLocked()));
  return rows;
}

/**
 * Leases the rows to `owner` until `until` and returns them; a row someone
 * else took meanwhile is left out. locked_until and next_attempt_at both move
 * to the end of the lease.
 */
export async function leaseRows(tx: Tx, ids: readonly string[], l: { now: number; until: number; owner: string }): Promise<QueueItem[]> {
  if (ids.length === 0) return [];
  const { rows } = await runShaped(tx, `lease queue rows x${ids.length}`, [l.until, l.owner, l.now, ...ids],
    ([until, owner, now, ...chosen]) => tx.updateTable('outbound_queue')
      .set({ locked_until: until as number, next_attempt_at: until as number, lease_owner: owner as string })
      .where('id', 'in', chosen as string[]).where('locked_until', '<=', now as number)
      .returning(['id', 'workspace_id', 'email_id', 'domain', 'attempt', 'expires_at', 'created_at']));
  return rows.map((r) => ({
    id: r.id, workspaceId: r.workspace_id, emailId: r.email_id, domain: r.domain, attempt: r.attempt,
    expiresAt: r.expires_at, createdAt: r.created_at,
  }));
}

/**
 * A destination that could not be reached rests: its rows that are due
 * before `until` and not held by anyone wait until then, without an attempt
 * being counted (Postfix's "delivery temporarily suspended"). `domain`
 * undefined means every row (the smarthost of relay mode is the destination).
 */
export async function postponeDestination(tx: Tx, p: { domain?: string; now: number; until: number; reason: string }): Promise<number> {
  const res = await tx.updateTable('outbound_queue')
    .set({ next_attempt_at: p.until, last_error: `delivery temporarily suspended: ${p.reason}`.slice(0, 1000) })
    .$if(p.domain !== undefined, (q) => q.where('domain', '=', p.domain!))
    .where('locked_until', '<=', p.now).where('next_attempt_at', '<', p.until)
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/** Frees the rows these owners leased, due at once; returns how many. */
export async function releaseQueueLeases(tx: Tx, owners: string[], now: number): Promise<number> {
  const res = await tx.updateTable('outbound_queue').set({ locked_until: 0, next_attempt_at: now, lease_owner: null })
    .where('lease_owner', 'in', owners).executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/** Renews the lease on rows `owner` still holds. */
export async function extendLease(tx: Tx, ids: string[], owner: string, until: number): Promise<void> {
  if (ids.length === 0) return;
  await tx.updateTable('outbound_queue').set({ locked_until: until, next_attempt_at: until })
    .where('id', 'in', ids).where('lease_owner', '=', owner).execute();
}

/** The rows are done: every recipient they covered has a final outcome. */
export async function completeItems(tx: Tx, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await runShaped(tx, `delete queue rows x${ids.length}`, ids, (p) => tx.deleteFrom('outbound_queue').where('id', 'in', p as string[]));
}

/** Another attempt later, for the recipients still open. */
export async function retryItem(tx: Tx, id: string, r: { attempt: number; nextAttemptAt: number; lastError: string }): Promise<void> {
  await tx.updateTable('outbound_queue').set({
    attempt: r.attempt, next_attempt_at: r.nextAttemptAt, locked_until: 0, lease_owner: null, last_error: r.lastError.slice(0, 1000),
  }).where('id', '=', id).execute();
}

export interface QueueRowState {
  domain: string;
  attempt: number;
  leased: boolean;
}

/** The rows of one email still queued, and whether each is leased or was tried already. */
export async function queueStateForEmail(tx: Tx | Db, emailId: string, now: number): Promise<QueueRowState[]> {
  const rows = await tx.selectFrom('outbound_queue').select(['domain', 'attempt', 'locked_until'])
    .where('email_id', '=', emailId).execute();
  return rows.map((r) => ({ domain: r.domain, attempt: r.attempt, leased: r.locked_until > now }));
}

export async function dequeueEmail(tx: Tx, emailId: string): Promise<void> {
  await tx.deleteFrom('outbound_queue').where('email_id', '=', emailId).execute();
}

/** Rows by state, for the metrics: waiting for a first attempt, waiting for a retry, under way; and the oldest waiting one. */
export async function queueDepth(db: Db, now: number): Promise<{ queued: number; deferred: number; leased: number; oldestQueuedAt?: number }> {
  const row = await db.selectFrom('outbound_queue').select((eb) => [
    eb.fn.sum<number>(eb.case().when('locked_until', '>', now).then(1).else(0).end()).as('leased'),
    eb.fn.sum<number>(eb.case().when(eb.and([eb('locked_until', '<=', now), eb('attempt', '=', 0)])).then(1).else(0).end()).as('queued'),
    eb.fn.min<number>(eb.case().when(eb.and([eb('locked_until', '<=', now), eb('attempt', '=', 0)])).then(eb.ref('created_at')).end()).as('oldest'),
    eb.fn.countAll<number>().as('total'),
  ]).executeTakeFirstOrThrow();
  const leased = Number(row.leased ?? 0);
  const queued = Number(row.queued ?? 0);
  return {
    queued, leased, deferred: Number(row.total) - leased - queued,
    ...(row.oldest !== null && row.oldest !== undefined && { oldestQueuedAt: Number(row.oldest) }),
  };
}

/** When the earliest row of the domains not skipped falls due (for an idle worker's sleep), if any. */
export async function nextDueAt(db: Db, skipDomains: readonly string[] = []): Promise<number | undefined> {
  const row = await db.selectFrom('outbound_queue').select((eb) => eb.fn.min('next_attempt_at').as('at'))
    .$if(skipDomains.length > 0, (q) => q.where('domain', 'not in', [...skipDomains]))
    .executeTakeFirst();
  return row?.at == null ? undefined : Number(row.at);
}
