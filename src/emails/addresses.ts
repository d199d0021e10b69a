import addressparser from 'nodemailer/lib/addressparser';
import { isValidAddress, mailDomain } from '../core/mail-address.js';

// Mailbox parsing for the address fields of an email: one mailbox per entry,
// with an optional display name ("Ann Lee <ann@x.test>", "\"Lee, Ann\"
// <ann@x.test>", or the bare address), its local part a dot-atom or quoted
// ("\"john doe\"@x.test").

export { mailDomain };

export interface Mailbox {
  /** The address as given, trimmed. */
  email: string;
  name?: string;
}

const MAX_DISPLAY_NAME = 200;
// C0 controls and DEL never belong in a header value.
const CONTROL = /[\u0000-\u001f\u007f]/;


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
  // A quoted local part is carried as written: nodemailer keeps it quoted, in RCPT TO and in the header.
  if (!isValidAddress(email, 'dot-atom or quoted')) return { ok: false, reason: `is not a valid email address` };
  // The parser mends unbalanced quotes ("john doe@x.test reads as "john doe"@x.test): as written, the address must be valid itself.
  const written = /<([^<>]*)>$/.exec(input.trim())?.[1] ?? input.trim();
  if (written.includes('"') && !isValidAddress(written, 'dot-atom or quoted')) return { ok: false, reason: `is not a valid email address` };
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
