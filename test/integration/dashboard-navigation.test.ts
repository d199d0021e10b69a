import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchChromium, signedInDashboard } from '../helpers/browser.js';

// Moving between views as a keyboard and a screen reader follow it: the
// tab's title names the view, the focus lands on its heading, and a skip link
// leads past the menu.

describe('moving between the dashboard\'s views in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    t = await startTestApp();
    await t.seed.activeDomain('shop.test');
    browser = await launchChromium();
    page = await signedInDashboard(browser, t.url, t.token, '/emails', 'Emails');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const focusedText = () => page.evaluate(() => (globalThis as unknown as { document: { activeElement: { textContent: string } | null } })
    .document.activeElement?.textContent ?? '');

  it('names the view in the tab\'s title and moves the focus to its heading', async () => {
    await page.locator('nav').getByRole('link', { name: 'Domains' }).click();
    await page.getByRole('heading', { name: 'Domains', level: 1 }).waitFor();
    await expect.poll(() => page.title()).toBe('Domains · Mailroom');
    await expect.poll(focusedText).toBe('Domains');

    // A record's page is named by the record, once it is read.
    await page.getByRole('link', { name: 'shop.test' }).first().click();
    await expect.poll(() => page.title()).toBe('shop.test · Mailroom');
    await expect.poll(focusedText).toBe('shop.test');

    // The next Tab goes on from the heading, not from the menu link pressed.
    await page.keyboard.press('Tab');
    const next = await page.evaluate(() => {
      const el = (globalThis as unknown as { document: { activeElement: { closest(s: string): unknown } } }).document.activeElement;
      return { inMain: el.closest('main') !== null, inNav: el.closest('nav') !== null };
    });
    expect(next).toEqual({ inMain: true, inNav: false });
  });

  it('leaves the focus on a field the view puts it on', async () => {
    await page.goto(`${t.url}/dashboard/#/broadcasts/new`);
    await page.getByRole('heading', { name: 'New broadcast', level: 1 }).waitFor();
    await expect.poll(() => page.title()).toBe('New broadcast · Mailroom');
    expect(await page.getByLabel('Name').evaluate((el) => el === (globalThis as unknown as { document: { activeElement: unknown } }).document.activeElement)).toBe(true);
  });

  it('offers a skip link first, which leads past the menu to the view\'s heading without changing the route', async () => {
    // A page loaded afresh starts the keyboard at its top, as any page does.
    await page.goto(`${t.url}/dashboard/#/emails`);
    await page.reload();
    await page.getByRole('heading', { name: 'Emails', level: 1 }).waitFor();
    await page.keyboard.press('Tab');
    const skip = page.getByRole('link', { name: 'Skip to content' });
    await expect.poll(focusedText).toBe('Skip to content');
    const box = await skip.boundingBox();
    // Seen once it has the focus.
    expect(box!.y).toBeGreaterThanOrEqual(0);
    await page.keyboard.press('Enter');
    await expect.poll(focusedText).toBe('Emails');
    expect(new URL(page.url()).hash).toBe('#/emails');
  });
});
