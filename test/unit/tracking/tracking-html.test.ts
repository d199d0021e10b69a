import { describe, expect, it } from 'vitest';
import { instrumentHtml } from '../../../src/tracking/tracking.html.js';
import { signToken, verifyToken } from '../../../src/tracking/tracking.tokens.js';
import { classifyClick, classifyOpen } from '../../../src/tracking/machine-opens.js';

const linkFor = (url: string) => `https://t.example/c?u=${encodeURIComponent(url)}`;

describe('HTML instrumentation', () => {
  it('rewrites only absolute http(s) links and leaves the rest of the markup alone', () => {
    const html = `<p>Hi <a href="https://shop.example/a?x=1&amp;y=2" class="btn">buy</a>,
      <a href='http://plain.example'>plain</a>, <a href=https://bare.example/>bare</a>,
      <a href="mailto:help@shop.example">mail</a>, <a href="#top">top</a>, <a href="tel:+123">call</a>,
      <a href="https://shop.example/unsubscribe?u=1">unsubscribe</a>, <a name="anchor">x</a>,
      <a data-mailroom-track="off" href="https://private.example">no</a></p>`;
    const out = instrumentHtml(html, { linkFor });
    expect(out).toContain(`href="${linkFor('https://shop.example/a?x=1&y=2').replace(/&/g, '&amp;')}" class="btn"`);
    expect(out).toContain(linkFor('http://plain.example').replace(/&/g, '&amp;'));
    expect(out).toContain(linkFor('https://bare.example/').replace(/&/g, '&amp;'));
    for (const kept of ['mailto:help@shop.example', '#top', 'tel:+123', 'https://shop.example/unsubscribe?u=1', 'https://private.example']) {
      expect(out).toContain(`"${kept}"`);
    }
    expect(out).toContain('<a name="anchor">');
  });

  it('keeps configured prefixes and places the pixel before </body>', () => {
    const html = '<html><body><a href="https://mr.example/u/abc">stop</a></body></html>';
    const out = instrumentHtml(html, { linkFor, pixelUrl: 'https://t.example/o/1', keepPrefixes: ['https://mr.example/u/'] });
    expect(out).toContain('href="https://mr.example/u/abc"');
    expect(out).toMatch(/<img src="https:\/\/t\.example\/o\/1"[^>]*\/><\/body><\/html>$/);
    expect(instrumentHtml('<p>no body</p>', { pixelUrl: 'https://t.example/o/2' })).toMatch(/^<p>no body<\/p><img /);
  });
});

describe('tracking tokens', () => {
  const key = Buffer.alloc(32, 1);
  it('verify only for the same kind and key, and reject tampering', () => {
    const t = signToken(key, 'click', 'lnk_01m7y25awxsy9vvbgdercpyzm9');
    expect(verifyToken(key, 'click', t)).toBe('lnk_01m7y25awxsy9vvbgdercpyzm9');
    expect(verifyToken(key, 'open', t)).toBeUndefined();
    expect(verifyToken(Buffer.alloc(32, 2), 'click', t)).toBeUndefined();
    expect(verifyToken(key, 'click', t.replace('lnk_01', 'lnk_02'))).toBeUndefined();
    expect(verifyToken(key, 'click', t.slice(0, -3))).toBeUndefined();
    expect(verifyToken(key, 'click', 'garbage')).toBeUndefined();
    // Every single-character change is refused, including in the last
    // character, whose low bits base64 decoding would ignore.
    for (let i = t.indexOf('.') + 1; i < t.length; i++) {
      for (const c of ['A', 'B', 'C', 'D', 'Q', 'g', 'w', '_']) {
        if (t[i] !== c) expect(verifyToken(key, 'click', t.slice(0, i) + c + t.slice(i + 1))).toBeUndefined();
      }
    }
  });
});

describe('machine opens and clicks', () => {
  it('flags Apple Mail privacy fetches, scanners and instant clicks, not people', () => {
    expect(classifyOpen('Mozilla/5.0')).toBe('apple_mail_privacy');
    expect(classifyOpen('Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)')).toBe('prefetch');
    expect(classifyOpen('Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko)')).toBeUndefined();
    expect(classifyClick('Mozilla/5.0 (compatible; Microsoft Office Protection)', 60_000)).toBe('security_scanner');
    expect(classifyClick('Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X)', 2_000)).toBe('security_scanner');
    expect(classifyClick('Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X)', 120_000)).toBeUndefined();
  });
});
