import { characterCount } from '../core/characters.js';
import { AppError, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import type { Clock } from '../core/clock.js';
import type { QueryParams, RequestBody } from '../contract/operations.js';
import type { Store, Tx } from '../store/db.js';
import type { Page, PageQuery } from '../store/paging.js';
import type { ContactStatus } from './contacts.tables.js';
import type { SuppressionsService } from '../suppressions/index.js';
import { cleanTagName, tagKey, MAX_TAG_NAME_LENGTH, type TagsService } from '../tags/index.js';
import { isValidAddress, normaliseAddress } from './email-address.js';
import {
  addTag, findContact, findContactForUpdate, findLiveByEmails, findLiveByEmailsForUpdate, insertContacts, listContacts, removeTag, replaceTags, setContactNames, setContactProperties,
  softDeleteContact, touchContacts, unsubscribeByEmail, type Contact, type ContactRef,
} from './contacts.repo.js';
import { foldEventBatch, factsFor, maxContactPos, recordAddressEvent, retierContactRange } from './engagement.repo.js';
import { ENGAGEMENT_EVENT_TYPES, SEND_EVENT_TYPES, engagementTier } from './engagement.js';
import { checkPropertiesPatch, mergeProperties, type Properties, type PropertiesPatch } from './contact-properties.js';
import { appendWorkspaceEvent } from '../events/index.js';

export const MAX_BULK_CONTACTS = 1000;
export const MAX_NAME_LENGTH = 200;
export const MAX_TAGS_PER_CONTACT = 100;
export const MAX_UNSUBSCRIBE_REASON_LENGTH = 500;

// Engagement upkeep is done in bounded write units, so a backlog never holds
// the shared write connection for long, and each run is bounded in count.
const FOLD_BATCH_EVENTS = 5_000;
const FOLD_MAX_BATCHES_PER_RUN = 40;
const RETIER_RANGE = 5_000;

export type ContactInput = RequestBody<'createContact'>;
/** Changes to a contact: a field left out is kept. The same for PATCH /contacts/{id} and PUT /contacts/by-email/{email}. */
export type ContactChanges = RequestBody<'updateContact'> | RequestBody<'upsertContactByEmail'>;
export type ContactQuery = QueryParams<'listContacts'>;

export interface BulkError {
  index: number;
  email: string | null;
  code: 'validation_error' | 'duplicate_in_request';
  message: string;
}

export interface BulkResult {
  created: number;
  updated: number;
  failed: number;
  errors: BulkError[];
}

export interface ContactsService {
  list(workspaceId: string, query: ContactQuery, page: PageQuery): Promise<Page<Contact>>;
  /** 422 already_exists when a live contact has the address. */
  create(workspaceId: string, input: ContactInput): Promise<Contact>;
  /**
   * Upserts by address in one transaction; invalid items are reported, the
   * rest applied. `schemaProblem` checks an item against the contract's
   * ContactCreate (its text rules, its lengths).
   */
  bulk(workspaceId: string, items: unknown[], schemaProblem: SchemaCheck): Promise<BulkResult>;
  upsertByEmail(workspaceId: string, email: string, changes: ContactChanges): Promise<Contact>;
  get(workspaceId: string, id: string): Promise<Contact>;
  /** The live contacts among these addresses, keyed by normalised address (templates fill `contact` from them). */
  findByEmails(workspaceId: string, emails: string[]): Promise<Map<string, ContactRef>>;
  update(workspaceId: string, id: string, changes: ContactChanges): Promise<Contact>;
  remove(workspaceId: string, id: string): Promise<void>;
  unsubscribe(workspaceId: string, id: string, reason?: string): Promise<Contact>;
  /** Unsubscribes by address (the one-click link): suppression, plus the contact if there is one. */
  unsubscribeAddress(workspaceId: string, email: string, reason: string | null): Promise<void>;
  addTag(workspaceId: string, contactId: string, tagId: string): Promise<void>;
  removeTag(workspaceId: string, contactId: string, tagId: string): Promise<void>;
  /**
   * For event writers, inside the transaction that appends the event: keeps
   * the address's engagement facts and its contact's tier current at once.
   * Other event types are ignored.
   */
  recordEvent(tx: Tx, workspaceId: string, address: string, type: string, at: number): Promise<void>;
  /** Folds events written since the last run into tiers; returns how many were read. */
  foldEvents(): Promise<number>;
  /** Re-tiers every contact as of now (tiers age with time alone); returns how many changed. */
  ageTiers(): Promise<number>;
}

const invalid = (message: string, param: string) => new AppError('validation_error', message, { param });

function parseTime(value: string | undefined, param: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new AppError('bad_request', `'${param}' is not an ISO 8601 date-time.`, { param });
  return ms;
}

function checkAddress(raw: string, param: string): string {
  const email = normaliseAddress(raw);
  if (!isValidAddress(email)) throw invalid(`'${raw}' is not a valid email address.`, param);
  return email;
}

function checkName(name: string | null | undefined, param: string): string | null | undefined {
  if (name === undefined || name === null) return name;
  const trimmed = name.trim();
  if (characterCount(trimmed) > MAX_NAME_LENGTH) throw invalid(`A name is at most ${MAX_NAME_LENGTH} characters.`, param);
  return trimmed === '' ? null : trimmed;
}

function checkTags(tags: string[] | undefined, param: string): string[] | undefined {
  if (tags === undefined) return undefined;
  if (tags.length > MAX_TAGS_PER_CONTACT) throw invalid(`A contact has at most ${MAX_TAGS_PER_CONTACT} tags.`, param);
  return tags.map((t, i) => {
    const name = typeof t === 'string' ? cleanTagName(t) : undefined;
    if (!name) throw invalid(`A tag name is 1 to ${MAX_TAG_NAME_LENGTH} characters, not blank.`, `${param}.${i}`);
    return name;
  });
}

interface ValidInput {
  email: string;
  name?: string | null;
  tags?: string[];
  properties?: PropertiesPatch;
}

const BULK_ITEM_FIELDS = new Set(['email', 'name', 'tags', 'properties']);

const checkProperties = (input: unknown, param: string) => (input === undefined ? undefined : checkPropertiesPatch(input, param));

/** What is wrong with a value under a schema of the contract, if anything. */
export type SchemaCheck = (value: unknown) => { message: string; param?: string } | undefined;

/** Validates one bulk item the way the schema and rules validate a single create. */
function checkBulkItem(item: unknown, index: number, schemaProblem: SchemaCheck): ValidInput {
  const at = `contacts.${index}`;
  if (typeof item !== 'object' || item === null || Array.isArray(item)) throw invalid('Each item is a contact object.', at);
  const o = item as Record<string, unknown>;
  const extra = Object.keys(o).find((k) => !BULK_ITEM_FIELDS.has(k));
  if (extra) throw invalid(`Unknown field '${extra}'.`, `${at}.${extra}`);
  if (typeof o.email !== 'string') throw invalid('email is a required address.', `${at}.email`);
  if (o.name !== undefined && o.name !== null && typeof o.name !== 'string') throw invalid('name is a string or null.', `${at}.name`);
  if (o.tags !== undefined && !(Array.isArray(o.tags) && o.tags.every((t) => typeof t === 'string'))) {
    throw invalid('tags is an array of tag names.', `${at}.tags`);
  }
  const problem = schemaProblem(item);
  if (problem) throw invalid(problem.message, problem.param === undefined ? at : `${at}.${problem.param}`);
  return {
    email: checkAddress(o.email, `${at}.email`),
    name: checkName(o.name as string | null | undefined, `${at}.name`),
    tags: checkTags(o.tags as string[] | undefined, `${at}.tags`),
    properties: checkProperties(o.properties, `${at}.properties`),
  };
}

export function contactsService(deps: {
  store: Store;
  clock: Clock;
  tags: TagsService;
  suppressions: SuppressionsService;
}): ContactsService {
  const { store, clock, tags, suppressions } = deps;

  /**
   * The address is unsubscribed: its live contact, if subscribed, becomes
   * unsubscribed (and says so to webhooks), and the address is suppressed.
   */
  async function unsubscribed(tx: Tx, ws: string, email: string, reason: string | null, source: 'api' | 'link'): Promise<void> {
    const now = clock.now();
    const contactId = await unsubscribeByEmail(tx, ws, email, reason, now);
    if (contactId !== undefined) {
      await appendWorkspaceEvent(tx, { workspaceId: ws, type: 'contact.unsubscribed', recipient: email, now, data: { contact_id: contactId, email, reason, source } });
    }
    await suppressions.addInTx(tx, ws, email, 'unsubscribe');
  }

  /**
   * Creates the missing contacts and updates the existing ones (name when
   * given, tag set when given), all inside `tx`. Addresses must be unique and
   * normalised. A new contact whose address is already suppressed starts
   * unsubscribed (suppressed by an unsubscribe) or cleaned (by a hard bounce
   * or complaint), so deleting and re-creating a contact cannot undo either.
   */
  async function apply(tx: Tx, ws: string, items: ValidInput[]): Promise<{ ids: string[]; created: number; updated: number }> {
    const now = clock.now();
    const emails = items.map((i) => i.email);
    const existing = await findLiveByEmailsForUpdate(tx, ws, emails);
    const fresh = items.filter((i) => !existing.has(i.email));
    const suppressed = await suppressions.suppressedAmong(tx, ws, fresh.map((i) => i.email));
    const facts = await factsFor(tx, ws, fresh.map((i) => i.email));
    const ids = new Map<string, string>([...existing].map(([email, c]) => [email, c.id]));
    const rows = fresh.map((i) => {
      const id = newId('ct', now);
      ids.set(i.email, id);
      const s = suppressed.get(i.email);
      const status: ContactStatus = s === undefined || s.reason === 'manual' ? 'subscribed' : s.reason === 'unsubscribe' ? 'unsubscribed' : 'cleaned';
      return {
        id, workspace_id: ws, email: i.email, name: i.name ?? null, status,
        properties: JSON.stringify(mergeProperties({}, i.properties, 'properties')),
        engagement_tier: engagementTier(facts.get(i.email) ?? { firstSentAt: null, lastEngagedAt: null }, now),
        unsubscribe_reason: null, unsubscribed_at: status === 'unsubscribed' ? s!.since : null,
        created_at: now, updated_at: now, deleted_at: null,
      };
    });
    const inserted = await insertContacts(tx, rows);
    // Added by another request since the read (on another node): changed below as the contacts they now are.
    const raced = rows.filter((r) => !inserted.has(r.email)).map((r) => r.email);
    for (const [email, contact] of await findLiveByEmailsForUpdate(tx, ws, raced)) {
      existing.set(email, contact);
      ids.set(email, contact.id);
    }

    const touched: string[] = [];
    const renamed = new Map<string, string | null>();
    const reproperties = new Map<string, Properties>();
    for (const i of items) {
      const known = existing.get(i.email);
      if (!known) continue;
      touched.push(known.id);
      if (i.name !== undefined && i.name !== known.name) renamed.set(known.id, i.name);
      if (i.properties !== undefined) reproperties.set(known.id, mergeProperties(known.properties, i.properties, 'properties'));
    }
    await setContactNames(tx, renamed, now);
    await setContactProperties(tx, reproperties, now);
    await touchContacts(tx, touched, now);

    const withTags = items.filter((i) => i.tags !== undefined);
    if (withTags.length > 0) {
      const byKey = await tags.ensureNamed(tx, ws, withTags.flatMap((i) => i.tags!));
      await replaceTags(tx, ws, new Map(withTags.map((i) => [ids.get(i.email)!, i.tags!.map((t) => byKey.get(tagKey(t))!.id)])), now);
    }
    return { ids: items.map((i) => ids.get(i.email)!), created: inserted.size, updated: touched.length };
  }

  /** The contact, to change it: locked until the transaction ends. */
  async function liveContact(tx: Tx, ws: string, id: string): Promise<Contact> {
    const contact = await findContactForUpdate(tx, ws, id);
    if (!contact) throw new AppError('not_found', `No contact with id '${id}'.`, { param: 'contact_id' });
    return contact;
  }

  async function contactAndTag(tx: Tx, ws: string, contactId: string, tagId: string): Promise<Contact> {
    const contact = await liveContact(tx, ws, contactId);
    if (!(await tags.find(tx, ws, tagId))) throw new AppError('not_found', `No tag with id '${tagId}'.`, { param: 'tag_id' });
    return contact;
  }

  return {
    list(ws, q, page) {
      return listContacts(store.db, ws, {
        email: q.email?.normalize('NFC'), status: q.status, engagementTier: q.engagement_tier, tagId: q.tag_id,
        createdAfter: parseTime(q.created_after, 'created_after'), createdBefore: parseTime(q.created_before, 'created_before'),
      }, page, clock.now());
    },

    async create(ws, input) {
      const valid = {
        email: checkAddress(input.email, 'email'),
        name: checkName(input.name, 'name'),
        tags: checkTags(input.tags, 'tags'),
        properties: checkProperties(input.properties, 'properties'),
      };
      const alreadyExists = (id: string) => new AppError('already_exists', `A contact with the address ${valid.email} already exists.`, {
        param: 'email', details: { contact_id: id },
      });
      return store.write(async (tx) => {
        const taken = (await findLiveByEmails(tx, ws, [valid.email])).get(valid.email);
        if (taken) throw alreadyExists(taken.id);
        const { ids, created } = await apply(tx, ws, [valid]);
        // Another request (on another node) made it meanwhile: this one made nothing, and the unit rolls back.
        if (created === 0) throw alreadyExists(ids[0]);
        return (await findContact(tx, ws, ids[0]))!;
      });
    },

    async bulk(ws, items, schemaProblem) {
      if (items.length > MAX_BULK_CONTACTS) throw invalid(`At most ${MAX_BULK_CONTACTS} contacts per request.`, 'contacts');
      const errors: BulkError[] = [];
      const valid: Array<ValidInput & { index: number }> = [];
      const seen = new Set<string>();
      items.forEach((item, index) => {
        const raw = (item as { email?: unknown } | null)?.email;
        const email = typeof raw === 'string' ? raw : null;
        try {
          const v = checkBulkItem(item, index, schemaProblem);
          if (seen.has(v.email)) {
            errors.push({ index, email, code: 'duplicate_in_request', message: `${v.email} appears earlier in this request; only the first is applied.` });
            return;
          }
          seen.add(v.email);
          valid.push({ ...v, index });
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          errors.push({ index, email, code: 'validation_error', message: err.message });
        }
      });
      // An item whose properties would pass the limit once merged fails alone, like any bad item.
      const current = await findLiveByEmails(store.db, ws, valid.filter((v) => v.properties !== undefined).map((v) => v.email));
      const fits = valid.filter((v) => {
        try {
          mergeProperties(current.get(v.email)?.properties ?? {}, v.properties, 'properties');
          return true;
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          errors.push({ index: v.index, email: v.email, code: 'validation_error', message: err.message });
          return false;
        }
      });
      errors.sort((a, b) => a.index - b.index);
      const result = fits.length > 0 ? await store.write((tx) => apply(tx, ws, fits)) : { created: 0, updated: 0 };
      return { created: result.created, updated: result.updated, failed: errors.length, errors };
    },

    async upsertByEmail(ws, rawEmail, changes) {
      const valid = {
        email: checkAddress(rawEmail, 'email'), name: checkName(changes.name, 'name'), tags: checkTags(changes.tags, 'tags'),
        properties: checkProperties(changes.properties, 'properties'),
      };
      return store.write(async (tx) => {
        const { ids } = await apply(tx, ws, [valid]);
        return (await findContact(tx, ws, ids[0]))!;
      });
    },

    async get(ws, id) {
      const contact = await findContact(store.db, ws, id);
      if (!contact) throw notFound('contact', id);
      return contact;
    },

    findByEmails: (ws, emails) => findLiveByEmails(store.db, ws, emails.map(normaliseAddress)),

    async update(ws, id, changes) {
      const name = checkName(changes.name, 'name');
      const tagNames = checkTags(changes.tags, 'tags');
      const properties = checkProperties(changes.properties, 'properties');
      return store.write(async (tx) => {
        const contact = await liveContact(tx, ws, id);
        await apply(tx, ws, [{ email: contact.email, name, tags: tagNames, properties }]);
        return (await findContact(tx, ws, id))!;
      });
    },

    async remove(ws, id) {
      await store.write(async (tx) => {
        await liveContact(tx, ws, id);
        await softDeleteContact(tx, id, clock.now());
      });
    },

    async unsubscribe(ws, id, reason) {
      if (reason !== undefined && characterCount(reason) > MAX_UNSUBSCRIBE_REASON_LENGTH) {
        throw invalid(`The reason is at most ${MAX_UNSUBSCRIBE_REASON_LENGTH} characters.`, 'reason');
      }
      return store.write(async (tx) => {
        const contact = await liveContact(tx, ws, id);
        await unsubscribed(tx, ws, contact.email, reason ?? null, 'api');
        return (await findContact(tx, ws, id))!;
      });
    },

    async unsubscribeAddress(ws, raw, reason) {
      const email = normaliseAddress(raw);
      await store.write((tx) => unsubscribed(tx, ws, email, reason, 'link'));
    },

    async addTag(ws, contactId, tagId) {
      await store.write(async (tx) => {
        await contactAndTag(tx, ws, contactId, tagId);
        await addTag(tx, ws, contactId, tagId, clock.now());
        await touchContacts(tx, [contactId], clock.now());
      });
    },

    async removeTag(ws, contactId, tagId) {
      await store.write(async (tx) => {
        await contactAndTag(tx, ws, contactId, tagId);
        await removeTag(tx, contactId, tagId);
        await touchContacts(tx, [contactId], clock.now());
      });
    },

    async recordEvent(tx, ws, address, type, at) {
      const sent = (SEND_EVENT_TYPES as readonly string[]).includes(type);
      const engaged = (ENGAGEMENT_EVENT_TYPES as readonly string[]).includes(type);
      if (!sent && !engaged) return;
      await recordAddressEvent(tx, ws, normaliseAddress(address), {
        firstSentAt: sent ? at : null, lastEngagedAt: engaged ? at : null,
      }, clock.now());
    },

    async foldEvents() {
      let read = 0;
      for (let i = 0; i < FOLD_MAX_BATCHES_PER_RUN; i++) {
        const n = await store.write((tx) => foldEventBatch(tx, FOLD_BATCH_EVENTS, clock.now()));
        read += n;
        if (n < FOLD_BATCH_EVENTS) break;
      }
      return read;
    },

    async ageTiers() {
      const top = await maxContactPos(store.db);
      const now = clock.now();
      let changed = 0;
      for (let after = 0; after < top; after += RETIER_RANGE) {
        changed += await store.write((tx) => retierContactRange(tx, after, after + RETIER_RANGE, now));
      }
      return changed;
    },
  };
}
