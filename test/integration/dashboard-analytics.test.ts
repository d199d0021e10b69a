import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { desktopAndPhoneShots, launchChromium, signedInDashboard } from '../helpers/browser.js';

// The Analytics view in Chromium over mail sent through the sink: the counts
// of the signed-in key's mode by default (live or test), the other mode
// apart, one domain at a time, as cards, a chart and its table.

const SCREENSHOTS = process.env.MAILROOM_SCREENSHOTS;

describe('the Analytics view in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  let testKey: string;
  let acmeId: string;

  beforeAll(async () => {
    t = await startTestApp();
    acmeId = (await t.seed.activeDomain('acme.test')).id;
    await t.seed.activeDomain('other.test');
    const send = (api: typeof t.api, from: string, to: string[]) => api.post('/v1/emails', { from, to, subject: 'Hi', text: 'x' });
    expect((await send(t.api, 'a@acme.test', ['delivered@mailroom.test', 'bounced@mailroom.test'])).status).toBe(201);
    expect((await send(t.api, 'a@acme.test', ['delivered@mailroom.test'])).status).toBe(201);
    expect((await send(t.api, 'b@other.test', ['delivered@mailroom.test'])).status).toBe(201);
    testKey = (await t.seed.key({ mode: 'test' })).token;
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
  const cardIs = async (series: string, value: string, on = page) => {
    await on.locator(`.stat[data-series="${series}"] .stat-value`, { hasText: new RegExp(`^${value}$`) }).waitFor();
  };
  const rate = (series: string, on = page) => on.locator(`.stat[data-series="${series}"] .stat-rate`);

  it('shows live mail by default, test mail apart, and one domain at a time', async () => {
    await cardIs('sent', '3');
    // Sent counts emails and says so; each of the others says it counts recipients, under its number.
    expect(await page.locator('.stat .stat-label').allInnerTexts())
      .toEqual(['Emails sent', 'Delivered', 'Bounced', 'Complained', 'Opened', 'Clicked']);
    expect(await page.locator('.stat').evaluateAll((cards) => cards.map((card) => card.querySelector('.stat-unit')?.textContent ?? null)))
      .toEqual([null, 'recipients', 'recipients', 'recipients', 'recipients', 'recipients']);
    await cardIs('delivered', '3');
    await cardIs('bounced', '1');
    await cardIs('complained', '0');
    // Four recipients' outcomes against three emails sent: the page says why the tiles do not add up.
    await page.getByText('Sent counts emails; the others count recipients').waitFor();
    // Each outcome's rate under its count, of the recipients it is a share of; a bounce rate past 4% in the danger colour.
    expect(await rate('sent').count()).toBe(0);
    expect(await rate('delivered').textContent()).toBe('75% delivered');
    expect(await rate('bounced').textContent()).toBe('25% bounce rate');
    expect(await rate('bounced').getAttribute('class')).toBe('stat-rate over');
    expect(await rate('bounced').getAttribute('title')).toBe('Above 4%: mailbox providers may start refusing this mail');
    expect(await rate('complained').textContent()).toBe('0% complaint rate');
    expect(await rate('complained').getAttribute('class')).toBe('stat-rate');
    // No domain tracks opens or clicks: their rates, 0% whatever happens, say so instead.
    expect(await rate('opened').textContent()).toBe('tracking off');
    expect(await rate('opened').getAttribute('title')).toBe("No domain counted here tracks opens. Turn on Open tracking in a domain's settings, under Domains.");
    expect(await rate('clicked').textContent()).toBe('tracking off');
    expect(await rate('clicked').getAttribute('title')).toBe("No domain counted here tracks clicks. Turn on Click tracking in a domain's settings, under Domains.");
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
    await desktopAndPhoneShots(page, 'analytics-cards');
    await page.setViewportSize({ width: 1280, height: 900 });

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
    // Nothing delivered, nothing settled: no rate is a share of nothing (and opens and clicks are still untracked).
    await page.getByLabel('Mail').selectOption('test');
    await cardIs('sent', '0');
    expect(await page.locator('.stat-rate:not(.tracking-off)').count()).toBe(0);
    expect(await page.locator('.stat-rate.tracking-off').count()).toBe(2);
  });

  it('gives the open rate once a domain counted tracks opens, and the rates to a key that may not read domains', async () => {
    expect((await t.api.patch(`/v1/domains/${acmeId}`, { open_tracking: true })).status).toBe(200);
    try {
      await page.goto(`${t.url}/dashboard/#/analytics?range=7d&mode=live`);
      await cardIs('sent', '3');
      await rate('opened').filter({ hasText: /^0% open rate$/ }).waitFor();
      expect(await rate('clicked').textContent()).toBe('tracking off');
      // other.test tracks nothing.
      await page.getByLabel('Domain').selectOption({ label: 'other.test' });
      await cardIs('sent', '1');
      await rate('opened').filter({ hasText: /^tracking off$/ }).waitFor();

      // Without domains:read, which domains track is not known: the rates are given as they are.
      const blind = (await t.seed.key({ scopes: ['analytics:read'] })).token;
      const unread = await signedInDashboard(browser, t.url, blind, '/analytics', 'Analytics', { viewport: { width: 1280, height: 900 } });
      try {
        await cardIs('sent', '3', unread);
        expect(await rate('opened', unread).textContent()).toBe('0% open rate');
        expect(await rate('clicked', unread).textContent()).toBe('0% click rate');
        expect(await unread.getByLabel('Domain').count()).toBe(0);
      } finally {
        await unread.close();
      }
    } finally {
      expect((await t.api.patch(`/v1/domains/${acmeId}`, { open_tracking: false })).status).toBe(200);
    }
  });

  it('opens on the test mail of a test key, unless the address asks for live mail', async () => {
    const tester = await signedInDashboard(browser, t.url, testKey, '/analytics', 'Analytics', { viewport: { width: 1280, height: 900 } });
    try {
      await cardIs('sent', '1', tester);
      await cardIs('complained', '1', tester);
      expect(await tester.getByLabel('Mail').inputValue()).toBe('test');
      // A change of range keeps the mode shown.
      await tester.getByLabel('Range').selectOption('24h');
      await tester.waitForURL(/range=24h/);
      expect(tester.url()).toContain('mode=test');
      await cardIs('sent', '1', tester);

      await tester.goto(`${t.url}/dashboard/#/analytics?mode=live`);
      await cardIs('sent', '3', tester);
      expect(await tester.getByLabel('Mail').inputValue()).toBe('live');
    } finally {
      await tester.close();
    }
    // A live key, with no mode in the address, opens on live mail.
    await page.goto(`${t.url}/dashboard/#/analytics`);
    await cardIs('sent', '3');
    expect(await page.getByLabel('Mail').inputValue()).toBe('live');
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
