import type { Db, Tx } from '../store/db.js';

export interface TrackedEmail {
  id: string;
  workspace_id: string;
  domain_id: string | null;
  from_address: string;
  subject: string;
  to_list: string;
  sent_at: number | null;
}

export async function insertLinks(tx: Tx, rows: Array<{ id: string; workspace_id: string; email_id: string; url: string; created_at: number }>): Promise<void> {
  if (rows.length > 0) await tx.insertInto('tracked_links').values(rows).onConflict((oc) => oc.column('id').doNothing()).execute();
}

export async function findLink(db: Db, id: string): Promise<{ url: string; email_id: string } | undefined> {
  return db.selectFrom('tracked_links').select(['url', 'email_id']).where('id', '=', id).executeTakeFirst();
}

export async function findTrackedEmail(db: Db | Tx, emailId: string): Promise<TrackedEmail | undefined> {
  return db.selectFrom('emails')
    .select(['id', 'workspace_id', 'domain_id', 'from_address', 'subject', 'to_list', 'sent_at'])
    .where('id', '=', emailId).executeTakeFirst();
}

/**
 * Adds one to the email's open or click counter and returns the new value.
 * Call it before writing the open or click event: the counter row's lock
 * orders an email's opens and clicks on PostgreSQL, so of two recorded on two
 * nodes at once the second sees the first's event, and the broadcast stats,
 * which count only an email's first of each type, count the email once.
 */
export async function bumpCount(tx: Tx, emailId: string, which: 'opens' | 'clicks'): Promise<number> {
  await tx.insertInto('tracking_counts').values({ email_id: emailId, opens: 0, clicks: 0 })
    .onConflict((oc) => oc.column('email_id').doNothing()).execute();
  const row = await tx.updateTable('tracking_counts')
    .set((eb) => ({ [which]: eb(which, '+', 1) }))
    .where('email_id', '=', emailId)
    .returning(which)
    .executeTakeFirstOrThrow();
  return Number((row as Record<string, number>)[which]);
}

/** Deletes the tracked links and counts of the emails `emailIds`: a link of theirs leads nowhere after. */
export async function forgetTrackingOf(tx: Tx, emailIds: string[]): Promise<void> {
  if (emailIds.length === 0) return;
  await tx.deleteFrom('tracked_links').where('email_id', 'in', emailIds).execute();
  await tx.deleteFrom('tracking_counts').where('email_id', 'in', emailIds).execute();
}
