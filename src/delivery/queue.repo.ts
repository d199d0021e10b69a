import { randomUUID } from 'node:crypto';
import { sql, type RawBuilder } from 'kysely';
import { compiledOn, insertRows, paddedInList, runShaped, type Db, type Tx } from '../store/db.js';
import { readSetting, writeSetting } from '../store/settings.js';
import { fetchPage, type Page, type PageQuery } from '../store/paging.js';
import { claimLeases, lockedForClaim, lockedForUpdate } from '../store/lease.js';
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

/** The queue rows of `emails`: a row for each domain of each. */
export const queueRows = (emails: readonly EnqueueInput[]) => emails.flatMap((q) => [...new Set(q.domains)].map((domain) => ({
  id: newId('job', q.now), workspace_id: q.workspaceId, email_id: q.emailId, domain, attempt: 0,
  next_attempt_at: q.dueAt, locked_until: 0, lease_owner: null, expires_at: q.dueAt + q.lifetimeMs,
  last_error: null, created_at: q.now,
})));

/** Queues each email for each of its domains: one statement for all of them (a batch queues a hundred at once). */
export async function enqueue(tx: Tx, emails: readonly EnqueueInput[]): Promise<void> {
  await insertRows(tx, 'outbound_queue', queueRows(emails));
}

/** A due row a claim may choose. */
export interface DueRow {
  id: string;
  domain: string;
}

// Most claims find what they want at the head of the due index: the rows
// due first, a few of them left out (their destination at its share, or held
// by its workspace). So a claim reads a window of that head first. Only when
// the rows it leaves out fill the window, as a large backlog to a destination
// at its share does, does it walk the queue by destination (a workspace's
// mail to a domain) instead: each step of that walk is a seek in
// outbound_queue_destination (domain, workspace_id, next_attempt_at), so a
// destination left out costs one step however many rows it has, and the walk
// costs a step for each destination queued, whatever their backlogs.

/** A row of the head the claim may take: its domain not skipped, its destination not held. */
const openRow = (alias: string, skip: readonly unknown[]) => {
  const ref = (column: string) => sql.ref(`${alias}.${column}`);
  const notSkipped = skip.length > 0 ? sql`${ref('domain')} NOT IN (${sql.join(skip)}) AND ` : sql``;
  // A scalar subquery, not NOT EXISTS: PostgreSQL would make that an anti-join that may read (and lock) the whole head before it answers.
  return sql<boolean>`${notSkipped}(SELECT 1 FROM queue_holds h WHERE h.workspace_id = ${ref('workspace_id')} AND h.domain = ${ref('domain')}) IS NULL`;
};

/**
 * The destinations that have rows, each with its earliest due time, less the
 * domains in `skip` and the destinations their workspace holds. `params`
 * are the skipped domains.
 */
const openDestinations = (params: readonly unknown[]) => {
  const skipping = params.length > 0 ? sql`AND dest.domain NOT IN (${sql.join(params)})` : sql``;
  // Each seek is on a strict bound of the index's leading column(s), which both stores' planners take as the start of a range.
  const firstWorkspace = (domain: RawBuilder<unknown>) => sql`(SELECT q.workspace_id FROM outbound_queue q WHERE q.domain = ${domain} ORDER BY q.workspace_id LIMIT 1)`;
  const nextWorkspace = sql`(SELECT q.workspace_id FROM outbound_queue q WHERE q.domain = d.domain AND q.workspace_id > d.workspace_id ORDER BY q.workspace_id LIMIT 1)`;
  const nextDomain = sql`(SELECT q.domain FROM outbound_queue q WHERE q.domain > d.domain ORDER BY q.domain LIMIT 1)`;
  // One recursion, a destination a step (a domain's last one steps to the next domain, its workspace still to be read): PostgreSQL
  // then estimates it at a few rows, where a recursion over domains feeding one over their workspaces looks costly enough to JIT-compile.
  return sql`WITH RECURSIVE dest(domain, workspace_id) AS (
      SELECT first_dest.domain, ${firstWorkspace(sql.ref('first_dest.domain'))} FROM (SELECT min(domain) AS domain FROM outbound_queue) AS first_dest
      UNION ALL
      SELECT CASE WHEN d.workspace_id IS NULL OR ${nextWorkspace} IS NOT NULL THEN d.domain ELSE ${nextDomain} END,
        CASE WHEN d.workspace_id IS NULL THEN ${firstWorkspace(sql.ref('d.domain'))} ELSE ${nextWorkspace} END
      FROM dest d WHERE d.domain IS NOT NULL
    ), open_dest AS (
      SELECT dest.domain, dest.workspace_id, (SELECT q.next_attempt_at FROM outbound_queue q
        WHERE q.domain = dest.domain AND q.workspace_id = dest.workspace_id ORDER BY q.next_attempt_at LIMIT 1) AS due_at
      FROM dest WHERE dest.workspace_id IS NOT NULL ${skipping}
        AND NOT EXISTS (SELECT 1 FROM queue_holds h WHERE h.workspace_id = dest.workspace_id AND h.domain = dest.domain)
    )`;
};

/** Destinations to claim from: the `limit` whose earliest row is due soonest, of those due by `now`. */
async function dueDestinations(tx: Tx, c: { now: number; limit: number; skip: string[] }): Promise<Array<{ domain: string; workspace_id: string }>> {
  const { rows } = await runShaped(tx, `due destinations, limit ${c.limit}, skipping ${c.skip.length}`, [c.now, ...c.skip],
    ([now, ...skip]) => compiledOn(tx, sql<{ domain: string; workspace_id: string }>`${openDestinations(skip)}
      SELECT domain, workspace_id FROM open_dest WHERE due_at <= ${now} ORDER BY due_at LIMIT ${sql.lit(c.limit)}`));
  return rows;
}

/** Destinations a shape of the row query has room for: a few sizes, so that few shapes are compiled. */
const destinationRoom = (n: number) => 2 ** Math.ceil(Math.log2(Math.max(1, n)));

/**
 * Up to `limit` due rows that no one holds, earliest due first, at most
 * `perDestination` of one workspace's mail to one domain when the claim
 * walks the queue by destination, leaving out the domains in `skipDomains`:
 * the candidates a claim chooses from. `enough` is how many candidates serve
 * the claim (its free slots): fewer from a window full of rows left out, and
 * the claim walks the queue by destination. On PostgreSQL the rows read are
 * locked until the claim's transaction ends, and rows another claim has
 * locked are skipped.
 */
export async function dueRows(tx: Tx, c: { now: number; limit: number; enough?: number; perDestination?: number; skipDomains: readonly string[] }): Promise<DueRow[]> {
  const skip = [...c.skipDomains];
  const window = c.limit * HEAD_WINDOW_SHARE;
  const open = await dueHead(tx, { now: c.now, limit: c.limit, window, skip });
  if (open.length >= Math.min(c.limit, c.enough ?? c.limit) || !(await headIsFull(tx, c.now, window))) return open;
  return dueByDestination(tx, { ...c, skip });
}

/** How far into the due index a claim reads, as a multiple of its limit, before it walks by destination instead. */
const HEAD_WINDOW_SHARE = 16;

/**
 * Up to `limit` rows a claim may take among the first `window` due rows no
 * one holds, in due order. The window is read lazily: a claim that finds its
 * rows early reads no further.
 */
async function dueHead(tx: Tx, c: { now: number; limit: number; window: number; skip: string[] }): Promise<DueRow[]> {
  const { rows } = await runShaped(tx, `due head, window ${c.window}, limit ${c.limit}, skipping ${c.skip.length}`, [c.now, ...c.skip],
    // The head is read lazily, so only the rows a claim reads before its limit are locked. It comes
    // in due order, which a filter keeps; an ORDER BY here would make PostgreSQL sort, reading (and
    // locking) the whole window first.
    ([now, ...skip]) => tx.selectFrom((db) => lockedForClaim(tx, db.selectFrom('outbound_queue')
      .select(['id', 'domain', 'workspace_id', 'next_attempt_at'])
      .where('next_attempt_at', '<=', now as number).where('locked_until', '<=', now as number)
      .orderBy('next_attempt_at').limit(sql.lit(c.window))).as('head'))
      .select(['head.id', 'head.domain']).where(openRow('head', skip))
      .limit(sql.lit(c.limit)));
  return rows;
}

/** Whether `window` rows or more are due: then the rows a claim leaves out may hide others behind them. */
async function headIsFull(tx: Tx, now: number, window: number): Promise<boolean> {
  const { rows: [row] } = await runShaped(tx, `due head size, window ${window}`, [now], ([at]) => tx
    .selectFrom((db) => db.selectFrom('outbound_queue').select('id')
      .where('next_attempt_at', '<=', at as number).where('locked_until', '<=', at as number)
      .orderBy('next_attempt_at').limit(sql.lit(window)).as('head'))
    .select((eb) => eb.fn.countAll<number>().as('n')));
  return Number(row.n) >= window;
}

/**
 * Due rows by destination: the earliest of the destinations due soonest, at
 * most `perDestination` each (a destination's earliest rows are locked as
 * they are read on PostgreSQL, so a few beyond `limit` may be locked too).
 */
async function dueByDestination(tx: Tx, c: { now: number; limit: number; perDestination?: number; skip: string[] }): Promise<DueRow[]> {
  const destinations = await dueDestinations(tx, { now: c.now, limit: c.limit, skip: c.skip });
  if (destinations.length === 0) return [];
  const room = destinationRoom(destinations.length);
  const perDestination = Math.min(c.limit, c.perDestination ?? c.limit);
  // Unused places of a shape name no destination (a comparison with NULL matches no row).
  const pairs = Array.from({ length: room }, (_, i) => [destinations[i]?.domain ?? null, destinations[i]?.workspace_id ?? null]);
  const { rows } = await runShaped(tx, `due rows of ${room} destinations, ${perDestination} each, limit ${c.limit}`, [c.now, ...pairs.flat()],
    ([now, ...p]) => {
      // Each destination's earliest rows, locked where they are chosen, so a row another claim holds leaves room for the next one.
      const earliest = (i: number) => lockedForClaim(tx, tx.selectFrom('outbound_queue').select(['id', 'domain', 'next_attempt_at'])
        .where('domain', '=', p[2 * i] as string).where('workspace_id', '=', p[2 * i + 1] as string)
        .where('next_attempt_at', '<=', now as number).where('locked_until', '<=', now as number)
        .orderBy('next_attempt_at').limit(sql.lit(perDestination)));
      const chosen = Array.from({ length: room }, (_, i) => tx.selectFrom(earliest(i).as(`d${i}`)).select([`d${i}.id`, `d${i}.domain`, `d${i}.next_attempt_at`]))
        .reduce((all, one) => all.unionAll(one));
      return tx.selectFrom(chosen.as('chosen')).select(['chosen.id', 'chosen.domain'])
        .orderBy('chosen.next_attempt_at').limit(sql.lit(c.limit));
    });
  return rows;
}

/**
 * Leases the rows to `owner` until `until` and returns them; a row someone
 * else took meanwhile is left out. locked_until and next_attempt_at both move
 * to the end of the lease.
 */
export async function leaseRows(tx: Tx, ids: readonly string[], l: { now: number; until: number; owner: string }): Promise<QueueItem[]> {
  const rows = await claimLeases(tx, 'outbound_queue', ids, l);
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

/** The rows are done: every recipient they covered has a final outcome. */
export async function completeItems(tx: Tx, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  const list = paddedInList(ids);
  await runShaped(tx, `delete queue rows x${list.length}`, list, (p) => tx.deleteFrom('outbound_queue').where('id', 'in', p as string[]));
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

/**
 * Locks the email's queue rows that no delivery holds, before its state
 * changes: a claim under way is waited for (its rows then count as held),
 * and no claim takes the rows until the transaction ends. A claim locks its
 * rows and then moves their email to sent, so a change that reads the email
 * after this sees the claim's outcome, and the two never wait for each other
 * in a circle.
 */
export async function lockQueuedRows(tx: Tx, emailId: string, now: number): Promise<void> {
  await lockedForUpdate(tx, tx.selectFrom('outbound_queue').select('id').where('email_id', '=', emailId).where('locked_until', '<=', now)).execute();
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
/** Queued rows, due or not, in which nextDueAt looks for the earliest open one before it walks by destination. */
const NEXT_DUE_WINDOW = 4096;

export async function nextDueAt(db: Db, skipDomains: readonly string[] = []): Promise<number | undefined> {
  // Asked after most claims of a busy worker, and at every round of an idle one: a shape per count of skipped
  // domains, compiled once, which also reads the first row of the due index, so that an empty queue takes this
  // one statement.
  const { rows: [head] } = await runShaped(db, `next due in the head, skipping ${skipDomains.length}`, skipDomains,
    (skip) => compiledOn(db, sql<{ at: number | string | null; first: number | string | null }>`SELECT (SELECT head.next_attempt_at
      FROM (SELECT domain, workspace_id, next_attempt_at FROM outbound_queue ORDER BY next_attempt_at LIMIT ${sql.lit(NEXT_DUE_WINDOW)}) AS head
      WHERE ${openRow('head', skip)} ORDER BY head.next_attempt_at LIMIT 1) AS at,
      (SELECT min(next_attempt_at) FROM outbound_queue) AS first`));
  if (head.at != null) return Number(head.at);
  if (head.first == null) return undefined;
  const { rows: [size] } = await runShaped(db, 'queue head size', [], () => compiledOn(db, sql<{ n: number | string }>`SELECT count(*) AS n
    FROM (SELECT id FROM outbound_queue ORDER BY next_attempt_at LIMIT ${sql.lit(NEXT_DUE_WINDOW)}) AS head`));
  if (Number(size.n) < NEXT_DUE_WINDOW) return undefined;
  const { rows: [row] } = await runShaped(db, `next due, skipping ${skipDomains.length}`, skipDomains,
    (skip) => compiledOn(db, sql<{ at: number | string | null }>`${openDestinations(skip)} SELECT min(due_at) AS at FROM open_dest`));
  return row?.at == null ? undefined : Number(row.at);
}

// ---- the queue as an operator sees it: per workspace, by destination ----

/** A workspace's queued mail to one domain. */
export interface DestinationSummary {
  domain: string;
  /** Recipients still open in rows no one holds, first attempt not made yet. */
  queuedRecipients: number;
  /** Recipients in rows no one holds, waiting for a retry after a temporary failure. */
  deferredRecipients: number;
  /**
   * Recipients in leased rows, as /metrics counts leased rows: an attempt
   * under way, or a process that stopped during one, whose lease must run out.
   */
  leasedRecipients: number;
  /** When the last of those leases ends, if any row is leased. */
  leaseEndsAt: number | null;
  emails: number;
  /** The oldest row's creation. */
  oldestAt: number;
  nextAttemptAt: number;
  heldAt: number | null;
  /** The reply to the latest attempt that failed, if one did. */
  lastReply: string | null;
}

/** Every domain the workspace has mail queued to, what is stuck longest first. */
export async function destinationSummaries(db: Db, ws: string, now: number): Promise<DestinationSummary[]> {
  const rows = await db.selectFrom('outbound_queue as q')
    .innerJoin('email_recipients as r', (j) => j.onRef('r.email_id', '=', 'q.email_id').onRef('r.domain', '=', 'q.domain'))
    .leftJoin('queue_holds as h', (j) => j.onRef('h.workspace_id', '=', 'q.workspace_id').onRef('h.domain', '=', 'q.domain'))
    .select((eb) => [
      'q.domain',
      // A leased row's recipients keep their status until its attempt is written: the lease tells them apart.
      sql<number>`sum(case when q.locked_until <= ${now} and r.status = 'queued' then 1 else 0 end)`.as('queued'),
      sql<number>`sum(case when q.locked_until <= ${now} and r.status = 'deferred' then 1 else 0 end)`.as('deferred'),
      sql<number>`sum(case when q.locked_until > ${now} then 1 else 0 end)`.as('leased'),
      sql<number | null>`max(case when q.locked_until > ${now} then q.locked_until end)`.as('lease_ends'),
      eb.fn.count<number>('q.id').distinct().as('emails'),
      eb.fn.min('q.created_at').as('oldest'),
      eb.fn.min('q.next_attempt_at').as('next'),
      eb.fn.max('h.held_at').as('held'),
    ])
    .where('q.workspace_id', '=', ws).where('r.status', 'in', ['queued', 'deferred'])
    .groupBy('q.domain').orderBy('oldest').orderBy('q.domain').execute();
  const replies = await lastReplies(db, ws);
  return rows.map((r) => ({
    domain: r.domain, queuedRecipients: Number(r.queued), deferredRecipients: Number(r.deferred),
    leasedRecipients: Number(r.leased), leaseEndsAt: r.lease_ends === null ? null : Number(r.lease_ends), emails: Number(r.emails),
    oldestAt: Number(r.oldest), nextAttemptAt: Number(r.next), heldAt: r.held === null ? null : Number(r.held),
    lastReply: replies.get(r.domain) ?? null,
  }));
}

/** The last failed reply of each domain's most recently tried row, in one query for all of the workspace's domains. */
async function lastReplies(db: Db, ws: string): Promise<Map<string, string>> {
  const { rows } = await sql<{ domain: string; last_error: string }>`
    SELECT domain, last_error FROM (
      SELECT domain, last_error, row_number() OVER (PARTITION BY domain ORDER BY attempt DESC, next_attempt_at DESC) AS n
      FROM outbound_queue WHERE workspace_id = ${ws} AND last_error IS NOT NULL) AS latest
    WHERE n = 1`.execute(db);
  return new Map(rows.map((r) => [r.domain, r.last_error]));
}

export type QueueItemState = 'queued' | 'deferred' | 'sending' | 'held';

/** One email's waiting recipients at a domain. */
export interface WaitingItem {
  pos: number;
  emailId: string;
  domain: string;
  recipients: string[];
  state: QueueItemState;
  attempts: number;
  nextAttemptAt: number;
  expiresAt: number;
  lastReply: string | null;
  createdAt: number;
  subject: string;
}

/** The emails waiting for a domain, newest first, paged by the email's position. */
export async function waitingItems(db: Db, ws: string, f: { domain: string; state?: QueueItemState }, page: PageQuery, now: number): Promise<Page<WaitingItem>> {
  const held = await db.selectFrom('queue_holds').select('held_at').where('workspace_id', '=', ws).where('domain', '=', f.domain).executeTakeFirst();
  // Held is the state of every row of a held domain, and of none otherwise.
  if (f.state === 'held' && !held) return { data: [], has_more: false };
  if (f.state !== undefined && f.state !== 'held' && held) return { data: [], has_more: false };
  const found = await fetchPage(page, (bound, order, take) => db.selectFrom('outbound_queue as q').innerJoin('emails as e', 'e.id', 'q.email_id')
    .select(['e.pos', 'e.subject', 'q.email_id', 'q.domain', 'q.attempt', 'q.next_attempt_at', 'q.locked_until', 'q.expires_at', 'q.last_error', 'q.created_at'])
    .where('q.workspace_id', '=', ws).where('q.domain', '=', f.domain)
    .$if(f.state === 'sending', (q) => q.where('q.locked_until', '>', now))
    .$if(f.state === 'queued', (q) => q.where('q.locked_until', '<=', now).where('q.attempt', '=', 0))
    .$if(f.state === 'deferred', (q) => q.where('q.locked_until', '<=', now).where('q.attempt', '>', 0))
    .$if(bound !== undefined, (q) => q.where('e.pos', bound!.op, bound!.pos))
    .orderBy('e.pos', order).limit(take).execute(), (r): WaitingItem => ({
    pos: Number(r.pos), emailId: r.email_id, domain: r.domain, recipients: [], subject: r.subject,
    state: held ? 'held' : r.locked_until > now ? 'sending' : r.attempt > 0 ? 'deferred' : 'queued',
    attempts: r.attempt, nextAttemptAt: r.next_attempt_at, expiresAt: r.expires_at, lastReply: r.last_error, createdAt: r.created_at,
  }));
  if (found.data.length > 0) {
    const recipients = await db.selectFrom('email_recipients').select(['email_id', 'address'])
      .where('email_id', 'in', found.data.map((i) => i.emailId)).where('domain', '=', f.domain)
      .where('status', 'in', ['queued', 'deferred']).orderBy('idx').execute();
    for (const r of recipients) found.data.find((i) => i.emailId === r.email_id)!.recipients.push(r.address);
  }
  return found;
}

/** What a retry did: rows made due, and the leased rows it left alone with when the last of their leases ends. */
export interface RetryOutcome {
  retried: number;
  leased: number;
  leaseEndsAt: number | null;
}

/**
 * Makes the workspace's matching rows that no one holds due now. Leased rows
 * are left to their lease: their attempt may be under way on a live node, and
 * a row freed under it would be sent twice; a node that stopped leaves rows
 * whose leases run out (or that it takes back at once when it starts again).
 */
export async function retryNow(tx: Tx, ws: string, f: { domain?: string; emailId?: string }, now: number): Promise<RetryOutcome> {
  const leased = await tx.selectFrom('outbound_queue')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.max('locked_until').as('ends')])
    .where('workspace_id', '=', ws).where('locked_until', '>', now)
    .$if(f.domain !== undefined, (q) => q.where('domain', '=', f.domain!))
    .$if(f.emailId !== undefined, (q) => q.where('email_id', '=', f.emailId!))
    .executeTakeFirstOrThrow();
  const res = await tx.updateTable('outbound_queue').set({ next_attempt_at: now })
    .where('workspace_id', '=', ws).where('locked_until', '<=', now)
    .$if(f.domain !== undefined, (q) => q.where('domain', '=', f.domain!))
    .$if(f.emailId !== undefined, (q) => q.where('email_id', '=', f.emailId!))
    .executeTakeFirst();
  // Other processes (the other nodes; a server, when the command line retries) rest destinations in their
  // own memory: a new mark tells them a retry was asked (retryMark), so their rests end too.
  await writeSetting(tx, RETRY_MARK, randomUUID());
  return { retried: Number(res.numUpdatedRows), leased: Number(leased.n), leaseEndsAt: leased.ends === null ? null : Number(leased.ends) };
}

const RETRY_MARK = 'queue_retry_mark';

/** The mark of the latest retry asked of any process (undefined before the first): a change means a new one. */
export async function retryMark(db: Db): Promise<string | undefined> {
  return readSetting(db, RETRY_MARK);
}

/** Holds the workspace's mail to `domain`; returns since when it is held (a second hold keeps the first one's time). */
export async function holdDestination(tx: Tx, ws: string, domain: string, now: number): Promise<number> {
  await tx.insertInto('queue_holds').values({ workspace_id: ws, domain, held_at: now })
    .onConflict((oc) => oc.columns(['workspace_id', 'domain']).doNothing()).execute();
  const row = await tx.selectFrom('queue_holds').select('held_at').where('workspace_id', '=', ws).where('domain', '=', domain).executeTakeFirstOrThrow();
  return Number(row.held_at);
}

/**
 * Releases a hold: the rows wait no longer, and their lifetime is moved on by
 * the time they spent held, so a hold never makes mail expire. Returns the
 * hold's time, or undefined when the domain was not held.
 */
export async function releaseDestination(tx: Tx, ws: string, domain: string, now: number): Promise<{ heldAt: number; rows: number } | undefined> {
  const hold = await tx.deleteFrom('queue_holds').where('workspace_id', '=', ws).where('domain', '=', domain).returning('held_at').executeTakeFirst();
  if (!hold) return undefined;
  const heldAt = Number(hold.held_at);
  // A row made during the hold was held from its creation on.
  const res = await tx.updateTable('outbound_queue')
    .set((eb) => ({
      expires_at: eb('expires_at', '+', eb(sql.lit(now), '-', eb.case().when('created_at', '>', heldAt).then(eb.ref('created_at')).else(sql.lit(heldAt)).end())),
    }))
    .where('workspace_id', '=', ws).where('domain', '=', domain).where('locked_until', '<=', now).executeTakeFirst();
  return { heldAt, rows: Number(res.numUpdatedRows) };
}
