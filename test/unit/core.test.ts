import { describe, expect, it } from 'vitest';
import { cursorCodec } from '../../src/core/cursors.js';
import { newId } from '../../src/core/ids.js';
import { canGrant, expandScopes } from '../../src/core/scopes.js';
import { isLoopbackAddress } from '../../src/core/loopback.js';
import { mintToken, parseToken } from '../../src/api-keys/token.js';

describe('core helpers', () => {
  it('makes prefixed ids that sort by creation time', () => {
    const a = newId('em', 1_000);
    const b = newId('em', 2_000);
    expect(a).toMatch(/^em_[0-9a-z]{26}$/);
    expect(a < b).toBe(true);
  });

  it('round-trips cursors and refuses them for another list or workspace', () => {
    const codec = cursorCodec(Buffer.alloc(32, 7));
    const c = codec.encode('listEmails', 'ws_a', 12345);
    expect(codec.decode('listEmails', 'ws_a', c, 'starting_after')).toBe(12345);
    expect(() => codec.decode('listEmails', 'ws_b', c, 'starting_after')).toThrow(/not valid/);
    expect(() => codec.decode('listDomains', 'ws_a', c, 'starting_after')).toThrow(/not valid/);
    expect(() => cursorCodec(Buffer.alloc(32, 8)).decode('listEmails', 'ws_a', c, 'x')).toThrow(/not valid/);
    // Any changed character is refused, the last one included.
    for (let i = 0; i < c.length; i++) {
      const changed = c.slice(0, i) + (c[i] === 'B' ? 'A' : 'B') + c.slice(i + 1);
      expect(() => codec.decode('listEmails', 'ws_a', changed, 'x')).toThrow(/not valid/);
    }
  });

  it('mints tokens whose checksum catches typos', () => {
    const { token, lookup } = mintToken('test');
    expect(parseToken(token)).toEqual({ mode: 'test', lookup });
    expect(parseToken(token.replace('svc_test_', 'svc_live_'))).toBeUndefined();
    const typo = token.slice(0, 15) + (token[15] === 'Z' ? 'Y' : 'Z') + token.slice(16);
    expect(parseToken(typo)).toBeUndefined();
  });

  it('grants only scopes the granter holds', () => {
    expect(expandScopes(['sending_access'])).toEqual(new Set(['emails:send']));
    expect(canGrant(['full_access'], ['full_access'])).toBe(true);
    expect(canGrant(['sending_access'], ['emails:send'])).toBe(true);
    expect(canGrant(['emails:send'], ['sending_access'])).toBe(true);
    expect(canGrant(['emails:send', 'emails:read'], ['emails:read', 'domains:read'])).toBe(false);
    // full_access cannot be assembled from every fine scope.
    expect(canGrant([...expandScopes(['full_access'])], ['full_access'])).toBe(false);
  });
});

describe('isLoopbackAddress', () => {
  it('knows the machine\'s own addresses, IPv4-mapped ones included, and nothing else', () => {
    for (const a of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1', '::FFFF:127.0.0.2']) expect(isLoopbackAddress(a)).toBe(true);
    for (const a of ['10.0.0.1', '128.0.0.1', '::2', '::ffff:10.0.0.1', '127.0.0.1.evil.test', 'localhost', '']) expect(isLoopbackAddress(a)).toBe(false);
  });
});
