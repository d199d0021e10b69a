import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchChromium, signedInDashboard } from '../helpers/browser.js';

// What became of sent mail, as the dashboard shows it in Chromium: a
// complaint and a partial bounce told apart from plain delivery, in the list
// (and found by its outcome filter) and on the email's page.

const SCREENSHOTS = process.env.MAILROOM_SCREENSHOTS;
const DOMAIN = 'shop.test';

describe('the outcomes and links of sent mail in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  const ids: Record<string, string> = {};

  /** Sends from the shop; the sink's simulated outcomes go by the recipient's local part. */
  const send = async (name: string, to: string[], subject: string) => {
    const res = await t.api.post('/v1/emails', { from: `Shop <orders@${DOMAIN}>`, to, subject, text: 'Shipped.' });
    expect(res.status).toBe(201);
    ids[name] = res.body.id;
  };

  beforeAll(async () => {
    t = await startTestApp();
    await t.seed.activeDomain(DOMAIN);
    await send('partly', ['delivered@mailroom.test', 'bounced@mailroom.test'], 'Order 1 shipped');
    await send('complained', ['complained@mailroom.test'], 'Order 2 shipped');
    await send('bounced', ['bounced@mailroom.test'], 'Order 3 shipped');
    await send('delivered', ['delivered@mailroom.test'], 'Your order');
    await t.mailroom.delivery.drain();

    browser = await launchChromium();
    page = await signedInDashboard(browser, t.url, t.token, '/emails', 'Emails');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const shot = async (name: string) => {
    if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/${name}.png`, fullPage: true });
  };
  const open = async (hash: string, heading: string) => {
    await page.goto(`${t.url}/dashboard/#${hash}`);
    await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
  };
  /** The value of the email's (or message's) detail named `term`. */
  const detail = (term: string) => page.locator('dl.details dt', { hasText: new RegExp(`^${term}$`) }).locator('xpath=following-sibling::dd[1]');
  /** The Status cell of the list's row whose subject is `subject`. */
  const statusOf = (subject: string) => page.locator('main tbody tr', { hasText: subject }).locator('td.cell-status');
  const subjectsShown = async () => {
    await page.locator('main table, main p.empty').first().waitFor();
    return page.locator('main tbody td.cell-primary').allTextContents();
  };

  it('tells a complaint and a partial bounce from delivery in the list, and finds them by outcome', async () => {
    await open('/emails', 'Emails');
    await expect.poll(() => statusOf('Order 1 shipped').textContent()).toBe('partly bounced');
    expect(await statusOf('Order 1 shipped').locator('.badge').getAttribute('title')).toBe('delivered: 1 recipient bounced');
    expect(await statusOf('Order 2 shipped').textContent()).toBe('complained');
    expect(await statusOf('Order 3 shipped').textContent()).toBe('failed');
    expect(await statusOf('Your order').textContent()).toBe('delivered');
    await shot('emails-outcomes-list');

    await page.getByLabel('Outcome').selectOption('bounced');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/outcome=bounced/);
    await expect.poll(subjectsShown).toEqual(['Order 3 shipped', 'Order 1 shipped']);
    await page.getByLabel('Outcome').selectOption('complained');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/outcome=complained/);
    await expect.poll(subjectsShown).toEqual(['Order 2 shipped']);
  });

  it('says on an email\'s page how many recipients took it, which bounced and which complained', async () => {
    await open(`/emails/${ids.partly}`, 'Order 1 shipped');
    expect(await detail('Status').textContent()).toBe('partly bounced delivered to 1 of 2 recipients, 1 bounced');
    const recipients = page.locator('main h2:text-is("Recipients") + div tbody tr');
    await expect.poll(() => recipients.locator('td.cell-status').allTextContents()).toEqual(['delivered', 'bounced']);
    await shot('email-partly-bounced');

    await open(`/emails/${ids.complained}`, 'Order 2 shipped');
    expect(await detail('Status').textContent()).toBe('complained 1 recipient reported it as spam');
    // The recipient stays delivered; the timeline, once read, says it complained.
    await expect.poll(() => recipients.locator('td.cell-status').allTextContents()).toEqual(['delivered complained']);
    await shot('email-complained');
  });

});
