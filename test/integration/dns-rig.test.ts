import { promises as dns } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDns, type DnsRecord, type TestDns } from '../helpers/dns.js';

// A DKIM-sized value: longer than one 255-byte TXT chunk, and longer than
// a dnsmasq config-file line can hold.
const LONG_TXT = `v=DKIM1; k=rsa; p=${'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A'.repeat(35)}`;

const records: DnsRecord[] = [
  { type: 'MX', name: 'mail.test', exchange: 'mx2.mail.test', priority: 20 },
  { type: 'MX', name: 'mail.test', exchange: 'mx1.mail.test', priority: 10 },
  { type: 'MX', name: 'nomail.test', exchange: '.', priority: 0 },
  { type: 'A', name: 'mx1.mail.test', address: '192.0.2.1' },
  { type: 'A', name: 'mx1.mail.test', address: '192.0.2.2' },
  { type: 'AAAA', name: 'mx1.mail.test', address: '2001:db8::1' },
  { type: 'TXT', name: 'sel._domainkey.mail.test', value: ['v=DKIM1; k=rsa; ', 'p=QUJD'] },
  { type: 'TXT', name: 'long._domainkey.mail.test', value: LONG_TXT },
  { type: 'TXT', name: 'mail.test', value: 'v=spf1 ip4:192.0.2.0/24 -all' },
  { type: 'CNAME', name: 'alias.mail.test', target: 'mx1.mail.test' },
  { type: 'A', name: 'www.example.org', address: '192.0.2.80' },
  { type: 'A', name: 'bare.mail.test', address: '192.0.2.90', reverse: false },
  { type: 'AAAA', name: 'bare.mail.test', address: '2001:db8::90', reverse: false },
  { type: 'PTR', name: '192.0.2.2', target: 'other.mail.test' },
  { type: 'PTR', name: '2001:db8::1', target: 'other.mail.test' },
];

describe('test DNS rig (dnsmasq)', () => {
  let rig: TestDns;
  let resolver: dns.Resolver;

  beforeAll(async () => {
    rig = await startDns(records);
    resolver = new dns.Resolver({ timeout: 300, tries: 1 });
    resolver.setServers([rig.server]);
  });

  afterAll(async () => {
    await rig?.stop();
  });

  it('listens on 127.0.0.1 and describes itself in MAILROOM_DNS_SERVERS form', () => {
    expect(rig.host).toBe('127.0.0.1');
    expect(rig.port).toBeGreaterThan(1024);
    expect(rig.server).toBe(`127.0.0.1:${rig.port}`);
  });

  it('serves several MX records with their priorities', async () => {
    const mx = await resolver.resolveMx('mail.test');
    expect(mx.sort((a, b) => a.priority - b.priority)).toEqual([
      { exchange: 'mx1.mail.test', priority: 10 },
      { exchange: 'mx2.mail.test', priority: 20 },
    ]);
  });

  it('serves a null MX (RFC 7505) as the root name', async () => {
    expect(await resolver.resolveMx('nomail.test')).toEqual([{ exchange: '', priority: 0 }]);
  });

  it('serves A and AAAA records', async () => {
    expect((await resolver.resolve4('mx1.mail.test')).sort()).toEqual(['192.0.2.1', '192.0.2.2']);
    expect(await resolver.resolve6('mx1.mail.test')).toEqual(['2001:db8::1']);
    expect(await resolver.resolve4('www.example.org')).toEqual(['192.0.2.80']);
  });

  it('answers reverse lookups: the first address of an A record\'s name, PTR records over that, none with reverse: false', async () => {
    expect(await resolver.reverse('192.0.2.1')).toEqual(['mx1.mail.test']);
    expect(await resolver.reverse('192.0.2.80')).toEqual(['www.example.org']);
    expect(await resolver.reverse('192.0.2.2')).toEqual(['other.mail.test']);
    expect(await resolver.reverse('2001:db8::1')).toEqual(['other.mail.test']);
    expect(await resolver.resolve4('bare.mail.test')).toEqual(['192.0.2.90']);
    expect(await resolver.resolve6('bare.mail.test')).toEqual(['2001:db8::90']);
    await expect(resolver.reverse('192.0.2.90')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    await expect(resolver.reverse('2001:db8::90')).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });

  it('serves a TXT record as the chunks it was given', async () => {
    expect(await resolver.resolveTxt('sel._domainkey.mail.test')).toEqual([['v=DKIM1; k=rsa; ', 'p=QUJD']]);
    expect(await resolver.resolveTxt('mail.test')).toEqual([['v=spf1 ip4:192.0.2.0/24 -all']]);
  });

  it('splits a TXT value longer than 255 bytes into chunks', async () => {
    const [chunks, ...others] = await resolver.resolveTxt('long._domainkey.mail.test');
    expect(others).toEqual([]);
    expect(chunks.length).toBe(Math.ceil(LONG_TXT.length / 255));
    expect(chunks.every((chunk) => chunk.length <= 255)).toBe(true);
    expect(chunks.join('')).toBe(LONG_TXT);
  });

  it('serves CNAME records and follows them', async () => {
    expect(await resolver.resolveCname('alias.mail.test')).toEqual(['mx1.mail.test']);
    expect((await resolver.resolve4('alias.mail.test')).sort()).toEqual(['192.0.2.1', '192.0.2.2']);
  });

  it('answers NXDOMAIN for unknown names in the zones in use, NODATA for a missing type', async () => {
    await expect(resolver.resolve4('nothing.test')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    await expect(resolver.resolveMx('nothing.example')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    await expect(resolver.resolve4('nothing.example.org')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    await expect(resolver.resolveMx('mx1.mail.test')).rejects.toMatchObject({ code: 'ENODATA' });
  });

  it('answers SERVFAIL under a servfail() suffix, quickly', async () => {
    await rig.servfail('broken.test');
    const started = Date.now();
    await expect(resolver.resolveMx('broken.test')).rejects.toMatchObject({ code: 'ESERVFAIL' });
    await expect(resolver.resolveTxt('_dmarc.x.broken.test')).rejects.toMatchObject({ code: 'ESERVFAIL' });
    expect(Date.now() - started).toBeLessThan(250);
    // Names outside the suffix are unaffected.
    expect(await resolver.resolveMx('nomail.test')).toEqual([{ exchange: '', priority: 0 }]);
  });

  it('set() replaces the records and add() extends them, before resolving', async () => {
    await rig.set([{ type: 'MX', name: 'new.test', exchange: 'mx.new.test', priority: 5 }]);
    expect(await resolver.resolveMx('new.test')).toEqual([{ exchange: 'mx.new.test', priority: 5 }]);
    await expect(resolver.resolveMx('mail.test')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    // Zones seen earlier stay local: a dropped name is NXDOMAIN, not REFUSED.
    await expect(resolver.resolve4('www.example.org')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    // servfail() outlives set().
    await expect(resolver.resolve4('broken.test')).rejects.toMatchObject({ code: 'ESERVFAIL' });

    await rig.add({ type: 'A', name: 'mx.new.test', address: '192.0.2.25' });
    expect(await resolver.resolve4('mx.new.test')).toEqual(['192.0.2.25']);
    expect(await resolver.resolveMx('new.test')).toEqual([{ exchange: 'mx.new.test', priority: 5 }]);
  });

  it('rejects malformed records without changing the served set', async () => {
    await expect(rig.add({ type: 'A', name: 'bad.test', address: '2001:db8::1' })).rejects.toThrow(/IPv4/);
    await expect(rig.add({ type: 'TXT', name: 'bad.test', value: ['x'.repeat(256)] })).rejects.toThrow(/255/);
    await expect(rig.add({ type: 'MX', name: 'bad name.test', exchange: '.', priority: 0 })).rejects.toThrow(/invalid/);
    expect(await resolver.resolve4('mx.new.test')).toEqual(['192.0.2.25']);
  });
});

describe('test DNS rig lifecycle', () => {
  it('frees its port on stop and supports await using', async () => {
    let server: string;
    {
      await using rig = await startDns([{ type: 'A', name: 'a.test', address: '192.0.2.7' }]);
      server = rig.server;
      const resolver = new dns.Resolver({ timeout: 300, tries: 1 });
      resolver.setServers([server]);
      expect(await resolver.resolve4('a.test')).toEqual(['192.0.2.7']);
    }
    const resolver = new dns.Resolver({ timeout: 300, tries: 1 });
    resolver.setServers([server]);
    await expect(resolver.resolve4('a.test')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });
});
