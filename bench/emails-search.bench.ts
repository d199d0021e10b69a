import { sql } from 'kysely';
import type { Store } from '../src/store/db.js';
import { workspaceSearchTag } from '../src/store/trigrams.js';
import { load, median, startBareKoa, startBenchMailroom, type LoadResult } from './lib.js';

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
    const { services } = mailroom;
    const large = await services.workspaces.ensureDefault();
    const small = await services.workspaces.create({ name: 'small' });
    const tokens = {
      large: (await services.apiKeys.create({ workspaceId: large.id, name: 'bench' })).token,
      small: (await services.apiKeys.create({ workspaceId: small.id, name: 'bench' })).token,
    };
    const fillStart = performance.now();
    // The small workspace's emails are older than all of the large one's, so
    // newest first they come after every entry of the other workspace.
    await fill(services.store, small.id, SMALL_WORKSPACE_EMAILS, 'small');
    await fill(services.store, large.id, emails, 'large');
    const fillSeconds = (performance.now() - fillStart) / 1000;

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

/** Delivered emails to user<n>@shop<n % 1000>.example, newest last, with their content and search rows. */
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
    await sql`INSERT INTO emails_search (rowid, search_to, search_from, search_subject, ws_tag)
      SELECT pos, search_to, search_from, search_subject, ${workspaceSearchTag(workspaceId)} FROM emails
      WHERE workspace_id = ${workspaceId}`.execute(tx);
  });
}
