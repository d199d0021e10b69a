import { createHmac, timingSafeEqual } from 'node:crypto';
import { isValidAddress, normaliseAddress } from '../contacts/index.js';

// Unsubscribe links carry a token naming the workspace and the address, signed
// with the keyring's unsubscribe key (HMAC-SHA256, truncated to 128 bits). The
// address, not a contact id, is what the token names: it is what a suppression
// is keyed on, and it stays meaningful when the contact is deleted and
// re-created. Tokens do not expire: RFC 8058 one-click unsubscription must
// keep working for as long as the message sits in a mailbox.

export interface UnsubscribeTarget {
  workspaceId: string;
  email: string;
}

export interface UnsubscribeLinks {
  /** The https://…/u/<token> address of the unsubscribe page for this recipient. */
  url(workspaceId: string, address: string): string;
  /**
   * The RFC 8058 headers a sender adds to a message for this recipient:
   * List-Unsubscribe with the one-click URL and List-Unsubscribe-Post.
   */
  unsubscribeHeaders(workspaceId: string, address: string): { 'List-Unsubscribe': string; 'List-Unsubscribe-Post': string };
  /** The target of a genuine token; undefined for anything forged, edited or malformed. */
  read(token: string): UnsubscribeTarget | undefined;
}

const VERSION = 1;
const MAC_BYTES = 16;
// A workspace id plus an address of at most 254 octets, base64url-encoded,
// stays well under this.
const MAX_TOKEN_LENGTH = 600;

export function unsubscribeLinks(key: Buffer, publicUrl: string): UnsubscribeLinks {
  const mac = (payload: Buffer) => createHmac('sha256', key).update(Buffer.from([VERSION])).update(payload).digest().subarray(0, MAC_BYTES);

  const token = (workspaceId: string, address: string) => {
    const payload = Buffer.from(`${workspaceId}\n${normaliseAddress(address)}`, 'utf8');
    return Buffer.concat([Buffer.from([VERSION]), mac(payload), payload]).toString('base64url');
  };
  const url = (workspaceId: string, address: string) => `${publicUrl}/u/${token(workspaceId, address)}`;

  return {
    url,
    unsubscribeHeaders: (workspaceId, address) => ({
      'List-Unsubscribe': `<${url(workspaceId, address)}>`,
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    }),
    read(t) {
      if (t.length === 0 || t.length > MAX_TOKEN_LENGTH || !/^[A-Za-z0-9_-]+$/.test(t)) return undefined;
      const raw = Buffer.from(t, 'base64url');
      // Only the canonical spelling: base64url's last character has bits decoding ignores.
      if (raw.toString('base64url') !== t) return undefined;
      if (raw.length <= 1 + MAC_BYTES || raw[0] !== VERSION) return undefined;
      const payload = raw.subarray(1 + MAC_BYTES);
      if (!timingSafeEqual(raw.subarray(1, 1 + MAC_BYTES), mac(payload))) return undefined;
      const [workspaceId, email, ...rest] = payload.toString('utf8').split('\n');
      if (rest.length > 0 || !workspaceId.startsWith('ws_') || email === undefined || !isValidAddress(email, 'dot-atom or quoted')) return undefined;
      return { workspaceId, email };
    },
  };
}
