import { createPrivateKey, createPublicKey, randomBytes, sign, verify } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { dkimSelectors, generateDkimKeys, openSecret, sealSecret, type DkimKey } from '../../../src/domains/dkim-keys.js';
import { parseTagList } from '../../../src/domains/tag-list.js';

const JAN_2025 = Date.UTC(2025, 0, 31, 23, 59);

describe('dkimSelectors', () => {
  it('names keys after the UTC month', () => {
    expect(dkimSelectors(JAN_2025)).toEqual({ rsa: 'mr202501', ed25519: 'mr202501e' });
    expect(dkimSelectors(Date.UTC(2025, 11, 1))).toEqual({ rsa: 'mr202512', ed25519: 'mr202512e' });
  });
});

describe('generateDkimKeys', () => {
  let keys: { rsa: DkimKey; ed25519: DkimKey };
  beforeAll(async () => {
    keys = await generateDkimKeys(JAN_2025);
  });

  const signsAndVerifies = (key: DkimKey, spki: Buffer) => {
    const data = Buffer.from('header hash input');
    const algorithm = key.algorithm === 'rsa-sha256' ? 'sha256' : null;
    const signature = sign(algorithm, data, createPrivateKey(key.privateKeyPem));
    return verify(algorithm, data, createPublicKey({ key: spki, format: 'der', type: 'spki' }), signature);
  };

  it('makes a 2048-bit RSA key published as base64 SPKI', () => {
    const tags = parseTagList(keys.rsa.publicTxt)!;
    expect([...tags.keys()]).toEqual(['v', 'k', 'p']);
    expect(tags.get('v')).toBe('DKIM1');
    expect(tags.get('k')).toBe('rsa');
    const spki = Buffer.from(tags.get('p')!, 'base64');
    const publicKey = createPublicKey({ key: spki, format: 'der', type: 'spki' });
    expect(publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
    expect(keys.rsa).toMatchObject({ algorithm: 'rsa-sha256', selector: 'mr202501' });
    expect(keys.rsa.privateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(signsAndVerifies(keys.rsa, spki)).toBe(true);
  });

  it('makes an Ed25519 key published as the raw 32 bytes (RFC 8463)', () => {
    const tags = parseTagList(keys.ed25519.publicTxt)!;
    expect(tags.get('k')).toBe('ed25519');
    const raw = Buffer.from(tags.get('p')!, 'base64');
    expect(raw).toHaveLength(32);
    expect(keys.ed25519).toMatchObject({ algorithm: 'ed25519-sha256', selector: 'mr202501e' });
    // The fixed SPKI prefix for Ed25519 (RFC 8410 §4) turns the raw key back into a key object.
    const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw]);
    expect(signsAndVerifies(keys.ed25519, spki)).toBe(true);
  });

  it('makes different keys each time', async () => {
    const again = await generateDkimKeys(JAN_2025);
    expect(again.rsa.publicTxt).not.toBe(keys.rsa.publicTxt);
    expect(again.ed25519.publicTxt).not.toBe(keys.ed25519.publicTxt);
  });
});

describe('sealSecret / openSecret', () => {
  const key = randomBytes(32);
  const secret = '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI…\n-----END PRIVATE KEY-----\n';

  it('round-trips, with a fresh IV each time', () => {
    const a = sealSecret(secret, key);
    const b = sealSecret(secret, key);
    expect(a).toMatch(/^v1\.[\w-]{16}\.[\w-]{22}\.[\w-]+$/);
    expect(a).not.toBe(b);
    expect(openSecret(a, key)).toBe(secret);
    expect(openSecret(b, key)).toBe(secret);
    expect(openSecret(sealSecret('', key), key)).toBe('');
  });

  it('does not leak the plain text', () => {
    expect(sealSecret(secret, key)).not.toContain('PRIVATE');
  });

  // Flips one bit in the decoded bytes of one part, so the value stays well-formed.
  const flip = (sealed: string, part: number): string => {
    const parts = sealed.split('.');
    const bytes = Buffer.from(parts[part], 'base64url');
    bytes[0] ^= 1;
    parts[part] = bytes.toString('base64url');
    return parts.join('.');
  };

  it.each([
    ['IV', 1],
    ['tag', 2],
    ['ciphertext', 3],
  ])('throws when the %s is altered', (_, part) => {
    const sealed = sealSecret(secret, key);
    expect(() => openSecret(flip(sealed, part), key)).toThrow(/failed authentication/);
  });

  it('throws with another key', () => {
    expect(() => openSecret(sealSecret(secret, key), randomBytes(32))).toThrow(/failed authentication/);
  });

  it('rejects a truncated tag rather than checking fewer bits', () => {
    const parts = sealSecret(secret, key).split('.');
    parts[2] = Buffer.from(parts[2], 'base64url').subarray(0, 12).toString('base64url');
    expect(() => openSecret(parts.join('.'), key)).toThrow(/malformed IV or tag/);
  });

  it.each([
    ['an unknown version', (s: string) => s.replace(/^v1/, 'v2')],
    ['a missing part', (s: string) => s.split('.').slice(0, 3).join('.')],
    ['an extra part', (s: string) => `${s}.AAAA`],
    ['plain text', () => 'not sealed'],
  ])('rejects %s', (_, mangle) => {
    expect(() => openSecret(mangle(sealSecret(secret, key)), key)).toThrow(/v1 format/);
  });

  it('insists on a 32-byte key', () => {
    expect(() => sealSecret(secret, randomBytes(16))).toThrow(/32 bytes/);
    expect(() => openSecret(sealSecret(secret, key), randomBytes(31))).toThrow(/32 bytes/);
  });
});
