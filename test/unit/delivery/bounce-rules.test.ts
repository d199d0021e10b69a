import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BOUNCE_RULES, classifyBounce, extractEnhancedStatus, matchBounceRule, parseReply } from '../../../src/delivery/bounce-rules.js';

interface FixtureLine { line: number; expected: string; reply: string }

function readFixture(): FixtureLine[] {
  const text = readFileSync(new URL('../../fixtures/bounces.txt', import.meta.url), 'utf8');
  return text.split('\n').flatMap((raw, i) => {
    if (!raw.trim() || raw.startsWith('#')) return [];
    const bar = raw.indexOf(' | ');
    if (bar < 0) throw new Error(`bounces.txt:${i + 1}: missing " | "`);
    return [{ line: i + 1, expected: raw.slice(0, bar).trim(), reply: raw.slice(bar + 3).replaceAll('\\n', '\n') }];
  });
}

describe('bounce rules', () => {
  const fixture = readFixture();

  it.each(fixture)('bounces.txt:$line $expected', ({ expected, reply }) => {
    const c = classifyBounce(reply);
    expect(`${c.bounce_type} ${c.bounce_subtype} ${c.recommended_action}`).toBe(expected);
  });

  it('backs every rule with at least one fixture line', () => {
    const used = new Set(fixture.map(({ reply }) => matchBounceRule(reply).name));
    expect(BOUNCE_RULES.map((r) => r.name).filter((name) => !used.has(name))).toEqual([]);
  });

  it('has unique rule names', () => {
    expect(new Set(BOUNCE_RULES.map((r) => r.name)).size).toBe(BOUNCE_RULES.length);
  });

  it('classifies an already split reply the same as its text', () => {
    expect(classifyBounce({ code: 550, enhanced: '5.1.1', text: 'no' })).toEqual(classifyBounce('550 5.1.1 no'));
  });
});

describe('enhanced status codes (RFC 3463)', () => {
  it.each([
    ['550 5.1.1 <a@b>: Recipient address rejected', '5.1.1'],
    ['550-5.7.26 first line\n550 5.7.26 last line', '5.7.26'],
    ['550 5.7.509 Access denied', '5.7.509'],
    ['4.2.2 mailbox full', '4.2.2'],
    ['550 #5.1.0 Address rejected.', '5.1.0'],
    ['550 Requested action not taken (5.2.1).', '5.2.1'],
    ['550 mailbox unavailable', undefined],
    ['554 Client host 5.1.1.1 blocked', undefined],
    ['250 2.0.0 Ok', '2.0.0'],
  ])('%j -> %s', (text, code) => {
    expect(extractEnhancedStatus(text)).toBe(code);
  });

  it('splits the basic code out', () => {
    expect(parseReply('451 4.7.1 greylisted')).toEqual({ code: 451, enhanced: '4.7.1', text: '451 4.7.1 greylisted' });
    expect(parseReply('Connection closed')).toEqual({ text: 'Connection closed' });
  });
});
