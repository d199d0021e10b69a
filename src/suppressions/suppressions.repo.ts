import type { Selectable } from 'kysely';
import { paddedInList, runShaped, type Db, type Tx } from '../store/db.js';
import type { SuppressionReason, SuppressionsTable } from './suppressions.tables.js';
import { fetchPage, type Page, type PageQuery } from '../store/paging.js';
import { toIso } from '../core/clock.js';

export interface Suppression {
  id: string;
  object: 'suppression';
  email: string;
  reason: SuppressionReason;
  created_at: string;
}

export interface SuppressionFilter {
  reason?: SuppressionReason;
  /** The normalised address, matched exactly. */
  email?: string;
}

const toSuppression = (r: Selectable<SuppressionsTable>): Suppression => ({
  id: r.id, object: 'suppression', email: r.email, reason: r.reason, created_at: toIso(r.created_at),
});

// SQLite allows 32766 bound parameters per statement and PostgreSQL 65535;
// lookups by address list are chunked well below both.
const IN_CHUNK = 500;

/** Inserts unless the address already has a suppression; returns whether it did. */
export async function insertSuppression(tx: Tx, row: Omit<Selectable<SuppressionsTable>, 'pos'>): Promise<boolean> {
  const res = await tx.insertInto('suppressions').values(row)
    .onConflict((oc) => oc.columns(['workspace_id', 'email']).doNothing())
    .executeTakeFirst();
  return Number(res.numInsertedOrUpdatedRows ?? 0) > 0;
}

export interface SuppressedAddress {
  reason: SuppressionReason;
  /** Epoch ms. */
  since: number;
}

/** The suppressions among `emails` (normalised), keyed by address. */
export async function suppressedAmong(db: Db | Tx, ws: string, emails: string[]): Promise<Map<string, SuppressedAddress>> {
  const out = new Map<string, SuppressedAddress>();
  const unique = [...new Set(emails)];
  for (let i = 0; i < unique.length; i += IN_CHUNK) {
    const chunk = paddedInList(unique.slice(i, i + IN_CHUNK), IN_CHUNK);
    const { rows } = await runShaped(db, `suppressed among x${chunk.length}`, [ws, ...chunk], (p) => db.selectFrom('suppressions')
      .select(['email', 'reason', 'created_at']).where('workspace_id', '=', p[0] as string).where('email', 'in', p.slice(1) as string[]));
    for (const r of rows) out.set(r.email, { reason: r.reason, since: r.created_at });
  }
  return out;
}

export async function findSuppressionById(db: Db | Tx, ws: string, id: string): Promise<Suppression | undefined> {
  const row = await db.selectFrom('suppressions').selectAll().where('workspace_id', '=', ws).where('id', '=', id).executeTakeFirst();
  return row && toSuppression(row);
}

export async function findSuppressionByEmail(db: Db | Tx, ws: string, email: string): Promise<Suppression | undefined> {
  const row = await db.selectFrom('suppressions').selectAll().where('workspace_id', '=', ws).where('email', '=', email).executeTakeFirst();
  return row && toSuppression(row);
}

export async function deleteSuppression(tx: Tx, ws: string, id: string): Promise<boolean> {
  const res = await tx.deleteFrom('suppressions').where('workspace_id', '=', ws).where('id', '=', id).executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

export async function listSuppressions(db: Db, ws: string, f: SuppressionFilter, page: PageQuery): Promise<Page<Suppression>> {
  return fetchPage(page, (bound, order, take) => db.selectFrom('suppressions').selectAll()
    .where('workspace_id', '=', ws)
    .$if(f.reason !== undefined, (q) => q.where('reason', '=', f.reason!))
    .$if(f.email !== undefined, (q) => q.where('email', '=', f.email!))
    .$if(bound !== undefined, (q) => q.where('pos', bound!.op, bound!.pos))
    .orderBy('pos', order).limit(take).execute(), toSuppression);
}
