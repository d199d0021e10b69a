import { createHash } from 'node:crypto';
import { sql, type Expression, type Kysely } from 'kysely';
import type { Db, Tx } from './db.js';
import { isPostgres } from './schema-helpers.js';
import { memoize } from '../core/memo.js';

// Helpers of the partial-match ("contains") searches: FTS5 trigram indexes on
// SQLite, LIKE on the rows for what they cannot answer. On PostgreSQL, pg_trgm
// GIN indexes on the searched columns serve LIKE directly (for emails, on
// the columns of the side table emails_search).

/** FTS5's trigram tokenizer needs three characters to use its index; shorter needles are matched with LIKE alone. */
const MIN_TRIGRAM_NEEDLE = 3;

/** Whether `needle` holds a trigram: three characters, counted as the tokenizer counts them (an emoji is one, not two). */
export const hasTrigram = (needle: string): boolean => Array.from(needle).length >= MIN_TRIGRAM_NEEDLE;

/** A LIKE pattern (with ESCAPE '\\') matching `needle` anywhere, its wildcards taken literally. */
export const likePattern = (needle: string) => `%${needle.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * `text` contains `needle`, its wildcards taken literally. The searched
 * columns hold lower-cased text and callers lower-case the needle, so LIKE
 * does what ILIKE would; a pg_trgm index on the column serves either.
 */
export const containsText = (text: Expression<unknown>, needle: string) =>
  sql<boolean>`${text} LIKE ${likePattern(needle)} ESCAPE '\\'`;

/**
 * Whether an email search for `needle` starts from the FTS5 table
 * emails_search: on SQLite, for a needle of three characters or more. On
 * PostgreSQL, never: the list reads emails_search through containsText,
 * an index scan there.
 */
export const searchesEmailsTable = (db: Db | Tx, needle: string): boolean =>
  !isPostgres(db as unknown as Kysely<unknown>) && hasTrigram(needle);

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
export const workspaceSearchTag: (workspaceId: string) => string = memoize((workspaceId: string) => {
  const digest = createHash('sha256').update(workspaceId).digest();
  return [0, 2, 4].map((i) => String.fromCharCode(TAG_BASE + (digest.readUInt16BE(i) % TAG_SPAN))).join('');
}, 10_000);

// A phrase query reads the document list of every trigram in the needle, and
// in mail some trigrams are everywhere ("gma", ".co"): a rare address would
// cost a pass over most of the index. So a query names only the needle's
// rarest trigrams, and LIKE on the row drops the few rows that hold those
// trigrams but not the needle. How rare a trigram is comes from a probe that
// counts its rows up to a cap (enough to rank), remembered for a while.
const QUERY_TRIGRAMS = 3;
const PROBE_CAP = 20_000;
const PROBE_TTL_MS = 300_000;
const PROBES_KEPT = 20_000;
/** The probes of each store, so two stores in one process never read each other's counts. */
const probesOf = new WeakMap<Db, Map<string, { docs: number; until: number }>>();

export type TrigramIndex = 'emails_search' | 'events_search';

/** The rows `probe` counts or estimates, remembered under `key` for PROBE_TTL_MS. */
async function probedRows(db: Db, key: string, now: number, probe: () => Promise<number>): Promise<number> {
  let probes = probesOf.get(db);
  if (!probes) probesOf.set(db, (probes = new Map()));
  const hit = probes.get(key);
  if (hit && hit.until > now) return hit.docs;
  const docs = await probe();
  if (probes.size >= PROBES_KEPT) probes.clear();
  probes.set(key, { docs, until: now + PROBE_TTL_MS });
  return docs;
}

async function trigramRows(db: Db, index: TrigramIndex, column: string, trigram: string, now: number): Promise<number> {
  return probedRows(db, `${index}\n${column}\n${trigram}`, now, async () => {
    const { rows } = await sql<{ n: number }>`SELECT count(*) AS n FROM (SELECT rowid FROM ${sql.table(index)}
      WHERE ${sql.table(index)} MATCH ${ftsTerm(column, trigram)} LIMIT ${sql.lit(PROBE_CAP)}) AS probe`.execute(db);
    return Number(rows[0].n);
  });
}

/** FTS5 terms for rows of `index` that may hold `needle` in `column`: its rarest trigrams. */
export async function rareTrigramTerms(db: Db, index: TrigramIndex, column: string, needle: string, now: number): Promise<string> {
  const trigrams = trigramsOf(needle);
  const docs = new Map<string, number>();
  for (const t of trigrams) docs.set(t, await trigramRows(db, index, column, t, now));
  // Newest first, FTS5 walks a common trigram's whole list, so only rare
  // ones join the rarest; a needle made only of common ones needs one.
  const [rarest, ...rest] = trigrams.sort((a, b) => docs.get(a)! - docs.get(b)!);
  const alsoRare = rest.filter((t) => docs.get(t)! < PROBE_CAP).slice(0, QUERY_TRIGRAMS - 1);
  return [rarest, ...alsoRare].map((t) => ftsTerm(column, t)).join(' AND ');
}

// pg_trgm cuts a LIKE pattern into the trigrams of its words (runs of letters
// and digits, a word's end marked by a space) and its GIN index intersects
// their row lists. In mail some trigrams are in nearly every row ("use",
// "exa"), and the intersection reads those lists whole however few rows the
// others leave: a search for one address cost a pass over most of the
// index. So the index is asked only for the needle's stretches of rare
// trigrams, and the whole needle is checked on the rows it yields. A
// stretch is part of the needle, so a row holding the needle holds every
// stretch: the rows are the same.
// How many rows hold a trigram is the planner's estimate (from the column's
// statistics, no rows read): it tells the trigrams of most rows from the
// rest, which is all this needs.

/** Rows above which a trigram's list costs the index more to intersect than it narrows. */
const COMMON_TRIGRAM_ROWS = 100_000;

/** A window of the needle that pg_trgm reads as exactly one trigram: three word characters, or two and the end of a word. */
const ONE_TRIGRAM = /^[a-z0-9]{2}(?:[a-z0-9]|[!-$&-/:-@[\]^`{-~])$/;

/**
 * The stretches of `needle` made only of rare trigrams (windows that
 * isRare accepts), longest first, each a substring of the needle.
 */
export function rareStretches(needle: string, isRare: (window: string) => boolean): string[] {
  const stretches: string[] = [];
  let start = -1;
  for (let i = 0; i + 3 <= needle.length + 1; i++) {
    const window = needle.slice(i, i + 3);
    const rare = window.length === 3 && ONE_TRIGRAM.test(window) && isRare(window);
    if (rare && start < 0) start = i;
    if (!rare && start >= 0) {
      stretches.push(needle.slice(start, i + 2));
      start = -1;
    }
  }
  return stretches.sort((a, b) => b.length - a.length);
}

/** The planner's estimate of the rows of `table` that hold `window` in `column`. */
async function estimatedRows(db: Db, table: string, column: string, window: string, now: number): Promise<number> {
  return probedRows(db, `${table}\n${column}\n${window}`, now, async () => {
    const { rows } = await sql<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>`EXPLAIN (FORMAT JSON)
      SELECT 1 FROM ${sql.table(table)} WHERE ${containsText(sql.ref(column), window)}`.execute(db);
    return rows[0]['QUERY PLAN'][0].Plan['Plan Rows'];
  });
}

/**
 * containsText on `table`.`column`, in the form the store's index serves
 * best: on PostgreSQL, the index narrows by the needle's rare stretches
 * only (see rareStretches); on SQLite, whose FTS5 tables narrow, as is.
 */
export async function indexedContainsText(db: Db, table: string, column: string, needle: string, now: number): Promise<Expression<boolean>> {
  return (await narrowedContainsText(db, table, column, needle, now)).match;
}

/**
 * indexedContainsText, and whether on PostgreSQL the index is asked for
 * rare stretches of the needle, so it yields few rows (never on SQLite).
 */
export async function narrowedContainsText(db: Db, table: string, column: string, needle: string, now: number): Promise<{ match: Expression<boolean>; narrowed: boolean }> {
  const text = sql.ref(`${table}.${column}`);
  if (!isPostgres(db as unknown as Kysely<unknown>)) return { match: containsText(text, needle), narrowed: false };
  const rows = new Map<string, number>();
  for (let i = 0; i + 3 <= needle.length; i++) {
    const window = needle.slice(i, i + 3);
    if (ONE_TRIGRAM.test(window) && !rows.has(window)) rows.set(window, await estimatedRows(db, table, column, window, now));
  }
  const stretches = rareStretches(needle, (w) => rows.get(w)! < COMMON_TRIGRAM_ROWS);
  if (stretches.length === 0 || stretches[0] === needle) return { match: containsText(text, needle), narrowed: stretches.length > 0 };
  // strpos checks the whole needle as LIKE with its wildcards escaped would,
  // but the index does not serve it; and the planner guesses that a third of
  // the rows pass it (a few for a second LIKE), so for a needle that many
  // rows hold it still walks the newest rows first rather than all matches.
  return {
    match: sql<boolean>`${sql.join(stretches.map((s) => containsText(text, s)), sql` AND `)} AND strpos(${text}, ${needle}) > 0`,
    narrowed: true,
  };
}
