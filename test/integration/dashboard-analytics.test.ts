import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchChromium, signedInDashboard } from '../helpers/browser.js';

// The Analytics view in Chromium over mail sent through the sink: the counts
// of live mail by default, test mail apart, one domain at a time, as cards,
// a chart and its table.

const SCREENSHOTS = process.env.MAILROOM_SCREENSHOTS;

describe('the Analytics view in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    t = await startTestApp();
    await t.seed.activeDomain('acme.test');
    await t.seed.activeDomain('other.test');
    const send = (api: typeof t.api, from: string, to: string[]) => api.post('/v1/emails', { from, to, subject: 'Hi', text: 'x' });
    expect((await send(t.api, 'a@acme.test', ['delivered@mailroom.test', 'bounced@mailroom.test'])).status).toBe(201);
    expect((await send(t.api, 'a@acme.test', ['delivered@mailroom.test'])).status).toBe(201);
    expect((await send(t.api, 'b@other.test', ['delivered@mailroom.test'])).status).toBe(201);
    const testKey = (await t.seed.key({ mode: 'test' })).token;
    expect((await send(t.api.as(testKey), 'dev@sandbox.test', ['complained@mailroom.test'])).status).toBe(201);
    await t.mailroom.delivery.drain();
    browser = await launchChromium();
    page = await signedInDashboard(browser, t.url, t.token, '/analytics', 'Analytics', { viewport: { width: 1280, height: 900 } });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const card = (series: string) => page.locator(`.stat[data-series="${series}"] .stat-value`);
  const cardIs = async (series: string, value: string) => {
    await page.locator(`.stat[data-series="${series}"] .stat-value`, { hasText: new RegExp(`^${value}$`) }).waitFor();
  };

  it('shows live mail by default, test mail apart, and one domain at a time', async () => {
    await cardIs('sent', '3');
    await cardIs('delivered', '3');
    await cardIs('bounced', '1');
    await cardIs('complained', '0');
    // Four recipients' outcomes against three emails sent: the page says why the tiles do not add up.
    await page.getByText('Sent counts emails; the others count recipients').waitFor();
    // Each outcome's rate under its count, of the recipients it is a share of; a bounce rate past 4% in the danger colour.
    const rate = (series: string) => page.locator(`.stat[data-series="${series}"] .stat-rate`);
    expect(await rate('sent').count()).toBe(0);
    expect(await rate('delivered').textContent()).toBe('75% delivered');
    expect(await rate('bounced').textContent()).toBe('25% bounce rate');
    expect(await rate('bounced').getAttribute('class')).toBe('stat-rate over');
    expect(await rate('bounced').getAttribute('title')).toBe('Above 4%: mailbox providers may start refusing this mail');
    expect(await rate('complained').textContent()).toBe('0% complaint rate');
    expect(await rate('complained').getAttribute('class')).toBe('stat-rate');
    expect(await rate('opened').textContent()).toBe('0% open rate');
    // uPlot draws the chart on a canvas, named for a screen reader, with its legend of the six series.
    const canvas = page.locator('.chart canvas[role="img"]');
    await canvas.waitFor();
    expect(await canvas.getAttribute('aria-label')).toBe('Counts per day: sent 3, delivered 3, bounced 1, complained 0, opened 0, clicked 0');
    expect(await page.locator('.chart .u-legend .u-series .u-label').allTextContents())
      .toEqual(['Day', 'sent', 'delivered', 'bounced', 'complained', 'opened', 'clicked']);
    expect(await canvas.evaluate((el) => {
      const c = el as unknown as { width: number; height: number; getContext(kind: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } } };
      const pixels = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let painted = 0;
      for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 0) painted++;
      return painted;
    })).toBeGreaterThan(1000);
    // Under the pointer, the legend gives each series' count in the bucket there: today's, at the right end.
    const plot = (await page.locator('.chart .u-over').boundingBox())!;
    await page.mouse.move(plot.x + plot.width - 1, plot.y + plot.height / 2);
    await page.locator('.u-legend .u-series', { hasText: 'sent' }).locator('.u-value', { hasText: /^3$/ }).waitFor();
    // It follows the window's width.
    await page.setViewportSize({ width: 700, height: 900 });
    await page.waitForFunction(() => {
      const el = (globalThis as unknown as { document: { querySelector(s: string): { getBoundingClientRect(): { width: number } } } })
        .document.querySelector('.chart canvas');
      return el.getBoundingClientRect().width < 700;
    });
    await page.setViewportSize({ width: 1280, height: 900 });
    expect(await page.locator('table tbody tr').count()).toBeGreaterThan(0);
    // By day, a row is named by its date alone, without a time of day.
    await page.getByRole('heading', { name: 'By day' }).waitFor();
    expect(await page.locator('table tbody tr td').first().textContent()).not.toMatch(/\d:\d\d/);
    if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/analytics.png`, fullPage: true });

    await page.getByLabel('Mail').selectOption('test');
    await cardIs('sent', '1');
    await cardIs('complained', '1');
    await page.locator('.stat[data-series="complained"] .stat-rate.over', { hasText: /^100% complaint rate$/ }).waitFor();

    await page.getByLabel('Mail').selectOption('live');
    await cardIs('sent', '3');
    await page.getByLabel('Domain').selectOption({ label: 'other.test' });
    await cardIs('sent', '1');
    await cardIs('bounced', '0');
    expect(await card('delivered').textContent()).toBe('1');
    expect(await page.locator('.stat[data-series="bounced"] .stat-rate').getAttribute('class')).toBe('stat-rate');
    await page.getByLabel('Range').selectOption('24h');
    await cardIs('sent', '1');
    expect(page.url()).toContain('range=24h');
    // Nothing delivered, nothing settled: no rate is a share of nothing.
    await page.getByLabel('Mail').selectOption('test');
    await cardIs('sent', '0');
    expect(await page.locator('.stat-rate').count()).toBe(0);
  });

  it('counts whole UTC days, each named by its UTC date, in a browser west of UTC', async () => {
    const west = await signedInDashboard(browser, t.url, t.token, '/analytics?range=7d', 'Analytics',
      { viewport: { width: 1280, height: 900 }, timezoneId: 'America/Los_Angeles', locale: 'en-US' });
    try {
      await west.getByRole('heading', { name: 'By day' }).waitFor();
      await west.locator('.stat[data-series="sent"] .stat-value', { hasText: /^3$/ }).waitFor();
      const days = await west.locator('table:not(.u-legend) tbody tr td:first-child').allTextContents();
      const utcDate = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toLocaleDateString('en-US', { dateStyle: 'medium', timeZone: 'UTC' });
      // Today's sends are on today's UTC date, and the week is seven whole days, newest first.
      expect(days).toEqual(Array.from({ length: 7 }, (_, i) => utcDate(i)));
      expect(await west.locator('table:not(.u-legend) thead th').first().textContent()).toBe('Day (UTC)');
      expect(await west.locator('table:not(.u-legend) tbody tr').first().locator('td').nth(1).textContent()).toBe('3');
    } finally {
      await west.close();
    }
  });
});
