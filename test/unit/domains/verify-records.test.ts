import type { MxRecord } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { recordsFor, type DnsRecordSpec } from '../../../src/domains/dns-records.js';
import {
  checkRecords,
  domainStatus,
  TEMPORARY_DNS_ERROR,
  type DnsLookup,
} from '../../../src/domains/verify-records.js';

const KEY = 'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwnlYlcHa+Nc0aeJ9RtmxV3IZ8x2tqDTe/FQOHiI2jmECpUxIQjUI1cKOQR==';
const ED_KEY = '11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=';

const all = recordsFor('example.com', {
  dkim: [
    { selector: 'mr202501', publicTxt: `v=DKIM1; k=rsa; p=${KEY}`, state: 'active' },
    { selector: 'mr202501e', publicTxt: `v=DKIM1; k=ed25519; p=${ED_KEY}`, state: 'active' },
  ],
  mxHost: 'mx.mailroom.test',
  inboundEnabled: true,
  trackingEnabled: true,
  trackingTarget: 'track.mailroom.test',
});
const spec = (kind: DnsRecordSpec['record']): DnsRecordSpec => all.find((r) => r.record === kind)!;

type Answer = { txt?: string[][]; mx?: MxRecord[]; cname?: string[] } | { error: string };

/** A resolver over a fixed zone: unknown names are NXDOMAIN, missing types NODATA. */
function fakeDns(zone: Record<string, Answer>): DnsLookup {
  const answer = async <T>(name: string, pick: (a: Exclude<Answer, { error: string }>) => T | undefined): Promise<T> => {
    const entry = zone[name];
    const fail = (code: string) => Object.assign(new Error(`${code} ${name}`), { code });
    if (!entry) throw fail('ENOTFOUND');
    if ('error' in entry) throw fail(entry.error);
    const value = pick(entry);
    if (value === undefined) throw fail('ENODATA');
    return value;
  };
  return {
    resolveTxt: (name) => answer(name, (a) => a.txt),
    resolveMx: (name) => answer(name, (a) => a.mx),
    resolveCname: (name) => answer(name, (a) => a.cname),
  };
}

async function check(kind: DnsRecordSpec['record'], answer: Answer) {
  const record = spec(kind);
  const [result] = await checkRecords([record], fakeDns({ [record.name]: answer }));
  return { status: result.status, detail: result.detail };
}

const mx = (exchange: string, priority = 10): MxRecord => ({ exchange, priority });

describe('checkRecords: DKIM', () => {
  const chunks = (text: string, size: number) => text.match(new RegExp(`.{1,${size}}`, 'g'))!;

  it.each([
    ['the exact value', [`v=DKIM1; k=rsa; p=${KEY}`]],
    ['the value split in several strings', chunks(`v=DKIM1; k=rsa; p=${KEY}`, 40)],
    ['tags reordered, upper-cased, spaced', [`P=${KEY.slice(0, 30)} ${KEY.slice(30)} ;K=rsa;V=DKIM1;`]],
    ['no k= (rsa is the default) and no v=', [`p=${KEY}`]],
    ['extra tags and no base64 padding', [`v=DKIM1; h=sha256; t=s; k=rsa; p=${KEY.replace(/=+$/, '')}`]],
  ])('verifies %s', async (_, txt) => {
    expect(await check('DKIM', { txt: [txt] })).toEqual({ status: 'verified', detail: undefined });
  });

  it('verifies an Ed25519 key only with k=ed25519', async () => {
    expect((await check('DKIM_ED25519', { txt: [[`v=DKIM1; k=ed25519; p=${ED_KEY}`]] })).status).toBe('verified');
    expect(await check('DKIM_ED25519', { txt: [[`v=DKIM1; p=${ED_KEY}`]] })).toEqual({
      status: 'failed',
      detail: 'key type k=rsa, expected k=ed25519',
    });
  });

  it.each([
    ['another key', [[`v=DKIM1; k=rsa; p=${KEY.replace('wnlY', 'XXXX')}`]], /different public key/],
    ['a revoked key (empty p=)', [['v=DKIM1; k=rsa; p=']], /different public key/],
    ['a wrong version', [[`v=DKIM2; k=rsa; p=${KEY}`]], /v=DKIM2/],
    ['text that is no key record', [['google-site-verification=abc']], /not a DKIM key record/],
    ['a value pasted with its quotes', [[`"v=DKIM1; k=rsa; p=${KEY}"`]], /not a DKIM key record/],
    ['ours next to another record', [[`v=DKIM1; k=rsa; p=${KEY}`], ['v=DKIM1; k=rsa; p=AAAA']], /2 TXT records/],
  ])('fails on %s', async (_, txt, detail) => {
    const result = await check('DKIM', { txt });
    expect(result.status).toBe('failed');
    expect(result.detail).toMatch(detail);
  });
});

describe('checkRecords: SPF', () => {
  it.each([
    'v=spf1 a:mx.mailroom.test ~all',
    'v=spf1 include:_spf.google.com a:mx.mailroom.test ~all',
    'V=SPF1 ip4:192.0.2.0/24 +A:MX.Mailroom.Test. mx -all',
    'v=spf1 a:mx.mailroom.test/24 redirect=_spf.example.com',
  ])('verifies %j', async (text) => {
    expect((await check('SPF', { txt: [[text]] })).status).toBe('verified');
  });

  it('joins chunks and ignores foreign TXT records at the name', async () => {
    const result = await check('SPF', {
      txt: [['site-verification=123'], ['v=spf1 include:_spf.google.com ', 'a:mx.mailroom.test ~all']],
    });
    expect(result.status).toBe('verified');
  });

  it.each([
    ['a substring only', 'v=spf1 a:mx.mailroom.test.evil.test ~all', /does not authorise a:mx.mailroom.test/],
    ['the host as include:', 'v=spf1 include:mx.mailroom.test ~all', /does not authorise/],
    ['ours after all', 'v=spf1 -all a:mx.mailroom.test', /does not authorise/],
    ['ours soft-failing', 'v=spf1 ~a:mx.mailroom.test ~all', /qualifier "~"/],
    ['ours failing first', 'v=spf1 -a:mx.mailroom.test a:mx.mailroom.test', /qualifier "-"/],
    ['a v=spf10 record', 'v=spf10 a:mx.mailroom.test', /no SPF record/],
  ])('fails on %s', async (_, text, detail) => {
    const result = await check('SPF', { txt: [[text]] });
    expect(result.status).toBe('failed');
    expect(result.detail).toMatch(detail);
  });

  it('fails when two SPF records are published (RFC 7208 §4.5)', async () => {
    const result = await check('SPF', { txt: [['v=spf1 a:mx.mailroom.test ~all'], ['v=spf1 -all']] });
    expect(result).toMatchObject({ status: 'failed', detail: expect.stringMatching(/2 SPF records/) });
  });
});

describe('checkRecords: DMARC', () => {
  it.each(['v=DMARC1; p=none;', 'v=DMARC1;p=reject;rua=mailto:d@example.com', 'V=DMARC1; P=Quarantine'])(
    'accepts any single valid policy: %j',
    async (text) => {
      expect((await check('DMARC', { txt: [[text], ['unrelated']] })).status).toBe('verified');
    },
  );

  it.each([
    ['two records', [['v=DMARC1; p=none'], ['v=DMARC1; p=reject']], /2 DMARC records/],
    ['no p=', [['v=DMARC1; rua=mailto:d@example.com']], /no valid p=/],
    ['no DMARC record', [['v=spf1 -all']], /no DMARC record/],
  ])('fails on %s', async (_, txt, detail) => {
    const result = await check('DMARC', { txt });
    expect(result.status).toBe('failed');
    expect(result.detail).toMatch(detail);
  });
});

describe('checkRecords: MX and CNAME', () => {
  it.each([
    ['the same host', [mx('mx.mailroom.test')]],
    ['a trailing dot, other case, other preference', [mx('MX.Mailroom.Test.', 0)]],
    ['a backup host after ours', [mx('mx.mailroom.test', 5), mx('backup.example.net', 20)]],
    ['an equal-preference peer', [mx('mx.mailroom.test', 10), mx('peer.example.net', 10)]],
  ])('verifies an MX with %s', async (_, records) => {
    expect((await check('MX_BOUNCE', { mx: records })).status).toBe('verified');
  });

  it.each([
    ['another host', [mx('mx.other.test')], 'MX points at 10 mx.other.test'],
    ['a null MX (RFC 7505)', [mx('', 0)], 'MX points at 0 .'],
    [
      'a preferred foreign host',
      [mx('mx.mailroom.test', 20), mx('aspmx.l.google.com', 1)],
      'another MX host is preferred over mx.mailroom.test: 20 mx.mailroom.test, 1 aspmx.l.google.com',
    ],
  ])('fails an MX with %s', async (_, records, detail) => {
    expect(await check('MX_INBOUND', { mx: records })).toEqual({ status: 'failed', detail });
  });

  it('compares CNAME targets without case or trailing dot', async () => {
    expect((await check('TRACKING', { cname: ['Track.Mailroom.Test.'] })).status).toBe('verified');
    expect(await check('TRACKING', { cname: ['elsewhere.test'] })).toEqual({
      status: 'failed',
      detail: 'CNAME points at elsewhere.test',
    });
  });
});

describe('checkRecords: nothing published, DNS trouble', () => {
  it('is pending on NXDOMAIN and on a name without that type', async () => {
    const results = await checkRecords(all, fakeDns({ 'example.com': { txt: [['v=spf1 -all']] } }));
    expect(results.map((r) => [r.record, r.status, r.detail])).toEqual(all.map((r) => [r.record, 'pending', undefined]));
  });

  it.each(['ESERVFAIL', 'ETIMEOUT', 'ECONNREFUSED', 'EREFUSED'])('is pending with a note on %s', async (code) => {
    expect(await check('DKIM', { error: code })).toEqual({ status: 'pending', detail: TEMPORARY_DNS_ERROR });
  });

  it('lets errors that are not DNS errors through', async () => {
    const broken: DnsLookup = { ...fakeDns({}), resolveTxt: () => Promise.reject(new TypeError('bug')) };
    await expect(checkRecords([spec('SPF')], broken)).rejects.toThrow(TypeError);
  });

  it('keeps the record fields next to the status', async () => {
    const [result] = await checkRecords([spec('MX_BOUNCE')], fakeDns({}));
    expect(result).toEqual({ ...spec('MX_BOUNCE'), status: 'pending' });
  });
});

describe('domainStatus', () => {
  const status = (kinds: Partial<Record<DnsRecordSpec['record'], 'verified' | 'pending' | 'failed'>>) =>
    domainStatus(all.map((r) => ({ required: r.required, status: kinds[r.record] ?? 'pending' })));

  it('is active once DKIM, SPF and the bounce MX are verified, whatever the optional ones say', () => {
    expect(status({ DKIM: 'verified', SPF: 'verified', MX_BOUNCE: 'verified' })).toBe('active');
    expect(
      status({ DKIM: 'verified', SPF: 'verified', MX_BOUNCE: 'verified', DKIM_ED25519: 'failed', DMARC: 'failed' }),
    ).toBe('active');
  });

  it.each(['DKIM', 'SPF', 'MX_BOUNCE'] as const)('is verifying while %s is not verified', (missing) => {
    const kinds = { DKIM: 'verified', SPF: 'verified', MX_BOUNCE: 'verified', [missing]: 'failed' } as const;
    expect(status(kinds)).toBe('verifying');
  });
});
