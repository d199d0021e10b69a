import { AppError } from '../core/errors.js';
import { runShaped, type Db, type Tx } from '../store/db.js';
import type { Plan } from '../config.js';

// Send quotas: emails per UTC day and per UTC calendar month, counted in
// send_usage under the periods 'd:YYYY-MM-DD' and 'm:YYYY-MM'. Called in the
// transaction that inserts the emails, so a rolled-back send is not counted
// and two concurrent sends cannot both take the last unit (the upsert locks
// the rows it touches until the commit: callers take it last).

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
