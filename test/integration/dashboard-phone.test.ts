import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchChromium, openDrawnView, overflowWidth, signedInDashboard, twoDigitHourZone } from '../helpers/browser.js';

// What a phone (390 by 844) shows on its first screen, measured in Chromium: the menu and a list's filters leave room
// for the list's first rows, an email's body is near its top, and no card runs past its list; and, on a desktop,
// a filter is as wide as a filter needs to be, whatever the length of its options.

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1440, height: 900 };
const LONG_DOMAIN = 'newsletters.acme-international-holdings-and-subsidiaries.test';
/** One label longer than a phone's card is wide, with no hyphen to break at. */
const UNBROKEN_DOMAIN = 'notificationsandreceiptsfortheaccountsdepartment.example.test';
const LONG_BROADCAST = 'Spring collection preview for returning wholesale customers in Scandinavia';
const LONG_BROADCAST_SUBJECT = 'Our spring collection is here: early access for our wholesale partners before it opens to everyone';
const SCREENSHOTS = process.env.MAILROOM_SCREENSHOTS;

/** A newsletter laid out as they are: a 600-pixel table. */
const NEWSLETTER = '<table width="600" style="width:600px;border:1px solid #ccc"><tr><td style="padding:16px">'
  + '<h1>Spring news</h1><p>Everything new this season, in one letter.</p>'
  + '<p style="text-align:right">The right edge of the letter</p></td></tr></table>';

interface Box { x: number; y: number; width: number; height: number }

describe('the dashboard on a phone\'s first screen', () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestApp();
    const domain = await t.seed.activeDomain(LONG_DOMAIN);
    ids.domain = domain.id;
    await t.seed.activeDomain(UNBROKEN_DOMAIN);
    const from = `News <news@${LONG_DOMAIN}>`;
    for (let i = 0; i < 3; i++) {
      expect((await t.api.post('/v1/emails', { from, to: [`reader${i}@example.com`], subject: `Weekly digest ${i}`, text: 'News' })).status).toBe(201);
    }
    const email = await t.api.post('/v1/emails', { from, to: ['reader@example.com', 'second.reader@example.com'], cc: ['copy@example.com'],
      subject: 'Your order has shipped', html: NEWSLETTER, text: 'Your order has shipped.', tags: ['orders'],
      attachments: [{ filename: 'invoice-1042.txt', content: Buffer.from('Invoice 1042').toString('base64') }] });
    expect(email.status).toBe(201);
    ids.email = email.body.id;
    await t.mailroom.delivery.drain();
    expect((await t.api.post('/v1/broadcasts', { name: LONG_BROADCAST, from, subject: LONG_BROADCAST_SUBJECT, text: 'News' })).status).toBe(201);
    expect((await t.api.post('/v1/broadcasts', { name: 'November update', from, subject: 'November', text: 'News' })).status).toBe(201);
    for (const name of ['Receipt', 'Password reset', 'Weekly receipt digest']) {
      expect((await t.api.post('/v1/templates', { name, subject: name, html: '<p>Hi</p>' })).status).toBe(201);
    }
    const newsletter = await t.api.post('/v1/templates', { name: 'Newsletter', subject: 'News', html: NEWSLETTER });
    ids.template = newsletter.body.id;
    expect((await t.api.post('/v1/suppressions', { email: 'gone@example.org' })).status).toBe(201);
    for (let i = 0; i < 3; i++) expect((await t.api.post('/v1/contacts', { email: `reader${i}@example.com`, tags: ['news'] })).status).toBe(201);

    browser = await launchChromium();
    page = await signedInDashboard(browser, t.url, t.token, '/emails', 'Emails', { viewport: PHONE, timezoneId: twoDigitHourZone() });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const open = (route: string) => openDrawnView(page, t.url, route);

  const box = async (locator: Locator): Promise<Box> => (await locator.boundingBox())!;

  const shoot = async (name: string) => {
    if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/${name}.png`, fullPage: true });
  };


  it('keeps the menu to one row and folds the filters, so that a list\'s first rows show on a phone\'s first screen', async () => {
    await page.setViewportSize(PHONE);
    const crowded: string[] = [];
    for (const route of ['/emails', '/events', '/contacts', '/suppressions', '/templates', '/domains', '/broadcasts']) {
      await open(route);
      await page.locator('tbody tr').first().waitFor();
      const nav = page.getByRole('navigation', { name: 'Main' });
      const tops = await nav.getByRole('link').evaluateAll((els) =>
        els.map((el) => Math.round((el as unknown as { getBoundingClientRect(): { top: number } }).getBoundingClientRect().top)));
      if (new Set(tops).size !== 1) crowded.push(`${route}: the sections take ${new Set(tops).size} rows`);
      const bar = await box(page.locator('header.topbar'));
      if (bar.height > 110) crowded.push(`${route}: the top bar is ${bar.height}px high`);
      // The current section is scrolled into the row's sight.
      const current = await box(nav.locator('[aria-current="page"]'));
      if (current.x < 0 || current.x + current.width > PHONE.width) crowded.push(`${route}: its section is off the screen`);
      const first = await box(page.locator('tbody tr').first());
      if (first.y + first.height > PHONE.height) crowded.push(`${route}: the first row ends at ${first.y + first.height}px`);
      const by = await overflowWidth(page);
      if (by > 0) crowded.push(`${route}: wider than the screen by ${by}px`);
      await shoot(`phone-first-screen-${route.slice(1)}`);
    }
    expect(crowded).toEqual([]);

    // The filters open under their bar, each control the width of the screen's column.
    await open('/events');
    const form = page.locator('form.filters');
    expect(await form.isVisible()).toBe(false);
    await page.locator('summary', { hasText: 'Filters' }).click();
    await page.getByLabel('Domain').waitFor();
    const domain = await box(page.getByLabel('Domain'));
    expect(domain.x + domain.width).toBeLessThanOrEqual(PHONE.width - 8);
    expect(await overflowWidth(page)).toBe(0);
    await shoot('phone-filters-open');
    // The bar says when filters narrow the list.
    await open('/emails?status=delivered&to=reader1');
    expect(await page.locator('summary', { hasText: 'Filters' }).textContent()).toBe('Filters · 2 in use');
    expect(await page.locator('tbody tr').count()).toBe(1);
  });

  it('keeps a domain\'s card within the list on a phone, a long name wrapped inside it', async () => {
    await page.setViewportSize(PHONE);
    await open('/domains');
    const spilled = await page.locator('tbody tr').evaluateAll((rows) => rows.flatMap((row) => {
      interface El { getBoundingClientRect(): { left: number; right: number; width: number }; scrollWidth: number; clientWidth: number;
        className: string; tagName: string; querySelectorAll(s: string): ArrayLike<El> }
      const card = (row as unknown as El).getBoundingClientRect();
      // A line-break opportunity (wbr) has no box to measure.
      return Array.from((row as unknown as El).querySelectorAll('td, td *:not(wbr)'), (el) => {
        const { left, right } = el.getBoundingClientRect();
        return left < card.left || right > card.right || el.scrollWidth > el.clientWidth + 1 ? `${el.tagName}.${el.className} ${left}-${right}` : null;
      }).filter((x) => x !== null);
    }));
    expect(spilled).toEqual([]);
    expect(await page.getByRole('link', { name: UNBROKEN_DOMAIN }).isVisible()).toBe(true);
    await shoot('phone-domains');
  });

  it('sets a broadcast\'s subject under its name on a phone, across the card', async () => {
    await page.setViewportSize(PHONE);
    await open('/broadcasts');
    const name = await box(page.getByRole('link', { name: LONG_BROADCAST }));
    const subject = await box(page.getByText(LONG_BROADCAST_SUBJECT));
    expect(subject.y).toBeGreaterThanOrEqual(name.y + name.height - 1);
    expect(subject.width).toBeGreaterThan(250);
    await shoot('phone-broadcasts');
  });

  it('brings an email\'s body to its first screen on a phone, the details, recipients, attachments and events folded above it', async () => {
    await page.setViewportSize(PHONE);
    await open(`/emails/${ids.email}`);
    await page.locator('summary', { hasText: /^Events \(\d+\)$/ }).waitFor();
    const frame = await box(page.locator('.preview iframe'));
    expect(frame.y).toBeLessThan(PHONE.height - 150);
    expect(await page.locator('summary', { hasText: 'Details' }).locator('.badge').textContent()).toBe('delivered');
    expect(await page.locator('dl.details').isVisible()).toBe(false);
    expect(await page.locator('summary', { hasText: 'Attachments (1)' }).isVisible()).toBe(true);
    expect(await page.getByRole('button', { name: /invoice-1042\.txt|Download/ }).first().isVisible()).toBe(false);
    await shoot('phone-email');
    await page.locator('summary', { hasText: 'Recipients (3)' }).click();
    await page.locator('td.address-cell', { hasText: 'second.reader@example.com' }).waitFor();
    expect(await overflowWidth(page)).toBe(0);
    await shoot('phone-email-recipients');
    // A wider screen shows every part open, under its heading, without the bars.
    await page.setViewportSize(DESKTOP);
    await page.locator('dl.details').waitFor();
    expect(await page.locator('summary').filter({ visible: true }).count()).toBe(0);
    expect(await page.getByRole('heading', { name: 'Events', level: 2 }).isVisible()).toBe(true);
    await open(`/emails/${ids.email}`);
    expect(await page.locator('dl.details').isVisible()).toBe(true);
    expect(await page.getByRole('heading', { name: 'Recipients', level: 2 }).isVisible()).toBe(true);
  });

  it('lets go of each fold\'s watch on the window\'s width once its view is left', async () => {
    await page.setViewportSize(PHONE);
    await open('/emails');
    // Counts the listeners on the phone's width that are held now, from here on.
    await page.evaluate(() => {
      interface Query { media: string; addEventListener(type: string, f: unknown): void; removeEventListener(type: string, f: unknown): void }
      const dom = globalThis as unknown as { MediaQueryList: { prototype: Query }; heldWidthListeners: Set<unknown> };
      const held = new Set<unknown>();
      dom.heldWidthListeners = held;
      const { addEventListener: add, removeEventListener: remove } = dom.MediaQueryList.prototype;
      dom.MediaQueryList.prototype.addEventListener = function (this: Query, type, f) {
        if (type === 'change' && this.media.includes('40rem')) held.add(f);
        add.call(this, type, f);
      };
      dom.MediaQueryList.prototype.removeEventListener = function (this: Query, type, f) {
        if (type === 'change') held.delete(f);
        remove.call(this, type, f);
      };
    });
    /** Follows a link to `hash`, in the page (a reload would start the count again), and waits for its folds. */
    const go = async (hash: string, folds: number) => {
      await page.evaluate((to) => { (globalThis as unknown as { location: { hash: string } }).location.hash = to; }, hash);
      await page.waitForFunction((n) => (globalThis as unknown as { document: { querySelectorAll(s: string): { length: number } } })
        .document.querySelectorAll('main details.fold').length === n, folds);
      await page.locator('main h1').first().waitFor();
    };
    for (let i = 0; i < 4; i++) {
      await go(`#/emails/${ids.email}`, 4);
      await go(`#/emails?to=reader${i}`, 1);
    }
    // The list's filters alone watch the width: none of the folds of the pages left.
    expect(await page.evaluate(() => (globalThis as unknown as { heldWidthListeners: Set<unknown> }).heldWidthListeners.size)).toBe(1);
  });

  it('keeps each filter to a filter\'s width on a desktop, a long domain among the options', async () => {
    await page.setViewportSize(DESKTOP);
    const wide: string[] = [];
    for (const route of ['/emails', '/events', '/contacts', '/suppressions', '/templates']) {
      await open(route);
      for (const control of await page.locator('form.filters').locator('select, input').all()) {
        const { width } = await box(control);
        if (width > 260) wide.push(`${route} ${await control.getAttribute('name')}: ${width}px`);
      }
    }
    expect(wide).toEqual([]);
    await open('/events');
    expect(await page.getByLabel('Domain').locator('option', { hasText: UNBROKEN_DOMAIN }).count()).toBe(1);
    await shoot('desktop-events-filters');
  });

  it('shows a 600-pixel email\'s whole width in the template editor\'s preview, scaled to its column', async () => {
    for (const viewport of [DESKTOP, PHONE]) {
      await page.setViewportSize(viewport);
      await open(`/templates/${ids.template}`);
      const frame = page.frameLocator('.template-preview iframe');
      await frame.getByText('The right edge of the letter').waitFor();
      const [outer, shown] = [await box(page.locator('.template-preview .preview')), await box(page.locator('.template-preview iframe'))];
      expect(shown.x + shown.width).toBeLessThanOrEqual(outer.x + outer.width + 1);
      // The letter's layout fits the frame: nothing of it is past the frame's right edge.
      const inside = await frame.locator('html').evaluate((html) => {
        const el = html as unknown as { scrollWidth: number; clientWidth: number };
        return { scrolled: el.scrollWidth, width: el.clientWidth };
      });
      expect(inside.scrolled).toBeLessThanOrEqual(inside.width);
      // Laid out as a desktop mail client would, the letter and the frame's margins (616 pixels).
      expect(inside.width).toBeGreaterThanOrEqual(616);
      expect(await overflowWidth(page)).toBe(0);
      await page.locator('.template-preview').scrollIntoViewIfNeeded();
      await shoot(`template-preview-${viewport.width}`);
    }
  });

  it('finds templates by a part of their name', async () => {
    await page.setViewportSize(DESKTOP);
    await open('/templates');
    await page.getByLabel('Find').fill('receipt');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/#\/templates\?name=receipt$/);
    // Polled: the whole list stays on screen until the list found replaces it.
    await expect.poll(() => page.locator('tbody tr td.cell-primary').allTextContents()).toEqual(['Weekly receipt digest', 'Receipt']);
    await shoot('desktop-templates-found');
    await open('/templates?name=invoice');
    expect(await page.locator('p.empty').textContent()).toBe('No template’s name has “invoice” in it. Show all templates');
  });

  it('says how many contacts the list shows', async () => {
    await page.setViewportSize(DESKTOP);
    await open('/contacts');
    await page.locator('tbody tr').first().waitFor();
    expect(await page.locator('.list-count').textContent()).toBe('3 contacts');
    // The whole list stays on screen until the search's list replaces it.
    await open('/contacts?email=reader1');
    await expect.poll(() => page.locator('.list-count').textContent()).toBe('1 contact found');
  });
});
