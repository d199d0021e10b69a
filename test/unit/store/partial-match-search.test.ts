import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompiledQuery } from 'kysely';
import type { Page, PageQuery } from '../../../src/store/paging.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listContacts } from '../../../src/contacts/contacts.repo.js';
import { listInbound } from '../../../src/inbound/inbound.repo.js';
import { openStore, type Store } from '../../../src/store/db.js';
import { listTemplates } from '../../../src/templates/templates.repo.js';
import { createTestDatabase, onPostgres, type TestDatabase } from '../../helpers/database.js';
import { withPlans } from '../../helpers/plans.js';

// The partial-match filters of the inbound, templates and contacts lists: the
// same rows on both stores, and on PostgreSQL each is read through its
// pg_trgm index once the table is large enough for that to be the cheaper
// plan (migration 0026); the inbound and contacts lists ask the index only
// for the needle's rare stretches, as the emails list does. Emails and
// events have their own trigram indexes on both stores (migrations 0003 and
// 0006).

// Enough rows that the planner prefers the index to a sequential scan: with
// rows as narrow as these, it still scans at 12,000.
const ROWS = 20_000;
const NOW = Date.UTC(2026, 0, 1);

/** A mailbox that looks like the ones people search for a piece of. */
const mailbox = (i: number) => `${createHash('sha256').update(String(i)).digest('hex').slice(0, 12)}@host${i % 97}.example.test`;
const workspaceOf = (i: number) => (i % 2 === 0 ? 'ws_a' : 'ws_b');

// A few rows of each table hold a needle with LIKE's wildcards in it, and
// one holds what the needle would match if `_` were a wildcard.
const PLANTED: Record<number, string> = {
  10: 'mar_tin@planted.test', 11: 'mar_tin@planted.test', 4_002: 'Mar_Tin%x@planted.test', 15_000: 'old.mar_tin@planted.test', 19_998: 'martin@planted.test',
};
const addressOf = (i: number) => PLANTED[i] ?? mailbox(i);

let dir: string;
let database: TestDatabase | undefined;
let store: Store;

async function inChunks<T>(make: (i: number) => T, insert: (rows: T[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < ROWS; i += 500) await insert(Array.from({ length: Math.min(500, ROWS - i) }, (_, k) => make(i + k)));
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mailroom-search-'));
  database = onPostgres ? await createTestDatabase() : undefined;
  store = openStore(database?.url ?? `sqlite:${join(dir, 'db.sqlite')}`);
  await store.migrate();
  const db = store.db;
  await inChunks((i) => ({
    id: `inb_${i}`, workspace_id: workspaceOf(i), domain_id: 'dom_1', kind: 'message' as const, status: 'ready' as const,
    mail_from: addressOf(i), rcpt_to: JSON.stringify([mailbox(i + 1)]), remote_ip: '192.0.2.1', helo: 'mx.example.test', tls: 1,
    size: 1_000, locked_until: 0, attempts: 1, received_at: NOW + i, search_to: mailbox(i + 1), search_from: addressOf(i).toLowerCase(),
  }), (rows) => db.insertInto('inbound_messages').values(rows).execute());
  // Templates are named after a mailbox here, to search them with the same needles.
  await inChunks((i) => ({
    id: `tpl_${i}`, workspace_id: workspaceOf(i), name: `Welcome ${addressOf(i)}`, search_name: `welcome ${addressOf(i)}`.toLowerCase(),
    alias: null, latest_version: 1, published_version: null, created_at: NOW + i, updated_at: NOW + i,
  }), (rows) => db.insertInto('templates').values(rows).execute());
  await inChunks((i) => ({
    template_id: `tpl_${i}`, version: 1, workspace_id: workspaceOf(i), subject: 'Welcome', variables: '[]', created_at: NOW + i,
  }), (rows) => db.insertInto('template_versions').values(rows).execute());
  await inChunks((i) => ({
    id: `con_${i}`, workspace_id: workspaceOf(i), email: addressOf(i).toLowerCase(), name: null, status: 'subscribed' as const,
    engagement_tier: 'no_data' as const, created_at: NOW + i, updated_at: NOW + i,
  }), (rows) => db.insertInto('contacts').values(rows).execute());
  // VACUUM too, as autovacuum would: it moves the GIN indexes' pending entries
  // into the index proper, which the planner otherwise counts against them.
  if (onPostgres) await store.db.executeQuery(CompiledQuery.raw('VACUUM ANALYZE'));
}, 120_000);

afterAll(async () => {
  await store?.close();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

const page = { limit: 50, cursor: (pos: number) => String(pos) };

/** Indexes of the rows of ws_a whose text contains `needle` (case-insensitive), newest first. */
function expected(text: (i: number) => string, needle: string): number[] {
  const out: number[] = [];
  for (let i = ROWS - 1; i >= 0; i--) if (workspaceOf(i) === 'ws_a' && text(i).toLowerCase().includes(needle.toLowerCase())) out.push(i);
  return out;
}

const ofIds = (ids: string[]) => ids.map((id) => Number(id.split('_')[1]));

// A piece of one mailbox (found in no other), and the planted needle with its wildcards.
const searches = [
  { needle: mailbox(1_234).slice(3, 10), expectMatches: 1 },
  { needle: 'AR_TIN', expectMatches: 3 },
];

describe.each(searches)('a search for "$needle"', ({ needle, expectMatches }) => {
  it('lists inbound messages by recipient and by sender through their trigram indexes', async () => {
    const byTo = await withPlans(store.db, (db) => listInbound(db, 'ws_a', { to: needle }, page, NOW));
    expect(ofIds(byTo.result.data.map((m) => m.id))).toEqual(expected((i) => mailbox(i + 1), needle));
    const byFrom = await withPlans(store.db, (db) => listInbound(db, 'ws_a', { from: needle }, page, NOW));
    expect(ofIds(byFrom.result.data.map((m) => m.id))).toEqual(expected(addressOf, needle));
    expect(byFrom.result.data).toHaveLength(expectMatches);
    if (onPostgres) {
      expect(byTo.plans.join('\n')).toContain('Bitmap Index Scan on inbound_messages_search_to_trgm');
      expect(byFrom.plans.join('\n')).toContain('Bitmap Index Scan on inbound_messages_search_from_trgm');
    }
  });

  it('lists templates by name through its trigram index', async () => {
    const { result, plans } = await withPlans(store.db, (db) => listTemplates(db, 'ws_a', { name: needle }, page));
    expect(ofIds(result.data.map((t) => t.id))).toEqual(expected((i) => `Welcome ${addressOf(i)}`, needle));
    expect(result.data).toHaveLength(expectMatches);
    if (onPostgres) expect(plans.join('\n')).toContain('Bitmap Index Scan on templates_search_name_trgm');
  });

  it('lists contacts by address through its trigram index', async () => {
    const { result, plans } = await withPlans(store.db, (db) => listContacts(db, 'ws_a', { email: needle }, page, NOW));
    expect(ofIds(result.data.map((c) => c.id))).toEqual(expected(addressOf, needle));
    expect(result.data).toHaveLength(expectMatches);
    if (onPostgres) expect(plans.join('\n')).toContain('Bitmap Index Scan on contacts_email_trgm');
  });
});

/** Every row a list gives, walking forwards (or backwards from the oldest) `limit` at a time, as indexes. */
async function walk(list: (page: PageQuery) => Promise<Page<{ id: string }>>, limit: number, direction: 'forwards' | 'backwards'): Promise<number[]> {
  const seen: number[] = [];
  // Backwards starts before the oldest row.
  let at: number | undefined = direction === 'forwards' ? undefined : 0;
  for (let pages = 0; pages < 1_000; pages++) {
    const { data, has_more, next_cursor } = await list({ limit, cursor: String, ...(at !== undefined && (direction === 'forwards' ? { after: at } : { before: at })) });
    const rows = ofIds(data.map((r) => r.id));
    if (direction === 'forwards') seen.push(...rows); else seen.unshift(...rows);
    if (!has_more) return seen;
    at = Number(next_cursor);
  }
  throw new Error('walk did not end');
}

// Needles the index is asked about in pieces on PostgreSQL (an address, a
// domain) or as they are (a piece of one mailbox), with LIKE's wildcards,
// and text every row holds.
describe.each([
  ['a whole address, in capitals', mailbox(4_242).toUpperCase(), 1],
  ['a domain', '@host42.example.test', 103],
  ['a piece of one mailbox', mailbox(1_234).slice(3, 10), 1],
  ['a needle with _ taken literally', 'r_tin@', 2],
  ['a needle with % taken literally', 'tin%x', 1],
  ['text every row holds', '.example.test', ROWS / 2 - 4],
])('%s', (_, needle, count) => {
  const lists = {
    'contacts by address': { text: addressOf, list: (page: PageQuery) => listContacts(store.db, 'ws_a', { email: needle }, page, NOW) },
    'inbound by sender': { text: addressOf, list: (page: PageQuery) => listInbound(store.db, 'ws_a', { from: needle }, page, NOW) },
    'inbound by recipient': { text: (i: number) => mailbox(i + 1), list: (page: PageQuery) => listInbound(store.db, 'ws_a', { to: needle }, page, NOW) },
  };

  it.each(Object.keys(lists) as Array<keyof typeof lists>)('lists the same %s, newest first, in pages both ways', async (name) => {
    const { text, list } = lists[name];
    const all = expected(text, needle);
    if (name !== 'inbound by recipient') expect(all).toHaveLength(count);
    const first = await list({ limit: 50, cursor: String });
    expect(ofIds(first.data.map((r) => r.id))).toEqual(all.slice(0, 50));
    if (all.length <= 200) {
      expect(await walk(list, 7, 'forwards')).toEqual(all);
      expect(await walk(list, 7, 'backwards')).toEqual(all);
    }
  });
});

describe.runIf(onPostgres)('contacts and inbound searches on PostgreSQL', () => {
  it('ask the trigram index for the pieces of an address between its separators, and check the whole address on the rows', async () => {
    const address = mailbox(4_242);
    const local = address.split('@')[0];
    const { plans } = await withPlans(store.db, (db) => listContacts(db, 'ws_a', { email: address }, page, NOW));
    const plan = plans.join('\n');
    expect(plan).toContain(`'%${local}@%'`);
    expect(plan).not.toContain(`'%${address}%'`);
    expect(plan).toContain(`strpos(email, '${address}'::text) > 0`);
    expect(plan).toContain('Bitmap Index Scan on contacts_email_trgm');
    const inbound = (await withPlans(store.db, (db) => listInbound(db, 'ws_a', { from: address }, page, NOW))).plans.join('\n');
    expect(inbound).toContain(`strpos(search_from, '${address}'::text) > 0`);
    expect(inbound).toContain('Bitmap Index Scan on inbound_messages_search_from_trgm');
  });
});
