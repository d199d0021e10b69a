import { describe, expect, it } from 'vitest';
import { cachingMxResolver, isPublicAddress, resolveDestination, type MxResolver } from '../../../src/delivery/mx.js';

function dnsError(code: string): Error {
  return Object.assign(new Error(code), { code });
}

type Answer = string[] | Array<{ exchange: string; priority: number }> | string; // a string is an error code

/** A resolver answering from a table keyed "TYPE name"; anything missing is NODATA. */
function fakeResolver(table: Record<string, Answer>): MxResolver {
  const answer = async (key: string) => {
    const a = table[key];
    if (a === undefined) throw dnsError('ENODATA');
    if (typeof a === 'string') throw dnsError(a);
    return a;
  };
  return {
    resolveMx: (name: string) => answer(`MX ${name}`),
    resolve4: (name: string) => answer(`A ${name}`),
    resolve6: (name: string) => answer(`AAAA ${name}`),
  } as MxResolver;
}

describe('resolveDestination', () => {
  it('orders MX hosts by preference, IPv4 before IPv6', async () => {
    const resolver = fakeResolver({
      'MX example.com': [{ exchange: 'mx2.example.com', priority: 20 }, { exchange: 'mx1.example.com', priority: 10 }],
      'A mx1.example.com': ['93.184.216.34'],
      'AAAA mx1.example.com': ['2606:2800:220:1::1'],
      'A mx2.example.com': ['93.184.216.35'],
    });
    expect(await resolveDestination('Example.COM.', { resolver })).toEqual({
      ok: true,
      hosts: [
        { exchange: 'mx1.example.com', priority: 10, addresses: ['93.184.216.34', '2606:2800:220:1::1'] },
        { exchange: 'mx2.example.com', priority: 20, addresses: ['93.184.216.35'] },
      ],
    });
  });

  it('shuffles hosts of equal preference', async () => {
    const resolver = fakeResolver({
      'MX example.com': [{ exchange: 'a.example.com', priority: 5 }, { exchange: 'b.example.com', priority: 5 }],
      'A a.example.com': ['93.184.216.1'],
      'A b.example.com': ['93.184.216.2'],
    });
    const first = async (values: number[]) => {
      const d = await resolveDestination('example.com', { resolver, rng: () => values.shift()! });
      return d.ok ? d.hosts[0].exchange : undefined;
    };
    expect(await first([0.1, 0.9])).toBe('a.example.com');
    expect(await first([0.9, 0.1])).toBe('b.example.com');
  });

  it('falls back to the domain itself only when there is no MX (implicit MX)', async () => {
    const resolver = fakeResolver({ 'A example.com': ['93.184.216.34'] });
    expect(await resolveDestination('example.com', { resolver })).toEqual({
      ok: true,
      hosts: [{ exchange: 'example.com', priority: 0, addresses: ['93.184.216.34'] }],
    });
  });

  it('fails permanently on a null MX without looking up any address', async () => {
    const resolver = fakeResolver({ 'MX example.com': [{ exchange: '', priority: 0 }], 'A example.com': 'ESERVFAIL' });
    expect(await resolveDestination('example.com', { resolver })).toMatchObject({ ok: false, permanent: true, code: 'null_mx' });
  });

  it('fails permanently on NXDOMAIN and temporarily on SERVFAIL, timeout or refusal', async () => {
    for (const [code, permanent] of [['ENOTFOUND', true], ['ESERVFAIL', false], ['ETIMEOUT', false], ['EREFUSED', false], ['ECONNREFUSED', false]] as const) {
      const d = await resolveDestination('example.com', { resolver: fakeResolver({ 'MX example.com': code }) });
      expect(d).toMatchObject({ ok: false, permanent, code });
    }
  });

  it('is temporary when an MX host lookup fails and nothing else is usable', async () => {
    const resolver = fakeResolver({
      'MX example.com': [{ exchange: 'mx.example.com', priority: 10 }],
      'A mx.example.com': 'ETIMEOUT',
    });
    expect(await resolveDestination('example.com', { resolver })).toMatchObject({ ok: false, permanent: false, code: 'ETIMEOUT' });
  });

  it('skips hosts on private addresses, and fails permanently when none is left', async () => {
    const table = {
      'MX example.com': [{ exchange: 'in.example.com', priority: 1 }, { exchange: 'out.example.com', priority: 2 }],
      'A in.example.com': ['10.0.0.5'],
      'A out.example.com': ['93.184.216.34'],
    };
    const d = await resolveDestination('example.com', { resolver: fakeResolver(table) });
    expect(d.ok && d.hosts.map((h) => h.exchange)).toEqual(['out.example.com']);

    const onlyPrivate = fakeResolver({ ...table, 'A out.example.com': ['127.0.0.1'] });
    const refused = await resolveDestination('example.com', { resolver: onlyPrivate });
    expect(refused).toMatchObject({ ok: false, permanent: true, code: 'private_address' });
    expect(!refused.ok && refused.reason).toContain('in.example.com=10.0.0.5');

    const allowed = await resolveDestination('example.com', { resolver: onlyPrivate, allowPrivate: true });
    expect(allowed.ok && allowed.hosts.map((h) => h.addresses[0])).toEqual(['10.0.0.5', '127.0.0.1']);
  });

  it('fails permanently when no host has an address', async () => {
    const resolver = fakeResolver({ 'MX example.com': [{ exchange: 'gone.example.com', priority: 1 }], 'A gone.example.com': 'ENOTFOUND' });
    expect(await resolveDestination('example.com', { resolver })).toMatchObject({ ok: false, permanent: true, code: 'no_address' });
    expect(await resolveDestination('example.com', { resolver: fakeResolver({}) })).toMatchObject({ ok: false, permanent: true, code: 'no_address' });
  });

  it('refuses a name that is not a domain', async () => {
    expect(await resolveDestination('localhost', { resolver: fakeResolver({}) })).toMatchObject({ ok: false, permanent: true, code: 'invalid_domain' });
  });
});

describe('isPublicAddress', () => {
  it.each([
    ['93.184.216.34', true],
    ['2606:2800:220:1::1', true],
    ['64:ff9b::8.8.8.8', true],
    ['10.1.2.3', false],
    ['172.31.255.255', false],
    ['192.168.1.1', false],
    ['127.0.0.2', false],
    ['169.254.169.254', false],
    ['100.64.0.1', false],
    ['0.0.0.0', false],
    ['224.0.0.1', false],
    ['255.255.255.255', false],
    ['198.18.0.1', false],
    ['::1', false],
    ['::', false],
    ['fe80::1', false],
    ['fd12:3456::1', false],
    ['::ffff:8.8.8.8', false],
    ['::ffff:127.0.0.1', false],
    ['64:ff9b::10.0.0.1', false],
    ['64:ff9b::a00:1', false],
    ['2001:db8::1', false],
    ['ff02::1', false],
    ['not-an-ip', false],
  ])('%s -> %s', (ip, expected) => {
    expect(isPublicAddress(ip)).toBe(expected);
  });
});

describe('cachingMxResolver', () => {
  /** Counts the queries that reach the resolver underneath; answers and TTLs come from the table. */
  function counting(table: Record<string, Answer>, ttl = 300) {
    const asked: string[] = [];
    const inner = fakeResolver(table);
    const resolver = {
      resolveMx: (name: string) => (asked.push(`MX ${name}`), inner.resolveMx(name)),
      resolve4: async (name: string, o?: { ttl: boolean }) => {
        asked.push(`A ${name}`);
        const addresses = await inner.resolve4(name);
        return o?.ttl ? addresses.map((address) => ({ address, ttl })) : addresses;
      },
      resolve6: (name: string) => (asked.push(`AAAA ${name}`), inner.resolve6(name)),
    } as MxResolver;
    return { asked, resolver };
  }

  it('asks once for concurrent and repeated lookups, and again once the TTL has passed', async () => {
    let now = 0;
    const { asked, resolver } = counting({ 'MX example.com': [{ exchange: 'mx.example.com', priority: 10 }], 'A mx.example.com': ['192.0.2.1'] }, 30);
    const cached = cachingMxResolver(resolver, { now: () => now });
    const opts = { resolver: cached, allowPrivate: true };
    const [first, second] = await Promise.all([resolveDestination('example.com', opts), resolveDestination('example.com', opts)]);
    expect(second).toEqual(first);
    expect(await resolveDestination('example.com', opts)).toEqual(first);
    expect(asked.sort()).toEqual(['A mx.example.com', 'AAAA mx.example.com', 'MX example.com']);
    // The A record's 30 s TTL is shorter than the 60 s cap: only it is asked again.
    now = 31_000;
    await resolveDestination('example.com', opts);
    expect(asked.filter((q) => q === 'A mx.example.com')).toHaveLength(2);
    expect(asked.filter((q) => q === 'MX example.com')).toHaveLength(1);
    now = 61_000;
    await resolveDestination('example.com', opts);
    expect(asked.filter((q) => q === 'MX example.com')).toHaveLength(2);
  });

  it('keeps an answer with a TTL of 0 for the minimum only', async () => {
    let now = 0;
    const { asked, resolver } = counting({ 'A mx.example.com': ['192.0.2.1'] }, 0);
    const cached = cachingMxResolver(resolver, { now: () => now, minTtlMs: 1_000 });
    expect(await cached.resolve4('mx.example.com')).toEqual(['192.0.2.1']);
    now = 999;
    await cached.resolve4('mx.example.com');
    expect(asked).toEqual(['A mx.example.com']);
    now = 1_000;
    await cached.resolve4('mx.example.com');
    expect(asked).toEqual(['A mx.example.com', 'A mx.example.com']);
  });

  it('keeps NXDOMAIN briefly and never keeps SERVFAIL', async () => {
    let now = 0;
    const { asked, resolver } = counting({ 'MX gone.example': 'ENOTFOUND', 'MX flaky.example': 'ESERVFAIL' });
    const cached = cachingMxResolver(resolver, { now: () => now, negativeTtlMs: 5_000 });
    for (let i = 0; i < 2; i++) {
      expect(await resolveDestination('gone.example', { resolver: cached })).toMatchObject({ ok: false, permanent: true, code: 'ENOTFOUND' });
      expect(await resolveDestination('flaky.example', { resolver: cached })).toMatchObject({ ok: false, permanent: false, code: 'ESERVFAIL' });
    }
    expect(asked.filter((q) => q === 'MX gone.example')).toHaveLength(1);
    expect(asked.filter((q) => q === 'MX flaky.example')).toHaveLength(2);
    now = 5_001;
    await resolveDestination('gone.example', { resolver: cached });
    expect(asked.filter((q) => q === 'MX gone.example')).toHaveLength(2);
  });

  it('holds a bounded number of names', async () => {
    const { asked, resolver } = counting({});
    const cached = cachingMxResolver(resolver, { maxEntries: 2 });
    for (const name of ['a.example', 'b.example', 'c.example', 'a.example']) await cached.resolveMx(name).catch(() => undefined);
    // a.example was pushed out by c.example, so it is asked again.
    expect(asked).toEqual(['MX a.example', 'MX b.example', 'MX c.example', 'MX a.example']);
  });
});
