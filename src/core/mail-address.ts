import { domainToASCII } from 'node:url';
import { memoize } from './memo.js';

// What an address must be for mail to go to it, and for Mailroom to keep it
// (a contact, a suppression, a recipient): one check, so that an address a
// contact was saved with is one an email can be sent to.

/** RFC 5321 §4.5.3.1: 64 octets of local part, 254 for the whole path inside <>. */
const MAX_LOCAL_PART = 64;
const MAX_ADDRESS = 254;

// Dot-atom local part (RFC 5322 §3.2.3), letters and digits beyond ASCII
// allowed (RFC 6531), with the combining marks that follow them: most of the
// world's scripts write vowels with them (the u of Devanagari अनुराग), and
// some letters have no single code point (İ lower-cased is i and a combining
// dot). Address literals are refused.
const LOCAL_PART = /^[\p{L}\p{N}!#$%&'*+/=?^_`{|}~-][\p{L}\p{N}\p{M}!#$%&'*+/=?^_`{|}~-]*(\.[\p{L}\p{N}!#$%&'*+/=?^_`{|}~-][\p{L}\p{N}\p{M}!#$%&'*+/=?^_`{|}~-]*)*$/u;
// Quoted-string local part (RFC 5321 §4.1.2, "john doe"@example.com): space
// and printable ASCII, letters and digits beyond it, with " and \ only as a
// backslash pair. No control character, so no line break, can be inside,
// and neither can < or >, which end a path for the SMTP parsers on either side.
const QUOTED_LOCAL_PART = /^"(?:[\x20\x21\x23-\x3b\x3d\x3f-\x5b\x5d-\x7e\p{L}\p{N}\p{M}]|\\[\x20-\x3b\x3d\x3f-\x7e])+"$/u;

/**
 * Which local parts an address may have: a dot-atom always; a quoted one
 * where the address is only carried to the mail (an email's fields), but not
 * where it is kept as someone's address (a contact, a suppression), where
 * one spelling per person matters and a quoted one is rarely it.
 */
export type LocalParts = 'dot-atom' | 'dot-atom or quoted';
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

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

/** Whether mail can be addressed to `address`: a local part of the kinds `localParts` allows and a domain with a valid ASCII form (IDNA). */
export function isValidAddress(address: string, localParts: LocalParts = 'dot-atom'): boolean {
  if (address.length === 0 || address.length > MAX_ADDRESS) return false;
  const at = address.lastIndexOf('@');
  if (at <= 0) return false;
  const local = address.slice(0, at);
  const localOk = LOCAL_PART.test(local) || (localParts === 'dot-atom or quoted' && QUOTED_LOCAL_PART.test(local));
  // Octets as they go on the wire (UTF-8 under SMTPUTF8): a letter beyond ASCII takes two to four.
  return Buffer.byteLength(local) <= MAX_LOCAL_PART && localOk && mailDomain(address) !== undefined;
}
