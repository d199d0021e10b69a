import { describe, expect, it } from 'vitest';
import type { LookupAddress } from 'node:dns';
import { checkWebhookUrl, nonPublicReason, pinnedLookup, v6Bytes } from '../../../src/webhooks/url-policy.js';

describe('nonPublicReason', () => {
  it.each([
    ['0.0.0.0'], ['10.1.2.3'], ['100.64.0.1'], ['100.127.255.254'], ['127.0.0.1'], ['127.255.0.9'], ['169.254.169.254'],
    ['172.16.0.1'], ['172.31.255.255'], ['192.0.0.8'], ['192.0.2.1'], ['192.168.1.1'], ['198.18.0.1'], ['224.0.0.1'],
    ['239.255.255.250'], ['240.0.0.1'], ['255.255.255.255'],
  ])('refuses IPv4 %s', (ip) => {
    expect(nonPublicReason(ip)).toBeTypeOf('string');
  });

  it.each([['8.8.8.8'], ['1.1.1.1'], ['100.63.255.255'], ['100.128.0.0'], ['172.15.255.255'], ['172.32.0.0'], ['93.184.216.34']])(
    'allows public IPv4 %s', (ip) => {
      expect(nonPublicReason(ip)).toBeUndefined();
    });

  it.each([
    ['::', 'unspecified'], ['::1', 'loopback'], ['fe80::1', 'link-local'], ['fc00::1', 'unique-local'], ['fd12:3456::1', 'unique-local'],
    ['ff02::1', 'multicast'], ['fec0::1', 'site-local'], ['2001:db8::1', 'documentation'], ['100::1', 'discard'],
    ['2001:0:4136:e378::1', 'Teredo'], ['64:ff9b:1::1', 'local-use NAT64'],
    ['::ffff:127.0.0.1', 'loopback'], ['::ffff:7f00:1', 'loopback'], ['::ffff:10.0.0.1', 'private'],
    ['::ffff:0:169.254.169.254', 'link-local'], ['::127.0.0.1', 'loopback'],
    ['64:ff9b::127.0.0.1', 'loopback'], ['64:ff9b::a9fe:a9fe', 'link-local'], ['64:ff9b::6440:1', 'carrier-grade NAT'],
    ['2002:7f00:1::', 'loopback'], ['2002:c0a8:101::1', 'private'], ['2002:a9fe:a9fe::', 'link-local'],
  ])('refuses IPv6 %s (%s)', (ip, why) => {
    expect(nonPublicReason(ip)).toContain(why);
  });

  it.each([['2606:4700:4700::1111'], ['2a00:1450:4001:82a::200e'], ['64:ff9b::808:808'], ['2002:808:808::1'], ['::ffff:8.8.8.8']])(
    'allows public IPv6 %s', (ip) => {
      expect(nonPublicReason(ip)).toBeUndefined();
    });

  it('reads every IPv6 spelling to the same bytes', () => {
    const bytes = v6Bytes('::ffff:127.0.0.1');
    expect(v6Bytes('::ffff:7f00:1')).toEqual(bytes);
    expect(v6Bytes('0:0:0:0:0:ffff:7f00:0001')).toEqual(bytes);
    expect(v6Bytes('[::FFFF:127.0.0.1]')).toEqual(bytes);
    expect(v6Bytes('1:2:3:4:5:6:7:8')).toEqual([0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8]);
    expect(v6Bytes('not-an-address')).toBeUndefined();
  });

  it('throws on something that is not an address', () => {
    expect(() => nonPublicReason('example.com')).toThrow(/not an IP address/);
  });
});

describe('checkWebhookUrl', () => {
  it.each([
    'http://127.0.0.1/hook', 'http://2130706433/', 'http://0x7f.1/', 'http://017700000001/', 'http://127.1/', 'http://0/',
    'http://0x7f000001/', 'http://[::1]/', 'http://[::ffff:127.0.0.1]/', 'http://[64:ff9b::7f00:1]/', 'http://[2002:7f00:1::]/',
    'http://169.254.169.254/latest/meta-data/', 'http://100.64.0.1/', 'http://[fd00::1]/', 'http://[fe80::1]/', 'http://224.0.0.1/',
    'http://localhost:8080/', 'http://api.localhost/', 'https://10.0.0.1:8443/x', 'http://localhost./x', 'http://api.localhost../',
    'http://127.0.0.1./',
  ])('refuses %s unless private targets are allowed', (url) => {
    const verdict = checkWebhookUrl(url, false);
    expect(verdict).toMatchObject({ ok: false, nonPublic: true });
    expect(checkWebhookUrl(url, true).ok).toBe(true);
  });

  it.each([
    ['ftp://example.com/', 'http or https'], ['file:///etc/passwd', 'http or https'], ['not a url', 'absolute URL'],
    ['https://user:pass@example.com/', 'user name or password'], ['https://token@example.com/', 'user name or password'],
    ['javascript:alert(1)', 'http or https'], ['https://example.com:0/', 'port 0'],
  ])('refuses %s whatever the setting', (url, reason) => {
    for (const allow of [false, true]) {
      const verdict = checkWebhookUrl(url, allow);
      expect(verdict.ok).toBe(false);
      if (!verdict.ok) {
        expect(verdict.reason).toContain(reason);
        expect(verdict.nonPublic).toBeUndefined();
      }
    }
  });

  it('accepts public URLs and normalises them, dropping a fragment', () => {
    expect(checkWebhookUrl('https://Hooks.Example.com:8443/in?x=1#frag', false)).toEqual({ ok: true, url: 'https://hooks.example.com:8443/in?x=1' });
    expect(checkWebhookUrl('http://93.184.216.34/', false)).toEqual({ ok: true, url: 'http://93.184.216.34/' });
  });
});

describe('pinnedLookup', () => {
  const lookupWith = (answers: LookupAddress[], allowPrivate = false) => {
    const lookup = pinnedLookup(async () => answers, allowPrivate);
    return (options: { all?: boolean; family?: number }) => new Promise<{ err: NodeJS.ErrnoException | null; address: unknown; family?: number }>(
      (resolve) => lookup('hooks.example', options, (err, address, family) => resolve({ err, address, family })));
  };

  it('hands the socket exactly the checked addresses', async () => {
    const run = lookupWith([{ address: '93.184.216.34', family: 4 }, { address: '2606:4700::1', family: 6 }]);
    expect(await run({})).toEqual({ err: null, address: '93.184.216.34', family: 4 });
    expect((await run({ all: true })).address).toEqual([{ address: '93.184.216.34', family: 4 }, { address: '2606:4700::1', family: 6 }]);
    expect(await run({ family: 6 })).toEqual({ err: null, address: '2606:4700::1', family: 6 });
  });

  it('refuses a name with any non-public answer (DNS rebinding to loopback or metadata)', async () => {
    for (const answers of [
      [{ address: '127.0.0.1', family: 4 }],
      [{ address: '93.184.216.34', family: 4 }, { address: '169.254.169.254', family: 4 }],
      [{ address: '::ffff:10.0.0.1', family: 6 }],
    ]) {
      const { err } = await lookupWith(answers)({ all: true });
      expect(err?.code).toBe('EADDRNOTPUBLIC');
      expect(err?.message).toMatch(/resolves to/);
    }
    expect((await lookupWith([{ address: '127.0.0.1', family: 4 }], true)({})).address).toBe('127.0.0.1');
  });

  it('reports a name without addresses of the wanted family', async () => {
    const { err } = await lookupWith([{ address: '93.184.216.34', family: 4 }])({ family: 6 });
    expect(err?.code).toBe('ENOTFOUND');
  });
});
