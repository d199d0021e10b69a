import { describe, expect, it } from 'vitest';
import { checkSpam, SPAM_RULES, SPAM_THRESHOLD, type CheckedMessage } from '../../../src/emails/spam-check.js';

const clean: CheckedMessage = {
  subject: 'Your receipt for order 1042',
  html: '<p>Thanks for your order. It ships tomorrow; <a href="https://shop.example/orders/1042">see the order</a>.</p>',
  text: 'Thanks for your order. It ships tomorrow: https://shop.example/orders/1042',
  headers: { 'List-Unsubscribe': '<https://shop.example/u/1>' },
  attachmentNames: ['receipt.pdf'],
  domainVerified: true,
};

const fired = (m: Partial<CheckedMessage>) => checkSpam({ ...clean, ...m }).rules.map((r) => r.rule);

describe('checkSpam', () => {
  it('scores a plain transactional message at zero', () => {
    expect(checkSpam(clean)).toEqual({ object: 'spam_check', score: 0, threshold: SPAM_THRESHOLD, spam: false, rules: [], suggestions: [] });
  });

  const cases: Array<[string, Partial<CheckedMessage>]> = [
    ['domain_not_verified', { domainVerified: false }],
    ['html_without_text', { text: null }],
    ['images_with_little_text', { html: '<img src="https://shop.example/a.png"><p>Sale</p>', text: 'Sale' }],
    ['subject_all_caps', { subject: 'HUGE SALE TODAY ONLY' }],
    ['subject_exclamations', { subject: 'Hello!! there' }],
    ['spam_phrases', { text: 'Act now, this is risk-free.' }],
    ['body_all_caps', { text: 'THIS IS A VERY IMPORTANT MESSAGE ABOUT YOUR ACCOUNT. '.repeat(3) }],
    ['link_shortener', { html: '<p>Hi <a href="https://bit.ly/x1">here</a></p>' }],
    ['link_text_mismatch', { html: '<p><a href="https://evil.example/login">https://bank.example/login</a></p>' }],
    ['ip_address_link', { text: 'Go to http://203.0.113.9/offer' }],
    ['too_many_links', { text: Array.from({ length: 26 }, (_, i) => `https://shop.example/${i}`).join(' ') }],
    ['risky_attachment', { attachmentNames: ['invoice.pdf', 'Update.EXE'] }],
    ['html_too_large', { html: `<p>${'x'.repeat(103 * 1024)}</p>` }],
    ['no_list_unsubscribe', { headers: {} }],
  ];
  it.each(cases)('fires %s', (rule, change) => {
    expect(fired(change)).toContain(rule);
  });

  it('has a case above for every rule', () => {
    expect(cases.map(([rule]) => rule).sort()).toEqual(SPAM_RULES.map((r) => r.name).sort());
  });

  it('does not take a link on a subdomain of the shown address for a mismatch', () => {
    expect(fired({ html: '<a href="https://links.shop.example/c/1">shop.example</a>' })).not.toContain('link_text_mismatch');
  });

  it('adds points per spam phrase up to a cap, and calls 5 or more spam', () => {
    const r = checkSpam({
      ...clean, domainVerified: false, subject: 'WINNER!! CLAIM YOUR PRIZE',
      text: 'Act now: 100% free money, click here, limited time, no obligation.',
    });
    expect(r.rules.find((x) => x.rule === 'spam_phrases')!.score).toBe(3);
    expect(r.score).toBe(2.5 + 1.2 + 0.8 + 3);
    expect(r.spam).toBe(true);
    expect(r.suggestions).toHaveLength(r.rules.length);
  });
});
