import { describe, expect, it } from 'vitest';
import { normaliseDomainName } from '../../../src/domains/domain-name.js';

describe('normaliseDomainName', () => {
  it.each([
    ['example.com', 'example.com'],
    ['  Example.COM  ', 'example.com'],
    ['example.com.', 'example.com'],
    ['mail.sub.example.co.uk', 'mail.sub.example.co.uk'],
    ['bücher.de', 'xn--bcher-kva.de'],
    ['BÜCHER.de', 'xn--bcher-kva.de'],
    ['xn--bcher-kva.de', 'xn--bcher-kva.de'],
    ['例え.テスト', 'xn--r8jz45g.xn--zckzah'],
    ['a\u3002example.com', 'a.example.com'], // ideographic full stop is a dot in IDNA
    ['a-b.example', 'a-b.example'],
    ['123.example', '123.example'],
    [`${'a'.repeat(63)}.com`, `${'a'.repeat(63)}.com`],
    [`${'a.'.repeat(125)}com`, `${'a.'.repeat(125)}com`], // 253 characters
  ])('accepts %j as %j', (input, name) => {
    expect(normaliseDomainName(input)).toEqual({ ok: true, name });
  });

  it.each([
    ['', /empty/],
    ['   ', /empty/],
    ['.', /empty/],
    ['192.0.2.1', /IP address/],
    ['2001:db8::1', /IP address/],
    ['[::1]', /IP address/],
    ['0x7f.1', /numeric/],
    ['999.1.1.1', /numeric/],
    ['example.123', /numeric/],
    ['localhost', /two labels/],
    ['bücher', /two labels/],
    ['example..com', /empty label/],
    ['.example.com', /empty label/],
    ['example.com..', /empty label/],
    [`${'a'.repeat(64)}.com`, /longer than 63/],
    [`${'a.'.repeat(126)}com`, /longer than 253/],
    ['-example.com', /hyphen/],
    ['example-.com', /hyphen/],
    ['exa mple.com', /character " "/],
    ['exa_mple.com', /character "_"/],
    ['a%41.com', /character "%"/],
    ['example.com/path', /character "\/"/],
    ['user@example.com', /character "@"/],
    ['*.example.com', /character "\*"/],
    ['xn--zz.com', /internationalised/],
    ['ｅｘａｍｐｌｅ＿.com', /letters, digits/], // full-width low line maps to "_"
  ])('rejects %j', (input, reason) => {
    const result = normaliseDomainName(input);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(reason);
  });
});
