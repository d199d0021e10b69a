import { sql } from 'kysely';
import type { Db } from './db.js';

/** The tables whose rows are leased to a named owner (core/lease-owner.ts). */
export type LeasedTable = 'outbound_queue' | 'inbound_messages' | 'webhook_deliveries' | 'scheduled_tasks' | 'broadcasts';

/**
 * Who holds leases on rows of `table`. With `pendingOnly`, only pending rows
 * count (the status is a literal, so the tables' partial indexes of pending
 * rows serve the scan).
 */
export async function leaseOwnersOf(db: Db, table: LeasedTable, o: { pendingOnly: boolean }): Promise<string[]> {
  const { rows } = await sql<{ lease_owner: string }>`SELECT DISTINCT lease_owner FROM ${sql.table(table)}
    WHERE lease_owner IS NOT NULL${o.pendingOnly ? sql` AND status = 'pending'` : sql``}`.execute(db);
  return rows.map((r) => r.lease_owner);
}
