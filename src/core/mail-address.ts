import { domainToASCII } from 'node:url';
import { memoize } from './memo.js';

// What an address must be for mail to go to it, and for Mailroom to keep it
// (a contact, a suppression, a recipient): one check, so that an address a
// contact was saved with is one an email can be sent to.

/** RFC 5321 §4.5.3.1: 64 octets of local part, 254 for the whole path inside <>. */
const MAX_LOCAL_PART = 64;
const MAX_ADDRESS = 254;

// Dot-atom local part (RFC 5322 §3.2.3), letters and digits beyond ASCII
// allowed (RFC 6531). Quoted local parts and address literals are refused:
// rare in real mail and a favourite of header injection.
const LOCAL_PART = /^[\p{L}\p{N}!#$%&'*+/=?^_`{|}~-]+(\.[\p{L}\p{N}!#$%&'*+/=?^_`{|}~-]+)*$/u;
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

/** Whether mail can be addressed to `address`: a dot-atom local part and a domain with a valid ASCII form (IDNA). */
export function isValidAddress(address: string): boolean {
  if (address.length === 0 || address.length > MAX_ADDRESS) return false;
  const at = address.lastIndexOf('@');
  if (at <= 0) return false;
  const local = address.slice(0, at);
  return local.length <= MAX_LOCAL_PART && LOCAL_PART.test(local) && mailDomain(address) !== undefined;
}
