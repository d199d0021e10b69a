import { describe, expect, it } from 'vitest';
import { newId } from '../../../src/core/ids.js';
import { parseReturnPath, recipientTag, returnPathFor } from '../../../src/inbound/return-path.js';

describe('return paths', () => {
  const emailId = newId('em');

  it('name the email, and the recipient when there is one', () => {
    const single = returnPathFor(emailId, 'Reader@Remote.test', 'bounces.example.com');
    expect(single).toMatch(/^b-[0-9a-z]{26}-[0-9a-z]{8}@bounces\.example\.com$/);
    expect(single.split('@')[0].length).toBeLessThanOrEqual(64); // RFC 5321 §4.5.3.1.1
    expect(parseReturnPath(single)).toEqual({ emailId, recipientTag: recipientTag('reader@remote.test') });

    const shared = returnPathFor(emailId, null, 'bounces.example.com');
    expect(parseReturnPath(shared)).toEqual({ emailId });
  });

  it('survive a relay that upper-cases the envelope', () => {
    const path = returnPathFor(emailId, 'a@b.test', 'BOUNCES.example.com');
    expect(path.endsWith('@bounces.example.com')).toBe(true);
    expect(parseReturnPath(path.toUpperCase())).toEqual(parseReturnPath(path));
  });

  it('tag recipients apart, ignoring case and spaces', () => {
    expect(recipientTag(' A@B.test ')).toBe(recipientTag('a@b.test'));
    expect(recipientTag('a@b.test')).not.toBe(recipientTag('c@b.test'));
    expect(recipientTag('a@b.test')).not.toMatch(/[ilou]/); // Crockford's alphabet
  });

  it('are not read out of other addresses', () => {
    for (const address of ['postmaster@bounces.example.com', 'b-@x.test', `b-${emailId.slice(3)}-short@x.test`,
      `c-${emailId.slice(3)}@x.test`, `b-${emailId.slice(3)}x@x.test`, `b-${emailId.slice(3, -1)}u@x.test`]) {
      expect(parseReturnPath(address), address).toBeUndefined();
    }
  });

  it('need an email id', () => {
    expect(() => returnPathFor('in_01h0000000000000000000000', null, 'bounces.x.test')).toThrow(/not an email id/);
    expect(() => returnPathFor('em_short', null, 'bounces.x.test')).toThrow(/not an email id/);
  });
});
