import { sql, type Insertable, type Selectable } from 'kysely';
import type { Db, Tx } from '../store/db.js';
import type { ContactStatus, ContactsTable, EngagementTier } from './contacts.tables.js';
import { fetchPage, type Page, type PageQuery } from '../store/paging.js';
import { lockedForUpdate } from '../store/lease.js';
import { indexedContainsText } from '../store/trigrams.js';
import { toIso, toIsoOrNull } from '../core/clock.js';
import { parseProperties, type Properties } from './contact-properties.js';

export interface ContactTag {
  id: string;
  name: string;
}

export interface Contact {
  id: string;
  object: 'contact';
  email: string;
  name: string | null;
  status: ContactStatus;
  engagement_tier: EngagementTier;
  tags: ContactTag[];
  properties: Properties;
  unsubscribed_at: string | null;
  unsubscribe_reason: string | null;
  created_at: string;
  updated_at: string;
}

export interface ContactFilter {
  email?: string;
  status?: ContactStatus;
  engagementTier?: EngagementTier;
  tagId?: string;
  createdAfter?: number;
  createdBefore?: number;
}

type ContactRow = Selectable<ContactsTable>;

/** What the rules need to know about an existing contact. */
export interface ContactRef {
  id: string;
  email: string;
  name: string | null;
  status: ContactStatus;
  properties: Properties;
}

// SQLite allows 32766 bound parameters per statement and PostgreSQL 65535;
// statements built from lists of addresses or rows stay well below both.
const IN_CHUNK = 500;
const INSERT_CHUNK = 200;   // rows per multi-row INSERT (11 columns each)

const chunks = <T>(items: T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

const toContact = (r: ContactRow, tags: ContactTag[]): Contact => ({
  id: r.id,
  object: 'contact',
  email: r.email,
  name: r.name,
  status: r.status,
  engagement_tier: r.engagement_tier,
  tags,
  properties: parseProperties(r.properties),
  unsubscribed_at: toIsoOrNull(r.unsubscribed_at),
  unsubscribe_reason: r.unsubscribe_reason,
  created_at: toIso(r.created_at),
  updated_at: toIso(r.updated_at),
});

/** Tags of each contact, by name; one query for a whole page. */
async function tagsOf(db: Db | Tx, contactIds: string[]): Promise<Map<string, ContactTag[]>> {
  const out = new Map<string, ContactTag[]>(contactIds.map((id) => [id, []]));
  for (const ids of chunks(contactIds, IN_CHUNK)) {
    const rows = await db.selectFrom('contact_tags').innerJoin('tags', 'tags.id', 'contact_tags.tag_id')
      .select(['contact_tags.contact_id', 'tags.id', 'tags.name'])
      .where('contact_tags.contact_id', 'in', ids)
      .orderBy('tags.name_key').execute();
    for (const r of rows) out.get(r.contact_id)!.push({ id: r.id, name: r.name });
  }
  return out;
}

async function withTags(db: Db | Tx, rows: ContactRow[]): Promise<Contact[]> {
  const tags = await tagsOf(db, rows.map((r) => r.id));
  return rows.map((r) => toContact(r, tags.get(r.id)!));
}

const liveContact = (db: Db | Tx, ws: string, id: string) => db.selectFrom('contacts').selectAll()
  .where('workspace_id', '=', ws).where('id', '=', id).where('deleted_at', 'is', null);

/** A live (not deleted) contact with its tags. */
export async function findContact(db: Db | Tx, ws: string, id: string): Promise<Contact | undefined> {
  const row = await liveContact(db, ws, id).executeTakeFirst();
  return row && (await withTags(db, [row]))[0];
}

/** A live contact with its tags, read to change it: its row stays locked until the transaction ends. */
export async function findContactForUpdate(tx: Tx, ws: string, id: string): Promise<Contact | undefined> {
  const row = await lockedForUpdate(tx, liveContact(tx, ws, id)).executeTakeFirst();
  return row && (await withTags(tx, [row]))[0];
}

async function liveByEmails(db: Db | Tx, ws: string, emails: string[], lock: boolean): Promise<Map<string, ContactRef>> {
  const out = new Map<string, ContactRef>();
  // In address order, so two transactions locking some of the same contacts never wait on each other in a circle.
  for (const list of chunks([...new Set(emails)].sort(), IN_CHUNK)) {
    const read = db.selectFrom('contacts').select(['id', 'email', 'name', 'status', 'properties'])
      .where('workspace_id', '=', ws).where('email', 'in', list).where('deleted_at', 'is', null).orderBy('email');
    for (const r of await (lock ? lockedForUpdate(db, read) : read).execute()) out.set(r.email, { ...r, properties: parseProperties(r.properties) });
  }
  return out;
}

/** Live contacts among the given normalised addresses, keyed by address. */
export const findLiveByEmails = (db: Db | Tx, ws: string, emails: string[]) => liveByEmails(db, ws, emails, false);

/** The same, read to change them: their rows stay locked until the transaction ends. */
export const findLiveByEmailsForUpdate = (tx: Tx, ws: string, emails: string[]) => liveByEmails(tx, ws, emails, true);

/**
 * Inserts the contacts whose address no live contact has; returns the
 * addresses it inserted. Rows go in address order: two transactions adding
 * some of the same addresses wait for each other's in one order.
 */
export async function insertContacts(tx: Tx, rows: Insertable<ContactsTable>[]): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (const part of chunks([...rows].sort((a, b) => (a.email < b.email ? -1 : a.email > b.email ? 1 : 0)), INSERT_CHUNK)) {
    const added = await tx.insertInto('contacts').values(part)
      .onConflict((oc) => oc.columns(['workspace_id', 'email']).where('deleted_at', 'is', null).doNothing())
      .returning('email').execute();
    for (const r of added) inserted.add(r.email);
  }
  return inserted;
}

/** Sets the names of many contacts, a chunk per statement. */
export async function setContactNames(tx: Tx, names: Map<string, string | null>, now: number): Promise<void> {
  for (const part of chunks([...names], IN_CHUNK / 2)) {
    const byId = sql.join(part.map(([id, name]) => sql`when ${id} then ${name}`), sql` `);
    await tx.updateTable('contacts').set({ name: sql<string | null>`case id ${byId} end`, updated_at: now })
      .where('id', 'in', part.map(([id]) => id)).execute();
  }
}

/** Sets the properties of many contacts, a chunk per statement. */
export async function setContactProperties(tx: Tx, properties: Map<string, Properties>, now: number): Promise<void> {
  for (const part of chunks([...properties], IN_CHUNK / 2)) {
    const byId = sql.join(part.map(([id, p]) => sql`when ${id} then ${JSON.stringify(p)}`), sql` `);
    await tx.updateTable('contacts').set({ properties: sql<string>`case id ${byId} end`, updated_at: now })
      .where('id', 'in', part.map(([id]) => id)).execute();
  }
}

export async function touchContacts(tx: Tx, ids: string[], now: number): Promise<void> {
  for (const list of chunks(ids, IN_CHUNK)) {
    await tx.updateTable('contacts').set({ updated_at: now }).where('id', 'in', list).execute();
  }
}

/** Replaces the tag sets of the given contacts. */
export async function replaceTags(tx: Tx, ws: string, sets: Map<string, string[]>, now: number): Promise<void> {
  const ids = [...sets.keys()];
  for (const list of chunks(ids, IN_CHUNK)) await tx.deleteFrom('contact_tags').where('contact_id', 'in', list).execute();
  const rows = [...sets].flatMap(([contactId, tagIds]) =>
    [...new Set(tagIds)].map((tagId) => ({ contact_id: contactId, tag_id: tagId, workspace_id: ws, created_at: now })));
  for (const part of chunks(rows, INSERT_CHUNK)) await tx.insertInto('contact_tags').values(part).execute();
}

export async function addTag(tx: Tx, ws: string, contactId: string, tagId: string, now: number): Promise<void> {
  await tx.insertInto('contact_tags').values({ contact_id: contactId, tag_id: tagId, workspace_id: ws, created_at: now })
    .onConflict((oc) => oc.columns(['contact_id', 'tag_id']).doNothing()).execute();
}

export async function removeTag(tx: Tx, contactId: string, tagId: string): Promise<void> {
  await tx.deleteFrom('contact_tags').where('contact_id', '=', contactId).where('tag_id', '=', tagId).execute();
}

/** Soft delete: the row, its tags and its history stay; it leaves lists and lookups. */
export async function softDeleteContact(tx: Tx, id: string, now: number): Promise<void> {
  await tx.updateTable('contacts').set({ deleted_at: now, updated_at: now }).where('id', '=', id).execute();
}

/**
 * Unsubscribes the live contact with this address, if it is subscribed. A
 * cleaned contact stays cleaned: its address is known to be undeliverable,
 * which says more than the unsubscribe does.
 */
/** Unsubscribes the live, subscribed contact with this address; returns its id when there was one. */
export async function unsubscribeByEmail(tx: Tx, ws: string, email: string, reason: string | null, now: number): Promise<string | undefined> {
  const row = await tx.updateTable('contacts')
    .set({ status: 'unsubscribed', unsubscribe_reason: reason, unsubscribed_at: now, updated_at: now })
    .where('workspace_id', '=', ws).where('email', '=', email).where('deleted_at', 'is', null)
    .where('status', '=', 'subscribed')
    .returning('id').executeTakeFirst();
  return row?.id;
}

/** Marks the live contact with this address cleaned (hard bounce or complaint). */
export async function cleanByEmail(tx: Tx, ws: string, email: string, now: number): Promise<void> {
  await tx.updateTable('contacts').set({ status: 'cleaned', updated_at: now })
    .where('workspace_id', '=', ws).where('email', '=', email).where('deleted_at', 'is', null)
    .where('status', '<>', 'cleaned')
    .execute();
}

export async function listContacts(db: Db, ws: string, f: ContactFilter, page: PageQuery, now: number): Promise<Page<Contact>> {
  // A whole address as one LIKE pattern asks the index for trigrams most contacts hold (a word's start, ".com"): see indexedContainsText.
  const email = f.email === undefined ? undefined : await indexedContainsText(db, 'contacts', 'email', f.email.toLowerCase(), now);
  const result = await fetchPage(page, (bound, order, take) => db.selectFrom('contacts').selectAll()
    .where('workspace_id', '=', ws).where('deleted_at', 'is', null)
    .$if(email !== undefined, (q) => q.where(email!))
    .$if(f.status !== undefined, (q) => q.where('status', '=', f.status!))
    .$if(f.engagementTier !== undefined, (q) => q.where('engagement_tier', '=', f.engagementTier!))
    .$if(f.tagId !== undefined, (q) => q.where((eb) => eb.exists(eb.selectFrom('contact_tags').select('contact_tags.tag_id')
      .whereRef('contact_tags.contact_id', '=', 'contacts.id').where('contact_tags.tag_id', '=', f.tagId!))))
    .$if(f.createdAfter !== undefined, (q) => q.where('created_at', '>', f.createdAfter!))
    .$if(f.createdBefore !== undefined, (q) => q.where('created_at', '<', f.createdBefore!))
    .$if(bound !== undefined, (q) => q.where('pos', bound!.op, bound!.pos))
    .orderBy('pos', order).limit(take).execute(), (row) => row);
  return { ...result, data: await withTags(db, result.data) };
}
