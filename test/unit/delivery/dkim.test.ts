import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { dkimSign } from 'mailauth/lib/dkim/sign.js';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { afterAll, describe, expect, it } from 'vitest';
import { DkimSigner, relaxedBody, relaxedHeader } from '../../../src/delivery/dkim.js';

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ed = generateKeyPairSync('ed25519');
const rsaPem = rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

/** The TXT value published at <selector>._domainkey.<domain> (RFC 6376 §3.6.1, RFC 8463 §4). */
function dkimTxt(publicKey: KeyObject): string {
  if (publicKey.asymmetricKeyType === 'ed25519') {
    const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
    return `v=DKIM1; k=ed25519; p=${raw.toString('base64')}`;
  }
  return `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`;
}

const records = new Map<string, string>([
  ['rsa._domainkey.example.com', dkimTxt(rsa.publicKey)],
  ['ed._domainkey.example.com', dkimTxt(ed.publicKey)],
]);
const resolver = async (name: string, type: string) => {
  const value = records.get(name);
  if (type !== 'TXT' || !value) throw Object.assign(new Error('no data'), { code: 'ENODATA' });
  return [[value]];
};

const message = Buffer.from(
  [
    'From: "Ann" <ann@example.com>',
    'To: bob@example.org,',
    '\tcarol@example.org',
    'Subject:   Hello    there  ',
    'Received: from somewhere',
    'Date: Sat, 21 Nov 2026 10:00:00 +0000',
    'Message-ID: <m1@example.com>',
    'List-Unsubscribe: <https://example.com/u/1>',
    'List-Unsubscribe-Post: List-Unsubscribe=One-Click',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Hello  \t world   ',
    '',
    'Second paragraph.',
    '',
    '',
    '',
  ].join('\r\n'),
);

async function verify(raw: Buffer) {
  const { results } = await dkimVerify(raw, { resolver });
  return results;
}

describe('DKIM signing', () => {
  const pooled = new DkimSigner({ poolSize: 2 });
  const inline = new DkimSigner({ poolSize: 0 });
  afterAll(() => pooled.close());

  it.each([
    ['RSA in the pool', () => pooled, { domain: 'example.com', selector: 'rsa', privateKey: rsaPem }],
    ['RSA inline', () => inline, { domain: 'example.com', selector: 'rsa', privateKey: rsaPem }],
    ['Ed25519', () => pooled, { domain: 'example.com', selector: 'ed', privateKey: ed.privateKey }],
  ])('%s verifies with mailauth', async (_, signer, key) => {
    const signed = await signer().sign(message, key);
    const [result] = await verify(signed);
    expect(result.status.result).toBe('pass');
    expect(result.signingDomain).toBe('example.com');
    expect(signed.subarray(signed.length - message.length).equals(message)).toBe(true);
  });

  it('signs the fields that matter and oversigns From', async () => {
    const header = await inline.signatureHeader(message, { domain: 'example.com', selector: 'rsa', privateKey: rsaPem });
    const h = /h=([^;]+);/.exec(header.replace(/\r\n /g, ''))![1];
    expect(h.split(':')).toEqual([
      'from', 'from', 'subject', 'date', 'message-id', 'to', 'mime-version', 'content-type', 'list-unsubscribe', 'list-unsubscribe-post',
    ]);
    expect(header).toMatch(/a=rsa-sha256;/);
    expect(header).toMatch(/c=relaxed\/relaxed;/);
    for (const line of header.split('\r\n')) expect(line.length).toBeLessThanOrEqual(78);
  });

  it('fails verification once a signed field changes or a second From is added', async () => {
    const signed = (await inline.sign(message, { domain: 'example.com', selector: 'rsa', privateKey: rsaPem })).toString();
    const [changed] = await verify(Buffer.from(signed.replace('Hello    there', 'Hello here')));
    expect(changed.status.result).toBe('fail');
    const [added] = await verify(Buffer.from(signed.replace('From: "Ann"', 'From: mallory@example.net\r\nFrom: "Ann"')));
    expect(added.status.result).toBe('fail');
  });

  it('computes the same body hash as mailauth', async () => {
    const ours = await inline.signatureHeader(message, { domain: 'example.com', selector: 'rsa', privateKey: rsaPem });
    // mailauth reads the keys from signatureData; its typings only know the top-level fields.
    const signing = { signingDomain: 'example.com', selector: 'rsa', privateKey: rsaPem };
    const options = { ...signing, canonicalization: 'relaxed/relaxed', signatureData: [signing] };
    const theirs = await dkimSign(message, options);
    const bh = (s: string) => /bh=([^;]+);/.exec(s.replace(/\r\n\s+/g, ''))![1];
    expect(bh(ours)).toBe(bh(theirs.signatures));
  });

  it('parses a PEM once and reuses it', () => {
    expect(inline.keyObject(rsaPem)).toBe(inline.keyObject(rsaPem));
  });

  it('signs many messages concurrently through the pool', async () => {
    const signed = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        pooled.sign(Buffer.from(message.toString().replace('m1@', `m${i}@`)), { domain: 'example.com', selector: 'rsa', privateKey: rsaPem }),
      ),
    );
    const results = await Promise.all(signed.map(verify));
    expect(results.map(([r]) => r.status.result)).toEqual(Array(20).fill('pass'));
  });

  it('signs with several keys in one pass, each signature as signing with that key alone would make it', async () => {
    const now = () => Date.parse('2026-11-21T10:00:00Z');
    const keys = [
      { domain: 'example.com', selector: 'rsa', privateKey: rsaPem },
      { domain: 'example.com', selector: 'ed', privateKey: ed.privateKey },
    ];
    for (const signer of [new DkimSigner({ poolSize: 1, now }), new DkimSigner({ poolSize: 0, now })]) {
      try {
        const together = await signer.signatureHeaders(message, keys);
        // RSA PKCS#1 v1.5 and Ed25519 signatures are deterministic, so even b= is the same.
        const alone = [await signer.signatureHeader(message, keys[0]), await signer.signatureHeader(message, keys[1])];
        expect(together).toEqual(alone);
        const results = await verify(Buffer.concat([Buffer.from(together.join(''), 'latin1'), message]));
        expect(results.map((r) => [r.status.result, r.selector])).toEqual([['pass', 'rsa'], ['pass', 'ed']]);
      } finally {
        await signer.close();
      }
    }
  });

  it('keeps signing when a worker has dropped keys and needs them again', async () => {
    const now = () => Date.parse('2026-11-21T10:00:00Z');
    const pooledOne = new DkimSigner({ poolSize: 1, now });
    const inlineOne = new DkimSigner({ poolSize: 0, now });
    try {
      // An Ed25519 key rides along with an RSA one; 300 of them overflow the worker's 256 keys.
      const edKeys = Array.from({ length: 300 }, (_, i) => ({ domain: 'example.com', selector: `ed${i}`, privateKey: generateKeyPairSync('ed25519').privateKey }));
      const rsaKey = { domain: 'example.com', selector: 'rsa', privateKey: rsaPem };
      for (const edKey of [...edKeys, edKeys[0], edKeys[1]]) {
        expect(await pooledOne.signatureHeaders(message, [rsaKey, edKey])).toEqual(await inlineOne.signatureHeaders(message, [rsaKey, edKey]));
      }
    } finally {
      await pooledOne.close();
    }
  });

  it('fails only the job whose key does not sign, among the jobs a worker takes together', async () => {
    const now = () => Date.parse('2026-11-21T10:00:00Z');
    const pooledOne = new DkimSigner({ poolSize: 1, now });
    const inlineOne = new DkimSigner({ poolSize: 0, now });
    try {
      const rsaKey = { domain: 'example.com', selector: 'rsa', privateKey: rsaPem };
      const edKey = { domain: 'example.com', selector: 'ed', privateKey: ed.privateKey };
      // A public key passes for an RSA key until the worker signs with it.
      const publicKey = { domain: 'example.com', selector: 'pub', privateKey: rsa.publicKey };
      const [first, failed, last] = await Promise.allSettled([
        pooledOne.signatureHeaders(message, [rsaKey, edKey]),
        pooledOne.signatureHeaders(message, [edKey, publicKey]),
        pooledOne.signatureHeaders(message, [rsaKey]),
      ]);
      expect(first).toEqual({ status: 'fulfilled', value: await inlineOne.signatureHeaders(message, [rsaKey, edKey]) });
      expect(failed.status === 'rejected' && String(failed.reason)).toMatch(/DKIM signing failed/);
      expect(last).toEqual({ status: 'fulfilled', value: await inlineOne.signatureHeaders(message, [rsaKey]) });
    } finally {
      await pooledOne.close();
    }
  });

  it('refuses to sign after close', async () => {
    const signer = new DkimSigner({ poolSize: 1 });
    await signer.sign(message, { domain: 'example.com', selector: 'rsa', privateKey: rsaPem });
    await signer.close();
    await expect(signer.sign(message, { domain: 'example.com', selector: 'rsa', privateKey: rsaPem })).rejects.toThrow(/closed/);
  });
});

describe('relaxed canonicalisation (RFC 6376 §3.4)', () => {
  it('canonicalises header fields', () => {
    expect(relaxedHeader('SubJect :  A \t  b\r\n\t c  ')).toBe('subject:A b c');
  });

  it.each([
    ['a  b \r\nc\t\r\n\r\n\r\n', 'a b\r\nc\r\n'],
    ['no final line break', 'no final line break\r\n'],
    ['trailing space ', 'trailing space\r\n'],
    ['\r\n\r\n', ''],
    ['', ''],
    ['x\r\n \r\n\t\r\n', 'x\r\n'],
    ['a\t\tb \tc\t', 'a b c\r\n'],
    ['\t\r\nx', '\r\nx\r\n'],
    ['lone\r \r\nbreaks \n', 'lone\r\r\nbreaks \n\r\n'],
    ['already canonical\r\n', 'already canonical\r\n'],
  ])('%j -> %j', (body, expected) => {
    expect(relaxedBody(Buffer.from(body)).toString()).toBe(expected);
  });
});
