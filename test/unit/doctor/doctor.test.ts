import { describe, expect, it } from 'vitest';
import { reverseName } from '../../../src/doctor/identity.js';
import { fail, formatReport, ok, reportOf, warn } from '../../../src/doctor/report.js';
import { checkPublicUrl } from '../../../src/doctor/settings.js';

describe('reverseName', () => {
  it('names IPv4 addresses under in-addr.arpa and IPv6 ones, expanded nibble by nibble, under ip6.arpa', () => {
    expect(reverseName('192.0.2.10')).toBe('10.2.0.192.in-addr.arpa');
    expect(reverseName('2001:db8::10')).toBe(`0.1.0.0.${'0.0.0.0.'.repeat(5)}8.b.d.0.1.0.0.2.ip6.arpa`);
    expect(reverseName('::1')).toBe(`1.${'0.'.repeat(31)}ip6.arpa`);
    expect(reverseName('2001:DB8:0:0:0:0:0:1')).toBe(reverseName('2001:db8::1'));
  });
});

describe('the report', () => {
  it('is as bad as its worst check: a warning alone is not a failure', () => {
    expect(reportOf([ok('store', 'migrations', 'up to date')]).status).toBe('ok');
    expect(reportOf([ok('store', 'a', ''), warn('tls', 'b', '')]).status).toBe('warn');
    expect(reportOf([warn('tls', 'b', ''), fail('identity', 'c', '', 'fix')])).toMatchObject({ status: 'fail', counts: { ok: 0, warn: 1, fail: 1 } });
  });

  it('prints a heading per area and per domain, the fix under what is not ok, and control characters written out', () => {
    const text = formatReport(reportOf([
      ok('identity', 'host name', 'mx.example.com resolves to 192.0.2.10'),
      { ...fail('domain', 'DKIM sel._domainkey.example.com', 'different public key', 'publish TXT sel._domainkey.example.com "v=DKIM1; p=…"'), domain: 'example.com', workspace_id: 'ws_1' },
      { ...warn('domain', 'DMARC _dmarc.evil.test', 'p=none\u001b[2J'), domain: 'evil.test', workspace_id: 'ws_2' },
    ]), (s) => s.replace(/\u001b/g, '\\u001b'));
    expect(text.split('\n')).toEqual([
      'Server identity (MAILROOM_HOSTNAME)',
      '  ok    host name: mx.example.com resolves to 192.0.2.10',
      '',
      'Domain example.com (workspace ws_1)',
      '  fail  DKIM sel._domainkey.example.com: different public key',
      '        -> publish TXT sel._domainkey.example.com "v=DKIM1; p=…"',
      '',
      'Domain evil.test (workspace ws_2)',
      '  warn  DMARC _dmarc.evil.test: p=none\\u001b[2J',
      '',
      '1 ok, 1 warning, 1 failed.',
    ]);
  });
});

describe('the public URL check', () => {
  it('wants https beyond loopback, and a URL that is not this machine', () => {
    expect(checkPublicUrl({ publicUrl: 'https://mail.example.com', httpHost: '0.0.0.0' })[0].status).toBe('ok');
    expect(checkPublicUrl({ publicUrl: 'http://mail.example.com', httpHost: '127.0.0.1' })[0].status).toBe('ok');
    expect(checkPublicUrl({ publicUrl: 'http://mail.example.com', httpHost: '0.0.0.0' })[0]).toMatchObject({ status: 'warn', found: expect.stringContaining('not https') });
    expect(checkPublicUrl({ publicUrl: 'http://127.0.0.1:3000', httpHost: '127.0.0.1' })[0]).toMatchObject({ status: 'warn', found: expect.stringContaining('is this machine') });
    expect(checkPublicUrl({ publicUrl: 'http://[::1]:3000', httpHost: '::1' })[0].status).toBe('warn');
  });
});
