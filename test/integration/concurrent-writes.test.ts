import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../src/core/clock.js';
import { transitionBroadcast } from '../../src/broadcasts/broadcasts.repo.js';
import { dueRows, leaseRows } from '../../src/delivery/queue.repo.js';
import { findDomain, insertDomain, markDomainActive, saveDkimKeys } from '../../src/domains/domains.repo.js';
import { listRecipients, markSent } from '../../src/emails/emails.repo.js';
import type { Sender } from '../../src/emails/index.js';
import { recordRecipientOutcomes } from '../../src/emails/outcomes.js';
import { idempotency, IN_FLIGHT_TTL_MS, requestHash } from '../../src/http/idempotency.js';
import { seal, unseal } from '../../src/core/seal.js';
import { findWebhookRow, rotateWebhookSecret } from '../../src/webhooks/webhooks.repo.js';
import type { Services } from '../../src/main.js';
import type { Db, Tx } from '../../src/store/db.js';
import { onPostgres } from '../helpers/database.js';
import { openTwoNodes, type TwoNodes } from '../helpers/nodes.js';

// Writes that read rows, decide and write them back, each put through two
// nodes on one database at the same moment. On SQLite one writer orders
// them; on PostgreSQL (READ COMMITTED, a pool per node) they run side by
// side, and each must still see what the other committed.

const settledCodes = (results: PromiseSettledResult<unknown>[]) =>
  results.map((r) => (r.status === 'fulfilled' ? 'ok' : (r.reason as { code?: string }).code ?? String(r.reason)));

/** Runs `work` in a transaction of its own, left open until `commit` is called. */
async function heldTransaction(db: Db, work: (tx: Tx) => Promise<void>): Promise<{ commit(): Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let worked!: () => void;
  const ready = new Promise<void>((resolve) => (worked = resolve));
  const done = db.transaction().execute(async (tx) => {
    await work(tx);
    worked();
    await released;
  });
  await Promise.race([ready, done]);
  return { commit: async () => { release(); await done; } };
}

/** Resolves once `work` waits for a lock another transaction holds, or once it is done (PostgreSQL). */
async function blockedOrDone(db: Db, work: Promise<unknown>): Promise<void> {
  let settled = false;
  void work.finally(() => (settled = true)).catch(() => undefined);
  while (!settled) {
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock'`.execute(db);
    if (rows[0].n > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Test mode: nothing counts against a quota, and the sink takes any from address. */
const senderOf = (nodes: TwoNodes): Sender => ({ workspaceId: nodes.workspaceId, plan: 'default', mode: 'test' });

const countBy = async (db: Db, table: 'outbound_queue' | 'events', where: { type?: string } = {}) => {
  const rows = await db.selectFrom(table).select(['email_id', (eb) => eb.fn.countAll<number>().as('n')])
    .$if(where.type !== undefined, (q) => q.where('type', '=', where.type!)).groupBy('email_id').execute();
  return new Map(rows.map((r) => [r.email_id, Number(r.n)]));
};

describe('an Idempotency-Key given to two nodes at once', () => {
  const on = (s: Services, clock = systemClock) => idempotency({ store: s.store, clock, sealKey: s.keyring.sealKey });

  it('runs the request on one node; the other answers 409 and, once it is done, replays its answer', async () => {
    await using nodes = await openTwoNodes();
    const [x, y] = [on(nodes.a), on(nodes.b)];
    const ws = nodes.workspaceId;
    const hash = requestHash({ operationId: 'createEmail', mode: 'live', params: {}, headers: {}, body: { subject: 'Once' } });
    const begun = await Promise.allSettled([x.begin(ws, 'send-once', 'createEmail', hash, 'key_1'), y.begin(ws, 'send-once', 'createEmail', hash, 'key_1')]);
    expect(settledCodes(begun).sort()).toEqual(['idempotency_conflict', 'ok']);
    expect(begun.find((r) => r.status === 'fulfilled')).toEqual({ status: 'fulfilled', value: undefined });

    const [winner, loser] = begun[0].status === 'fulfilled' ? [x, y] : [y, x];
    await winner.finish(ws, 'send-once', 'createEmail', hash, { status: 201, body: { id: 'em_1' } });
    expect(await loser.begin(ws, 'send-once', 'createEmail', hash, 'key_1')).toEqual({ status: 201, body: { id: 'em_1' } });
  });

  it('gives the key up after a server error, and takes it from a node that died mid-request once its hold runs out', async () => {
    await using nodes = await openTwoNodes();
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const [x, y] = [on(nodes.a, clock), on(nodes.b, clock)];
    const ws = nodes.workspaceId;
    const hash = requestHash({ operationId: 'createEmail', mode: 'live', params: {}, headers: {}, body: { subject: 'Retry' } });
    expect(await x.begin(ws, 'k1', 'createEmail', hash, 'key_1')).toBeUndefined();
    await x.finish(ws, 'k1', 'createEmail', hash, { status: 500, body: {} });
    expect(await y.begin(ws, 'k1', 'createEmail', hash, 'key_1')).toBeUndefined();

    // y "dies" holding k1: no finish.
    await expect(x.begin(ws, 'k1', 'createEmail', hash, 'key_1')).rejects.toMatchObject({ code: 'idempotency_conflict' });
    clock.advance(IN_FLIGHT_TTL_MS);
    expect(await x.begin(ws, 'k1', 'createEmail', hash, 'key_1')).toBeUndefined();
  });
});

describe('an email changed through two nodes at once', () => {
  it('is promoted once when the due pollers of both nodes find it due', async () => {
    await using nodes = await openTwoNodes();
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      ids.push((await nodes.a.emails.create(senderOf(nodes), { from: 'ann@acme.test', to: `r${i}@rcpt.test`, subject: `Later ${i}`, text: 'x', scheduled_at: later })).id);
    }
    await nodes.a.store.db.updateTable('emails').set({ scheduled_at: Date.now() - 1_000 }).execute();

    const [promotedByA, promotedByB] = await Promise.all([nodes.a.emails.promoteDue(), nodes.b.emails.promoteDue()]);
    expect(promotedByA + promotedByB).toBe(ids.length);
    const queued = await countBy(nodes.a.store.db, 'outbound_queue');
    const events = await countBy(nodes.a.store.db, 'events', { type: 'email.queued' });
    expect(ids.map((id) => [queued.get(id), events.get(id)])).toEqual(ids.map(() => [1, 1]));
  });

  it('is cancelled once when both nodes are asked to cancel it', async () => {
    await using nodes = await openTwoNodes();
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      ids.push((await nodes.a.emails.create(senderOf(nodes), { from: 'ann@acme.test', to: `r${i}@rcpt.test`, subject: `Cancel ${i}`, text: 'x' })).id);
    }
    const results = await Promise.all(ids.flatMap((id) => [nodes.a.emails.cancel(nodes.workspaceId, id), nodes.b.emails.cancel(nodes.workspaceId, id)]));
    expect(new Set(results.map((r) => `${r.cancelled} ${r.status}`))).toEqual(new Set(['true cancelled']));
    const cancelled = await countBy(nodes.a.store.db, 'events', { type: 'email.cancelled' });
    expect(ids.map((id) => cancelled.get(id))).toEqual(ids.map(() => 1));
    expect((await countBy(nodes.a.store.db, 'outbound_queue')).size).toBe(0);
  });

  // Transactions side by side, each on a connection of its own: PostgreSQL's (SQLite has one writer).
  it.runIf(onPostgres)('waits for a delivery claim under way, and then finds the email sent and leaves it alone', async () => {
    await using nodes = await openTwoNodes();
    const { id } = await nodes.a.emails.create(senderOf(nodes), { from: 'ann@acme.test', to: 'reader@rcpt.test', subject: 'Claimed', text: 'x' });
    const claimAt = Date.now() + 3_600_000;
    const claim = await heldTransaction(nodes.b.store.db, async (tx) => {
      const due = await dueRows(tx, { now: claimAt, limit: 10, skipDomains: [] });
      await leaseRows(tx, due.map((r) => r.id), { now: claimAt, until: claimAt + 60_000, owner: 'a-claim' });
      expect((await markSent(tx, [id], claimAt)).map((e) => e.id)).toEqual([id]);
    });
    const cancelling = nodes.a.emails.cancel(nodes.workspaceId, id);
    await blockedOrDone(nodes.a.store.db, cancelling);
    await claim.commit();

    expect(await cancelling).toMatchObject({ cancelled: false, status: 'sent' });
    expect((await countBy(nodes.a.store.db, 'outbound_queue')).get(id)).toBe(1);
    expect((await listRecipients(nodes.a.store.db, id)).map((r) => r.status)).toEqual(['queued']);
    expect((await countBy(nodes.a.store.db, 'events', { type: 'email.cancelled' })).get(id)).toBeUndefined();
  });

  it.runIf(onPostgres)('is settled when the outcomes of its two recipients are recorded side by side', async () => {
    await using nodes = await openTwoNodes();
    const { id } = await nodes.a.emails.create(senderOf(nodes), { from: 'ann@acme.test', to: ['one@first.test', 'two@second.test'], subject: 'Two', text: 'x' });
    await nodes.a.store.write((tx) => markSent(tx, [id], Date.now()));
    const [one, two] = await listRecipients(nodes.a.store.db, id);
    const now = Date.now();

    const first = await heldTransaction(nodes.a.store.db, async (tx) => void await recordRecipientOutcomes(tx, nodes.a.suppressions,
      [{ emailId: id, outcomes: [{ kind: 'delivered', recipientId: one.id, address: one.email, smtpCode: 250, mxHost: 'mx.first.test', response: '250 ok' }] }], now));
    const second = nodes.b.store.write((tx) => recordRecipientOutcomes(tx, nodes.b.suppressions,
      [{ emailId: id, outcomes: [{ kind: 'failed', recipientId: two.id, address: two.email, reason: 'no route' }] }], now));
    await blockedOrDone(nodes.a.store.db, second);
    await first.commit();
    await second;

    expect((await nodes.a.emails.get(nodes.workspaceId, id)).status).toBe('delivered');
  });
});

/** The outcome codes of each pair of results (two requests per item, side by side), sorted. */
const pairsOf = (results: PromiseSettledResult<unknown>[]) =>
  Array.from({ length: results.length / 2 }, (_, i) => settledCodes(results.slice(2 * i, 2 * i + 2)).sort());

describe('a suppression added or removed through two nodes at once', () => {
  it('is added by one request, the other told it exists; removed by one, the other told it is gone', async () => {
    await using nodes = await openTwoNodes();
    const ws = nodes.workspaceId;
    const addresses = Array.from({ length: 20 }, (_, i) => `blocked${i}@rcpt.test`);
    const added = await Promise.allSettled(addresses.flatMap((a) => [nodes.a.suppressions.create(ws, a), nodes.b.suppressions.create(ws, a)]));
    expect(pairsOf(added)).toEqual(addresses.map(() => ['already_exists', 'ok']));
    const removed = await Promise.allSettled(addresses.flatMap((a) => [nodes.a.suppressions.remove(ws, a), nodes.b.suppressions.remove(ws, a)]));
    expect(pairsOf(removed)).toEqual(addresses.map(() => ['not_found', 'ok']));
  });
});

describe('a contact written through two nodes at once', () => {
  it('is made once by two upserts of a new address with a new tag, with what both gave', async () => {
    await using nodes = await openTwoNodes();
    const ws = nodes.workspaceId;
    const addresses = Array.from({ length: 10 }, (_, i) => `new${i}@rcpt.test`);
    const results = await Promise.allSettled(addresses.flatMap((address) => [
      nodes.a.contacts.upsertByEmail(ws, address, { tags: ['Launch'], properties: { plan: 'pro' } }),
      nodes.b.contacts.upsertByEmail(ws, address, { tags: ['launch'], properties: { city: 'Lyon' } }),
    ]));
    expect(settledCodes(results)).toEqual(results.map(() => 'ok'));
    const listed = await nodes.a.contacts.list(ws, {}, { limit: 100, cursor: String });
    expect(listed.data.map((c) => c.email).sort()).toEqual([...addresses].sort());
    expect(listed.data.map((c) => ({ tags: c.tags.map((t) => t.name.toLowerCase()), properties: c.properties })))
      .toEqual(addresses.map(() => ({ tags: ['launch'], properties: { plan: 'pro', city: 'Lyon' } })));
    expect((await nodes.a.tags.list(ws, { limit: 10, cursor: String })).data).toHaveLength(1);
  });

  it('keeps every property of updates made side by side', async () => {
    await using nodes = await openTwoNodes();
    const ws = nodes.workspaceId;
    const { id } = await nodes.a.contacts.create(ws, { email: 'kept@rcpt.test' });
    const keys = Array.from({ length: 10 }, (_, i) => `p${i}`);
    await Promise.all(keys.map((key, i) => (i % 2 ? nodes.a : nodes.b).contacts.update(ws, id, { properties: { [key]: i } })));
    expect((await nodes.a.contacts.get(ws, id)).properties).toEqual(Object.fromEntries(keys.map((key, i) => [key, i])));
  });

  it('is created by one of two creates, the other told it exists; so is a tag', async () => {
    await using nodes = await openTwoNodes();
    const ws = nodes.workspaceId;
    const addresses = Array.from({ length: 10 }, (_, i) => `once${i}@rcpt.test`);
    const contacts = await Promise.allSettled(addresses.flatMap((email) => [nodes.a.contacts.create(ws, { email }), nodes.b.contacts.create(ws, { email })]));
    expect(pairsOf(contacts)).toEqual(addresses.map(() => ['already_exists', 'ok']));
    const names = Array.from({ length: 10 }, (_, i) => `Tag ${i}`);
    const tags = await Promise.allSettled(names.flatMap((name) => [nodes.a.tags.create(ws, name), nodes.b.tags.create(ws, name)]));
    expect(pairsOf(tags)).toEqual(names.map(() => ['already_exists', 'ok']));
  });
});

describe('a domain changed through two nodes at once', () => {
  it.runIf(onPostgres)('waits for a DKIM rotation under way on another node, then refuses a second one', async () => {
    await using nodes = await openTwoNodes();
    const ws = nodes.workspaceId;
    const { id } = await nodes.a.domains.create(ws, { name: 'rotate.test' });
    const current = (await findDomain(nodes.a.store.db, ws, id))!;
    const pending = { ...current.dkim[0], selector: 'rotating', state: 'pending' as const };
    const rotating = await heldTransaction(nodes.a.store.db, (tx) => saveDkimKeys(tx, ws, id, [...current.dkim, pending], Date.now()));
    const second = nodes.b.domains.rotateDkim(ws, id);
    await blockedOrDone(nodes.a.store.db, second);
    await rotating.commit();
    await expect(second).rejects.toMatchObject({ code: 'dkim_rotation_in_progress' });
    expect((await findDomain(nodes.a.store.db, ws, id))!.dkim.filter((k) => k.state === 'pending').map((k) => k.selector)).toEqual(['rotating']);
  });

  it.runIf(onPostgres)('is refused as existing when another node adds the same name meanwhile', async () => {
    await using nodes = await openTwoNodes();
    const ws = nodes.workspaceId;
    const { id: elsewhere } = await nodes.a.workspaces.create({ name: 'elsewhere' });
    const model = (await findDomain(nodes.a.store.db, elsewhere, (await nodes.a.domains.create(elsewhere, { name: 'twice.test' })).id))!;
    const adding = await heldTransaction(nodes.a.store.db, async (tx) => void await insertDomain(tx, { ...model, id: 'dom_other_node', workspaceId: ws }));
    const second = nodes.b.domains.create(ws, { name: 'twice.test' });
    await blockedOrDone(nodes.a.store.db, second);
    await adding.commit();
    await expect(second).rejects.toMatchObject({ code: 'already_exists' });
  });

  it('refuses to delete the last active domain when two are deleted at once', async () => {
    await using nodes = await openTwoNodes();
    const pairs: Array<{ ws: string; ids: string[] }> = [];
    for (let i = 0; i < 5; i++) {
      const { id: ws } = await nodes.a.workspaces.create({ name: `pair-${i}` });
      const ids: string[] = [];
      for (const name of [`one${i}.test`, `two${i}.test`]) {
        const d = await nodes.a.domains.create(ws, { name });
        await nodes.a.store.write((tx) => markDomainActive(tx, ws, d.id, Date.now()));
        ids.push(d.id);
      }
      pairs.push({ ws, ids });
    }
    const results = await Promise.allSettled(pairs.flatMap(({ ws, ids }) => [nodes.a.domains.remove(ws, ids[0]), nodes.b.domains.remove(ws, ids[1])]));
    expect(pairsOf(results)).toEqual(pairs.map(() => ['last_active_domain', 'ok']));
  });
});

describe('a broadcast changed through two nodes at once', () => {
  const content = { name: 'Launch', from: 'ann@acme.test', subject: 'News', text: 'Hello.' };

  it('is paused by one of two pauses and cancelled by one of two cancels, each saying so once', async () => {
    await using nodes = await openTwoNodes();
    const ws = nodes.workspaceId;
    // An audience of one: sent to no one, a broadcast is refused.
    await nodes.a.contacts.create(ws, { email: 'reader@rcpt.test' });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const { id } = await nodes.a.broadcasts.create(ws, { ...content, name: `Launch ${i}` });
      await nodes.a.broadcasts.send(senderOf(nodes), id, {});
      ids.push(id);
    }
    const paused = await Promise.allSettled(ids.flatMap((id) => [nodes.a.broadcasts.pause(ws, id), nodes.b.broadcasts.pause(ws, id)]));
    expect(pairsOf(paused)).toEqual(ids.map(() => ['broadcast_not_sending', 'ok']));
    const cancelled = await Promise.allSettled(ids.flatMap((id) => [nodes.a.broadcasts.cancel(ws, id), nodes.b.broadcasts.cancel(ws, id)]));
    expect(pairsOf(cancelled)).toEqual(ids.map(() => ['broadcast_not_cancellable', 'ok']));
    const events = await nodes.a.store.db.selectFrom('events').select(['type', (eb) => eb.fn.countAll<number>().as('n')])
      .where('type', 'in', ['broadcast.paused', 'broadcast.cancelled']).groupBy('type').orderBy('type').execute();
    expect(events.map((e) => [e.type, Number(e.n)])).toEqual([['broadcast.cancelled', ids.length], ['broadcast.paused', ids.length]]);
  });

  it.runIf(onPostgres)('keeps its content when an edit meets a send that started on another node', async () => {
    await using nodes = await openTwoNodes();
    const ws = nodes.workspaceId;
    const { id } = await nodes.a.broadcasts.create(ws, content);
    const sending = await heldTransaction(nodes.a.store.db, async (tx) => {
      expect(await transitionBroadcast(tx, id, ['draft'], { status: 'sending' }, Date.now())).toBe(true);
    });
    const edit = nodes.b.broadcasts.update(ws, id, { subject: 'Changed' });
    await blockedOrDone(nodes.a.store.db, edit);
    await sending.commit();
    await expect(edit).rejects.toMatchObject({ code: 'broadcast_not_editable' });
    expect((await nodes.a.broadcasts.get(ws, id)).subject).toBe('News');
  });

  it.runIf(onPostgres)('counts a contact as unsubscribed when the unsubscribe and its email are made side by side, in either order', async () => {
    await using nodes = await openTwoNodes();
    const ws = nodes.workspaceId;
    const { id } = await nodes.a.broadcasts.create(ws, content);
    const emailFor = (contact: { id: string; email: string }) => [{ contactId: contact.id, body: { from: content.from, to: [contact.email], subject: 'News', text: 'Hello.' } }];

    // The email made first, its transaction still open when the contact unsubscribes on the other node.
    const first = await nodes.a.contacts.create(ws, { email: 'first@rcpt.test' });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let made!: () => void;
    const madeButOpen = new Promise<void>((resolve) => (made = resolve));
    const making = nodes.a.emails.sendForBroadcast(senderOf(nodes), id, emailFor(first), async () => { made(); await released; });
    await Promise.race([madeButOpen, making]);
    const unsubscribing = nodes.b.contacts.unsubscribe(ws, first.id);
    await blockedOrDone(nodes.a.store.db, unsubscribing);
    release();
    await making;
    await unsubscribing;

    // The unsubscribe first, stamped after the time its email is made with
    // (taken before that email's transaction begins), and still open.
    const second = await nodes.a.contacts.create(ws, { email: 'second@rcpt.test' });
    const unsubscribe = await heldTransaction(nodes.b.store.db, async (tx) => void await tx.updateTable('contacts')
      .set({ status: 'unsubscribed', unsubscribed_at: Date.now() + 60_000 }).where('id', '=', second.id).execute());
    const makingSecond = nodes.a.emails.sendForBroadcast(senderOf(nodes), id, emailFor(second), async () => undefined);
    await blockedOrDone(nodes.a.store.db, makingSecond);
    await unsubscribe.commit();
    await makingSecond;

    const recounted = await nodes.a.store.db.selectFrom('emails as e').innerJoin('contacts as c', 'c.id', 'e.contact_id')
      .select((eb) => eb.fn.countAll<number>().as('n')).where('e.broadcast_id', '=', id)
      .whereRef('c.unsubscribed_at', '>=', 'e.created_at').executeTakeFirstOrThrow();
    expect(Number(recounted.n)).toBe(2);
    expect((await nodes.a.broadcasts.get(ws, id)).stats).toMatchObject({ emails_created: 2, unsubscribed: 2 });
  });
});

describe('a template changed through two nodes at once', () => {
  it('gets a version of its own for each change, numbered one after the other', async () => {
    await using nodes = await openTwoNodes();
    const ws = nodes.workspaceId;
    const { id } = await nodes.a.templates.create(ws, { name: 'Welcome', subject: 'Hello', text: 'Hi.' });
    const changes = Array.from({ length: 8 }, (_, i) => `Hello ${i}`);
    const results = await Promise.allSettled(changes.map((subject, i) => (i % 2 ? nodes.a : nodes.b).templates.update(ws, id, { subject })));
    expect(settledCodes(results)).toEqual(changes.map(() => 'ok'));
    const versions = await nodes.a.templates.versions(ws, id, { limit: 100, cursor: String });
    expect(versions.data.map((v) => v.version)).toEqual(Array.from({ length: changes.length + 1 }, (_, i) => changes.length + 1 - i));
    expect(versions.data.slice(0, -1).map((v) => v.subject).sort()).toEqual([...changes].sort());
    expect((await nodes.a.templates.get(ws, id)).latest_version).toBe(changes.length + 1);
  });
});

describe('a webhook changed through two nodes at once', () => {
  it.runIf(onPostgres)('keeps the secret of a rotation under way on another node as the previous one', async () => {
    await using nodes = await openTwoNodes();
    const ws = nodes.workspaceId;
    const hook = await nodes.a.webhooks.create(ws, { url: 'https://hooks.example.com/in', event_types: ['email.sent'], enabled: true });
    const sealKey = nodes.a.keyring.sealKey;
    const rotating = await heldTransaction(nodes.a.store.db, async (tx) =>
      void await rotateWebhookSecret(tx, ws, hook.id, seal('whsec_first-rotation', sealKey), Date.now() + 60_000, Date.now()));
    const second = nodes.b.webhooks.rotateSecret(ws, hook.id);
    await blockedOrDone(nodes.a.store.db, second);
    await rotating.commit();
    const { secret } = await second;
    const row = (await findWebhookRow(nodes.a.store.db, ws, hook.id))!;
    expect([row.secret, row.previous_secret!].map((s) => unseal(s, sealKey).toString('utf8'))).toEqual([secret, 'whsec_first-rotation']);
  });
});

describe('a workspace\'s send quota taken through two nodes at once', () => {
  it('takes the sends and batches of both nodes up to the quota, each email counted once', async () => {
    await using nodes = await openTwoNodes();
    const { a, b, workspaceId } = nodes;
    // The free plan: 100 emails a day.
    const live: Sender = { workspaceId, plan: 'free', mode: 'live' };
    const domain = await a.domains.create(workspaceId, { name: 'acme.test' });
    await a.store.write((tx) => markDomainActive(tx, workspaceId, domain.id, Date.now()));
    const email = { from: 'Ann <ann@acme.test>', to: 'bob@example.org', subject: 'Hi', text: 'Hi.' };
    const tries = await Promise.allSettled([a, b].flatMap((node) => [
      ...Array.from({ length: 30 }, () => node.emails.create(live, email)),
      ...Array.from({ length: 4 }, () => node.emails.batch(live, Array.from({ length: 10 }, () => email))),
    ]));
    expect(new Set(settledCodes(tries))).toEqual(new Set(['ok', 'daily_quota_exceeded']));
    // What the quota has left, taken one email at a time, from either node in turn.
    let refused = false;
    for (let i = 0; !refused; i++) {
      await (i % 2 ? b : a).emails.create(live, email).catch((err: { code?: string }) => {
        expect(err.code).toBe('daily_quota_exceeded');
        refused = true;
      });
    }
    const made = await a.store.db.selectFrom('emails').select((eb) => eb.fn.countAll<number>().as('n')).where('workspace_id', '=', workspaceId).executeTakeFirstOrThrow();
    expect(Number(made.n)).toBe(100);
    const used = await a.store.db.selectFrom('send_usage').select(['period', 'count']).where('workspace_id', '=', workspaceId).orderBy('period').execute();
    expect(used.map((u) => [u.period[0], Number(u.count)])).toEqual([['d', 100], ['m', 100]]);
  });
});

describe('a name taken through two nodes at once', () => {
  it('goes to one of two templates made with the same alias, the other told it is taken', async () => {
    await using nodes = await openTwoNodes();
    const ws = nodes.workspaceId;
    const aliases = Array.from({ length: 10 }, (_, i) => `welcome-${i}`);
    const made = await Promise.allSettled(aliases.flatMap((alias) => [nodes.a, nodes.b].map((node) =>
      node.templates.create(ws, { name: 'Welcome', alias, subject: 'Hello', text: 'Hi.' }))));
    expect(pairsOf(made)).toEqual(aliases.map(() => ['already_exists', 'ok']));
    const renamed = await Promise.allSettled(aliases.flatMap((alias, i) => [nodes.a, nodes.b].map(async (node, n) => {
      const { id } = await node.templates.create(ws, { name: `Other ${i}.${n}`, subject: 'Hello', text: 'Hi.' });
      return node.templates.update(ws, id, { alias: `${alias}-again` });
    })));
    expect(pairsOf(renamed)).toEqual(aliases.map(() => ['already_exists', 'ok']));
  });

  it('makes one of two workspaces of the same name, the other told it exists', async () => {
    await using nodes = await openTwoNodes();
    const names = Array.from({ length: 10 }, (_, i) => `team-${i}`);
    const made = await Promise.allSettled(names.flatMap((name) => [nodes.a.workspaces.create({ name }), nodes.b.workspaces.create({ name })]));
    expect(pairsOf(made)).toEqual(names.map(() => ['already_exists', 'ok']));
  });

  it('moves a workspace to a plan once when two nodes are asked at once, the other told it is there', async () => {
    await using nodes = await openTwoNodes();
    const names = Array.from({ length: 5 }, (_, i) => `moving-${i}`);
    for (const name of names) await nodes.a.workspaces.create({ name, plan: 'free' });
    const moved = await Promise.allSettled(names.flatMap((name) => [nodes.a.workspaces.setPlan(name, 'pro'), nodes.b.workspaces.setPlan(name, 'pro')]));
    expect(pairsOf(moved)).toEqual(names.map(() => ['invalid_state', 'ok']));
  });
});
