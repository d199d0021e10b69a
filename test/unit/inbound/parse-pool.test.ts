import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dkimSign, type DKIMSignOptions, type DNSResolver } from 'mailauth';
import { afterAll, describe, expect, it } from 'vitest';
import { fieldsOf, readHere } from '../../../src/inbound/parse-message.js';
import { ParsePool, UnreadableMessage, type AuthRequest, type MessageReader } from '../../../src/inbound/parse-pool.js';
import { siblingParts } from '../../helpers/mime-bombs.js';
import type { AuthResults } from '../../../src/inbound/inbound.repo.js';

const fields = async (read: MessageReader, raw: Buffer) => fieldsOf((await read(raw)).parts);

const fixture = (name: string) => readFileSync(new URL(`../../fixtures/${name}`, import.meta.url));

const withAttachment = Buffer.from([
  'From: "Doe, Jane" <jane@sender.test>', 'To: desk@inbound.test, Group: a@x.test, b@x.test;', 'Cc: cc@inbound.test',
  'Subject: =?UTF-8?Q?caf=C3=A9?=', 'Message-ID: <m1@sender.test>', 'MIME-Version: 1.0',
  'Content-Type: multipart/mixed; boundary="b1"', '',
  '--b1', 'Content-Type: text/plain; charset=utf-8', '', 'Hello', '',
  '--b1', 'Content-Type: text/html', '', '<p>Hello</p>', '',
  '--b1', 'Content-Type: application/octet-stream', 'Content-Disposition: attachment; filename="data.bin"', 'Content-Transfer-Encoding: base64', '',
  Buffer.from([0, 1, 2, 250, 251, 252]).toString('base64'), '--b1--', '',
].join('\r\n'));

describe('MIME parsing on worker threads', () => {
  const pool = new ParsePool(2);
  afterAll(() => pool.close());

  it('gives the same fields as parsing on this thread, attachments as Buffers', async () => {
    const messages = [withAttachment, ...['dsn-postfix-user-unknown.eml', 'dsn-gmail-no-such-user.eml', 'arf-abuse.eml'].map(fixture)];
    for (const raw of messages) {
      const [there, here] = await Promise.all([fields(pool.read, raw), fields(readHere, raw)]);
      expect(there).toEqual(here);
      for (const part of there.report.parts) expect(Buffer.isBuffer(part.content)).toBe(true);
    }
    const parsed = await fields(pool.read, withAttachment);
    expect(parsed.from).toBe('"Doe, Jane" <jane@sender.test>');
    expect(parsed.subject).toBe('café');
    expect(parsed.html).toContain('<p>Hello</p>');
    expect(parsed.recipientAddresses).toEqual(['desk@inbound.test', 'a@x.test', 'b@x.test', 'cc@inbound.test']);
    expect(parsed.attachments).toEqual([{ index: 0, filename: 'data.bin', content_type: 'application/octet-stream', size: 6, content_id: null, disposition: 'attachment' }]);
    expect([...parsed.report.parts[0].content]).toEqual([0, 1, 2, 250, 251, 252]);
  });

  it('reads a header field\'s raw UTF-8 as UTF-8 (RFC 6532), and other 8-bit bytes as they are', async () => {
    const raw = Buffer.concat([
      Buffer.from('From: s@sender.test\r\nSubject: Facture \u2014 r\u00e9glement\r\nX-Note: caf\u00e9 \u{1F431}\r\nX-Latin: caf', 'utf8'),
      Buffer.from([0xe9]), Buffer.from('\r\n\r\nbody\r\n'),
    ]);
    for (const read of [pool.read, readHere]) {
      const { headers } = await fields(read, raw);
      expect(headers.find((h) => h.name === 'Subject')?.value).toBe('Facture \u2014 r\u00e9glement');
      expect(headers.find((h) => h.name === 'X-Note')?.value).toBe('caf\u00e9 \u{1F431}');
      expect(headers.find((h) => h.name === 'X-Latin')?.value).toBe('caf\u00e9');
    }
  });

  it('parses many messages at once across its threads', async () => {
    const raws = Array.from({ length: 40 }, (_, i) => Buffer.from(`From: s${i}@sender.test\r\nSubject: n${i}\r\n\r\nbody ${i}\r\n`));
    const subjects = (await Promise.all(raws.map((raw) => fields(pool.read, raw)))).map((f) => f.subject);
    expect(subjects).toEqual(raws.map((_, i) => `n${i}`));
  });

  it('tells a message the parser refuses, which would be refused again, from a thread that failed', async () => {
    // Past the parser's own limit of 1,000 parts (the listeners refuse it sooner).
    const refused = siblingParts(1_000);
    for (const read of [pool.read, readHere]) {
      const err = await read(refused).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(UnreadableMessage);
      expect((err as Error).message).toBe('the message could not be parsed: Max allowed child nodes exceeded');
    }
    const closing = new ParsePool(1);
    const cut = closing.read(withAttachment);
    await closing.close();
    const err = await cut.then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(UnreadableMessage);
  });

  it('refuses work once closed', async () => {
    const closing = new ParsePool(1);
    await fields(closing.read, withAttachment);
    await closing.close();
    await expect(closing.read(withAttachment)).rejects.toThrow('the parsing pool is closed');
  });

  it('checks SPF, DKIM and DMARC as this thread does, asking this thread\'s resolver', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const records: Record<string, string> = {
      'TXT sender.test': 'v=spf1 ip4:192.0.2.1 -all',
      'TXT s1._domainkey.sender.test': `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`,
      'TXT _dmarc.sender.test': 'v=DMARC1; p=reject',
    };
    const asked: string[] = [];
    // Unlisted names do not exist; names under broken.test fail for now.
    const resolver: DNSResolver = async (name, rrtype) => {
      asked.push(`${rrtype} ${name}`);
      const record = records[`${rrtype} ${name.toLowerCase()}`];
      if (record) return [[record]];
      throw Object.assign(new Error(`no ${rrtype} for ${name}`), { code: name.endsWith('broken.test') ? 'ETIMEOUT' : 'ENOTFOUND' });
    };
    const raw = Buffer.from('From: Ann <ann@sender.test>\r\nTo: desk@inbound.test\r\nSubject: signed\r\nMessage-ID: <s1@sender.test>\r\n\r\nHello\r\n');
    const signed = await dkimSign(raw, {
      signatureData: [{ signingDomain: 'sender.test', selector: 's1', privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) }],
    } as DKIMSignOptions);
    const cases: Array<[Buffer, Omit<AuthRequest, 'resolver' | 'mta'>]> = [
      [Buffer.concat([Buffer.from(signed.signatures), raw]), { remoteIp: '192.0.2.1', helo: 'mail.sender.test', mailFrom: 'ann@sender.test' }],
      [raw, { remoteIp: '198.51.100.7', helo: 'elsewhere.test', mailFrom: 'ann@sender.test' }],
      [Buffer.from('From: bo@broken.test\r\nSubject: x\r\n\r\nx\r\n'), { remoteIp: '192.0.2.9', helo: 'broken.test', mailFrom: 'bo@broken.test' }],
    ];
    const results: AuthResults[] = [];
    for (const [message, envelope] of cases) {
      const auth = { ...envelope, mta: 'mx.inbound.test', resolver };
      const [there, here] = await Promise.all([pool.read(message, auth), readHere(message, auth)]);
      expect(there).toEqual(here);
      results.push(there.auth!);
    }
    expect(results.map((a) => [a.spf.result, a.dkim.map((d) => d.result), a.dmarc.result])).toEqual([
      ['pass', ['pass'], 'pass'],
      ['fail', [], 'fail'],
      ['temperror', [], 'temperror'],
    ]);
    expect(results[0].authentication_results).toMatch(/^mx\.inbound\.test;.*spf=pass/);
    expect(asked).toContain('TXT s1._domainkey.sender.test');
    // Messages checked together on one thread share each question while it is open.
    asked.length = 0;
    const single = new ParsePool(1);
    try {
      const together = await Promise.all(Array.from({ length: 5 }, () => single.read(cases[1][0], { ...cases[1][1], mta: 'mx.inbound.test', resolver })));
      expect(together.map((r) => r.auth)).toEqual(Array.from({ length: 5 }, () => results[1]));
    } finally {
      await single.close();
    }
    expect(asked.filter((q) => q === 'TXT sender.test')).toHaveLength(1);
    // A message read without an AuthRequest is only parsed.
    expect((await pool.read(raw)).auth).toBeUndefined();
  });
});
