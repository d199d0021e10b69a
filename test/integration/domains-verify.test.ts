import { promises as dnsPromises } from 'node:dns';
import { setTimeout as delay } from 'node:timers/promises';
import { authenticate, dkimSign, type DKIMSignOptions } from 'mailauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { ManualClock, systemClock, toIso } from '../../src/core/clock.js';
import { mailauthResolver } from '../../src/domains/mailauth-resolver.js';
import {
  ACTIVE_RECHECK_MS, domainsService, VERIFY_GIVE_UP_AFTER_MS, VERIFY_RETRY_SCHEDULE_MS,
} from '../../src/domains/domains.service.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startDns, type DnsRecord, type TestDns } from '../helpers/dns.js';

// Verification through the API against a real DNS server on loopback: the
// records a domain is given, published the way real zones hold them, checked
// by POST /verify and by the re-check task.

const MX_HOST = 'mx.mailroom.test';

interface ApiRecord {
  record: string;
  type: string;
  name: string;
  value: string;
  priority?: number;
  status: string;
  required: boolean;
  detail?: string;
}

/** Splits text into strings of at most 255 bytes, as DNS providers store long TXT values. */
const chunked = (text: string): string[] => text.match(/.{1,255}/g) ?? [];

/**
 * The zone a user ends up with after following the instructions: DKIM keys
 * chunked, our SPF mechanism between others, a foreign TXT record next to it,
 * MX targets with a trailing dot and in upper case.
 */
function published(records: ApiRecord[], only?: string[]): DnsRecord[] {
  const zone: DnsRecord[] = [{ type: 'A', name: MX_HOST, address: '127.0.0.1' }];
  for (const r of records) {
    if (only && !only.includes(r.record)) continue;
    switch (r.type) {
      case 'TXT':
        if (r.record === 'SPF') {
          const domain = r.name.split('.').slice(1).join('.');
          zone.push({ type: 'TXT', name: `_spf.${domain}`, value: 'v=spf1 ip4:192.0.2.0/24 -all' });
          zone.push({ type: 'TXT', name: r.name, value: `v=spf1 include:_spf.${domain} a:${MX_HOST} ~all` });
          zone.push({ type: 'TXT', name: r.name, value: 'site-verification=4f9a' });
        } else {
          zone.push({ type: 'TXT', name: r.name, value: chunked(r.value) });
        }
        break;
      case 'MX':
        zone.push({ type: 'MX', name: r.name, exchange: `${r.value.toUpperCase()}.`, priority: r.priority ?? 10 });
        break;
      case 'CNAME':
        zone.push({ type: 'CNAME', name: r.name, target: r.value });
        break;
    }
  }
  return zone;
}

function resolverFor(dns: TestDns): dnsPromises.Resolver {
  const resolver = new dnsPromises.Resolver({ timeout: 1_000, tries: 2 });
  resolver.setServers([dns.server]);
  return resolver;
}

const statuses = (records: ApiRecord[]) => Object.fromEntries(records.map((r) => [r.record, r.status]));

describe('verifying a domain through the API', () => {
  let dns: TestDns;
  let t: TestApp;

  beforeAll(async () => {
    dns = await startDns();
    t = await startTestApp({ env: { MAILROOM_DNS_SERVERS: dns.server } });
  });
  afterAll(async () => {
    await t?.close();
    await dns?.stop();
  });

  it('moves per-record statuses as records appear, and the domain becomes active', async () => {
    const { body: created } = await t.api.post('/v1/domains', {
      name: 'moving.example.test', open_tracking: true, inbound_enabled: true,
    });
    expect(created.status).toBe('unverified');

    await dns.set([]);
    const nothing = await t.api.post(`/v1/domains/${created.id}/verify`);
    expect(nothing.status).toBe(200);
    expect(nothing.body.status).toBe('verifying');
    expect(new Set(nothing.body.records.map((r: ApiRecord) => r.status))).toEqual(new Set(['pending']));
    expect(nothing.body.status_reason).toMatch(/DKIM TXT at mr\d{6}\._domainkey\.moving\.example\.test: pending/);
    expect(nothing.body.last_checked_at).not.toBeNull();

    await dns.set(published(created.records, ['DKIM', 'SPF']));
    const some = await t.api.post(`/v1/domains/${created.id}/verify`);
    expect(statuses(some.body.records)).toEqual({
      DKIM: 'verified', DKIM_ED25519: 'pending', SPF: 'verified', MX_BOUNCE: 'pending', MX_INBOUND: 'pending', DMARC: 'pending', TRACKING: 'pending',
    });
    expect(some.body.status).toBe('verifying');
    expect(some.body.status_reason).toMatch(/^Waiting for MX_BOUNCE MX at bounces\.moving\.example\.test: pending$/);

    await dns.set(published(created.records));
    const all = await t.api.post(`/v1/domains/${created.id}/verify`);
    expect(new Set(all.body.records.map((r: ApiRecord) => r.status))).toEqual(new Set(['verified']));
    expect(all.body).toMatchObject({ status: 'active', status_reason: null });
    expect((await t.api.get(`/v1/domains/${created.id}`)).body).toEqual(all.body);
    expect((await t.api.get('/v1/domains?status=active')).body.data.map((d: any) => d.id)).toContain(created.id);

    // Once seen published, the Ed25519 key signs too, and the tracking host is used.
    const sender = await t.mailroom.services.domains.senders().find(t.workspaceId, 'moving.example.test');
    expect(sender!.dkim.map((k) => k.algorithm)).toEqual(['rsa', 'ed25519']);
    expect(sender!.trackingHost).toBe('track.moving.example.test');
  });

  it('has the spam check say so when the last verification found no DMARC record', async () => {
    const { body: d } = await t.api.post('/v1/domains', { name: 'nodmarc.example.test' });
    await dns.set(published(d.records, ['DKIM', 'SPF', 'MX_BOUNCE']));
    expect((await t.api.post(`/v1/domains/${d.id}/verify`)).body.status).toBe('active');
    const message = { from: 'ann@nodmarc.example.test', to: 'bo@example.org', subject: 'Hello', text: 'Hi.', headers: { 'List-Unsubscribe': '<mailto:u@nodmarc.example.test>' } };
    const missing = await t.api.post('/v1/emails/check', message);
    expect(missing.body.rules).toEqual([expect.objectContaining({ rule: 'no_dmarc', found: ['no DMARC record at _dmarc.nodmarc.example.test'] })]);

    await dns.set(published(d.records, ['DKIM', 'SPF', 'MX_BOUNCE', 'DMARC']));
    await t.api.post(`/v1/domains/${d.id}/verify`);
    // Sender details are cached for a moment.
    await new Promise((r) => setTimeout(r, 2_100));
    expect((await t.api.post('/v1/emails/check', message)).body.rules).toEqual([]);
  });

  it('keeps a domain whose DKIM record holds another key from becoming active', async () => {
    const { body: d } = await t.api.post('/v1/domains', { name: 'wrongkey.example.test' });
    const { body: other } = await t.api.post('/v1/domains', { name: 'otherkey.example.test' });
    const zone = published(d.records).map((r) =>
      r.type === 'TXT' && r.name === d.records[0].name ? { ...r, value: chunked(other.records[0].value) } : r,
    );
    await dns.set(zone);
    const res = await t.api.post(`/v1/domains/${d.id}/verify`);
    expect(res.body.status).toBe('verifying');
    const dkim = res.body.records.find((r: ApiRecord) => r.record === 'DKIM');
    expect(dkim.status).toBe('failed');
    expect(dkim.detail).toMatch(/^different public key/);
    expect(res.body.records.filter((r: ApiRecord) => r.status !== 'verified').map((r: ApiRecord) => r.record)).toEqual(['DKIM']);
    expect(res.body.status_reason).toMatch(/DKIM TXT at .*: different public key/);
  });

  it('names a DKIM record\'s key type holding a NUL with U+FFFD in its place', async () => {
    // PostgreSQL cannot hold U+0000: the verification quoting it failed with a 500 and recorded nothing.
    const { body: d } = await t.api.post('/v1/domains', { name: 'nulkey.example.test' });
    const zone = published(d.records).map((r) =>
      r.type === 'TXT' && r.name === d.records[0].name ? { ...r, value: chunked(d.records[0].value.replace('k=rsa', 'k=rs\0a')) } : r,
    );
    await dns.set(zone);
    const res = await t.api.post(`/v1/domains/${d.id}/verify`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('verifying');
    expect(res.body.records.find((r: ApiRecord) => r.record === 'DKIM')).toMatchObject({ status: 'failed', detail: 'key type k=rs\uFFFDa, expected k=rsa' });
  });

  it('quotes a TXT record published in UTF-8 as it was written', async () => {
    // Node reads a TXT record a byte a character: "ä" came back as "Ã¤".
    const { body: d } = await t.api.post('/v1/domains', { name: 'utf8key.example.test' });
    const zone = published(d.records).map((r) =>
      // Chunks of 200 characters: "ä" is two bytes.
      r.type === 'TXT' && r.name === d.records[0].name ? { ...r, value: d.records[0].value.replace('k=rsa', 'k=rsä').match(/.{1,200}/g) } : r,
    );
    await dns.set(zone);
    const res = await t.api.post(`/v1/domains/${d.id}/verify`);
    expect(res.body.records.find((r: ApiRecord) => r.record === 'DKIM')).toMatchObject({ status: 'failed', detail: 'key type k=rsä, expected k=rsa' });
  });

  it('logs why an active domain is no longer active', async () => {
    const { body: d } = await t.api.post('/v1/domains', { name: 'logged.example.test' });
    await dns.set(published(d.records));
    expect((await t.api.post(`/v1/domains/${d.id}/verify`)).body.status).toBe('active');

    // A service on the same store with a logger this test reads.
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const { store, keyring } = t.mailroom.services;
    const service = domainsService({
      store, clock: systemClock, logger, sealKey: keyring.sealKey, dns: resolverFor(dns),
      mxHost: MX_HOST, trackingTarget: MX_HOST, hasPendingEmails: async () => false,
    });
    await dns.set(published(d.records).filter((r) => r.name !== d.records[0].name));
    expect((await service.verify(t.workspaceId, d.id)).status).toBe('verifying');
    expect(lines).toEqual([expect.objectContaining({
      level: 40, msg: 'domain is no longer active: a required DNS record stopped matching',
      domain_id: d.id, domain: d.name, from: 'active', to: 'verifying',
      reason: `Waiting for DKIM TXT at ${d.records[0].name}: pending`,
    })]);
  });

  it('signs mail with the domain\'s keys that passes DKIM, SPF and DMARC at a receiver', async () => {
    const { body: d } = await t.api.post('/v1/domains', { name: 'signed.example.test' });
    await dns.set(published(d.records));
    expect((await t.api.post(`/v1/domains/${d.id}/verify`)).body.status).toBe('active');
    const sender = (await t.mailroom.services.domains.senders().find(t.workspaceId, d.name))!;

    const message = Buffer.from([
      `From: Shop <orders@${d.name}>`, 'To: someone@receiver.test', 'Subject: Your order',
      'Date: Tue, 07 Jan 2025 10:00:00 +0000', `Message-ID: <order-1@${d.name}>`, 'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8', '', 'Thank you for your order.', '',
    ].join('\r\n'));
    // mailauth signs with the entries of signatureData only; its typings
    // also demand top-level key fields, which it ignores at run time.
    const signed = await dkimSign(message, {
      signatureData: sender.dkim.map((k) => ({
        signingDomain: sender.name, selector: k.selector, privateKey: k.privateKeyPem, algorithm: `${k.algorithm}-sha256`,
      })),
    } as DKIMSignOptions);
    expect(signed.errors).toEqual([]);

    const result = await authenticate(Buffer.concat([Buffer.from(signed.signatures), message]), {
      ip: '127.0.0.1', helo: MX_HOST, sender: `bounce-1@${sender.returnPathDomain}`, mta: 'mx.receiver.test',
      resolver: mailauthResolver(resolverFor(dns)), disableArc: true, disableBimi: true,
    });
    expect(result.dkim.results.map((r) => r.status.result)).toEqual(['pass', 'pass']);
    expect(result.spf && result.spf.status.result).toBe('pass');
    expect(result.dmarc && result.dmarc.status.result).toBe('pass');
  });
});

describe('the re-check task', () => {
  let dns: TestDns;
  let t: TestApp;
  const clock = new ManualClock(Date.UTC(2025, 0, 6, 9, 0));

  beforeAll(async () => {
    dns = await startDns();
    t = await startTestApp({ env: { MAILROOM_DNS_SERVERS: dns.server }, clock });
  });
  afterAll(async () => {
    await t?.close();
    await dns?.stop();
  });

  /**
   * Moves the clock and runs the due tasks until the domain has been checked
   * at the new time. The app's own scheduler loop may claim the run first,
   * so this polls (bounded) rather than trusting a single tick.
   */
  async function advanceAndRecheck(id: string, ms: number): Promise<any> {
    clock.advance(ms);
    const deadline = Date.now() + 10_000;
    for (;;) {
      await t.mailroom.scheduler.tick();
      const { body } = await t.api.get(`/v1/domains/${id}`);
      if (body.last_checked_at === toIso(clock.now())) return body;
      if (Date.now() > deadline) throw new Error(`domain ${id} was not re-checked at ${toIso(clock.now())}: ${JSON.stringify(body)}`);
      await delay(20);
    }
  }

  it('activates a verifying domain once its records appear', async () => {
    await dns.set([]);
    const { body: d } = await t.api.post('/v1/domains', { name: 'later.example.test' });
    expect((await t.api.post(`/v1/domains/${d.id}/verify`)).body.status).toBe('verifying');

    await dns.set(published(d.records));
    const after = await advanceAndRecheck(d.id, VERIFY_RETRY_SCHEDULE_MS[0]);
    expect(after).toMatchObject({ status: 'active', status_reason: null });
    expect(new Set(after.records.map((r: ApiRecord) => r.status))).toEqual(new Set(['verified']));
  });

  it('re-checks an active domain daily, and one whose DKIM record was removed falls back to verifying', async () => {
    const { body: d } = await t.api.post('/v1/domains', { name: 'removed.example.test' });
    await dns.set(published(d.records));
    expect((await t.api.post(`/v1/domains/${d.id}/verify`)).body.status).toBe('active');

    const still = await advanceAndRecheck(d.id, ACTIVE_RECHECK_MS);
    expect(still.status).toBe('active');

    await dns.set(published(d.records).filter((r) => r.name !== d.records[0].name));
    const fallen = await advanceAndRecheck(d.id, ACTIVE_RECHECK_MS);
    expect(fallen.status).toBe('verifying');
    expect(fallen.records.find((r: ApiRecord) => r.record === 'DKIM').status).toBe('pending');
    expect(fallen.status_reason).toBe(`Waiting for DKIM TXT at ${d.records[0].name}: pending`);

    // Put back, it is active again at the first step of the schedule.
    await dns.set(published(d.records));
    expect((await advanceAndRecheck(d.id, VERIFY_RETRY_SCHEDULE_MS[0])).status).toBe('active');
  });

  it('backs off, then gives up after 72 hours and returns the domain to unverified', async () => {
    await dns.set([]);
    const { body: d } = await t.api.post('/v1/domains', { name: 'never.example.test' });
    const started = clock.now();
    expect((await t.api.post(`/v1/domains/${d.id}/verify`)).body.status).toBe('verifying');

    const giveUpAt = started + VERIFY_GIVE_UP_AFTER_MS;
    let body: any;
    let checks = 0;
    for (let step = 0; clock.now() < giveUpAt; step++) {
      const wait = Math.min(VERIFY_RETRY_SCHEDULE_MS[Math.min(step, VERIFY_RETRY_SCHEDULE_MS.length - 1)], giveUpAt - clock.now());
      body = await advanceAndRecheck(d.id, wait);
      checks++;
      if (clock.now() < giveUpAt) expect(body.status).toBe('verifying');
    }
    // 1, 5, 15 and 60 minutes, then 6-hourly until the 72nd hour.
    expect(checks).toBe(16);
    expect(body.status).toBe('unverified');
    expect(body.status_reason).toMatch(/^Checks stopped after 72 h without the required records; still missing: DKIM TXT at /);

    // No more checks are planned for it.
    clock.advance(VERIFY_RETRY_SCHEDULE_MS.at(-1)!);
    await t.mailroom.scheduler.tick();
    expect((await t.api.get(`/v1/domains/${d.id}`)).body.last_checked_at).toBe(body.last_checked_at);
  });

  it('keeps the previous record statuses through a temporary DNS failure', async () => {
    const { body: d } = await t.api.post('/v1/domains', { name: 'flaky.example.test' });
    await dns.set(published(d.records));
    expect((await t.api.post(`/v1/domains/${d.id}/verify`)).body.status).toBe('active');

    // The records go and the names answer SERVFAIL: dnsmasq answers names it
    // holds records for itself, before forwarding to the failing upstream.
    await dns.servfail('flaky.example.test');
    await dns.set([]);
    const during = await advanceAndRecheck(d.id, ACTIVE_RECHECK_MS);
    expect(during.status).toBe('active');
    expect(during.records.map((r: ApiRecord) => [r.status, r.detail])).toEqual(
      d.records.map(() => ['verified', 'temporary DNS error']),
    );
  });
});
