// DKIM keys for a sending domain, and the sealing that keeps their private
// halves encrypted at rest.
import { createCipheriv, createDecipheriv, generateKeyPair, randomBytes, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';

const generateKeyPairAsync = promisify(generateKeyPair);

// RFC 8301 §3.2 asks signers for at least 1024 bits and recommends 2048; 2048
// still fits a TXT record that common DNS providers accept (as 255-byte strings).
const RSA_MODULUS_BITS = 2048;

export type DkimAlgorithm = 'rsa-sha256' | 'ed25519-sha256';

export interface DkimKey {
  algorithm: DkimAlgorithm;
  selector: string;
  /** PKCS#8 PEM, as mailauth's signer takes it; seal it before storing. */
  privateKeyPem: string;
  /** The TXT value published at `<selector>._domainkey.<domain>`. */
  publicTxt: string;
}

/**
 * Selectors are `mr<yyyymm>` for RSA and `mr<yyyymm>e` for Ed25519, from the
 * UTC month the key was made: readable in a DNS panel ("mr" = Mailroom), and
 * a key made in a later month gets a new name, so during a rotation the old
 * and the new record can be published side by side (RFC 6376 §3.1).
 */
export function dkimSelectors(atMs: number): { rsa: string; ed25519: string } {
  const at = new Date(atMs);
  const stamp = `${at.getUTCFullYear()}${String(at.getUTCMonth() + 1).padStart(2, '0')}`;
  return { rsa: `mr${stamp}`, ed25519: `mr${stamp}e` };
}

/**
 * One RSA key, which every receiver verifies, and one Ed25519 key (RFC 8463),
 * which is small and fast but not yet verified everywhere; mail is signed with
 * both so that receivers use the best one they know.
 */
export async function generateDkimKeys(atMs: number): Promise<{ rsa: DkimKey; ed25519: DkimKey }> {
  const selectors = dkimSelectors(atMs);
  const [rsa, ed] = await Promise.all([
    generateKeyPairAsync('rsa', { modulusLength: RSA_MODULUS_BITS }),
    generateKeyPairAsync('ed25519'),
  ]);
  return {
    rsa: {
      algorithm: 'rsa-sha256',
      selector: selectors.rsa,
      privateKeyPem: pkcs8Pem(rsa.privateKey),
      // RFC 6376 §3.6.1: p= is the base64 of the DER SubjectPublicKeyInfo.
      publicTxt: `v=DKIM1; k=rsa; p=${rsa.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`,
    },
    ed25519: {
      algorithm: 'ed25519-sha256',
      selector: selectors.ed25519,
      privateKeyPem: pkcs8Pem(ed.privateKey),
      // RFC 8463 §4.2: p= is the base64 of the bare 32-byte public key, not an SPKI.
      publicTxt: `v=DKIM1; k=ed25519; p=${rawEd25519PublicKey(ed.publicKey).toString('base64')}`,
    },
  };
}

function pkcs8Pem(key: KeyObject): string {
  return key.export({ type: 'pkcs8', format: 'pem' }).toString();
}

function rawEd25519PublicKey(key: KeyObject): Buffer {
  // The JWK "x" member is exactly the raw public key (RFC 8037 §2).
  const { x } = key.export({ format: 'jwk' });
  if (x === undefined) throw new Error('Ed25519 public key has no x coordinate');
  return Buffer.from(x, 'base64url');
}

// AES-256-GCM: 96-bit IVs are the size GCM is defined for without extra
// hashing (NIST SP 800-38D §8.2); random IVs are safe for far more seals than
// one installation makes with one key (the 2^32 bound of §8.3).
const SEAL_VERSION = 'v1';
const SEAL_KEY_BYTES = 32;
const SEAL_IV_BYTES = 12;
const SEAL_TAG_BYTES = 16;

/** Encrypts `plain` as `v1.<iv>.<tag>.<ciphertext>`, each part base64url. */
export function sealSecret(plain: string, key: Buffer): string {
  checkSealKey(key);
  const iv = randomBytes(SEAL_IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: SEAL_TAG_BYTES });
  const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return [SEAL_VERSION, iv, cipher.getAuthTag(), ciphertext]
    .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
    .join('.');
}

/** Reverses sealSecret; throws if the value was altered or the key is wrong. */
export function openSecret(sealed: string, key: Buffer): string {
  checkSealKey(key);
  const parts = sealed.split('.');
  if (parts.length !== 4 || parts[0] !== SEAL_VERSION) {
    throw new Error(`Sealed secret is not in the ${SEAL_VERSION} format`);
  }
  const [iv, tag, ciphertext] = parts.slice(1).map((part) => Buffer.from(part, 'base64url'));
  // Without the length check a truncated tag would be accepted by GCM, which
  // weakens the authentication to the truncated length.
  if (iv.length !== SEAL_IV_BYTES || tag.length !== SEAL_TAG_BYTES) {
    throw new Error('Sealed secret has a malformed IV or tag');
  }
  const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: SEAL_TAG_BYTES });
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
  } catch (cause) {
    throw new Error('Sealed secret failed authentication', { cause });
  }
}

function checkSealKey(key: Buffer): void {
  if (key.length !== SEAL_KEY_BYTES) {
    throw new Error(`Seal key must be ${SEAL_KEY_BYTES} bytes, got ${key.length}`);
  }
}
