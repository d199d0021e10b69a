// The sending domain a user submits, turned into the one form Mailroom stores,
// signs with (DKIM d=) and looks up in DNS: lower-case A-labels, no root dot.
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';

export type DomainNameResult = { ok: true; name: string } | { ok: false; reason: string };

// RFC 1035 §2.3.4: 63 octets per label; 255 octets on the wire, which is 253
// characters in dotted form without the root dot.
const MAX_LABEL_LENGTH = 63;
const MAX_NAME_LENGTH = 253;

// RFC 952 / RFC 1123 §2.1 host names, applied to the A-label form.
const LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;

// The WHATWG host parser behind domainToASCII reads a name whose last label is
// a number (decimal or 0x-hex) as an IPv4 address ("0x7f.1" is 127.0.0.1), and
// RFC 3696 §2 rules out all-numeric top-level labels anyway.
const NUMERIC_LABEL = /^(?:\d+|0x[0-9a-f]*)$/;

// ASCII characters are limited to LDH before conversion: the WHATWG parser
// would otherwise percent-decode ("a%41.com" -> "aa.com") or cut at a "/",
// turning what the user typed into a different name. Non-ASCII is left to IDNA.
const ASCII_NOT_LDH = /[\x00-\x2c\x2f\x3a-\x60\x7b-\x7f]/;

export function normaliseDomainName(input: string): DomainNameResult {
  let name = input.trim().toLowerCase();
  if (name.endsWith('.')) name = name.slice(0, -1);
  if (name === '') return { ok: false, reason: 'The domain name is empty.' };

  if (isIP(name) !== 0 || (name.startsWith('[') && name.endsWith(']'))) {
    return { ok: false, reason: 'An IP address is not a domain name.' };
  }
  if (NUMERIC_LABEL.test(name.slice(name.lastIndexOf('.') + 1))) {
    return { ok: false, reason: 'The last label of a domain name cannot be numeric.' };
  }
  const bad = ASCII_NOT_LDH.exec(name);
  if (bad) {
    return { ok: false, reason: `The character ${JSON.stringify(bad[0])} is not allowed in a domain name.` };
  }

  const ascii = domainToASCII(name);
  if (ascii === '') {
    return { ok: false, reason: 'The name is not a valid internationalised domain name.' };
  }

  const labels = ascii.split('.');
  if (labels.length < 2) {
    return { ok: false, reason: 'A sending domain needs at least two labels, such as example.com.' };
  }
  for (const label of labels) {
    if (label === '') return { ok: false, reason: 'The domain name has an empty label.' };
    if (label.length > MAX_LABEL_LENGTH) {
      return { ok: false, reason: `The label "${label}" is longer than ${MAX_LABEL_LENGTH} characters.` };
    }
    if (!LABEL.test(label)) {
      return {
        ok: false,
        reason: `The label "${label}" may hold only letters, digits and hyphens, and cannot start or end with a hyphen.`,
      };
    }
  }
  if (ascii.length > MAX_NAME_LENGTH) {
    return { ok: false, reason: `The domain name is longer than ${MAX_NAME_LENGTH} characters.` };
  }
  return { ok: true, name: ascii };
}
