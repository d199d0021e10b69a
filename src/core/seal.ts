import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

// Authenticated encryption for secrets at rest (DKIM private keys, webhook
// secrets, replayable responses holding raw tokens): AES-256-GCM with a random
// IV, in a versioned text form `v1.<iv>.<tag>.<ciphertext>` (base64url).

export function seal(plain: string | Buffer, key: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([cipher.update(plain), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), data.toString('base64url')].join('.');
}

/** Throws when the text was not sealed with this key or was altered. */
export function unseal(sealed: string, key: Buffer): Buffer {
  const parts = sealed.split('.');
  const [version, iv, tag, data] = parts;
  if (parts.length !== 4 || version !== 'v1' || !iv || !tag) throw new Error('not a sealed value');
  // Without a fixed tag length GCM accepts a truncated tag and checks only the
  // bits it was given (NIST SP 800-38D §5.2.1.2); seal() always writes 16 bytes.
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), { authTagLength: 16 });
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]);
}
