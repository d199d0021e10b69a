import { describe, expect, it } from 'vitest';
import { checkSpam, SPAM_RULES, SPAM_THRESHOLD, type CheckedMessage } from '../../../src/emails/spam-check.js';

const clean: CheckedMessage = {
  subject: 'Your receipt for order 1042',
  html: '<p>Thanks for your order. It ships tomorrow; <a href="https://shop.example/orders/1042">see the order</a>.</p>',
  text: 'Thanks for your order. It ships tomorrow: https://shop.example/orders/1042',
  headers: { 'List-Unsubscribe': '<https://shop.example/u/1>' },
  attachmentNames: ['receipt.pdf'],
  fromName: 'Shop',
  fromDomain: 'shop.example',
  recipientCount: 1,
  domainVerified: true,
  dmarc: 'published',
};

const check = (m: Partial<CheckedMessage>) => checkSpam({ ...clean, ...m });
const fired = (m: Partial<CheckedMessage>) => check(m).rules.map((r) => r.rule);
const found = (m: Partial<CheckedMessage>, rule: string) => check(m).rules.find((r) => r.rule === rule)?.found;

const bulk: Partial<CheckedMessage> = {
  recipientCount: 50,
  headers: { 'List-Unsubscribe': '<https://shop.example/u/1>', 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
  text: 'News of the week. Unsubscribe: https://shop.example/u/1',
};

describe('checkSpam', () => {
  it('scores a plain transactional message at zero', () => {
    expect(checkSpam(clean)).toEqual({ object: 'spam_check', score: 0, threshold: SPAM_THRESHOLD, spam: false, rules: [], suggestions: [] });
  });

  const cases: Array<[string, Partial<CheckedMessage>]> = [
    ['domain_not_verified', { domainVerified: false }],
    ['no_dmarc', { dmarc: 'missing' }],
    ['html_without_text', { text: null }],
    ['images_with_little_text', { html: '<img src="https://shop.example/a.png"><p>Sale</p>', text: 'Sale' }],
    ['subject_all_caps', { subject: 'FREE MONEY!!!' }],
    ['subject_exclamations', { subject: 'Hello!! there' }],
    ['body_exclamations', { text: 'Great news!!! Read on.' }],
    ['spam_phrases', { text: 'Act now, this is risk-free.' }],
    ['body_all_caps', { text: 'THIS IS A VERY IMPORTANT MESSAGE ABOUT YOUR ACCOUNT. '.repeat(3) }],
    ['hidden_text', { html: `<p>Hello</p><div style="display:none">${'cheap pills '.repeat(20)}</div>` }],
    ['link_shortener', { html: '<p>Hi <a href="https://bit.ly/x1">here</a></p>' }],
    ['link_text_mismatch', { html: '<p><a href="https://evil.example/login">https://bank.example/login</a></p>' }],
    ['brand_link_mismatch', { html: '<p><a href="https://evil.example/login">Log in to PayPal</a></p>' }],
    ['ip_address_link', { text: 'Go to http://203.0.113.9/offer' }],
    ['too_many_links', { text: Array.from({ length: 26 }, (_, i) => `https://shop.example/${i}`).join(' ') }],
    ['risky_attachment', { attachmentNames: ['invoice.pdf', 'Update.EXE'] }],
    ['html_too_large', { html: `<p>${'x'.repeat(103 * 1024)}</p>` }],
    ['display_name_domain', { fromName: 'paypal.com support' }],
    ['no_list_unsubscribe', { headers: {} }],
    ['bad_list_unsubscribe', { headers: { 'List-Unsubscribe': 'https://shop.example/u/1' } }],
    ['no_one_click_unsubscribe', { ...bulk, headers: { 'List-Unsubscribe': '<https://shop.example/u/1>' } }],
    ['no_visible_unsubscribe', { ...bulk, text: 'News of the week.', html: '<p>News of the week.</p>' }],
  ];
  it.each(cases)('fires %s', (rule, change) => {
    expect(fired(change)).toContain(rule);
  });

  it('has a case above for every rule', () => {
    expect(cases.map(([rule]) => rule).sort()).toEqual(SPAM_RULES.map((r) => r.name).sort());
  });

  it('says what fired and where, and quotes it in the suggestion', () => {
    const r = check({ subject: 'FREE MONEY!!!', html: '<p>Get free money now. <a href="https://tinyurl.com/abc">claim</a></p>' });
    const caps = r.rules.find((x) => x.rule === 'subject_all_caps')!;
    expect(caps.found).toEqual(["'FREE MONEY!!!' in the subject"]);
    expect(r.suggestions[r.rules.indexOf(caps)]).toBe("Write the subject in sentence case: reword 'FREE MONEY!!!' in the subject.");
    expect(found({ subject: 'FREE MONEY!!!', html: '<p>Get free money now.</p>' }, 'spam_phrases')).toEqual(["'FREE MONEY' in the subject", "'free money' in the HTML"]);
    expect(r.rules.find((x) => x.rule === 'link_shortener')!.found).toEqual(["the tinyurl.com link 'https://tinyurl.com/abc' in the HTML"]);
    expect(found({ html: '<a href="https://evil.example/login">https://bank.example/login</a>' }, 'link_text_mismatch'))
      .toEqual(['a link showing bank.example that goes to evil.example']);
    expect(found({ html: '<img src="a.png"><img src="b.png"><p>Two words</p>', text: 'Two words' }, 'images_with_little_text'))
      .toEqual(['2 images against 2 words']);
    expect(found({ headers: {} }, 'no_list_unsubscribe')).toEqual(['no List-Unsubscribe header']);
  });

  it('reads the HTML even when there is a text part, and ignores what is only in hidden elements', () => {
    expect(found({ text: 'Thanks for your order.', html: '<p>Act now!</p>' }, 'spam_phrases')).toEqual(["'Act now' in the HTML"]);
    // A hidden preheader of ordinary length is fine.
    expect(fired({ html: '<span style="display:none;font-size:0">Your order ships tomorrow</span><p>Thanks</p>' })).not.toContain('hidden_text');
    expect(found({ html: `<p style="color:#ffffff">${'winner '.repeat(30)}</p><p>Hi</p>` }, 'hidden_text')?.[0]).toMatch(/^209 hidden characters/);
  });

  it('knows shorteners from the maintained list, subdomain entries included', () => {
    expect(fired({ text: 'See https://goo.gl/abc' })).toContain('link_shortener');
    expect(fired({ text: 'See https://example.page.link/abc' })).toContain('link_shortener');
    expect(fired({ text: 'See https://shop.example/abc' })).not.toContain('link_shortener');
  });

  it('asks bulk mail for one-click unsubscribe and a visible link, and other mail only for the header', () => {
    expect(fired(bulk)).toEqual([]);
    expect(fired({ ...bulk, recipientCount: 2, headers: { 'List-Unsubscribe': '<mailto:u@shop.example>' } })).toEqual([]);
    expect(fired({ ...bulk, recipientCount: 1, headers: { 'List-Id': '<news.shop.example>', 'List-Unsubscribe': '<mailto:u@shop.example>' } }))
      .toEqual(['no_one_click_unsubscribe']);
    expect(fired({ ...bulk, headers: {} })).toContain('no_list_unsubscribe');
    expect(found({ ...bulk, headers: {} }, 'no_list_unsubscribe')).toEqual(['no List-Unsubscribe on bulk mail']);
  });

  it('does not take a link on a subdomain of the shown address, or a brand\'s own site, for a mismatch', () => {
    expect(fired({ html: '<a href="https://links.shop.example/c/1">shop.example</a>' })).not.toContain('link_text_mismatch');
    expect(fired({ html: '<a href="https://www.paypal.com/signin">Log in to PayPal</a>' })).not.toContain('brand_link_mismatch');
    expect(fired({ fromName: 'news.shop.example', fromDomain: 'shop.example' })).not.toContain('display_name_domain');
  });

  it('adds points per spam phrase up to a cap, and calls 5 or more spam', () => {
    const r = check({
      domainVerified: false, subject: 'WINNER!! CLAIM YOUR PRIZE',
      text: 'Act now: 100% free money, click here, limited time, no obligation.',
    });
    expect(r.rules.find((x) => x.rule === 'spam_phrases')!.score).toBe(3);
    expect(r.score).toBe(2.5 + 1.2 + 0.8 + 3);
    expect(r.spam).toBe(true);
    expect(r.suggestions).toHaveLength(r.rules.length);
  });
});
