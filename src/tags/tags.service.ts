import { characterCount } from '../core/characters.js';
import { AppError, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { toIso, type Clock } from '../core/clock.js';
import type { Store, Tx } from '../store/db.js';
import type { Page, PageQuery } from '../store/paging.js';
import { deleteTag, existingTagIds, findTag, findTagForUpdate, findTagsByKeys, insertTags, listTags, type Tag } from './tags.repo.js';

// Tag names are trimmed, in Unicode NFC, and unique per workspace without
// regard to case ("VIP" and "vip" are one tag), the way people mean labels:
// "Café" typed with a composed é or with e and a combining accent looks the
// same to a person, so it is one name, kept composed.

export const MAX_TAG_NAME_LENGTH = 100;

export interface TagsService {
  list(workspaceId: string, page: PageQuery): Promise<Page<Tag>>;
  /** 422 already_exists when the name is taken. */
  create(workspaceId: string, name: string): Promise<Tag>;
  /** Removes the tag from every contact too; 422 tag_in_use while a scheduled or under-way broadcast's audience names it. */
  remove(workspaceId: string, id: string): Promise<void>;
  find(tx: Tx, workspaceId: string, id: string): Promise<Tag | undefined>;
  /**
   * Which of these ids are tags of the workspace; in the caller's transaction
   * (`tx`), they cannot be removed until it ends.
   */
  existing(workspaceId: string, ids: string[], tx?: Tx): Promise<Set<string>>;
  /** Inside the caller's transaction: the tags with these names, creating the missing ones. */
  ensureNamed(tx: Tx, workspaceId: string, names: string[]): Promise<Map<string, Tag>>;
}

/** A tag name as it is stored and shown: trimmed, in NFC. */
const tagName = (name: string): string => name.normalize('NFC').trim();

/** What makes two names one tag: the name as stored, lower-cased. */
export const tagKey = (name: string): string => tagName(name).toLowerCase();

/** A usable tag name, or undefined. */
export function cleanTagName(name: string): string | undefined {
  const trimmed = tagName(name);
  return trimmed.length > 0 && characterCount(trimmed) <= MAX_TAG_NAME_LENGTH ? trimmed : undefined;
}

export interface TagsDeps {
  store: Store;
  clock: Clock;
  /** A scheduled, sending or paused broadcast whose audience names the tag, read in the caller's transaction. */
  broadcastUsing(tx: Tx, workspaceId: string, tagId: string): Promise<{ id: string; status: string } | undefined>;
}

export function tagsService(deps: TagsDeps): TagsService {
  const { store, clock } = deps;

  return {
    list: (ws, page) => listTags(store.db, ws, page),

    async create(ws, raw) {
      const name = cleanTagName(raw);
      if (!name) throw new AppError('validation_error', `A tag name is 1 to ${MAX_TAG_NAME_LENGTH} characters, not blank.`, { param: 'name' });
      const alreadyExists = (existing: Tag) =>
        new AppError('already_exists', `A tag named '${existing.name}' already exists.`, { param: 'name', details: { tag_id: existing.id } });
      return store.write(async (tx) => {
        const existing = (await findTagsByKeys(tx, ws, [tagKey(name)])).get(tagKey(name));
        if (existing) throw alreadyExists(existing);
        const now = clock.now();
        const row = { id: newId('tag', now), workspace_id: ws, name, name_key: tagKey(name), created_at: now };
        // Another request (on another node) may have made it meanwhile.
        if ((await insertTags(tx, [row])).size === 0) throw alreadyExists((await findTagsByKeys(tx, ws, [row.name_key])).get(row.name_key)!);
        return (await findTag(tx, ws, row.id))!;
      });
    },

    async remove(ws, id) {
      await store.write(async (tx) => {
        // Locked first, so that a broadcast starting with the tag meanwhile is either seen below or sees it gone.
        const tag = await findTagForUpdate(tx, ws, id);
        if (!tag) throw notFound('tag', id);
        // Gone from its audience, the tag would leave the broadcast sending to fewer contacts, or to more, with no way to edit it.
        const user = await deps.broadcastUsing(tx, ws, id);
        if (user) {
          throw new AppError('tag_in_use', `The audience of broadcast ${user.id} (${user.status}) names the tag '${tag.name}'; cancel the broadcast, `
            + 'or let it finish, first.', { details: { broadcast_id: user.id } });
        }
        await deleteTag(tx, ws, id);
      });
    },

    find: (tx, ws, id) => findTag(tx, ws, id),
    existing: (ws, ids, tx) => existingTagIds(tx ?? store.db, ws, ids, tx !== undefined),

    async ensureNamed(tx, ws, names) {
      // A new tag takes the first spelling given for it.
      const byKey = new Map<string, string>();
      for (const n of names) if (!byKey.has(tagKey(n))) byKey.set(tagKey(n), tagName(n));
      const found = await findTagsByKeys(tx, ws, [...byKey.keys()]);
      const now = clock.now();
      const missing = [...byKey].filter(([key]) => !found.has(key))
        .map(([key, name]) => ({ id: newId('tag', now), workspace_id: ws, name, name_key: key, created_at: now }));
      const inserted = await insertTags(tx, missing);
      for (const r of missing) if (inserted.has(r.name_key)) found.set(r.name_key, { id: r.id, object: 'tag', name: r.name, created_at: toIso(now) });
      // Made by another request (on another node) since the read: theirs are the tags.
      const raced = missing.filter((r) => !inserted.has(r.name_key)).map((r) => r.name_key);
      for (const [key, tag] of await findTagsByKeys(tx, ws, raced)) found.set(key, tag);
      return found;
    },
  };
}
