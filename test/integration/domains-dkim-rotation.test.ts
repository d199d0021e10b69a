import { promises as dnsPromises } from 'node:dns';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { DKIM_RETIRE_AFTER_MS } from '../../src/domains/domains.service.js';
import { ACTIVE_DOMAIN_CACHE_MS } from '../../src/emails/sender-cache.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { resolverOf, startDns, type DnsRecord, type TestDns } from '../helpers/dns.js';
import { directDeliveryEnv, startScriptedMx, type ScriptedMx } from '../helpers/mx.js';

// A DKIM key rotation through its whole cycle, against a real DNS server and
// a real receiving MX: the new key waits for its record while mail stays
// signed with the old one, takes over once verification sees the record, and
// the old record is reported removable a week later.

const MX_HOST = 'mx.mailroom.test';
const RECEIVER = '127.0.0.48';

interface ApiRecord {
  record: string;
  type: string;
  name: string;
  value: string;
  priority?: number;
  required: boolean;
  status: string;
  key_state?: string;
  removable_after?: string;
}

/** The zone after the user published `records`: TXT values split in 255-byte strings as DNS panels do. */
function zoneOf(records: ApiRecord[]): DnsRecord[] {
  const zone: DnsRecord[] = [
    { type: 'A', name: MX_HOST, address: '127.0.0.1' },
    { type: 'MX', name: 'rcpt.test', exchange: 'mx.rcpt.test', priority: 10 },
    { type: 'A', name: 'mx.rcpt.test', address: RECEIVER },
  ];
  for (const r of records) {
    if (r.type === 'TXT') zone.push({ type: 'TXT', name: r.name, value: r.value.match(/.{1,255}/g)! });
    if (r.type === 'MX') zone.push({ type: 'MX', name: r.name, exchange: r.value, priority: r.priority ?? 10 });
  }
  return zone;
}

describe('DKIM key rotation', () => {
  const clock = new ManualClock();
  let dns: TestDns;
  let mx: ScriptedMx;
  let t: TestApp;
  let resolver: dnsPromises.Resolver;

  beforeAll(async () => {
    dns = await startDns(zoneOf([]));
    mx = await startScriptedMx({ host: RECEIVER });
    t = await startTestApp({
      clock,
      env: { ...directDeliveryEnv(dns.server, mx.port), MAILROOM_HOSTNAME: MX_HOST },
    });
    resolver = resolverOf(dns);
  });
  afterAll(async () => {
    await t?.close();
    await mx?.stop();
    await dns?.stop();
  });

  /** Sends one email and returns the selectors of the signatures that arrive, each checked against DNS. */
  async function sendAndCheckSignatures(): Promise<string[]> {
    // Sender details are cached for a moment: move past it, so the send sees the domain as it is now.
    clock.advance(ACTIVE_DOMAIN_CACHE_MS + 1);
    const before = mx.received.length;
    const res = await t.api.post('/v1/emails', { from: 'ops@rotate.test', to: 'reader@rcpt.test', subject: 'Rotation', text: 'Hello.' });
    expect(res.status).toBe(201);
    await t.mailroom.delivery.drain();
    await mx.waitFor(before + 1);
    const { results } = await dkimVerify(mx.received[before].raw, { resolver: (name: string, type: string) => resolver.resolve(name, type as 'TXT') });
    for (const r of results) expect(r.status.result).toBe('pass');
    return results.map((r) => r.selector ?? '').sort();
  }

  const dkimRecords = (records: ApiRecord[]) => records.filter((r) => r.record.startsWith('DKIM'));

  it('signs with the old key until the new record is seen, then with the new one, and reports the old one removable after 7 days', async () => {
    const created = await t.api.post('/v1/domains', { name: 'rotate.test' });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const first = created.body.records as ApiRecord[];
    expect(dkimRecords(first).map((r) => r.key_state)).toEqual(['active', 'active']);
    await dns.set(zoneOf(first));
    expect((await t.api.post(`/v1/domains/${id}/verify`)).body.status).toBe('active');
    const oldSelectors = dkimRecords(first).map((r) => r.name.split('.')[0]).sort();
    expect(await sendAndCheckSignatures()).toEqual(oldSelectors);

    // Rotation starts: the new pair is listed, pending and not required; mail is still signed with the old pair.
    const rotated = await t.api.post(`/v1/domains/${id}/dkim/rotate`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.status).toBe('active');
    const pending = dkimRecords(rotated.body.records).filter((r) => r.key_state === 'pending');
    expect(pending.map((r) => [r.record, r.required, r.status])).toEqual([['DKIM', false, 'pending'], ['DKIM_ED25519', false, 'pending']]);
    const newSelectors = pending.map((r) => r.name.split('.')[0]).sort();
    expect(newSelectors).not.toEqual(oldSelectors);
    expect(await sendAndCheckSignatures()).toEqual(oldSelectors);

    // A second rotation waits for the first.
    const again = await t.api.post(`/v1/domains/${id}/dkim/rotate`);
    expect(again.status).toBe(422);
    expect(again.body.error.code).toBe('dkim_rotation_in_progress');

    // Verification before the record is published changes nothing.
    const early = await t.api.post(`/v1/domains/${id}/verify`);
    expect(early.body.status).toBe('active');
    expect(dkimRecords(early.body.records).filter((r) => r.key_state === 'pending')).toHaveLength(2);
    expect(await sendAndCheckSignatures()).toEqual(oldSelectors);

    // The new records are published beside the old ones and seen: the new pair signs, the old one retires.
    await dns.set(zoneOf(rotated.body.records));
    const switched = await t.api.post(`/v1/domains/${id}/verify`);
    expect(switched.body.status).toBe('active');
    const states = Object.fromEntries(dkimRecords(switched.body.records).map((r) => [r.name.split('.')[0], r.key_state]));
    expect(states).toEqual({ [oldSelectors[0]]: 'retiring', [oldSelectors[1]]: 'retiring', [newSelectors[0]]: 'active', [newSelectors[1]]: 'active' });
    const retiring = dkimRecords(switched.body.records).filter((r) => r.key_state === 'retiring');
    expect(retiring.every((r) => !r.required && r.removable_after === new Date(clock.now() + DKIM_RETIRE_AFTER_MS).toISOString())).toBe(true);
    expect(await sendAndCheckSignatures()).toEqual(newSelectors);

    // A week on, the old records may go; mail still verifies with only the new ones published.
    clock.advance(DKIM_RETIRE_AFTER_MS);
    await dns.set(zoneOf(dkimRecords(switched.body.records).filter((r) => r.key_state !== 'retiring').concat(
      (switched.body.records as ApiRecord[]).filter((r) => !r.record.startsWith('DKIM')))));
    expect(await sendAndCheckSignatures()).toEqual(newSelectors);
    const next = await t.api.post(`/v1/domains/${id}/dkim/rotate`);
    // The removable pair is forgotten by the next rotation.
    expect(dkimRecords(next.body.records).map((r) => r.key_state).sort()).toEqual(['active', 'active', 'pending', 'pending']);
  });

  it('rotates only the domains of the calling workspace', async () => {
    const other = await t.seed.workspace();
    const { token } = await t.seed.key({ workspaceId: other.id });
    const mine = await t.api.post('/v1/domains', { name: 'mine.test' });
    const res = await t.api.as(token).post(`/v1/domains/${mine.body.id}/dkim/rotate`);
    expect(res.status).toBe(404);
    expect((await t.api.as(token).post('/v1/domains/dom_nope/dkim/rotate')).status).toBe(404);
    const { token: reader } = await t.seed.key({ scopes: ['domains:read'] });
    expect((await t.api.as(reader).post(`/v1/domains/${mine.body.id}/dkim/rotate`)).status).toBe(403);
  });
});
