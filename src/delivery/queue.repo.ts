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

/**
 * Leases up to `limit` due rows to `owner`, earliest due first. One
 * UPDATE … WHERE id IN (SELECT … LIMIT n) RETURNING, so two workers never get
 * the same row; on PostgreSQL the subquery skips rows another claim has locked.
 */
export async function claimDue(tx: Tx, c: { now: number; leaseMs: number; owner: string; limit: number }): Promise<QueueItem[]> {
  const { rows } = await runShaped(tx, `claim due queue rows, limit ${c.limit}`, [c.now + c.leaseMs, c.owner, c.now],
    ([until, owner, now]) => tx.updateTable('outbound_queue')
      .set({ locked_until: until as number, next_attempt_at: until as number, lease_owner: owner as string })
      .where('id', 'in', (eb) => eb.selectFrom('outbound_queue').select('id')
        .where('next_attempt_at', '<=', now as number).where('locked_until', '<=', now as number)
        .orderBy('next_attempt_at').limit(sql.lit(c.limit))
        .$if(onPostgres(tx), (q) => q.forUpdate().skipLocked()))
      .where('locked_until', '<=', now as number)
      .returning(['id', 'workspace_id', 'email_id', 'domain', 'attempt', 'expires_at', 'created_at']));
  return rows.map((r) => ({
    id: r.id, workspaceId: r.workspace_id, emailId: r.email_id, domain: r.domain, attempt: r.attempt,
    expiresAt: r.expires_at, createdAt: r.created_at,
  }));
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

/** When the earliest row falls due (for an idle worker's sleep), if any. */
export async function nextDueAt(db: Db): Promise<number | undefined> {
  const row = await db.selectFrom('outbound_queue').select((eb) => eb.fn.min('next_attempt_at').as('at')).executeTakeFirst();
  return row?.at == null ? undefined : Number(row.at);
}
