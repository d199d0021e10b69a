import { hostname } from 'node:os';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { isGoneLocalOwner, localOwner, newLeaseOwner, releaseGoneOwners } from '../../src/core/lease-owner.js';
import { newId } from '../../src/core/ids.js';
import { dueRows, enqueue, leaseRows, releaseQueueLeases } from '../../src/delivery/queue.repo.js';
import { leaseOwnersOf } from '../../src/store/leases.js';
import { insertDeliveries, releaseDeliveryLeases } from '../../src/webhooks/webhooks.repo.js';
import { useTempStore } from '../helpers/store.js';
import { goneLocalOwner, gonePid } from '../helpers/lease-owners.js';

// Leases name their process (host, pid, a random part), so a process starting
// on the same host can free at once what a crashed predecessor left leased.

const silent = pino({ level: 'silent' });

describe('lease owners', () => {
  it('tells the owners of gone processes of this host from every other', () => {
    expect(isGoneLocalOwner(newLeaseOwner())).toBe(false);
    expect(isGoneLocalOwner(goneLocalOwner())).toBe(true);
    // This pid, but not made by this process: an earlier process with the same pid (a restarted container).
    expect(isGoneLocalOwner(localOwner(process.pid, '12345678'))).toBe(true);
    // A running process.
    expect(isGoneLocalOwner(localOwner(process.ppid, '12345678'))).toBe(false);
    // Another host, another container (pid namespace) under the same host name, or another form:
    // nothing can be known, the lease runs out as usual.
    expect(isGoneLocalOwner(`elsewhere.example:${gonePid()}:12345678`)).toBe(false);
    if (process.platform === 'linux') expect(isGoneLocalOwner(`${hostname()}/1:${gonePid()}:12345678`)).toBe(false);
    expect(isGoneLocalOwner(newId('job'))).toBe(false);
  });

  it('frees only the gone owners, and counts what it freed', async () => {
    const gone = goneLocalOwner();
    const live = newLeaseOwner();
    const released: string[][] = [];
    const freed = await releaseGoneOwners('rows', silent, async () => [gone, live], async (owners) => (released.push(owners), 3));
    expect(freed).toBe(3);
    expect(released).toEqual([[gone]]);
    expect(await releaseGoneOwners('rows', silent, async () => [live], async () => { throw new Error('not called'); })).toBe(0);
    // A failure leaves the leases to run out.
    expect(await releaseGoneOwners('rows', silent, async () => { throw new Error('store closed'); }, async () => 1)).toBe(0);
  });
});

describe('freeing the leases of stopped processes', () => {
  const temp = useTempStore();
  const now = 1_700_000_000_000;

  it('makes the outbound queue rows a gone owner held due at once, and leaves the others leased', async () => {
    const { store } = temp;
    await store.write((tx) => enqueue(tx, { workspaceId: 'ws_a', emailId: 'em_a', domains: ['a.test', 'b.test'], dueAt: now, lifetimeMs: 86_400_000, now }));
    const gone = goneLocalOwner();
    const live = newLeaseOwner();
    const claimOne = (owner: string) => store.write(async (tx) => {
      const [row] = await dueRows(tx, { now, limit: 1, skipDomains: [] });
      return leaseRows(tx, [row.id], { now, until: now + 120_000, owner });
    });
    await claimOne(gone);
    await claimOne(live);
    expect((await leaseOwnersOf(store.db, 'outbound_queue', { pendingOnly: false })).sort()).toEqual([gone, live].sort());

    expect(await store.write((tx) => releaseQueueLeases(tx, [gone], now + 5_000))).toBe(1);
    const rows = await store.db.selectFrom('outbound_queue').select(['lease_owner', 'locked_until', 'next_attempt_at']).orderBy('lease_owner').execute();
    expect(rows).toEqual([
      { lease_owner: null, locked_until: 0, next_attempt_at: now + 5_000 },
      { lease_owner: live, locked_until: now + 120_000, next_attempt_at: now + 120_000 },
    ]);
    expect(await leaseOwnersOf(store.db, 'outbound_queue', { pendingOnly: false })).toEqual([live]);
  });

  it('makes the pending webhook deliveries a gone owner held due at once', async () => {
    const { store } = temp;
    const gone = goneLocalOwner();
    const delivery = (id: string, owner: string | null, status: 'pending' | 'succeeded') => ({
      id, workspace_id: 'ws_a', webhook_id: 'wh_a', message_id: `evt_${id}`, event_id: `evt_${id}`, event_type: 'email.sent',
      payload: '{}', status, is_test: 0, attempt_count: 0, next_attempt_at: now + 75_000, lease_owner: owner, last_error: null,
      replay_of: null, created_at: now, updated_at: now,
    });
    await store.write((tx) => insertDeliveries(tx, [delivery('whd_1', gone, 'pending'), delivery('whd_2', gone, 'succeeded'), delivery('whd_3', null, 'pending')]));
    // A finished delivery is not a lease, whatever its row says.
    expect(await leaseOwnersOf(store.db, 'webhook_deliveries', { pendingOnly: true })).toEqual([gone]);
    expect(await store.write((tx) => releaseDeliveryLeases(tx, [gone], now + 1_000))).toBe(1);
    const rows = await store.db.selectFrom('webhook_deliveries').select(['id', 'lease_owner', 'next_attempt_at']).orderBy('id').execute();
    expect(rows).toEqual([
      { id: 'whd_1', lease_owner: null, next_attempt_at: now + 1_000 },
      { id: 'whd_2', lease_owner: gone, next_attempt_at: now + 75_000 },
      { id: 'whd_3', lease_owner: null, next_attempt_at: now + 75_000 },
    ]);
  });
});
