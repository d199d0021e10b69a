import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

// The envelope sender (MAIL FROM, RFC 5321 §4.1.1.2) of every outbound
// message is an address that names the email it carries, so a bounce or a
// feedback report sent back to it can be tied to that email without trusting
// anything in the report's body (VERP, "variable envelope return path"):
//
//   b-<26 id characters>@<return path domain>                       several recipients in one transaction
//   b-<26 id characters>-<13 tag characters>@<return path domain>   one recipient
//
// The id characters are the email id without its `em_` prefix. The tag is an
// HMAC of the email id and the recipient address under a key of the
// keyring: every recipient sees the email id (Message-ID, Return-Path), so an
// unkeyed tag would let one recipient make up the return path of another and
// send a forged bounce or complaint in that recipient's name. The return path
// domain is the domain's bounce subdomain (`bounces.example.com` by default),
// whose MX points at this server. The local part (42 octets) stays below the
// 64 octets RFC 5321 §4.5.3.1.1 allows.
//
// Emails sent before tags were keyed carry an 8-character tag, a hash of the
// address alone; their bounces may come days later. Those tags are told apart
// by their length, and are only good for emails created before keyed tags
// began (the caller checks that).

const EMAIL_PREFIX = 'em_';
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const ID_CHARS = 26;
/** 65 bits: far beyond guessing, the more so as every guess is an SMTP transaction. */
export const KEYED_TAG_CHARS = 13;
export const LEGACY_TAG_CHARS = 8;
const LOCAL_PART = /^b-([0-9a-hjkmnp-tv-z]{26})(?:-([0-9a-hjkmnp-tv-z]{13}|[0-9a-hjkmnp-tv-z]{8}))?$/;

export interface ReturnPath {
  emailId: string;
  /** Present when the message went to a single recipient; check it with tagNames(). */
  recipientTag?: string;
}

/** The address as tags see it: relays and reports may change its case or pad it. */
const normalised = (recipient: string) => recipient.trim().toLowerCase();

/** `chars` base32 characters (5 bits each) from the first bits of `bytes`. */
function base32(bytes: Buffer, chars: number): string {
  let bits = 0n;
  const byteCount = Math.ceil((chars * 5) / 8);
  for (let i = 0; i < byteCount; i++) bits = (bits << 8n) | BigInt(bytes[i]);
  const spare = BigInt(byteCount * 8 - chars * 5);
  bits >>= spare;
  let out = '';
  for (let i = chars - 1; i >= 0; i--) out += ALPHABET[Number((bits >> BigInt(i * 5)) & 31n)];
  return out;
}

/** The tag of a recipient of an email: an HMAC-SHA-256 of both under `key` (the keyring's returnPathKey). */
export function recipientTag(key: Buffer, emailId: string, recipient: string): string {
  // The id has a fixed alphabet without a line feed, so the two fields cannot run into each other.
  const mac = createHmac('sha256', key).update(`${emailId}\n${normalised(recipient)}`).digest();
  return base32(mac, KEYED_TAG_CHARS);
}

/** The tag emails sent before keyed tags carry: 40 bits of an unkeyed SHA-256 of the address. */
export function legacyRecipientTag(recipient: string): string {
  return base32(createHash('sha256').update(normalised(recipient)).digest(), LEGACY_TAG_CHARS);
}

export const isLegacyTag = (tag: string) => tag.length === LEGACY_TAG_CHARS;

/**
 * Whether `tag` is the tag of `recipient` for that email, compared in
 * constant time. A legacy tag only counts when `legacyAllowed` (the email was
 * created before keyed tags began).
 */
export function tagNames(key: Buffer, tag: string, emailId: string, recipient: string, legacyAllowed: boolean): boolean {
  if (isLegacyTag(tag) && !legacyAllowed) return false;
  const expected = isLegacyTag(tag) ? legacyRecipientTag(recipient) : recipientTag(key, emailId, recipient);
  const [a, b] = [Buffer.from(tag), Buffer.from(expected)];
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The MAIL FROM address for an email. Pass the recipient when the SMTP
 * transaction carries that one recipient (a bounce then names it exactly),
 * or null when several recipients share the transaction (the report's own
 * recipient fields then say which one failed). `key` is the keyring's
 * returnPathKey; `returnPathDomain` is the full bounce domain, e.g.
 * `bounces.example.com`.
 */
export function returnPathFor(key: Buffer, emailId: string, recipient: string | null, returnPathDomain: string): string {
  const id = emailId.startsWith(EMAIL_PREFIX) ? emailId.slice(EMAIL_PREFIX.length) : '';
  if (id.length !== ID_CHARS || ![...id].every((c) => ALPHABET.includes(c))) {
    throw new Error(`returnPathFor: '${emailId}' is not an email id`);
  }
  const tag = recipient === null ? '' : `-${recipientTag(key, emailId, recipient)}`;
  return `b-${id}${tag}@${returnPathDomain.toLowerCase()}`;
}

/**
 * The email (and recipient tag) a return path names, or undefined when the
 * address does not have the shape of one of ours. Takes the whole address or
 * its local part; the domain is not checked here (the listener matched it
 * already), nor the tag (that needs the email's recipients). Case is folded,
 * since some relays upper-case the envelope.
 */
export function parseReturnPath(address: string): ReturnPath | undefined {
  const at = address.lastIndexOf('@');
  const local = (at < 0 ? address : address.slice(0, at)).toLowerCase();
  const m = LOCAL_PART.exec(local);
  if (!m) return undefined;
  return { emailId: `${EMAIL_PREFIX}${m[1]}`, ...(m[2] !== undefined && { recipientTag: m[2] }) };
}
