import pino from 'pino';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { newLeaseOwner } from '../../src/core/lease-owner.js';
import { insertInbound } from '../../src/inbound/inbound.repo.js';
import type { Tx } from '../../src/store/db.js';
import {
  claimLeases, extendLeases, freeGoneLeases, leaseOwnersOf, releaseOwners, type Candidates, type LeasedTable,
} from '../../src/store/lease.js';
import { insertDeliveries } from '../../src/webhooks/webhooks.repo.js';
import { goneLocalOwner } from '../helpers/lease-owners.js';
import { useTempStore } from '../helpers/store.js';

// The one lease primitive, on each of the tables leased with it: a claim
// takes only rows no one holds, in one statement; a lease that runs out lets
// another owner take the row; a renewed lease does not; a restart frees at
// once what a stopped process of this host held, and nothing else.

const NOW = 1_700_000_000_000;
const LEASE_MS = 60_000;
const silent = pino({ level: 'silent' });
const temp = useTempStore();

const KEY: Record<LeasedTable, 'id' | 'name'> = {
  outbound_queue: 'id', inbound_messages: 'id', webhook_deliveries: 'id', scheduled_tasks: 'name', broadcasts: 'id',
};

/** Writes one row of `table` that is due at NOW and held by no one. */
const SEED: Record<LeasedTable, (tx: Tx, key: string) => Promise<unknown>> = {
  outbound_queue: (tx, id) => tx.insertInto('outbound_queue').values({
    id, workspace_id: 'ws_a', email_id: `em_${id}`, domain: 'a.test', attempt: 0, next_attempt_at: NOW, locked_until: 0,
    lease_owner: null, expires_at: NOW + 86_400_000, last_error: null, created_at: NOW,
  }).execute(),
  inbound_messages: (tx, id) => insertInbound(tx, [{
    id, workspaceId: 'ws_a', domainId: 'dom_a', kind: 'message', mailFrom: 'a@b.test', rcptTo: ['c@d.test'], remoteIp: '127.0.0.1',
    helo: 'b.test', raw: Buffer.from('Subject: x\r\n\r\nx\r\n'), tls: false, receivedAt: NOW,
  }]),
  webhook_deliveries: (tx, id) => insertDeliveries(tx, [{
    id, workspace_id: 'ws_a', webhook_id: 'wh_a', message_id: `msg_${id}`, event_id: `evt_${id}`, event_type: 'email.sent',
    payload: '{}', status: 'pending', is_test: 0, attempt_count: 0, next_attempt_at: NOW, lease_owner: null, last_error: null,
    replay_of: null, created_at: NOW, updated_at: NOW,
  }]),
  scheduled_tasks: (tx, name) => tx.insertInto('scheduled_tasks').values({
    name, next_run_at: NOW, locked_until: 0, lease_owner: null, last_run_at: null, last_error: null,
  }).execute(),
  broadcasts: (tx, id) => tx.insertInto('broadcasts').values({
    id, workspace_id: 'ws_a', name: id, from_address: 'a@b.test', reply_to_list: '[]', subject: 's', preview_text: null, html: 'x',
    text_body: null, template_id: null, template_version: null, audience: '{}', send_rate_per_minute: null, status: 'sending',
    status_reason: null, mode: 'live', scheduled_at: null, resume_at: null, next_chunk_at: NOW, audience_size: 0, audience_max_pos: 0,
    created_at: NOW, updated_at: NOW, started_at: NOW, sent_at: null, cancelled_at: null, lease_owner: null,
  }).execute(),
};

const TABLES = Object.keys(KEY) as LeasedTable[];

describe.each(TABLES)('leases on %s', (table) => {
  const key = KEY[table];
  const keys = (n: number) => Array.from({ length: n }, (_, i) => `${table.slice(0, 3)}_${String(i).padStart(2, '0')}`);

  async function seed(n: number): Promise<string[]> {
    const made = keys(n);
    await temp.store.write(async (tx) => {
      for (const k of made) await SEED[table](tx, k);
    });
    return made;
  }

  /** Leases up to `limit` rows to `owner`, in key order; returns the keys leased. */
  async function claim(owner: string, limit: number, now = NOW): Promise<string[]> {
    const rows = await temp.store.write((tx) => {
      const candidates = (tx.selectFrom(table) as any).select(key).orderBy(key).limit(sql.lit(limit)) as Candidates<typeof table>;
      return claimLeases(tx, table, candidates, { now, until: now + LEASE_MS, owner });
    });
    return rows.map((r) => (r as Record<string, string>)[key]).sort();
  }

  const owners = async () => Object.fromEntries((await temp.store.db.selectFrom(table as 'scheduled_tasks')
    .select([sql.ref<string>(key).as('key'), 'lease_owner']).execute()).map((r) => [r.key, r.lease_owner]));

  it('leases the rows no one holds, and leaves held rows to their owner', async () => {
    const all = await seed(5);
    const [a, b, c] = [newLeaseOwner(), newLeaseOwner(), newLeaseOwner()];
    expect(await claim(a, 3)).toEqual(all.slice(0, 3));
    // The first three are held: the choice passes over them to the rest.
    expect(await claim(b, 5)).toEqual(all.slice(3));
    expect(await claim(c, 5)).toEqual([]);
    expect(await owners()).toEqual(Object.fromEntries(all.map((k, i) => [k, i < 3 ? a : b])));
  });

  it('leases candidates given as keys, each row once whatever the count', async () => {
    const all = await seed(5);
    const owner = newLeaseOwner();
    const rows = await temp.store.write((tx) => claimLeases(tx, table, all.slice(0, 3), { now: NOW, until: NOW + LEASE_MS, owner }));
    expect(rows.map((r) => (r as Record<string, string>)[key]).sort()).toEqual(all.slice(0, 3));
    expect(await owners()).toEqual(Object.fromEntries(all.map((k, i) => [k, i < 3 ? owner : null])));
    if (table === 'inbound_messages') {
      const attempts = await temp.store.db.selectFrom('inbound_messages').select(['id', 'attempts']).orderBy('id').execute();
      expect(attempts.map((r) => r.attempts)).toEqual([1, 1, 1, 0, 0]);
    }
  });

  it('gives every row to exactly one of several claims made at once', async () => {
    const all = await seed(24);
    const claimers = Array.from({ length: 6 }, () => newLeaseOwner());
    const taken = await Promise.all(claimers.map((o) => claim(o, 8)));
    expect(taken.flat().sort()).toEqual(all);
    const held = await owners();
    taken.forEach((got, i) => got.forEach((k) => expect(held[k]).toBe(claimers[i])));
  });

  it('lets another owner take a row once its lease has run out, not before', async () => {
    const [row] = await seed(1);
    const [first, second] = [newLeaseOwner(), newLeaseOwner()];
    expect(await claim(first, 1)).toEqual([row]);
    expect(await claim(second, 1, NOW + LEASE_MS - 1)).toEqual([]);
    expect(await claim(second, 1, NOW + LEASE_MS)).toEqual([row]);
    expect((await owners())[row]).toBe(second);
  });

  it('keeps a renewed lease from other claims past its first end', async () => {
    const [row] = await seed(1);
    const [holder, other] = [newLeaseOwner(), newLeaseOwner()];
    await claim(holder, 1);
    // Another owner's renewal changes nothing.
    await temp.store.write((tx) => extendLeases(tx, table, [row], other, NOW + 10 * LEASE_MS));
    await temp.store.write((tx) => extendLeases(tx, table, [row], holder, NOW + 3 * LEASE_MS));
    expect(await claim(other, 1, NOW + 2 * LEASE_MS)).toEqual([]);
    expect(await claim(other, 1, NOW + 3 * LEASE_MS)).toEqual([row]);
  });

  it('frees at a restart what a stopped process of this host held, due at once, and only that', async () => {
    const all = await seed(4);
    const gone = goneLocalOwner();
    const live = newLeaseOwner();
    await claim(gone, 2);
    await claim(live, 1);
    expect((await leaseOwnersOf(temp.store.db, table)).sort()).toEqual([gone, live].sort());

    expect(await freeGoneLeases(temp.store, table, silent, () => NOW + 5_000)).toBe(2);
    expect(await leaseOwnersOf(temp.store.db, table)).toEqual([live]);
    // Freed rows are claimable at once, long before the gone owner's lease would have run out.
    const next = newLeaseOwner();
    expect(await claim(next, 4, NOW + 5_000)).toEqual([all[0], all[1], all[3]]);
    // Releasing an owner that holds nothing frees nothing.
    expect(await temp.store.write((tx) => releaseOwners(tx, table, [newLeaseOwner()], NOW))).toBe(0);
  });
});

describe('what a lease moves besides its owner', () => {
  it('keeps a leased outbound row out of the due order until the lease ends, and due at once when freed', async () => {
    const { store } = temp;
    await store.write((tx) => SEED.outbound_queue(tx, 'job_1'));
    const owner = goneLocalOwner();
    await store.write((tx) => claimLeases(tx, 'outbound_queue', ['job_1'], { now: NOW, until: NOW + LEASE_MS, owner }));
    const due = () => store.db.selectFrom('outbound_queue').select(['next_attempt_at', 'locked_until']).executeTakeFirstOrThrow();
    expect(await due()).toEqual({ next_attempt_at: NOW + LEASE_MS, locked_until: NOW + LEASE_MS });
    await store.write((tx) => releaseOwners(tx, 'outbound_queue', [owner], NOW + 7));
    expect(await due()).toEqual({ next_attempt_at: NOW + 7, locked_until: 0 });
  });

  it('counts every claim of an inbound message as an attempt', async () => {
    const { store } = temp;
    await store.write((tx) => SEED.inbound_messages(tx, 'inb_1'));
    const claimOnce = (now: number) => store.write((tx) => claimLeases(tx, 'inbound_messages',
      tx.selectFrom('inbound_messages').select('id').where('status', '=', 'pending'), { now, until: now + LEASE_MS, owner: newLeaseOwner() }));
    expect((await claimOnce(NOW)).map((r) => r.attempts)).toEqual([1]);
    expect((await claimOnce(NOW + LEASE_MS)).map((r) => r.attempts)).toEqual([2]);
  });

  it('frees only the pending webhook deliveries of an owner: a finished one is not a lease, whatever its row says', async () => {
    const { store } = temp;
    const gone = goneLocalOwner();
    await store.write(async (tx) => {
      await SEED.webhook_deliveries(tx, 'whd_1');
      await SEED.webhook_deliveries(tx, 'whd_2');
      await tx.updateTable('webhook_deliveries').set({ lease_owner: gone, next_attempt_at: NOW + 75_000 }).execute();
      await tx.updateTable('webhook_deliveries').set({ status: 'succeeded' }).where('id', '=', 'whd_2').execute();
    });
    expect(await leaseOwnersOf(store.db, 'webhook_deliveries')).toEqual([gone]);
    expect(await store.write((tx) => releaseOwners(tx, 'webhook_deliveries', [gone], NOW + 1_000))).toBe(1);
    const rows = await store.db.selectFrom('webhook_deliveries').select(['id', 'lease_owner', 'next_attempt_at', 'updated_at']).orderBy('id').execute();
    expect(rows).toEqual([
      { id: 'whd_1', lease_owner: null, next_attempt_at: NOW + 1_000, updated_at: NOW + 1_000 },
      { id: 'whd_2', lease_owner: gone, next_attempt_at: NOW + 75_000, updated_at: NOW },
    ]);
  });
});
