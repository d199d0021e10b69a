import { createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { dkimSelectors, generateDkimKeys, type DkimKey } from '../../../src/domains/dkim-keys.js';
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
