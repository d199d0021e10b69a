import { AppError } from '../core/errors.js';
import { isStoreUnavailable, runShaped, type Db, type Store, type Tx } from '../store/db.js';
import { coalescedWrite } from '../store/coalesced-write.js';
import { rowsNeedLocks } from '../store/lease.js';
import type { Plan } from '../config.js';

// Send quotas: emails per UTC day and per UTC calendar month, counted in
// send_usage under the periods 'd:YYYY-MM-DD' and 'm:YYYY-MM'. A take adds to
// both rows in one statement and is refused, rolled back, when a limit is
// passed; the upsert locks the rows until its transaction ends, so two
// concurrent sends cannot both take the last unit. Where that transaction is
// depends on the store: see sendQuotaTaker.

const DAY_MS = 86_400_000;

export function quotaPeriods(now: number): { day: string; month: string } {
  const iso = new Date(now).toISOString();
  return { day: `d:${iso.slice(0, 10)}`, month: `m:${iso.slice(0, 7)}` };
}

/** Whole seconds from `now` to the next UTC midnight, at least 1. */
export function secondsToUtcMidnight(now: number): number {
  const next = Math.floor(now / DAY_MS) * DAY_MS + DAY_MS;
  return Math.max(1, Math.ceil((next - now) / 1000));
}

/** How many more emails the workspace may send now, by both quotas. */
export async function sendQuotaLeft(db: Db | Tx, workspaceId: string, plan: Plan, now: number): Promise<number> {
  const { day, month } = quotaPeriods(now);
  const rows = await db.selectFrom('send_usage').select(['period', 'count'])
    .where('workspace_id', '=', workspaceId).where('period', 'in', [day, month]).execute();
  const used = (period: string) => Number(rows.find((r) => r.period === period)?.count ?? 0);
  return Math.max(0, Math.min(plan.dailySendQuota - used(day), plan.monthlySendQuota - used(month)));
}

/** Clears the workspace's daily and monthly counts, as a change of plan does. */
export async function clearSendQuota(tx: Tx, workspaceId: string): Promise<void> {
  await tx.deleteFrom('send_usage').where('workspace_id', '=', workspaceId).execute();
}

/** Emails of one workspace to count against its quotas. */
export interface QuotaTake {
  workspaceId: string;
  plan: Plan;
  count: number;
  now: number;
}

/**
 * Where the writes of emails take their quota.
 *
 * On SQLite, in the emails' own write unit, last (`inUnit`): the one writer
 * holds the whole database, so no one waits on the usage rows, and a unit
 * rolled back takes nothing.
 *
 * On PostgreSQL every send of a workspace, on every node, updates the same
 * two rows, and a row updated in the emails' transaction stays locked until
 * their durable commit: the sends would queue one behind another for each
 * WAL sync, and two nodes would send slower than one. There the quota is
 * taken in a transaction of its own just before (`around`), committed
 * without waiting for the WAL sync, so its rows are locked for a round trip;
 * it is given back if the emails' write is refused. The WAL is written in
 * order, so the emails' durable commit makes their take durable too: a crash
 * in between may leave a take counted for emails never made, never emails
 * made uncounted.
 */
export function sendQuotaTaker(store: Pick<Store, 'db' | 'write'>) {
  const apart = rowsNeedLocks(store.db);
  // The takes of sends made at the same moment share one transaction.
  const takeTogether = coalescedWrite<QuotaTake>(store, consumeTakes, { durable: false });
  return {
    /** Takes the quota of `takes` in the emails' unit `tx`, last in it; nothing where `around` takes it. */
    async inUnit(tx: Tx, takes: ReadonlyArray<QuotaTake | undefined>): Promise<void> {
      if (!apart) await consumeTakes(tx, takes.filter((t): t is QuotaTake => t !== undefined));
    },

    /** Runs `write`, which writes the emails of `take`, with their quota taken before it where it is taken apart. */
    async around<T>(take: QuotaTake | undefined, write: () => Promise<T>): Promise<T> {
      if (!apart || !take || take.count <= 0) return write();
      await takeTogether([take]);
      try {
        return await write();
      } catch (err) {
        // A write the store could not finish may have committed all the same (the connection lost with its
        // COMMIT on the way): its take stays counted, as does one the store cannot give back now. Fewer
        // sends allowed, never more.
        if (!isStoreUnavailable(err)) await store.write((tx) => returnSendQuota(tx, take), { durable: false }).catch(() => undefined);
        throw err;
      }
    },
  };
}

/**
 * Takes `takes` in `tx`: one take a workspace and day, in the order of their
 * keys, so two transactions taking for several workspaces never wait for
 * each other in a circle.
 */
async function consumeTakes(tx: Tx, takes: readonly QuotaTake[]): Promise<void> {
  const sums = new Map<string, QuotaTake>();
  for (const take of takes) {
    const key = `${take.workspaceId}\n${quotaPeriods(take.now).day}\n${take.plan.dailySendQuota}\n${take.plan.monthlySendQuota}`;
    const sum = sums.get(key);
    if (sum) sum.count += take.count;
    else sums.set(key, { ...take });
  }
  for (const key of [...sums.keys()].sort()) {
    const sum = sums.get(key)!;
    await consumeSendQuota(tx, sum.workspaceId, sum.plan, sum.count, sum.now);
  }
}

/** Takes back a take whose emails were not made. */
async function returnSendQuota(tx: Tx, { workspaceId, count, now }: QuotaTake): Promise<void> {
  const { day, month } = quotaPeriods(now);
  await tx.updateTable('send_usage').set((eb) => ({ count: eb('count', '-', count) }))
    .where('workspace_id', '=', workspaceId).where('period', 'in', [day, month]).execute();
}

/**
 * Counts `count` emails against the workspace's quotas, or throws 429: the
 * monthly error first (waiting for tomorrow would not help), then the daily
 * one with Retry-After up to the next UTC midnight. One statement adds to
 * both periods and returns the new totals; when a limit is passed it throws,
 * and the caller's transaction (a store.write unit) rolls the count back.
 */
export async function consumeSendQuota(tx: Tx, workspaceId: string, plan: Plan, count: number, now: number): Promise<void> {
  if (count <= 0) return;
  const { day, month } = quotaPeriods(now);
  const { rows } = await runShaped(tx, 'add send usage', [workspaceId, day, month, count], (p) => tx.insertInto('send_usage')
    .values([{ workspace_id: p[0] as string, period: p[1] as string, count: p[3] as number }, { workspace_id: p[0] as string, period: p[2] as string, count: p[3] as number }])
    .onConflict((oc) => oc.columns(['workspace_id', 'period']).doUpdateSet((eb) => ({ count: eb('send_usage.count', '+', eb.ref('excluded.count')) })))
    .returning(['period', 'count']));
  const used = (period: string) => Number(rows.find((r) => r.period === period)!.count);

  if (used(month) > plan.monthlySendQuota) {
    throw new AppError('monthly_quota_exceeded',
      `This would exceed the monthly send quota of ${plan.monthlySendQuota} emails (${used(month) - count} used this month, UTC).`);
  }
  if (used(day) > plan.dailySendQuota) {
    const wait = secondsToUtcMidnight(now);
    throw new AppError('daily_quota_exceeded',
      `This would exceed the daily send quota of ${plan.dailySendQuota} emails (${used(day) - count} used today, UTC); it resets at UTC midnight.`,
      { headers: { 'Retry-After': String(wait) } });
  }
}
