import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ManualClock } from '../../src/core/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchChromium, signedInDashboard } from '../helpers/browser.js';

// The Events view in Chromium: the workspace's events narrowed by kind,
// domain, recipient, sender, tag, time and email, the filters kept in the
// address (so a filtered list can be linked, reloaded and paged), and a filter
// the API refuses said as such.

/** Every shop email is sent here, before the earliest local midnight of the 21st anywhere (UTC+14). */
const SHOP_DAY = Date.parse('2026-11-20T06:00:00Z');
/** The newsletter, after the latest local midnight of the 21st anywhere (UTC-12). */
const NEWS_DAY = Date.parse('2026-11-22T10:00:00Z');
/** More shop emails delivered than a page holds (25). */
const SHOP_DELIVERED = 30;

describe('the Events view in Chromium', () => {
  const clock = new ManualClock(SHOP_DAY);
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  let shopDomainId: string;
  let bouncedId: string;
  let newsletterId: string;

  beforeAll(async () => {
    t = await startTestApp({ clock });
    shopDomainId = (await t.seed.activeDomain('shop.test')).id;
    await t.seed.activeDomain('news.test');
    for (let i = 0; i < SHOP_DELIVERED; i++) {
      const sent = await t.api.post('/v1/emails', { from: 'Shop <orders@shop.test>', to: [`reader${i}@example.org`], subject: `Order ${i}`, text: 'Shipped.' });
      expect(sent.status).toBe(201);
    }
    const bounced = await t.api.post('/v1/emails', { from: 'Shop <orders@shop.test>', to: ['bounced@mailroom.test'], subject: 'Order 99', text: 'Shipped.' });
    expect(bounced.status).toBe(201);
    bouncedId = bounced.body.id;
    await t.mailroom.delivery.drain();
    clock.set(NEWS_DAY);
    const newsletter = await t.api.post('/v1/emails', { from: 'Acme News <letters@news.test>', to: ['ann@example.com'], subject: 'November',
      text: 'News.', tags: ['newsletter'] });
    expect(newsletter.status).toBe(201);
    newsletterId = newsletter.body.id;
    await t.mailroom.delivery.drain();

    browser = await launchChromium();
    page = await signedInDashboard(browser, t.url, t.token, '/events', 'Events');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const rows = () => page.locator('main tbody tr');
  /** The event types of the rows shown, once the list is drawn. */
  const typesShown = async () => {
    await page.locator('main table, main p.empty, main .error-box').first().waitFor();
    return page.locator('main tbody td.cell-primary').allTextContents();
  };
  /** The email ids the rows link to, each under its subject. */
  const emailsShown = () => page.locator('main tbody td[data-label="Email"] code').allTextContents();
  const search = async () => {
    const before = page.url();
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL((url) => url.toString() !== before);
  };

  it('narrows the list by type and domain, keeps the filters in the address through a reload, and pages with them', async () => {
    await page.getByLabel('Type').selectOption('delivered');
    await page.getByLabel('Domain').selectOption({ label: 'shop.test' });
    await search();
    const query = new URL(page.url()).hash.split('?')[1];
    expect(Object.fromEntries(new URLSearchParams(query))).toEqual({ event_type: 'delivered', domain_id: shopDomainId });
    // The whole list's first page holds other kinds: these are the filtered rows.
    await expect.poll(async () => [...new Set(await typesShown())]).toEqual(['email.delivered']);
    expect(await rows().count()).toBe(25);

    await page.getByRole('button', { name: 'Older' }).click();
    await expect.poll(() => rows().count()).toBe(SHOP_DELIVERED - 25);
    expect(new Set(await typesShown())).toEqual(new Set(['email.delivered']));
    expect(new URL(page.url()).hash).toContain('event_type=delivered');

    await page.reload();
    await expect.poll(() => rows().count()).toBe(SHOP_DELIVERED - 25);
    expect(new Set(await typesShown())).toEqual(new Set(['email.delivered']));
    expect(await page.getByLabel('Type').inputValue()).toBe('delivered');
    expect(await page.getByLabel('Domain').inputValue()).toBe(shopDomainId);
  });

  it('finds events by part of the recipient, part of the sender, and tag', async () => {
    await page.goto(`${t.url}/dashboard/#/events`);
    await page.getByLabel('To', { exact: true }).fill('bounced@');
    await search();
    await expect.poll(() => typesShown()).toEqual(['email.bounced', 'email.sent', 'email.queued']);
    expect(new Set(await emailsShown())).toEqual(new Set([bouncedId]));

    await page.getByLabel('To', { exact: true }).fill('');
    await page.getByLabel('From', { exact: true }).fill('acme news');
    await search();
    await expect.poll(() => typesShown()).toEqual(['email.delivered', 'email.sent', 'email.queued']);
    expect(new Set(await emailsShown())).toEqual(new Set([newsletterId]));

    await page.getByLabel('From', { exact: true }).fill('');
    await page.getByLabel('Tag').fill('newsletter');
    await search();
    await expect.poll(() => typesShown()).toEqual(['email.delivered', 'email.sent', 'email.queued']);
    expect(new Set(await emailsShown())).toEqual(new Set([newsletterId]));
    await page.getByLabel('Tag').fill('no-such-tag');
    await search();
    await expect.poll(() => page.locator('main p.empty').textContent()).toBe('No events match these filters. Show all events');
  });

  it('narrows the list to a time range chosen in the browser\'s zone', async () => {
    await page.goto(`${t.url}/dashboard/#/events`);
    await page.getByLabel('Created after').fill('2026-11-21T00:00');
    await search();
    // Sent with the browser's offset, as the person read the time.
    expect(decodeURIComponent(page.url())).toMatch(/created_after=2026-11-21T00:00:00[+-]\d\d:\d\d/);
    await expect.poll(() => typesShown()).toEqual(['email.delivered', 'email.sent', 'email.queued']);
    expect(new Set(await emailsShown())).toEqual(new Set([newsletterId]));
    expect(await page.getByLabel('Created after').inputValue()).toBe('2026-11-21T00:00');

    await page.getByLabel('Created after').fill('');
    await page.getByLabel('Created before').fill('2026-11-21T00:00');
    await page.getByLabel('Type').selectOption('bounced');
    await search();
    await expect.poll(() => typesShown()).toEqual(['email.bounced']);
    expect(await emailsShown()).toEqual([bouncedId]);
  });

  it('says which filter the API refused, marks it, shows it as asked, and leads back to the whole list', async () => {
    await page.goto(`${t.url}/dashboard/#/events?event_type=bogus&to=ann`);
    await expect.poll(() => page.getByRole('alert').textContent())
      .toMatch(/^The Type filter was refused: 'event_type' must be one of: .*delivered/);
    expect(await page.getByLabel('Type').inputValue()).toBe('bogus');
    expect(await page.getByLabel('Type').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByLabel('To', { exact: true }).getAttribute('aria-invalid')).toBeNull();

    await page.goto(`${t.url}/dashboard/#/events?created_after=yesterday`);
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/^The Created after filter was refused: /);
    await page.getByRole('link', { name: 'Show the list without filters' }).click();
    await expect.poll(() => rows().count()).toBe(25);
    expect(await page.getByRole('alert').count()).toBe(0);
  });

  it('opens every event of an email from its page, and keeps to that email through a new search', async () => {
    await page.goto(`${t.url}/dashboard/#/emails/${bouncedId}`);
    await page.getByRole('link', { name: 'All events of this email' }).click();
    await page.waitForURL(new RegExp(`#/events\\?email_id=${bouncedId}$`));
    await expect.poll(() => typesShown()).toEqual(['email.bounced', 'email.sent', 'email.queued']);
    // Named by its subject, as each row names it, the id beside it; the subject leads back to the email.
    await expect.poll(() => page.locator('main .filter-note').textContent()).toBe(`The events of the email “Order 99” (${bouncedId}) · all events`);
    expect(await page.locator('main .filter-note').getByRole('link', { name: '“Order 99”' }).getAttribute('href')).toBe(`#/emails/${bouncedId}`);
    if (process.env.MAILROOM_SCREENSHOTS) await page.screenshot({ path: `${process.env.MAILROOM_SCREENSHOTS}/events-of-an-email.png` });

    await page.getByLabel('Type').selectOption('sent');
    await search();
    await expect.poll(() => typesShown()).toEqual(['email.sent']);
    expect(Object.fromEntries(new URLSearchParams(new URL(page.url()).hash.split('?')[1]))).toEqual({ email_id: bouncedId, event_type: 'sent' });

    await page.getByRole('link', { name: 'all events', exact: true }).click();
    await expect.poll(() => rows().count()).toBe(25);
    expect(await page.locator('main .filter-note').count()).toBe(0);
  });

  it('lines the filters up in two columns on a phone, once opened, each control within the screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.goto(`${t.url}/dashboard/#/events`);
      await rows().first().waitFor();
      await page.locator('summary', { hasText: 'Filters' }).click();
      const boxes = await Promise.all(['Type', 'Domain', 'To', 'From', 'Tag', 'Created after', 'Created before']
        .map((label) => page.getByLabel(label, { exact: true }).boundingBox()));
      const lefts = new Set(boxes.map((b) => Math.round(b!.x)));
      expect(lefts.size).toBe(1);
      for (const b of boxes) expect(b!.x + b!.width).toBeLessThanOrEqual(390 - 8);
      // One control to a line, each below the one before.
      for (let i = 1; i < boxes.length; i++) expect(boxes[i]!.y).toBeGreaterThanOrEqual(boxes[i - 1]!.y + boxes[i - 1]!.height);
    } finally {
      await page.setViewportSize({ width: 1440, height: 900 });
    }
  });
});
