import { sql, type Kysely, type Selectable, type SelectQueryBuilder } from 'kysely';
import type { Logger } from 'pino';
import { releaseGoneOwners } from '../core/lease-owner.js';
import { paddedInList, runShaped, type Db, type Store, type Tx } from './db.js';
import { isPostgres } from './schema-helpers.js';
import type { Database } from './tables.js';

// Background work is claimed with a lease: the row names its owner (a
// process, core/lease-owner.ts) and the time the lease runs out. A claim
// takes only rows whose lease has run out, in one UPDATE … WHERE key IN
// (SELECT … LIMIT n) RETURNING, so two claims, in this process or on another
// node, never take the same row; on PostgreSQL the choice skips rows another
// claim has locked (FOR UPDATE SKIP LOCKED). A process that dies leaves its
// leases to run out; a process that starts in its place frees them at once.
// The SQL of leasing is written here, once, for every leased table.

export type LeasedTable = 'outbound_queue' | 'inbound_messages' | 'webhook_deliveries' | 'scheduled_tasks' | 'broadcasts';

interface LeaseShape {
  key: 'id' | 'name';
  /**
   * The column holding the lease's end. `next_attempt_at` leases make a
   * crashed claim simply come due again; a `locked_until` lease is freed to 0.
   */
  expiry: 'locked_until' | 'next_attempt_at';
  /** A due time that moves with the lease, so a leased row does not look due to the queue's readers. */
  dueWithLease?: 'next_attempt_at';
  /** Only rows in this status hold leases that a restart frees (their partial index serves the scan). */
  liveStatus?: string;
  /** Counts every claim of a row in this column (attempts at processing it). */
  claimCount?: 'attempts';
  /** Set to now by every change of the lease. */
  touched?: 'updated_at';
}

const SHAPES: Record<LeasedTable, LeaseShape> = {
  outbound_queue: { key: 'id', expiry: 'locked_until', dueWithLease: 'next_attempt_at' },
  inbound_messages: { key: 'id', expiry: 'locked_until', liveStatus: 'pending', claimCount: 'attempts' },
  webhook_deliveries: { key: 'id', expiry: 'next_attempt_at', liveStatus: 'pending', touched: 'updated_at' },
  scheduled_tasks: { key: 'name', expiry: 'locked_until' },
  broadcasts: { key: 'id', expiry: 'locked_until' },
};

/** The columns leasing reads and writes, common to every leased table. */
interface LeaseColumns {
  id: string;
  name: string;
  locked_until: number;
  next_attempt_at: number;
  lease_owner: string | null;
  status: string;
  attempts: number;
  updated_at: number;
}
/** Every leased table seen through its lease columns, under one name: the SQL is the same for each. */
type LeaseView = { leased: LeaseColumns };
const viewed = (table: LeasedTable) => table as unknown as 'leased';

const leaseView = (tx: Db | Tx) => tx as unknown as Kysely<LeaseView>;
const onPostgres = (db: Db | Tx) => isPostgres(db as unknown as Kysely<unknown>);

/** The rows a claim chooses from: a query of the table's keys (filtered and ordered as the caller needs, with its LIMIT), or keys chosen already. */
export type Candidates<T extends LeasedTable> = SelectQueryBuilder<Database, T, Record<string, string>> | readonly string[];

/**
 * Leases the candidates whose lease has run out to `owner` until `until`,
 * and returns them; a candidate someone else holds is left out. Candidates
 * given as keys should have been read with `lockedForClaim`, in the same
 * transaction.
 */
export async function claimLeases<T extends LeasedTable>(tx: Tx, table: T, candidates: Candidates<T>,
  l: { now: number; until: number; owner: string }): Promise<Array<Selectable<Database[T]>>> {
  const shape = SHAPES[table];
  const view = leaseView(tx);
  type Keys = SelectQueryBuilder<LeaseView, 'leased', { key: string }> | string[];
  const update = (p: readonly unknown[], keys: Keys) => {
    const [until, owner, now] = p as [number, string, number];
    const set: Record<string, unknown> = { [shape.expiry]: until, lease_owner: owner };
    if (shape.dueWithLease) set[shape.dueWithLease] = until;
    if (shape.touched) set[shape.touched] = now;
    return view.updateTable(viewed(table))
      .set((eb) => (shape.claimCount ? { ...set, [shape.claimCount]: eb(shape.claimCount, '+', 1) } : set))
      .where(shape.key, 'in', keys)
      .where(shape.expiry, '<=', now)
      .returningAll();
  };
  let rows: LeaseColumns[];
  if (Array.isArray(candidates)) {
    if (candidates.length === 0) return [];
    // The hot path of delivery: a shape per padded count, compiled once.
    const keys = paddedInList(candidates);
    ({ rows } = await runShaped(tx, `lease ${table} x${keys.length}`, [l.until, l.owner, l.now, ...keys],
      (p) => update(p, p.slice(3) as string[])));
  } else {
    const chosen = lockedForClaim(tx, (candidates as unknown as SelectQueryBuilder<LeaseView, 'leased', Record<string, string>>)
      .clearSelect().select(sql.ref<string>(shape.key).as('key')).where(shape.expiry, '<=', l.now));
    rows = await update([l.until, l.owner, l.now], chosen).execute();
  }
  return rows as unknown as Array<Selectable<Database[T]>>;
}

/**
 * Rows a write reads to change them, one writer at a time: on PostgreSQL the
 * read locks them until the transaction ends, waiting for a transaction that
 * holds them (and then reading what it committed). SQLite's writer holds the
 * whole database already.
 */
export function lockedForUpdate<Q extends SelectQueryBuilder<any, any, any>>(tx: Db | Tx, query: Q): Q {
  return onPostgres(tx) ? query.forUpdate() as Q : query;
}

/**
 * Rows a write reads to rely on them staying as they are until it ends: on
 * PostgreSQL the read takes a shared lock, which other such reads share and a
 * write of the rows waits for. SQLite's writer holds the whole database already.
 */
export function lockedForShare<Q extends SelectQueryBuilder<any, any, any>>(tx: Db | Tx, query: Q): Q {
  return onPostgres(tx) ? query.forShare() as Q : query;
}

/**
 * Whether a row read in this write transaction must be locked to stay as
 * read until it ends: on PostgreSQL it must (lockedForUpdate); SQLite's
 * writer holds the whole database already, so a value known from before the
 * transaction that cannot change meanwhile needs no reading there.
 */
export const rowsNeedLocks = (tx: Db | Tx): boolean => onPostgres(tx);

/** A claim's choice of rows: on PostgreSQL it locks them until the transaction ends and passes over rows another claim has locked. */
export function lockedForClaim<Q extends SelectQueryBuilder<any, any, any>>(tx: Db | Tx, query: Q): Q {
  return onPostgres(tx) ? query.forUpdate().skipLocked() as Q : query;
}

/** Renews `owner`'s lease on these rows until `until`, and answers the rows renewed: rows it no longer holds are left alone. */
export async function extendLeases(tx: Tx, table: LeasedTable, keys: readonly string[], owner: string, until: number): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const shape = SHAPES[table];
  const set: Record<string, number> = { [shape.expiry]: until };
  if (shape.dueWithLease) set[shape.dueWithLease] = until;
  const rows = await leaseView(tx).updateTable(viewed(table)).set(set).where(shape.key, 'in', [...keys]).where('lease_owner', '=', owner)
    .returning(shape.key).execute();
  return new Set(rows.map((r) => String((r as Record<string, unknown>)[shape.key])));
}

/**
 * Those of `keys` whose rows `owner` holds, read under a lock on PostgreSQL
 * (lockedForUpdate): a row whose work was written back, or that another
 * owner claimed, is not among them.
 */
export async function heldBy(tx: Tx, table: LeasedTable, keys: readonly string[], owner: string): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const shape = SHAPES[table];
  const rows = await lockedForUpdate(tx, leaseView(tx).selectFrom(viewed(table)).select(shape.key)
    .where(shape.key, 'in', [...keys]).where('lease_owner', '=', owner)).execute();
  return new Set(rows.map((r) => String((r as Record<string, unknown>)[shape.key])));
}

/** The lease columns of a row no one holds, due at `dueAt`. */
export function freed(table: LeasedTable, now: number, dueAt = now): Record<string, number | null> {
  const shape = SHAPES[table];
  const set: Record<string, number | null> = { [shape.expiry]: shape.expiry === 'next_attempt_at' ? dueAt : 0, lease_owner: null };
  if (shape.dueWithLease) set[shape.dueWithLease] = dueAt;
  if (shape.touched) set[shape.touched] = now;
  return set;
}

/** Frees every lease these owners hold, due at once; returns how many rows. */
export async function releaseOwners(tx: Tx, table: LeasedTable, owners: readonly string[], now: number): Promise<number> {
  if (owners.length === 0) return 0;
  const shape = SHAPES[table];
  const res = await leaseView(tx).updateTable(viewed(table)).set(freed(table, now))
    .where('lease_owner', 'in', [...owners])
    .$if(shape.liveStatus !== undefined, (q) => q.where('status', '=', shape.liveStatus!))
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/** Who holds leases on rows of `table`. */
export async function leaseOwnersOf(db: Db, table: LeasedTable): Promise<string[]> {
  const shape = SHAPES[table];
  const rows = await leaseView(db).selectFrom(viewed(table)).select('lease_owner').distinct()
    .where('lease_owner', 'is not', null)
    .$if(shape.liveStatus !== undefined, (q) => q.where('status', '=', shape.liveStatus!))
    .execute();
  return rows.map((r) => r.lease_owner!);
}

/**
 * At an engine's start: frees the leases that stopped processes of this host
 * left on `table`, so their rows are taken up at once instead of when the
 * leases run out. Failing is logged, not thrown: the leases then run out.
 */
export function freeGoneLeases(store: Store, table: LeasedTable, logger: Logger, now: () => number): Promise<number> {
  return releaseGoneOwners(table.replaceAll('_', ' '), logger, () => leaseOwnersOf(store.db, table),
    (gone) => store.write((tx) => releaseOwners(tx, table, gone, now())));
}
