import { promises as dnsPromises } from 'node:dns';
import { authenticate, dkimSign, type DKIMSignOptions } from 'mailauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDkimKeys, type DkimKey } from '../../src/domains/dkim-keys.js';
import { recordsFor, type DnsRecordSpec } from '../../src/domains/dns-records.js';
import { mailauthResolver } from '../../src/domains/mailauth-resolver.js';
import { checkRecords, domainStatus, TEMPORARY_DNS_ERROR } from '../../src/domains/verify-records.js';
import { startDns, type DnsRecord, type TestDns } from '../helpers/dns.js';

const DOMAIN = 'example.test';
const MX_HOST = 'mx.mailroom.test';
const TRACKING_TARGET = 'links.mailroom.test';

function resolverFor(dns: TestDns): dnsPromises.Resolver {
  const resolver = new dnsPromises.Resolver({ timeout: 1_000, tries: 2 });
  resolver.setServers([dns.server]);
  return resolver;
}

function recordsWith(keys: { rsa: DkimKey; ed25519: DkimKey }): DnsRecordSpec[] {
  return recordsFor(DOMAIN, {
    dkim: [{ ...keys.rsa, state: 'active' }, { ...keys.ed25519, state: 'active' }],
    mxHost: MX_HOST,
    inboundEnabled: true,
    trackingEnabled: true,
    trackingTarget: TRACKING_TARGET,
  });
}

/** Splits text into strings of at most 255 bytes, as DNS providers store long TXT values. */
function chunked(text: string): string[] {
  return text.match(/.{1,255}/g) ?? [];
}

/**
 * What a user who followed the instructions ends up with, written the way
 * real zones look: the DKIM key chunked, our SPF mechanism between others,
 * a foreign TXT record next to the SPF one, MX targets with a trailing dot.
 */
function published(records: DnsRecordSpec[]): DnsRecord[] {
  const zone: DnsRecord[] = [
    { type: 'A', name: MX_HOST, address: '127.0.0.1' },
    { type: 'A', name: TRACKING_TARGET, address: '127.0.0.1' },
    // The include: target must exist, or SPF evaluation stops with a permerror (RFC 7208 §5.2).
    { type: 'TXT', name: `_spf.${DOMAIN}`, value: 'v=spf1 ip4:192.0.2.0/24 -all' },
  ];
  for (const r of records) {
    switch (r.record) {
      case 'DKIM':
      case 'DKIM_ED25519':
        zone.push({ type: 'TXT', name: r.name, value: chunked(r.value) });
        break;
      case 'SPF':
        zone.push({ type: 'TXT', name: r.name, value: `v=spf1 include:_spf.${DOMAIN} a:${MX_HOST} ~all` });
        zone.push({ type: 'TXT', name: r.name, value: 'site-verification=4f9a' });
        break;
      case 'DMARC':
        zone.push({ type: 'TXT', name: r.name, value: r.value });
        break;
      case 'MX_BOUNCE':
      case 'MX_INBOUND':
        zone.push({ type: 'MX', name: r.name, exchange: `${r.value}.`, priority: r.priority ?? 10 });
        break;
      case 'TRACKING':
        zone.push({ type: 'CNAME', name: r.name, target: r.value });
        break;
    }
  }
  return zone;
}

describe('domain records against a real DNS server', () => {
  let dns: TestDns;
  let keys: { rsa: DkimKey; ed25519: DkimKey };
  let records: DnsRecordSpec[];

  beforeAll(async () => {
    keys = await generateDkimKeys(Date.now());
    records = recordsWith(keys);
    dns = await startDns();
  });
  afterAll(async () => {
    await dns?.stop();
  });

  it('verifies every record once published, and the domain becomes active', async () => {
    await dns.set(published(records));
    const checked = await checkRecords(records, resolverFor(dns));
    expect(checked.map((r) => [r.record, r.status, r.detail])).toEqual([
      ['DKIM', 'verified', undefined],
      ['DKIM_ED25519', 'verified', undefined],
      ['SPF', 'verified', undefined],
      ['MX_BOUNCE', 'verified', undefined],
      ['MX_INBOUND', 'verified', undefined],
      ['DMARC', 'verified', undefined],
      ['TRACKING', 'verified', undefined],
    ]);
    expect(domainStatus(checked)).toBe('active');
  });

  it('fails a DKIM record holding another key, and the domain is not active', async () => {
    const stale = await generateDkimKeys(Date.now());
    const zone = published(records).map((r) =>
      r.type === 'TXT' && r.name === `${keys.rsa.selector}._domainkey.${DOMAIN}` ? { ...r, value: chunked(stale.rsa.publicTxt) } : r,
    );
    await dns.set(zone);
    const checked = await checkRecords(records, resolverFor(dns));
    const dkim = checked.find((r) => r.record === 'DKIM')!;
    expect(dkim.status).toBe('failed');
    expect(dkim.detail).toMatch(/^different public key/);
    expect(checked.filter((r) => r.status !== 'verified').map((r) => r.record)).toEqual(['DKIM']);
    expect(domainStatus(checked)).toBe('verifying');
  });

  it('leaves every record pending while nothing is published', async () => {
    await dns.set([]);
    const checked = await checkRecords(records, resolverFor(dns));
    expect(checked.map((r) => [r.record, r.status, r.detail])).toEqual(records.map((r) => [r.record, 'pending', undefined]));
    expect(domainStatus(checked)).toBe('verifying');
  });

  it('signs mail that passes DKIM (RSA and Ed25519), SPF and DMARC at a receiver', async () => {
    await dns.set(published(records));
    const message = Buffer.from(
      [
        `From: Shop <orders@${DOMAIN}>`,
        'To: someone@receiver.test',
        'Subject: Your order',
        'Date: Tue, 07 Jan 2025 10:00:00 +0000',
        `Message-ID: <order-1@${DOMAIN}>`,
        'MIME-Version: 1.0',
        'Content-Type: text/plain; charset=utf-8',
        '',
        'Thank you for your order.',
        '',
      ].join('\r\n'),
    );
    // mailauth signs with the entries of signatureData only (top-level key
    // fields are ignored at run time), while its bundled typings demand the
    // top-level ones; the assertion follows what the code does.
    const signed = await dkimSign(message, {
      signatureData: [keys.rsa, keys.ed25519].map((key) => ({
        signingDomain: DOMAIN,
        selector: key.selector,
        privateKey: key.privateKeyPem,
        algorithm: key.algorithm,
      })),
    } as DKIMSignOptions);
    expect(signed.errors).toEqual([]);

    const result = await authenticate(Buffer.concat([Buffer.from(signed.signatures), message]), {
      ip: '127.0.0.1',
      helo: MX_HOST,
      sender: `bounce-x@bounces.${DOMAIN}`,
      mta: 'mx.receiver.test',
      resolver: mailauthResolver(resolverFor(dns)),
      disableArc: true,
      disableBimi: true,
    });
    expect(result.dkim.results.map((r) => [r.selector, r.status.result])).toEqual([
      [keys.rsa.selector, 'pass'],
      [keys.ed25519.selector, 'pass'],
    ]);
    expect(result.dkim.results.map((r) => /header\.a=([\w-]+)/.exec(r.info)?.[1])).toEqual(['rsa-sha256', 'ed25519-sha256']);
    expect(result.spf && result.spf.status.result).toBe('pass');
    // The return path is a subdomain of the From domain: aligned under relaxed alignment (RFC 7489 §3.1.2).
    expect(result.dmarc && result.dmarc.status.result).toBe('pass');
    expect(result.dmarc && result.dmarc.alignment).toMatchObject({
      spf: { result: `bounces.${DOMAIN}` },
      dkim: { result: DOMAIN },
    });
  });
});

describe('domain records while DNS is failing', () => {
  let dns: TestDns;
  beforeAll(async () => {
    dns = await startDns();
  });
  afterAll(async () => {
    await dns?.stop();
  });

  it('reports a temporary error, not a missing record, on SERVFAIL', async () => {
    const records = recordsWith(await generateDkimKeys(Date.now()));
    await dns.servfail(DOMAIN);
    const checked = await checkRecords(records, resolverFor(dns));
    expect(checked.map((r) => [r.record, r.status, r.detail])).toEqual(
      records.map((r) => [r.record, 'pending', TEMPORARY_DNS_ERROR]),
    );
  });
});
