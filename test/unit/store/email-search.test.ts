import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompiledQuery, sql, type Expression } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listEmails } from '../../../src/emails/emails.repo.js';
import { openStore, type Db, type Store } from '../../../src/store/db.js';
import { containsText, indexedContainsText, rareStretches, workspaceSearchTag } from '../../../src/store/trigrams.js';
import { createTestDatabase, onPostgres, type TestDatabase } from '../../helpers/database.js';
import { withPlans } from '../../helpers/plans.js';

// The email list's `to` search over enough emails that some trigrams are in
// nearly all of them: the same rows, in the same order and pages, on both
// stores; on PostgreSQL the index is asked only for the needle's rare
// stretches and the whole needle is checked on the rows.

// Enough rows that "use", "sho" and "exa" count as common on PostgreSQL.
const ROWS = 150_000;
const NOW = Date.UTC(2026, 0, 1);

const workspaceOf = (i: number) => (i % 2 === 0 ? 'ws_a' : 'ws_b');
const pad = (n: number, width: number) => String(n).padStart(width, '0');

// A few rows hold a needle with LIKE's wildcards in it, and one holds what
// the needle would match if `_` were a wildcard.
const PLANTED: Record<number, string> = {
  10: 'mar_tin@planted.test', 11: 'mar_tin@planted.test', 4_002: 'mar_tin%x@planted.test', 60_000: 'old.mar_tin@planted.test', 99_998: 'martin@planted.test',
};
const recipientOf = (i: number) => PLANTED[i] ?? `user${pad(i, 6)}@shop${pad(i % 1000, 3)}.example`;

let dir: string;
let database: TestDatabase | undefined;
let store: Store;

/** The emails, in one statement: row i at position i + 1, to recipientOf(i) (unless planted). */
async function fill(db: Db) {
  const to = onPostgres
    ? sql`'user' || lpad(i::text, 6, '0') || '@shop' || lpad((i % 1000)::text, 3, '0') || '.example'`
    : sql`printf('user%06d@shop%03d.example', i, i % 1000)`;
  const rows = onPostgres
    ? sql`generate_series(0, ${ROWS - 1}::integer) AS g(i)`
    : sql`n`;
  await sql`${onPostgres ? sql`` : sql`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${ROWS - 1})`}
    INSERT INTO emails (id, workspace_id, domain_id, mode, from_address, from_domain, to_list, cc_list, bcc_list, reply_to_list,
      subject, tags, attachments, status, scheduled_at, sent_at, message_id, resent_from,
      search_to, search_from, search_subject, created_at, updated_at)
    SELECT 'em_' || i, CASE WHEN i % 2 = 0 THEN 'ws_a' ELSE 'ws_b' END, NULL, 'live', 'a@shop.example', 'shop.example',
      '[]', '[]', '[]', '[]', 's', '[]', '[]', 'delivered', NULL, NULL, '<m@shop.example>', NULL,
      ${to}, 'a@shop.example', 's', ${sql.lit(NOW)} + i, ${sql.lit(NOW)} + i
    FROM ${rows}`.execute(db);
  for (const [i, address] of Object.entries(PLANTED)) {
    await sql`UPDATE emails SET search_to = ${address} WHERE id = ${`em_${i}`}`.execute(db);
  }
  if (onPostgres) {
    await sql`INSERT INTO emails_search (pos, search_to, search_from, search_subject)
      SELECT pos, search_to, search_from, search_subject FROM emails`.execute(db);
    // As autovacuum would: VACUUM also empties the GIN pending lists, which the planner counts against the index.
    await db.executeQuery(CompiledQuery.raw('VACUUM ANALYZE emails, emails_search'));
    return;
  }
  for (const ws of ['ws_a', 'ws_b']) {
    await sql`INSERT INTO emails_search (rowid, search_to, search_from, search_subject, ws_tag)
      SELECT pos, search_to, search_from, search_subject, ${workspaceSearchTag(ws)} FROM emails WHERE workspace_id = ${ws}`.execute(db);
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mailroom-email-search-'));
  database = onPostgres ? await createTestDatabase() : undefined;
  store = openStore(database?.url ?? `sqlite:${join(dir, 'db.sqlite')}`);
  await store.migrate();
  await fill(store.db);
}, 120_000);

afterAll(async () => {
  await store?.close();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** What `run` returned, and PostgreSQL's plans of the statements it ran that read emails, as one text. */
async function emailPlans<T>(run: (db: Db) => Promise<T>): Promise<{ result: T; plans: string }> {
  const { result, plans } = await withPlans(store.db, run, (text) => text.startsWith('select "emails"'));
  return { result, plans: plans.join('\n') };
}

/** Every row of ws_a the search lists, walking forwards (or backwards from the oldest) `limit` at a time. */
async function walk(to: string, limit: number, direction: 'forwards' | 'backwards' = 'forwards'): Promise<number[]> {
  const seen: number[] = [];
  // Backwards starts before the oldest row.
  let at: number | undefined = direction === 'forwards' ? undefined : 0;
  for (let pages = 0; pages < 1_000; pages++) {
    const page = { limit, cursor: (pos: number) => String(pos), ...(at !== undefined && (direction === 'forwards' ? { after: at } : { before: at })) };
    const { data, has_more, next_cursor } = await listEmails(store.db, 'ws_a', { to }, page, NOW);
    const rows = data.map((e) => Number(e.id.slice(3)));
    if (direction === 'forwards') seen.push(...rows); else seen.unshift(...rows);
    if (!has_more) return seen;
    at = Number(next_cursor);
  }
  throw new Error('walk did not end');
}

/** Rows of ws_a whose recipient contains `needle` (case-insensitive), newest first. */
function expected(needle: string): number[] {
  const out: number[] = [];
  for (let i = ROWS - 1; i >= 0; i--) if (workspaceOf(i) === 'ws_a' && recipientOf(i).includes(needle.toLowerCase())) out.push(i);
  return out;
}

describe('email search by recipient', () => {
  it.each([
    ['one recipient, in capitals', 'USER012344@', 1],
    ['a domain', '@shop042.example', 150],
    ['a piece of addresses and domains', '2344@shop', 15],
    ['a needle with _ taken literally', 'R_TIN@', 2],
    ['a needle with % taken literally', 'tin%x', 1],
    ['text every email holds, but the planted rows', 'example', ROWS / 2 - 4],
    ['an address only the other workspace holds', 'user012345@', 0],
  ])('%s (%s) lists the same rows, newest first, in pages', async (_, needle, count) => {
    const all = expected(needle);
    expect(all).toHaveLength(count);
    const { result } = await emailPlans((db) => listEmails(db, 'ws_a', { to: needle }, { limit: 25, cursor: String }, NOW));
    expect(result.data.map((e) => Number(e.id.slice(3)))).toEqual(all.slice(0, 25));
    if (count <= 200) {
      expect(await walk(needle, 7)).toEqual(all);
      expect(await walk(needle, 7, 'backwards')).toEqual(all);
    }
  });

  it.runIf(onPostgres)('asks the trigram index only for the rare stretches of the needle, and checks the whole needle on the rows', async () => {
    const { plans } = await emailPlans((db) => listEmails(db, 'ws_a', { to: '@shop042.example' }, { limit: 25, cursor: String }, NOW));
    // "sho" and "exa" are in every row; "op0" in a tenth of them here, which is rare enough.
    // (Whether the planner then takes the index is its own choice, by its statistics.)
    // The text is read from the side table emails_search, not from emails.
    expect(plans).toMatch(/Scan (using \S+ )?on emails_search\b/);
    expect(plans).toContain("search_to ~~ '%op042.%'::text");
    expect(plans).not.toContain("'%@shop042.example%'");
    expect(plans).toContain("(strpos(search_to, '@shop042.example'::text) > 0)");
    // Text made only of common trigrams goes to the index as it is.
    const common = await emailPlans((db) => listEmails(db, 'ws_a', { to: 'example' }, { limit: 25, cursor: String }, NOW));
    expect(common.plans).not.toContain('strpos');
  });
});

// The events search's side table on PostgreSQL is searched the same way: the
// same text in it as in the emails, the same rows for each needle as the
// plain LIKE finds, and the index asked for the rare stretch only.
describe.runIf(onPostgres)('events search text on PostgreSQL', () => {
  beforeAll(async () => {
    await sql`INSERT INTO events_search (pos, to_text, from_text) SELECT pos, search_to, search_from FROM emails`.execute(store.db);
    await store.db.executeQuery(CompiledQuery.raw('VACUUM ANALYZE events_search'));
  }, 60_000);

  const positions = async (condition: Expression<boolean>) =>
    (await sql<{ pos: number }>`SELECT pos FROM events_search WHERE ${condition} ORDER BY pos`.execute(store.db)).rows.map((r) => Number(r.pos));

  it.each(['user012344@', '@shop042.example', 'r_tin@', 'tin%x', 'example'])('finds for %s the rows LIKE finds', async (needle) => {
    const narrowed = await indexedContainsText(store.db, 'events_search', 'to_text', needle, NOW);
    expect(await positions(narrowed)).toEqual(await positions(containsText(sql.ref('events_search.to_text'), needle)));
  });

  it('asks the index for the rare stretch of a domain', async () => {
    const narrowed = await indexedContainsText(store.db, 'events_search', 'to_text', '@shop042.example', NOW);
    const { rows } = await sql<{ 'QUERY PLAN': string }>`EXPLAIN SELECT pos FROM events_search WHERE ${narrowed}`.execute(store.db);
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).toContain("to_text ~~ '%op042.%'::text");
    expect(plan).not.toContain("'%@shop042.example%'");
    expect(plan).toContain("strpos(to_text, '@shop042.example'::text) > 0");
  });
});

describe('rareStretches', () => {
  const rare = (...windows: string[]) => (w: string) => windows.includes(w);

  it('joins rare windows that follow each other into one stretch, ending a word with the separator after it', () => {
    expect(rareStretches('user777777@', rare('r77', '777', '77@'))).toEqual(['r777777@']);
    expect(rareStretches('@shop042.example', rare('p04', '042', '42.', 'mpl'))).toEqual(['p042.', 'mpl']);
  });

  it('never takes a window pg_trgm would not read as one trigram', () => {
    const any = () => true;
    // A separator first or in the middle, LIKE's wildcards and escape, a space.
    expect(rareStretches('@ab', any)).toEqual([]);
    expect(rareStretches('a.b', any)).toEqual([]);
    expect(rareStretches('ab%cd_ef\\gh', any)).toEqual([]);
    expect(rareStretches('ab cd', any)).toEqual([]);
    expect(rareStretches('Abc', any)).toEqual([]);
    expect(rareStretches('abc', any)).toEqual(['abc']);
  });

  it('gives nothing for a needle without rare windows', () => {
    expect(rareStretches('example', rare())).toEqual([]);
    expect(rareStretches('ab', () => true)).toEqual([]);
  });
});
