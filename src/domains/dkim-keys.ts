// DKIM keys for a sending domain. Private halves are sealed (core/seal.ts)
// before they are stored.
import { generateKeyPair, type KeyObject } from 'node:crypto';
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
 * UTC month the key was made: readable in a DNS panel ("mr" = Mailroom). A
 * key made in a later month gets a new name, and one made in a month whose
 * name is `taken` gets `-2`, `-3`…, so during a rotation the old and the new
 * record are published side by side (RFC 6376 §3.1).
 */
export function dkimSelectors(atMs: number, taken: ReadonlySet<string> = new Set()): { rsa: string; ed25519: string } {
  const at = new Date(atMs);
  const stamp = `${at.getUTCFullYear()}${String(at.getUTCMonth() + 1).padStart(2, '0')}`;
  for (let n = 1; ; n++) {
    const base = n === 1 ? `mr${stamp}` : `mr${stamp}-${n}`;
    if (!taken.has(base) && !taken.has(`${base}e`)) return { rsa: base, ed25519: `${base}e` };
  }
}

/**
 * One RSA key, which every receiver verifies, and one Ed25519 key (RFC 8463),
 * which is small and fast but not yet verified everywhere; mail is signed with
 * both so that receivers use the best one they know.
 */
export async function generateDkimKeys(atMs: number, takenSelectors?: ReadonlySet<string>): Promise<{ rsa: DkimKey; ed25519: DkimKey }> {
  const selectors = dkimSelectors(atMs, takenSelectors);
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
