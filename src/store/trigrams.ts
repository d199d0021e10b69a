import { createHash } from 'node:crypto';

// Helpers of the partial-match ("contains") searches: FTS5 trigram indexes on
// SQLite, LIKE on the rows for what they cannot answer.

/** FTS5's trigram tokenizer needs three characters to use its index; shorter needles are matched with LIKE alone. */
export const MIN_TRIGRAM_NEEDLE = 3;

/** A LIKE pattern (with ESCAPE '\\') matching `needle` anywhere, its wildcards taken literally. */
export const likePattern = (needle: string) => `%${needle.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** An FTS5 query term: `text` as a phrase in one column. */
export const ftsTerm = (column: string, text: string) => `${column} : "${text.replace(/"/g, '""')}"`;

/** The distinct trigrams of a text, as FTS5's trigram tokenizer cuts it (by character). */
export function trigramsOf(text: string): string[] {
  const chars = Array.from(text);
  const out = new Set<string>();
  for (let i = 0; i + 3 <= chars.length; i++) out.add(chars.slice(i, i + 3).join(''));
  return [...out];
}

// A workspace's rows in a trigram index carry a tag of three characters from
// Unicode's private use area (U+E000–U+F8FF), which never occur in mail
// addresses: as a trigram of its own, the tag confines a search to one
// workspace inside the index, so a needle common in another workspace costs
// this one nothing.
const TAG_BASE = 0xe000;
const TAG_SPAN = 0xf8ff - 0xe000 + 1;
const tags = new Map<string, string>();

export function workspaceSearchTag(workspaceId: string): string {
  let tag = tags.get(workspaceId);
  if (tag === undefined) {
    const digest = createHash('sha256').update(workspaceId).digest();
    tag = [0, 2, 4].map((i) => String.fromCharCode(TAG_BASE + (digest.readUInt16BE(i) % TAG_SPAN))).join('');
    if (tags.size >= 10_000) tags.clear();
    tags.set(workspaceId, tag);
  }
  return tag;
}
