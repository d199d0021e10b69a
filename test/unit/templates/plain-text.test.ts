import { describe, expect, it } from 'vitest';
import { htmlToPlainText, htmlToPlainTextHere } from '../../../src/templates/plain-text.js';

describe('htmlToPlainText', () => {
  it('keeps links as text [url], skips images, and wraps at 78', async () => {
    const text = await htmlToPlainText(`<p>Read <a href="https://example.com/a">the guide</a> or visit <a href="https://example.com">https://example.com</a>.</p>
      <img src="https://example.com/p.png" alt="pixel"><p>${'word '.repeat(30)}</p>`);
    expect(text).toContain('Read the guide [https://example.com/a] or visit https://example.com.');
    expect(text).not.toContain('pixel');
    expect(Math.max(...text.split('\n').map((l) => l.length))).toBeLessThanOrEqual(78);
  });

  it('puts the cells of layout tables one to a line and leaves hidden preheaders out', async () => {
    const text = await htmlToPlainText(`<div style="display:none;max-height:0">Preheader</div><div style="display: none">Also hidden</div>
      <table><tr><td>Item 1</td><td>$7.00</td></tr><tr><td>Total</td><td>$7.00</td></tr></table>`);
    expect(text).toBe('Item 1\n$7.00\nTotal\n$7.00');
  });

  // A newsletter's worth of rows: long enough to be derived on a thread.
  const newsletter = (n: number) => `<div style="display:none">Preheader ${n}</div><table>${Array.from({ length: 120 },
    (_, i) => `<tr><td><a href="https://example.com/item/${n}/${i}">Item ${i}</a></td><td>${'detail '.repeat(8)}</td></tr>`).join('')}</table>`;

  it('derives long html on threads as this thread would, and leaves the event loop free meanwhile', async () => {
    const sources = Array.from({ length: 40 }, (_, n) => newsletter(n));
    expect(sources[0].length).toBeGreaterThan(4096);
    let turnsMeanwhile = 0;
    let converting = true;
    const countTurns = () => {
      if (!converting) return;
      turnsMeanwhile++;
      setImmediate(countTurns);
    };
    setImmediate(countTurns);
    const texts = await Promise.all(sources.map((html) => htmlToPlainText(html)));
    converting = false;
    expect(texts).toEqual(sources.map((html) => htmlToPlainTextHere(html)));
    expect(texts[3]).toContain('Item 7 [https://example.com/item/3/7]');
    expect(texts[3]).not.toContain('Preheader');
    // On this thread the 40 conversions would have run back to back in one turn.
    expect(turnsMeanwhile).toBeGreaterThan(1);
  });
});
