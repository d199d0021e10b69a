import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompiledQuery, sql, type Expression } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emailSearchWatermark, indexEmailSearch, listEmails } from '../../../src/emails/emails.repo.js';
import { openStore, type Db, type Store } from '../../../src/store/db.js';
import { containsText, ftsTerm, indexedContainsText, rareStretches, workspaceSearchTag } from '../../../src/store/trigrams.js';
import { useTempStore } from '../../helpers/store.js';
import { saveFollowerPosition } from '../../../src/store/event-log.js';
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
}

/** On SQLite, runs the indexer until emails_search holds the first `rows` emails (it holds none after fill). */
async function indexUpTo(rows: number) {
  await store.write(async (tx) => {
    const mark = await emailSearchWatermark(tx);
    if (rows > mark) expect(await indexEmailSearch(tx, rows - mark)).toBe(rows - mark);
  });
  expect(await emailSearchWatermark(store.db)).toBe(rows);
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

// On SQLite the list reads emails_search up to the indexer's watermark and
// the emails after it on the rows: the same rows and pages with none, some
// and all of them indexed. Row 60,000 (a planted one) is the first past the
// middle mark, so needles match rows on both sides of it. Last, the index
// holds rows past the watermark the list reads, as when the indexer commits
// between the list's reading of the watermark and of the index.
const STAGES: Array<[string, number, number]> = onPostgres
  ? [['on PostgreSQL', 0, 0]]
  : [['none indexed', 0, 0], ['the oldest 60,000 indexed', 60_000, 60_000], ['all indexed', ROWS, ROWS],
    ['all indexed, the watermark read at 60,000', ROWS, 60_000]];

describe.each(STAGES)('email search by recipient, %s', (_, indexed, watermark) => {
  beforeAll(async () => {
    if (onPostgres) return;
    await indexUpTo(indexed);
    if (watermark < indexed) await store.write((tx) => saveFollowerPosition(tx, 'emails_index', watermark));
  }, 60_000);

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

// The indexer that fills emails_search on SQLite: bounded batches from its
// watermark, each committed with the watermark or not at all.
describe('the emails search indexer', () => {
  const temp = useTempStore();

  async function addEmails(db: Db, from: number, count: number) {
    for (let i = from; i < from + count; i++) {
      await sql`INSERT INTO emails (id, workspace_id, domain_id, mode, from_address, from_domain, to_list, cc_list, bcc_list, reply_to_list,
          subject, tags, attachments, status, scheduled_at, sent_at, message_id, resent_from,
          search_to, search_from, search_subject, created_at, updated_at)
        VALUES (${`em_${i}`}, ${workspaceOf(i)}, NULL, 'live', 'a@shop.example', 'shop.example', '[]', '[]', '[]', '[]', 's', '[]', '[]',
          'pending', NULL, NULL, '<m@shop.example>', NULL, ${recipientOf(i)}, 'a@shop.example', 'your receipt', ${NOW + i}, ${NOW + i})`.execute(db);
    }
  }

  /** The emails of `ws` that emails_search holds, by their number. */
  async function indexedOf(ws: string): Promise<number[]> {
    const { rows } = await sql<{ id: string }>`SELECT e.id FROM emails_search s CROSS JOIN emails e
      WHERE s.emails_search MATCH ${ftsTerm('ws_tag', workspaceSearchTag(ws))} AND e.pos = s.rowid ORDER BY e.pos`.execute(temp.store.db);
    return rows.map((r) => Number(r.id.slice(3)));
  }

  const run = (max: number) => temp.store.write((tx) => indexEmailSearch(tx, max));
  const lastPos = async () => Number((await temp.store.db.selectFrom('emails').select((eb) => eb.fn.max('pos').as('p')).executeTakeFirstOrThrow()).p);

  it.runIf(!onPostgres)('catches up a batch at a time, with the rows of each workspace under its tag, and goes on with emails written later', async () => {
    expect(await emailSearchWatermark(temp.store.db)).toBe(0);
    await addEmails(temp.store.db, 0, 12);
    expect([await run(5), await run(5), await run(5), await run(5)]).toEqual([5, 5, 2, 0]);
    expect(await emailSearchWatermark(temp.store.db)).toBe(await lastPos());
    expect(await indexedOf('ws_a')).toEqual([0, 2, 4, 6, 8, 10]);
    expect(await indexedOf('ws_b')).toEqual([1, 3, 5, 7, 9, 11]);

    await addEmails(temp.store.db, 12, 3);
    expect(await run(5)).toBe(3);
    expect(await indexedOf('ws_a')).toEqual([0, 2, 4, 6, 8, 10, 12, 14]);
    expect(await emailSearchWatermark(temp.store.db)).toBe(await lastPos());
    const { data } = await listEmails(temp.store.db, 'ws_b', { to: 'USER0000' }, { limit: 25, cursor: String }, NOW);
    expect(data.map((e) => Number(e.id.slice(3)))).toEqual([13, 9, 7, 5, 3, 1]);
  });

  it.runIf(!onPostgres)('leaves the index and the watermark as they were when its transaction does not commit', async () => {
    await addEmails(temp.store.db, 0, 4);
    await expect(temp.store.write(async (tx) => {
      await indexEmailSearch(tx, 10);
      throw new Error('the power went');
    })).rejects.toThrow('the power went');
    expect(await emailSearchWatermark(temp.store.db)).toBe(0);
    expect(await indexedOf('ws_a')).toEqual([]);
    expect(await run(10)).toBe(4);
    expect(await indexedOf('ws_a')).toEqual([0, 2]);
    expect(await run(10)).toBe(0);
  });

  it.runIf(onPostgres)('has nothing to do on PostgreSQL, whose emails columns are indexed themselves', async () => {
    await addEmails(temp.store.db, 0, 4);
    expect(await run(10)).toBe(0);
    expect(await emailSearchWatermark(temp.store.db)).toBe(0);
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
