import { createHmac, randomBytes } from 'node:crypto';

// Standard Webhooks signing (https://www.standardwebhooks.com, spec
// "Signature scheme"): the secret is `whsec_` + base64 of random bytes; the
// signed content is `${webhook-id}.${webhook-timestamp}.${body}`; the header
// holds space-separated `v1,<base64 HMAC-SHA256>` entries, one per valid
// secret, so receivers keep verifying through a secret rotation.

export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;

export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

export function signatureHeader(secrets: readonly string[], messageId: string, timestampSeconds: number, body: string): string {
  return secrets.map((secret) => {
    const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
    const mac = createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64');
    return `v1,${mac}`;
  }).join(' ');
}
