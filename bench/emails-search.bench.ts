import { sql } from 'kysely';
import type { Services } from '../src/main.js';
import type { Store } from '../src/store/db.js';
import { indexEmailSearch } from './product.js';
import { createTestDatabase } from '../test/helpers/database.js';
import { inTurn, load, median, startBareKoa, startBenchMailroom, type LoadResult } from './lib.js';
import { servedBy, servedMedians, type Nodes, type PostgresCluster } from './postgres.js';

/** What each search asks for, and about how many of the stored emails it matches. */
const NEEDLES = [
  { label: 'one recipient (1 match)', to: 'user777777@', workspace: 'large' },
  { label: 'a domain (~1 in 1,000)', to: '@shop042.example', workspace: 'large' },
  { label: 'common text (every email)', to: 'example', workspace: 'large' },
  { label: 'text every email of another workspace holds, from a workspace of 50 older emails', to: 'example', workspace: 'small' },
] as const;

const SMALL_WORKSPACE_EMAILS = 50;

/**
 * `GET /v1/emails?to=…` over a million stored emails, at low concurrency so
 * the latency is the query's own, next to a bare Koa GET at the same
 * concurrency. The emails are written with one INSERT … SELECT (the send path
 * would take minutes to make a million), with the same search index rows the
 * send path writes.
 */
export async function benchEmailSearch(rounds: number, emails = 1_000_000) {
  const bare = await startBareKoa((ctx) => { ctx.body = { data: [], has_more: false }; });
  const mailroom = await startBenchMailroom();
  try {
    const { tokens, fillSeconds } = await fillWorkspaces(mailroom.services, emails, fill);

    const run = (url: string, token?: string) => load({ url, headers: { Authorization: `Bearer ${token ?? tokens.large}` }, connections: 4, seconds: 3 });
    const ceiling: LoadResult[] = [];
    const bySearch = NEEDLES.map(() => [] as LoadResult[]);
    for (let round = 0; round < rounds; round++) {
      ceiling.push(await run(`${bare.url}/v1/emails`));
      for (const [i, n] of NEEDLES.entries()) {
        bySearch[i].push(await run(`${mailroom.httpUrl}/v1/emails?to=${encodeURIComponent(n.to)}`, tokens[n.workspace]));
      }
    }
    const bad = bySearch.flat().find((r) => r.errors > 0);
    if (bad) throw new Error(`email search saw errors ${JSON.stringify(bad.statuses)}`);
    return {
      emails, fillSeconds,
      ceiling: { rps: median(ceiling.map((r) => r.rps)), p99: median(ceiling.map((r) => r.p99)) },
      searches: NEEDLES.map((n, i) => ({
        ...n, rps: median(bySearch[i].map((r) => r.rps)), p50: median(bySearch[i].map((r) => r.p50)), p99: median(bySearch[i].map((r) => r.p99)),
      })),
    };
  } finally {
    await mailroom.close();
    bare.close();
  }
}

/**
 * The same searches on PostgreSQL, served by one node and by two on the same
 * database (the 4 connections spread over both), next to the same bare Koa
 * GET. A Mailroom in this process sets the database up and fills it as
 * above, with generate_series for the rows; the pg_trgm indexes are the
 * migrations', kept up by the inserts as by sends, and VACUUM ANALYZE then
 * gives the planner the statistics autovacuum gives a real install. The
 * nodes start once it is done.
 */
export async function benchPostgresEmailSearch(rounds: number, cluster: PostgresCluster, emails = 1_000_000) {
  const bare = await startBareKoa((ctx) => { ctx.body = { data: [], has_more: false }; });
  let nodes: Nodes | undefined;
  try {
    const { url } = await createTestDatabase(cluster.url);
    const setup = await startBenchMailroom({ MAILROOM_DATABASE_URL: url, MAILROOM_SECRET: cluster.secret });
    let filled: Awaited<ReturnType<typeof fillWorkspaces>>;
    try {
      filled = await fillWorkspaces(setup.services, emails, fillPostgres);
      for (const table of ['emails', 'email_contents', 'emails_search']) await sql`VACUUM ANALYZE ${sql.table(table)}`.execute(setup.services.store.db);
    } finally {
      await setup.close();
    }
    const serving = await cluster.startNodes(2, { env: {}, databaseUrl: url });
    nodes = serving;
    const { tokens } = filled;
    const search = (urls: string[], n: (typeof NEEDLES)[number]) => () => servedBy(cluster, serving.pids.slice(0, urls.length), () => load({
      url: urls.map((u) => `${u}/v1/emails?to=${encodeURIComponent(n.to)}`), headers: { Authorization: `Bearer ${tokens[n.workspace]}` }, connections: 4, seconds: 3,
    }));
    const [ceiling, ...bySide] = await inTurn(rounds, [
      () => load({ url: `${bare.url}/v1/emails`, connections: 4, seconds: 3 }),
      ...NEEDLES.flatMap((n) => [search(serving.urls.slice(0, 1), n), search(serving.urls, n)]),
    ]);
    return {
      emails, fillSeconds: filled.fillSeconds,
      ceiling: { rps: median(ceiling.map((r) => r.rps)), p99: median(ceiling.map((r) => r.p99)) },
      searches: NEEDLES.map((n, i) => ({ ...n, one: servedMedians(bySide[2 * i]), two: servedMedians(bySide[2 * i + 1]) })),
    };
  } finally {
    await nodes?.stop();
    bare.close();
  }
}

/**
 * The two workspaces of the searches, with a key each, filled by `fill`: the
 * small one's emails older than all of the large one's, so newest first they
 * come after every entry of the other workspace.
 */
async function fillWorkspaces(services: Services, emails: number, fill: (store: Store, workspaceId: string, count: number, idPrefix: string) => Promise<void>) {
  const large = await services.workspaces.ensureDefault();
  const small = await services.workspaces.create({ name: 'small' });
  const tokens = {
    large: (await services.apiKeys.create({ workspaceId: large.id, name: 'bench' })).token,
    small: (await services.apiKeys.create({ workspaceId: small.id, name: 'bench' })).token,
  };
  const fillStart = performance.now();
  await fill(services.store, small.id, SMALL_WORKSPACE_EMAILS, 'small');
  await fill(services.store, large.id, emails, 'large');
  return { tokens, fillSeconds: (performance.now() - fillStart) / 1000 };
}

/** Delivered emails to user<n>@shop<n % 1000>.example, newest last, with their content, indexed for search. */
async function fill(store: Store, workspaceId: string, count: number, idPrefix: string) {
  const start = Date.now() - count * 10;
  await store.write(async (tx) => {
    await sql`
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count})
      INSERT INTO emails (id, workspace_id, domain_id, mode, from_address, from_domain, to_list, cc_list, bcc_list, reply_to_list,
        subject, tags, attachments, status, scheduled_at, sent_at, message_id, resent_from,
        search_to, search_from, search_subject, created_at, updated_at)
      SELECT printf('em_%s%018d', ${idPrefix}, i), ${workspaceId}, NULL, 'live', 'Shop <orders@shop.example>', 'shop.example',
        json_array(printf('user%06d@shop%03d.example', i, i % 1000)), '[]', '[]', '[]',
        printf('Your receipt #%d', i), '[]', '[]', 'delivered', NULL, ${start} + i * 10,
        printf('<em_%s%018d@shop.example>', ${idPrefix}, i), NULL,
        printf('user%06d@shop%03d.example', i, i % 1000), 'shop <orders@shop.example>', printf('your receipt #%d', i),
        ${start} + i * 10, ${start} + i * 10
      FROM n`.execute(tx);
    await sql`INSERT INTO email_contents (pos, html, text_body, headers)
      SELECT pos, '<p>Thanks</p>', NULL, '{}' FROM emails WHERE workspace_id = ${workspaceId}`.execute(tx);
    // The indexer's own statements, in one batch: every email is in the index, none in the list's unindexed tail.
    await indexEmailSearch(tx, count);
  });
}

/** fill's rows on PostgreSQL, whose pg_trgm indexes are on the plain side table emails_search. */
async function fillPostgres(store: Store, workspaceId: string, count: number, idPrefix: string) {
  const start = Date.now() - count * 10;
  await store.write(async (tx) => {
    const to = sql`'user' || lpad(i::text, 6, '0') || '@shop' || lpad((i % 1000)::text, 3, '0') || '.example'`;
    const id = sql`'em_' || ${idPrefix}::text || lpad(i::text, 18, '0')`;
    await sql`
      INSERT INTO emails (id, workspace_id, domain_id, mode, from_address, from_domain, to_list, cc_list, bcc_list, reply_to_list,
        subject, tags, attachments, status, scheduled_at, sent_at, message_id, resent_from,
        search_to, search_from, search_subject, created_at, updated_at)
      SELECT ${id}, ${workspaceId}, NULL, 'live', 'Shop <orders@shop.example>', 'shop.example',
        json_build_array(${to})::text, '[]', '[]', '[]',
        'Your receipt #' || i, '[]', '[]', 'delivered', NULL, ${start}::bigint + i * 10,
        '<' || ${id} || '@shop.example>', NULL,
        ${to}, 'shop <orders@shop.example>', 'your receipt #' || i,
        ${start}::bigint + i * 10, ${start}::bigint + i * 10
      FROM generate_series(1, ${count}::integer) AS i`.execute(tx);
    await sql`INSERT INTO email_contents (pos, html, text_body, headers)
      SELECT pos, '<p>Thanks</p>', NULL, '{}' FROM emails WHERE workspace_id = ${workspaceId}`.execute(tx);
    await sql`INSERT INTO emails_search (pos, search_to, search_from, search_subject)
      SELECT pos, search_to, search_from, search_subject FROM emails WHERE workspace_id = ${workspaceId}`.execute(tx);
  });
}
