import { AppError } from '../core/errors.js';
import { toIso, type Clock } from '../core/clock.js';
import { writeInBatches, type Store } from '../store/db.js';
import { countsByHour, foldBatch, HOUR_MS, zeroCounts, COUNT_NAMES, type Counts } from './analytics.repo.js';
import type { QueryParams } from '../contract/operations.js';

export type Granularity = 'hour' | 'day';

export type AnalyticsQuery = QueryParams<'getAnalytics'>;

export interface AnalyticsBucket extends Counts {
  start: string;
  end: string;
}

export interface Analytics {
  object: 'analytics';
  from: string;
  to: string;
  granularity: Granularity;
  mode: 'live' | 'test';
  domain_id: string | null;
  tags: string[];
  totals: Counts;
  series: AnalyticsBucket[];
}

export interface AnalyticsService {
  get(ws: string, query: AnalyticsQuery): Promise<Analytics>;
  /** Folds new events into the rollups, a bounded amount per call; returns the events consumed. */
  fold(): Promise<number>;
}

const DAY_MS = 24 * HOUR_MS;
export const DEFAULT_RANGE_MS = 7 * DAY_MS;
/** The longest range per granularity, so a series stays a few hundred points. */
export const MAX_RANGE_MS: Record<Granularity, number> = { hour: 31 * DAY_MS, day: 400 * DAY_MS };
const FOLD_BATCH = 5_000;
/** One fold run stops after this many batches (each its own transaction); the next run goes on. */
const FOLD_MAX_BATCHES = 40;

const floorHour = (ms: number) => ms - (((ms % HOUR_MS) + HOUR_MS) % HOUR_MS);
const ceilHour = (ms: number) => floorHour(ms + HOUR_MS - 1);

export function analyticsService(deps: { store: Store; clock: Clock }): AnalyticsService {
  const { store, clock } = deps;

  function range(q: AnalyticsQuery, granularity: Granularity): { from: number; to: number } {
    // Rollups are hourly: the range widens to whole UTC hours, and the answer says which.
    const to = ceilHour(q.to === undefined ? clock.now() : Date.parse(q.to));
    const from = floorHour(q.from === undefined ? to - DEFAULT_RANGE_MS : Date.parse(q.from));
    if (from >= to) throw new AppError('validation_error', "'from' must be before 'to'.", { status: 400, param: 'from' });
    if (to - from > MAX_RANGE_MS[granularity]) {
      throw new AppError('validation_error', `With granularity ${granularity} the range is at most ${MAX_RANGE_MS[granularity] / DAY_MS} days.`,
        { status: 400, param: 'from' });
    }
    return { from, to };
  }

  return {
    async get(ws, q) {
      const granularity = q.granularity ?? 'day';
      const { from, to } = range(q, granularity);
      const byHour = await countsByHour(store.db, ws, { from, to, mode: q.mode ?? 'live', domainId: q.domain_id, tags: q.tags });
      const step = granularity === 'hour' ? HOUR_MS : DAY_MS;
      const series: AnalyticsBucket[] = [];
      // Buckets are UTC hours or days, the first and last cut to the range.
      for (let start = from; start < to;) {
        const end = Math.min(to, start - (start % step) + step);
        const counts = zeroCounts();
        for (let h = start; h < end; h += HOUR_MS) {
          const c = byHour.get(h);
          if (c) for (const n of COUNT_NAMES) counts[n] += c[n];
        }
        series.push({ start: toIso(start), end: toIso(end), ...counts });
        start = end;
      }
      const totals = zeroCounts();
      for (const b of series) for (const n of COUNT_NAMES) totals[n] += b[n];
      return {
        object: 'analytics', from: toIso(from), to: toIso(to), granularity, mode: q.mode ?? 'live',
        domain_id: q.domain_id ?? null, tags: q.tags ?? [], totals, series,
      };
    },

    fold: () => writeInBatches(store, { size: FOLD_BATCH, maxBatches: FOLD_MAX_BATCHES }, foldBatch),
  };
}
