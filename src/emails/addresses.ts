import addressparser from 'nodemailer/lib/addressparser';
import { domainToASCII } from 'node:url';
import { memoize } from '../core/memo.js';

// Mailbox parsing for the address fields of an email: one mailbox per entry,
// with an optional display name ("Ann Lee <ann@x.test>", "\"Lee, Ann\"
// <ann@x.test>", or the bare address).

export interface Mailbox {
  /** The address as given, trimmed. */
  email: string;
  name?: string;
}

/** RFC 5321 §4.5.3.1: 64 octets of local part, 254 for the whole path inside <>. */
const MAX_LOCAL_PART = 64;
const MAX_ADDRESS = 254;
const MAX_DISPLAY_NAME = 200;

// Dot-atom local part (RFC 5322 §3.2.3), letters and digits beyond ASCII
// allowed (RFC 6531). Quoted local parts are refused: rare in real mail and a
// favourite of header injection.
const LOCAL_PART = /^[\p{L}\p{N}!#$%&'*+/=?^_`{|}~-]+(\.[\p{L}\p{N}!#$%&'*+/=?^_`{|}~-]+)*$/u;
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
// C0 controls and DEL never belong in a header value.
const CONTROL = /[\u0000-\u001f\u007f]/;

/** The ASCII (punycode) form of an address's domain, lower-cased, or undefined when it is not a usable mail domain. */
export function mailDomain(address: string): string | undefined {
  const at = address.lastIndexOf('@');
  return at <= 0 ? undefined : checkedMailDomain(address.slice(at + 1).toLowerCase());
}

// An email's addresses share a few domains (and a batch's emails, their
// from), and each is checked several times on its way: the answers, which
// depend on the domain alone, are remembered.
const checkedMailDomain = memoize(asciiMailDomain, 10_000);

function asciiMailDomain(domain: string): string | undefined {
  const ascii = domainToASCII(domain);
  if (!ascii || ascii.length > 253) return undefined;
  const labels = ascii.split('.');
  // A bare host cannot receive Internet mail; an all-digit TLD is an IP address without brackets.
  if (labels.length < 2 || /^\d+$/.test(labels.at(-1)!)) return undefined;
  return labels.every((l) => LABEL.test(l)) ? ascii : undefined;
}

export function isValidAddress(address: string): boolean {
  if (address.length === 0 || address.length > MAX_ADDRESS) return false;
  const at = address.lastIndexOf('@');
  if (at <= 0) return false;
  const local = address.slice(0, at);
  return local.length <= MAX_LOCAL_PART && LOCAL_PART.test(local) && mailDomain(address) !== undefined;
}

// The common forms, a bare address or a plain name before <address>, read
// the same with or without the full RFC 5322 parser, which costs more than
// the rest of checking an email; anything else goes through the parser.
const PLAIN_ADDRESS = /^[^\s"<>(),:;\\[\]]+$/;
const PLAIN_NAMED = /^([\p{L}\p{N}.'&_-]+(?: [\p{L}\p{N}.'&_-]+)*) <([^\s"<>(),:;\\[\]]+)>$/u;

function plainMailbox(input: string): { name: string; address: string } | undefined {
  if (PLAIN_ADDRESS.test(input)) return { name: '', address: input };
  const named = PLAIN_NAMED.exec(input);
  return named ? { name: named[1], address: named[2] } : undefined;
}

// RFC 2047 §2: =?charset?encoding?text?=, the charset possibly with a *language (RFC 2231 §5).
const ENCODED_WORD = /=\?([^?\s]+)\?([BbQq])\?([^?\s]*)\?=/g;
// RFC 2047 §6.2: whitespace between two encoded words is not shown.
const BETWEEN_ENCODED_WORDS = /(\?=)\s+(?==\?[^?\s]+\?[BbQq]\?)/g;

function decodeWord(_word: string, charset: string, encoding: string, text: string): string {
  const bytes = encoding.toUpperCase() === 'B'
    ? Buffer.from(text, 'base64')
    : Buffer.from(text.replace(/_/g, ' ').replace(/=([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1');
  try {
    return new TextDecoder(charset.split('*')[0]).decode(bytes);
  } catch {
    // A charset not known here is read as Latin-1, as lenient clients guess: an "@" is the same byte either way.
    return bytes.toString('latin1');
  }
}

/** A display name as a mail client shows it: encoded words decoded, then NFKC (a fullwidth "＠" is an "@"). */
export function displayed(name: string): string {
  if (!name.includes('=?')) return name.normalize('NFKC');
  return name.replace(BETWEEN_ENCODED_WORDS, '$1').replace(ENCODED_WORD, decodeWord).normalize('NFKC');
}

/** The single mailbox in `input`, or a reason it is not one. */
export function parseMailbox(input: string): { ok: true; mailbox: Mailbox } | { ok: false; reason: string } {
  if (CONTROL.test(input)) return { ok: false, reason: 'contains a control character or line break' };
  const plain = plainMailbox(input.trim());
  const parsed = plain ? [plain] : addressparser(input.trim());
  if (parsed.length !== 1) {
    return { ok: false, reason: parsed.length === 0 ? 'is empty' : 'holds more than one address (pass an array instead)' };
  }
  const entry = parsed[0];
  if ('group' in entry && entry.group !== undefined) return { ok: false, reason: 'is a group, not an address' };
  const email = entry.address.trim();
  if (!isValidAddress(email)) return { ok: false, reason: `is not a valid email address` };
  const name = entry.name.trim();
  if (name.length > MAX_DISPLAY_NAME) return { ok: false, reason: `has a display name over ${MAX_DISPLAY_NAME} characters` };
  // "a@x.test b@y.test" parses as b@y.test named "a@x.test": almost always two
  // addresses run together, and a name that reads as an address misleads the
  // reader. Read as a mail client shows it: encoded words decoded (many
  // clients decode them even inside quotes) and compatibility forms folded,
  // so "=?utf-8?q?ceo=40bank.test?=" and a fullwidth "＠" are caught too.
  if (displayed(name).includes('@')) return { ok: false, reason: 'has a display name that looks like an address' };
  return { ok: true, mailbox: name ? { email, name } : { email } };
}

/** Suppressions and duplicates compare addresses trimmed and lower-cased as a whole. */
export function addressKey(email: string): string {
  return email.trim().toLowerCase();
}
