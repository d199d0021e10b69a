import { createHash } from 'node:crypto';

// The envelope sender (MAIL FROM, RFC 5321 §4.1.1.2) of every outbound
// message is an address that names the email it carries, so a bounce or a
// feedback report sent back to it can be tied to that email without trusting
// anything in the report's body (VERP, "variable envelope return path"):
//
//   b-<26 id characters>@<return path domain>              several recipients in one transaction
//   b-<26 id characters>-<8 tag characters>@<return path domain>   one recipient
//
// The id characters are the email id without its `em_` prefix; the tag is a
// hash of the recipient address, so the address itself is never exposed in
// the envelope. The return path domain is the domain's bounce subdomain
// (`bounces.example.com` by default), whose MX points at this server.
// The local part stays far below the 64 octets RFC 5321 §4.5.3.1.1 allows.

const EMAIL_PREFIX = 'em_';
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const ID_CHARS = 26;
const TAG_CHARS = 8;
const LOCAL_PART = /^b-([0-9a-hjkmnp-tv-z]{26})(?:-([0-9a-hjkmnp-tv-z]{8}))?$/;

export interface ReturnPath {
  emailId: string;
  /** Present when the message went to a single recipient; compare with recipientTag(). */
  recipientTag?: string;
}

/** The tag of a recipient address: 40 bits of SHA-256 over the trimmed, lower-cased address. */
export function recipientTag(recipient: string): string {
  const digest = createHash('sha256').update(recipient.trim().toLowerCase()).digest();
  // 8 characters of 5 bits each, from the first 5 bytes.
  let bits = 0n;
  for (let i = 0; i < 5; i++) bits = (bits << 8n) | BigInt(digest[i]);
  let out = '';
  for (let i = TAG_CHARS - 1; i >= 0; i--) out += ALPHABET[Number((bits >> BigInt(i * 5)) & 31n)];
  return out;
}

/**
 * The MAIL FROM address for an email. Pass the recipient when the SMTP
 * transaction carries that one recipient (a bounce then names it exactly),
 * or null when several recipients share the transaction (the report's own
 * recipient fields then say which one failed). `returnPathDomain` is the full
 * bounce domain, e.g. `bounces.example.com`.
 */
export function returnPathFor(emailId: string, recipient: string | null, returnPathDomain: string): string {
  const id = emailId.startsWith(EMAIL_PREFIX) ? emailId.slice(EMAIL_PREFIX.length) : '';
  if (id.length !== ID_CHARS || ![...id].every((c) => ALPHABET.includes(c))) {
    throw new Error(`returnPathFor: '${emailId}' is not an email id`);
  }
  const tag = recipient === null ? '' : `-${recipientTag(recipient)}`;
  return `b-${id}${tag}@${returnPathDomain.toLowerCase()}`;
}

/**
 * The email (and recipient tag) a return path names, or undefined when the
 * address is not one of ours. Takes the whole address or its local part; the
 * domain is not checked here (the listener matched it already). Case is
 * folded, since some relays upper-case the envelope.
 */
export function parseReturnPath(address: string): ReturnPath | undefined {
  const at = address.lastIndexOf('@');
  const local = (at < 0 ? address : address.slice(0, at)).toLowerCase();
  const m = LOCAL_PART.exec(local);
  if (!m) return undefined;
  return { emailId: `${EMAIL_PREFIX}${m[1]}`, ...(m[2] !== undefined && { recipientTag: m[2] }) };
}
