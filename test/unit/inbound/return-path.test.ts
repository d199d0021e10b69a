import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newId } from '../../../src/core/ids.js';
import { deriveKeyring } from '../../../src/keyring.js';
import {
  KEYED_TAG_CHARS, LEGACY_TAG_CHARS, legacyRecipientTag, parseReturnPath, recipientTag, returnPathFor, tagNames,
} from '../../../src/inbound/return-path.js';

describe('return paths', () => {
  const emailId = newId('em');
  const key = randomBytes(32);

  it('name the email, and the recipient when there is one', () => {
    const single = returnPathFor(key, emailId, 'Reader@Remote.test', 'bounces.example.com');
    expect(single).toMatch(/^b-[0-9a-z]{26}-[0-9a-z]{13}@bounces\.example\.com$/);
    expect(single.split('@')[0].length).toBe(42); // RFC 5321 §4.5.3.1.1 allows 64
    expect(parseReturnPath(single)).toEqual({ emailId, recipientTag: recipientTag(key, emailId, 'reader@remote.test') });

    const shared = returnPathFor(key, emailId, null, 'bounces.example.com');
    expect(parseReturnPath(shared)).toEqual({ emailId });
  });

  it('survive a relay that upper-cases the envelope', () => {
    const path = returnPathFor(key, emailId, 'a@b.test', 'BOUNCES.example.com');
    expect(path.endsWith('@bounces.example.com')).toBe(true);
    expect(parseReturnPath(path.toUpperCase())).toEqual(parseReturnPath(path));
  });

  it('still read the 8-character tags of emails sent before tags were keyed', () => {
    const legacy = `b-${emailId.slice(3)}-${legacyRecipientTag('a@b.test')}@bounces.example.com`;
    expect(parseReturnPath(legacy)).toEqual({ emailId, recipientTag: legacyRecipientTag('a@b.test') });
    // The values the unkeyed tags had, so bounces of mail already sent still match.
    expect([legacyRecipientTag('reader@remote.test'), legacyRecipientTag(' A@B.test ')]).toEqual(['j7h8y65s', 'v67vfvap']);
  });

  it('are not read out of other addresses', () => {
    const id = emailId.slice(3);
    for (const address of ['postmaster@bounces.example.com', 'b-@x.test', `b-${id}-short@x.test`, `b-${id}-${'0'.repeat(10)}@x.test`,
      `b-${id}-${'0'.repeat(14)}@x.test`, `c-${id}@x.test`, `b-${id}x@x.test`, `b-${id.slice(0, -1)}u@x.test`]) {
      expect(parseReturnPath(address), address).toBeUndefined();
    }
  });

  it('need an email id', () => {
    expect(() => returnPathFor(key, 'in_01h0000000000000000000000', null, 'bounces.x.test')).toThrow(/not an email id/);
    expect(() => returnPathFor(key, 'em_short', null, 'bounces.x.test')).toThrow(/not an email id/);
  });
});

describe('recipient tags', () => {
  const emailId = newId('em');
  const key = randomBytes(32);

  it('are 13 characters of Crockford\'s alphabet, apart from the 8 of the legacy tags', () => {
    const tag = recipientTag(key, emailId, 'a@b.test');
    expect(tag).toMatch(new RegExp(`^[0-9a-hjkmnp-tv-z]{${KEYED_TAG_CHARS}}$`));
    expect(legacyRecipientTag('a@b.test')).toMatch(new RegExp(`^[0-9a-hjkmnp-tv-z]{${LEGACY_TAG_CHARS}}$`));
  });

  it('depend on the key, the email and the recipient, not on case or spaces', () => {
    expect(recipientTag(key, emailId, ' A@B.test ')).toBe(recipientTag(key, emailId, 'a@b.test'));
    expect(recipientTag(key, emailId, 'a@b.test')).not.toBe(recipientTag(key, emailId, 'c@b.test'));
    expect(recipientTag(key, emailId, 'a@b.test')).not.toBe(recipientTag(key, newId('em'), 'a@b.test'));
    expect(recipientTag(key, emailId, 'a@b.test')).not.toBe(recipientTag(randomBytes(32), emailId, 'a@b.test'));
  });

  it('come from the keyring\'s own key, the same on every node of one master secret', () => {
    const master = randomBytes(32);
    const [one, other] = [deriveKeyring(master), deriveKeyring(Buffer.from(master))];
    expect(recipientTag(one.returnPathKey, emailId, 'a@b.test')).toBe(recipientTag(other.returnPathKey, emailId, 'a@b.test'));
    const otherKeys = [one.apiKeyPepper, one.cursorKey, one.sealKey, one.trackingKey, one.unsubscribeKey, one.storeCheckKey];
    expect(otherKeys.some((k) => k.equals(one.returnPathKey))).toBe(false);
  });

  it('are checked against the recipient they name', () => {
    const tag = recipientTag(key, emailId, 'a@b.test');
    expect(tagNames(key, tag, emailId, 'A@b.test', false)).toBe(true);
    expect(tagNames(key, tag, emailId, 'c@b.test', false)).toBe(false);
    expect(tagNames(key, tag, newId('em'), 'a@b.test', false)).toBe(false);
    expect(tagNames(randomBytes(32), tag, emailId, 'a@b.test', false)).toBe(false);
    // One character off, and a tag of another length: neither is taken (nor throws in the constant-time compare).
    const flipped = `${tag.slice(0, -1)}${tag.endsWith('0') ? '1' : '0'}`;
    expect(tagNames(key, flipped, emailId, 'a@b.test', false)).toBe(false);
    expect(tagNames(key, tag.slice(0, 10), emailId, 'a@b.test', false)).toBe(false);
  });

  it('take a legacy tag only for an email from before keyed tags', () => {
    const legacy = legacyRecipientTag('a@b.test');
    expect(tagNames(key, legacy, emailId, 'a@b.test', true)).toBe(true);
    expect(tagNames(key, legacy, emailId, 'a@b.test', false)).toBe(false);
    expect(tagNames(key, legacy, emailId, 'c@b.test', true)).toBe(false);
  });
});
