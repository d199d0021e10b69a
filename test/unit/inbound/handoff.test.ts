import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pino from 'pino';
import { beforeEach, describe, expect, it } from 'vitest';
import { useTempStore } from '../../helpers/store.js';
import { goneLocalOwner } from '../../helpers/lease-owners.js';
import { ManualClock } from '../../../src/core/clock.js';
import { newLeaseOwner } from '../../../src/core/lease-owner.js';
import { insertDomain } from '../../../src/domains/domains.repo.js';
import { HANDOFF_MAX_MESSAGES, PROCESS_LEASE_MS, inboundService, type InboundService } from '../../../src/inbound/inbound.service.js';
import { postmasterMaildir } from '../../../src/inbound/postmaster-maildir.js';

// Messages this process accepts go to its processor leased, straight from
// memory; the store is still claimed from for what waits there.

let clock: ManualClock;
let inbound: InboundService;

const temp = useTempStore();

beforeEach(async () => {
  clock = new ManualClock();
  await temp.store.write((tx) => insertDomain(tx, {
    id: 'dom_in', workspaceId: 'ws_a', name: 'inbound.test', status: 'active', statusReason: null, region: 'us-east-1',
    returnPathSubdomain: 'bounces', openTracking: false, clickTracking: false, trackingSubdomain: 'track', inboundEnabled: true,
    dkim: [], checks: [], lastCheckedAt: null, nextCheckAt: null, verifyingSince: null, checkAttempts: 0, createdAt: clock.now(),
  }));
  inbound = inboundService({
    store: temp.store, clock, logger: pino({ level: 'silent' }), hostname: 'mx.test', retentionDays: 0,
    // Nothing to look up: the checks find no records.
    resolver: async () => { throw Object.assign(new Error('no such record'), { code: 'ENOTFOUND' }); },
    suppressions: { addFromBounce: async () => undefined },
    postmaster: postmasterMaildir(join(temp.dir, 'postmaster'), { clock }),
    returnPathKey: randomBytes(32),
  });
});

const accept = async (subject: string) => (await inbound.accept({
  mailFrom: 'ann@sender.test', rcptTo: ['desk@inbound.test'], remoteIp: '127.0.0.1', helo: 'client.test', tls: false,
  raw: Buffer.from(`From: ann@sender.test\r\nTo: desk@inbound.test\r\nSubject: ${subject}\r\n\r\nhello\r\n`),
}))[0];

const row = (id: string) => temp.store.db.selectFrom('inbound_messages').select(['status', 'lease_owner', 'locked_until', 'attempts', 'subject'])
  .where('id', '=', id).executeTakeFirstOrThrow();

async function process(owner: string, limit = 500) {
  const batch = await inbound.claimBatch(owner, limit);
  await batch.read;
  await batch.store();
  return batch.claimed;
}

describe('handing accepted messages to the processor', () => {
  it('stores them leased to it, and its claims take them without reading them back', async () => {
    let wakes = 0;
    inbound.attachProcessor('job_here', () => wakes++);
    // Until a claim has found the store drained, new mail queues behind whatever waits there.
    const early = await accept('early');
    expect(await row(early)).toMatchObject({ lease_owner: null, locked_until: 0, attempts: 0 });
    expect(await process('job_here')).toBe(1);

    const id = await accept('handed over');
    expect(wakes).toBe(2);
    expect(await row(id)).toMatchObject({ status: 'pending', lease_owner: 'job_here', locked_until: clock.now() + PROCESS_LEASE_MS, attempts: 1 });
    // Leased: another processor's claim from the store passes it by.
    clock.advance(1_000);
    expect(await process('job_elsewhere')).toBe(0);
    expect(await process('job_here')).toBe(1);
    expect(await row(id)).toMatchObject({ status: 'ready', lease_owner: null, subject: 'handed over' });
    expect(await row(early)).toMatchObject({ status: 'ready', subject: 'early' });
  });

  it('frees the leases of messages still waiting when the processor stops', async () => {
    inbound.attachProcessor('job_here', () => undefined);
    await process('job_here');
    const id = await accept('waiting');
    expect(await row(id)).toMatchObject({ lease_owner: 'job_here' });
    await inbound.detachProcessor();
    expect(await row(id)).toMatchObject({ status: 'pending', lease_owner: null, locked_until: 0 });
    // Any processor takes it up at once.
    expect(await process('job_next')).toBe(1);
    expect(await row(id)).toMatchObject({ status: 'ready', subject: 'waiting' });
  });

  it('stores messages unleased once the hand-off is full, claims them from the store after those handed over, then hands over again', async () => {
    inbound.attachProcessor('job_here', () => undefined);
    await process('job_here');
    const ids: string[] = [];
    for (let i = 0; i < HANDOFF_MAX_MESSAGES + 3; i++) ids.push(await accept(`m${i}`));
    const leased = await temp.store.db.selectFrom('inbound_messages').select('id').where('lease_owner', '=', 'job_here').execute();
    expect(leased.map((r) => r.id)).toEqual(ids.slice(0, HANDOFF_MAX_MESSAGES));
    // The claims take those handed over, then the rest from the temp.store.
    while (await process('job_here', 100) > 0);
    const left = await temp.store.db.selectFrom('inbound_messages').select('id').where('status', '!=', 'ready').execute();
    expect(left).toEqual([]);
    // The store has been drained: new mail is handed over again.
    const next = await accept('after');
    expect(await row(next)).toMatchObject({ lease_owner: 'job_here' });
  });

  it('frees at once the leases a crashed process of this host left on its messages, and no others', async () => {
    // The processor of a process that has come and gone, without a stop.
    const gone = goneLocalOwner();
    inbound.attachProcessor(gone, () => undefined);
    await process(gone);
    const left = await accept('left behind');
    const live = newLeaseOwner();
    inbound.attachProcessor(live, () => undefined);
    await process(live);
    const held = await accept('held');
    expect(await row(left)).toMatchObject({ lease_owner: gone, locked_until: clock.now() + PROCESS_LEASE_MS });

    expect(await inbound.releaseGoneLeases()).toBe(1);
    expect(await row(left)).toMatchObject({ status: 'pending', lease_owner: null, locked_until: 0 });
    expect(await row(held)).toMatchObject({ lease_owner: live });
    // Free: the next claim from the store takes it, long before the lease would have run out.
    clock.advance(1_000);
    expect(await process('job_elsewhere')).toBe(1);
    expect(await row(left)).toMatchObject({ status: 'ready', subject: 'left behind' });
  });
});
