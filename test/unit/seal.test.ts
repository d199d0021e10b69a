import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { seal, unseal } from '../../src/core/seal.js';

describe('seal / unseal', () => {
  const key = randomBytes(32);
  const secret = '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI…\n-----END PRIVATE KEY-----\n';
  const open = (sealed: string, k = key) => unseal(sealed, k).toString('utf8');

  it('round-trips text and bytes, with a fresh IV each time', () => {
    const a = seal(secret, key);
    const b = seal(secret, key);
    // v1.<12-byte IV>.<16-byte tag>.<ciphertext>, each base64url.
    expect(a).toMatch(/^v1\.[\w-]{16}\.[\w-]{22}\.[\w-]+$/);
    expect(a).not.toBe(b);
    expect(open(a)).toBe(secret);
    expect(open(b)).toBe(secret);
    expect(open(seal('', key))).toBe('');
    const bytes = randomBytes(64);
    expect(unseal(seal(bytes, key), key).equals(bytes)).toBe(true);
  });

  it('does not leak the plain text', () => {
    expect(seal(secret, key)).not.toContain('PRIVATE');
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
    expect(() => open(flip(seal(secret, key), part))).toThrow(/authenticate/);
  });

  it('throws with another key', () => {
    expect(() => open(seal(secret, key), randomBytes(32))).toThrow(/authenticate/);
  });

  it('rejects a truncated tag rather than checking fewer bits', () => {
    const parts = seal(secret, key).split('.');
    parts[2] = Buffer.from(parts[2], 'base64url').subarray(0, 12).toString('base64url');
    expect(() => open(parts.join('.'))).toThrow(/authentication tag length/);
  });

  it.each([
    ['an unknown version', (s: string) => s.replace(/^v1/, 'v2')],
    ['a missing part', (s: string) => s.split('.').slice(0, 3).join('.')],
    ['an extra part', (s: string) => `${s}.AAAA`],
    ['plain text', () => 'not sealed'],
  ])('rejects %s', (_, mangle) => {
    expect(() => open(mangle(seal(secret, key)))).toThrow(/not a sealed value/);
  });

  it('insists on a 32-byte key', () => {
    expect(() => seal(secret, randomBytes(16))).toThrow(/key length/i);
    expect(() => open(seal(secret, key), randomBytes(31))).toThrow(/key length/i);
  });
});
