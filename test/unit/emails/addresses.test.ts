import { describe, expect, it } from 'vitest';
import addressparser from 'nodemailer/lib/addressparser';
import { isValidAddress, mailDomain } from '../../../src/core/mail-address.js';
import { addressKey, parseMailbox } from '../../../src/emails/addresses.js';

describe('parseMailbox', () => {
  it.each([
    'ann@example.com', 'Ann Lee <ann@example.com>', "J. O'Neil-Smith <j.oneil+tag@example.com>", 'Zoë <zoë@bücher.example>',
    'Bench & Co <bench@example.com>', 'ann.lee@sub.example.co.uk',
  ])('reads the plain form %j as the full parser does', (input) => {
    const [full] = addressparser(input) as Array<{ name: string; address: string }>;
    expect(parseMailbox(input)).toEqual({ ok: true, mailbox: full.name ? { email: full.address, name: full.name } : { email: full.address } });
  });

  it.each([
    ['ann@example.com', { email: 'ann@example.com' }],
    ['  ann@example.com  ', { email: 'ann@example.com' }],
    ['Ann Lee <ann@example.com>', { email: 'ann@example.com', name: 'Ann Lee' }],
    ['"Lee, Ann" <ann@example.com>', { email: 'ann@example.com', name: 'Lee, Ann' }],
    ['<ann@example.com>', { email: 'ann@example.com' }],
    ['Zoë <zoë@bücher.example>', { email: 'zoë@bücher.example', name: 'Zoë' }],
    ['"=?utf-8?q?Ann_L=C3=A9e?=" <ann@x.test>', { email: 'ann@x.test', name: '=?utf-8?q?Ann_L=C3=A9e?=' }],
    // Quoted local parts (RFC 5321 section 4.1.2), kept quoted; one that needs no quotes loses them.
    ['"quoted local"@x.test', { email: '"quoted local"@x.test' }],
    ['Ann <"ann,ops"@x.test>', { email: '"ann,ops"@x.test', name: 'Ann' }],
    ['"Lee, Ann" <"a@b"@x.test>', { email: '"a@b"@x.test', name: 'Lee, Ann' }],
    ['"say \\"hi\\""@x.test', { email: '"say \\"hi\\""@x.test' }],
    ['"Zoë Ünal"@bücher.example', { email: '"Zoë Ünal"@bücher.example' }],
    ['"ann"@x.test', { email: 'ann@x.test' }],
  ])('accepts %j', (input, mailbox) => {
    expect(parseMailbox(input)).toEqual({ ok: true, mailbox });
  });

  it.each([
    ['', 'is empty'],
    ['ann', 'is not a valid email address'],
    ['ann@localhost', 'is not a valid email address'],
    ['ann@192.168.1.1', 'is not a valid email address'],
    ['a@x.test, b@y.test', 'holds more than one address (pass an array instead)'],
    ['a@x.test b@y.test', 'has a display name that looks like an address'],
    ['"=?utf-8?q?ceo=40bank.test?=" <ann@x.test>', 'has a display name that looks like an address'],
    ['=?UTF-8?B?Y2VvQGJhbmsudGVzdA==?= <ann@x.test>', 'has a display name that looks like an address'],
    ['"=?iso-8859-1?q?ceo?=  =?utf-8?q?=40bank.test?=" <ann@x.test>', 'has a display name that looks like an address'],
    ['"=?x-unheard-of?q?ceo=40bank.test?=" <ann@x.test>', 'has a display name that looks like an address'],
    ['"ceo＠bank.test" <ann@x.test>', 'has a display name that looks like an address'],
    ['team: a@x.test;', 'is a group, not an address'],
    ['Ann <ann@x.test>\r\nBcc: evil@y.test', 'contains a control character or line break'],
    // Quotes the parser would mend, or a quoted local part RFC 5321 does not allow.
    ['"john doe@x.test', 'is not a valid email address'],
    ['john doe"@x.test', 'is not a valid email address'],
    ['"john" doe"@x.test', 'is not a valid email address'],
    ['"john\\"@x.test', 'is not a valid email address'],
    ['Ann "john doe"@x.test', 'is not a valid email address'],
    ['""@x.test', 'is not a valid email address'],
    ['"a<b"@x.test', 'is not a valid email address'],
    ['"a\u200bb"@x.test', 'is not a valid email address'],
    ['"a\r\nBcc: evil@y.test"@x.test', 'contains a control character or line break'],
    ['"a\tb"@x.test', 'contains a control character or line break'],
    [`"${'a'.repeat(63)}"@x.test`, 'is not a valid email address'],
    [`${'a'.repeat(65)}@x.test`, 'is not a valid email address'],
  ])('refuses %j', (input, reason) => {
    expect(parseMailbox(input)).toEqual({ ok: false, reason });
  });
});

describe('mailDomain', () => {
  it('gives the lower-cased ASCII form of the domain', () => {
    expect(mailDomain('Ann@Example.COM')).toBe('example.com');
    expect(mailDomain('zoë@bücher.example')).toBe('xn--bcher-kva.example');
  });

  it('refuses bare hosts, IP-like names and bad labels', () => {
    expect(mailDomain('a@localhost')).toBeUndefined();
    expect(mailDomain('a@10.0.0.1')).toBeUndefined();
    expect(mailDomain('a@-bad.example')).toBeUndefined();
    expect(mailDomain('no-at-sign')).toBeUndefined();
  });
});

describe('isValidAddress and addressKey', () => {
  it('checks the local part length and form', () => {
    expect(isValidAddress('first.last+tag@example.com')).toBe(true);
    expect(isValidAddress('.lead@example.com')).toBe(false);
    expect(isValidAddress('double..dot@example.com')).toBe(false);
  });

  it('takes the combining marks that follow a letter or digit of a local part, not one that starts an atom', () => {
    expect(isValidAddress('\u0905\u0928\u0941\u0930\u093e\u0917@example.com')).toBe(true);
    expect(isValidAddress('\u0130nci@example.com'.toLowerCase())).toBe(true);
    expect(isValidAddress('jo\u0308rg@example.com')).toBe(true);
    expect(isValidAddress('\u0308jorg@example.com')).toBe(false);
    expect(isValidAddress('jorg.\u0308x@example.com')).toBe(false);
    expect(isValidAddress('"\u0905\u0928\u0941 \u0930"@example.com', 'dot-atom or quoted')).toBe(true);
  });

  it('counts the local part\'s 64 in octets, as they go on the wire, not in characters', () => {
    expect(isValidAddress(`${'a'.repeat(64)}@example.com`)).toBe(true);
    expect(isValidAddress(`${'a'.repeat(65)}@example.com`)).toBe(false);
    // Two octets a letter in UTF-8.
    expect(isValidAddress(`${'\u00e9'.repeat(32)}@example.com`)).toBe(true);
    expect(isValidAddress(`${'\u00e9'.repeat(33)}@example.com`)).toBe(false);
    // Three a Devanagari letter or mark: 22 are 66.
    expect(isValidAddress(`${'\u0905'.repeat(21)}@example.com`)).toBe(true);
    expect(isValidAddress(`${'\u0905'.repeat(22)}@example.com`)).toBe(false);
  });

  it('takes a quoted local part only where asked to: an email\'s fields, not a contact or a suppression', () => {
    expect(isValidAddress('"john doe"@example.com')).toBe(false);
    expect(isValidAddress('"john doe"@example.com', 'dot-atom or quoted')).toBe(true);
    expect(isValidAddress('"john"doe"@example.com', 'dot-atom or quoted')).toBe(false);
    expect(isValidAddress('"john\ndoe"@example.com', 'dot-atom or quoted')).toBe(false);
  });

  it('folds case and trims for comparisons', () => {
    expect(addressKey('  Ann@Example.com ')).toBe('ann@example.com');
  });
});
