import { describe, expect, it } from 'vitest';
import { unsubscribeLinks } from '../../../src/unsubscribe/links.js';

const KEY = Buffer.alloc(32, 7);
const links = unsubscribeLinks(KEY, 'https://mail.example.test');
const tokenOf = (url: string) => url.slice('https://mail.example.test/u/'.length);

describe('unsubscribe links', () => {
  it('name the workspace and the normalised address, and read back', () => {
    const url = links.url('ws_abc', ' Ann@Example.com ');
    expect(url).toMatch(/^https:\/\/mail\.example\.test\/u\/[A-Za-z0-9_-]+$/);
    expect(links.read(tokenOf(url))).toEqual({ workspaceId: 'ws_abc', email: 'ann@example.com' });
    expect(links.url('ws_abc', 'ann@example.com')).toBe(url);
  });

  it('give the RFC 8058 header pair', () => {
    expect(links.unsubscribeHeaders('ws_abc', 'ann@example.com')).toEqual({
      'List-Unsubscribe': `<${links.url('ws_abc', 'ann@example.com')}>`,
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    });
  });

  it('refuse any edited, truncated, foreign or malformed token', () => {
    const token = tokenOf(links.url('ws_abc', 'ann@example.com'));
    for (let i = 0; i < token.length; i++) {
      const edited = token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);
      // Base64url's last character can carry unused bits; only real changes must fail.
      if (Buffer.from(edited, 'base64url').equals(Buffer.from(token, 'base64url'))) continue;
      expect(links.read(edited), `position ${i}`).toBeUndefined();
    }
    expect(links.read(token.slice(0, -4))).toBeUndefined();
    expect(links.read(token + 'AA')).toBeUndefined();
    expect(unsubscribeLinks(Buffer.alloc(32, 8), 'https://mail.example.test').read(token)).toBeUndefined();
    for (const bad of ['', 'x', '!!!!', 'a'.repeat(601), Buffer.from('\x01junk').toString('base64url')]) {
      expect(links.read(bad), bad).toBeUndefined();
    }
  });

  it('refuse a well-signed token whose content is not a workspace and an address', () => {
    // A sender passing something else than a workspace id or an address gets
    // a link that does nothing, rather than one that unsubscribes the wrong thing.
    const forged = tokenOf(links.url('key_abc', 'ann@example.com'));
    expect(links.read(forged)).toBeUndefined();
    expect(links.read(tokenOf(links.url('ws_abc', 'not an address')))).toBeUndefined();
  });
});
