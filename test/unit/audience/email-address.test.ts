import { describe, expect, it } from 'vitest';
import { isValidAddress, normaliseAddress } from '../../../src/contacts/email-address.js';

describe('address normal form', () => {
  it('trims and lower-cases the whole address', () => {
    expect(normaliseAddress('  Ann.Lee+News@Example.COM\t')).toBe('ann.lee+news@example.com');
    expect(normaliseAddress('ZOË@BÜCHER.example')).toBe('zoë@bücher.example');
  });

  it('accepts dot-atom addresses, UTF-8 included', () => {
    for (const a of ['a@example.com', 'first.last@sub.example.co.uk', "o'brien+tag@example.com", 'x_y-z@ex-ample.org', 'zoë@bücher.example', '用户@例子.广告', `${'a'.repeat(64)}@example.com`]) {
      expect(isValidAddress(a), a).toBe(true);
    }
  });

  it('refuses what cannot be a deliverable address', () => {
    for (const a of [
      '', 'plain', '@example.com', 'a@', 'a@localhost', 'a@example', 'a@1.2.3.4', 'a@[127.0.0.1]', '"quoted"@example.com',
      '.a@example.com', 'a.@example.com', 'a..b@example.com', 'a b@example.com', 'a@exa mple.com', 'a@-example.com',
      'a@example-.com', 'a@example..com', 'a@@example.com', `${'a'.repeat(65)}@example.com`, `a@${'b'.repeat(64)}.com`,
      // 58 characters as written, 68 in its ASCII form: no DNS name, so no mail can go to it.
      'info@bürgerbüro-der-verbandsgemeinde-südliche-weinstraße-landau.de',
      `a@${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}.${'e'.repeat(60)}.${'f'.repeat(10)}.com`, 'a\n@example.com',
    ]) {
      expect(isValidAddress(a), JSON.stringify(a)).toBe(false);
    }
  });
});
