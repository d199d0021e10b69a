import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { desktopAndPhoneShots, launchChromium, openView, signedInDashboard } from '../helpers/browser.js';

// Acting on several contacts at once in the Contacts list, in Chromium: rows
// picked by their checkboxes (or all of a page), tagged with a new tag and
// untagged, unsubscribed and deleted after asking, a few requests at a time
// with the rate limit waited out, and each action summed up above the list
// drawn again, a contact it failed for named with the API's reason.

const SCREENSHOTS = process.env.MAILROOM_SCREENSHOTS;

interface Contact { id: string; email: string; status: string; tags: Array<{ id: string; name: string }> }

/** Thirty readers, r00 to r29, every fifth tagged news; made before the two below, so listed after them. */
const READERS = Array.from({ length: 30 }, (_, i) => ({
  email: `r${String(i).padStart(2, '0')}@example.com`, ...(i % 5 === 0 && { tags: ['news'] }),
}));
const UNSUBSCRIBED = 'gone@example.com';
const BOUNCED = 'bounced@example.com';

/** The page's own globals, typed here: the tests compile without the DOM's types. */
interface Dom {
  document: { documentElement: { scrollWidth: number } };
  innerWidth: number;
}

/** Whether a select's chosen option is shown whole: its text, in the select's font, fits the select's content box less its arrow. */
const optionFits = (select: unknown) => {
  const el = select as { options: Array<{ text: string }>; selectedIndex: number; clientWidth: number };
  const g = globalThis as unknown as {
    getComputedStyle(e: unknown): { font: string; paddingLeft: string; paddingRight: string };
    document: { createElement(tag: 'canvas'): { getContext(kind: '2d'): { font: string; measureText(text: string): { width: number } } } };
  };
  const style = g.getComputedStyle(el);
  const pen = g.document.createElement('canvas').getContext('2d');
  pen.font = style.font;
  const arrow = 20;
  return pen.measureText(el.options[el.selectedIndex].text).width <= el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - arrow;
};

describe('acting on several contacts in the Contacts list, in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    t = await startTestApp();
    expect((await t.api.post('/v1/contacts/bulk', { contacts: READERS })).body).toMatchObject({ created: 30, failed: 0 });
    const gone = await t.api.post('/v1/contacts', { email: UNSUBSCRIBED });
    expect((await t.api.post(`/v1/contacts/${gone.body.id}/unsubscribe`, {})).status).toBe(200);
    // An address that bounced hard makes a cleaned contact.
    await t.mailroom.services.store.write((tx) => t.mailroom.services.suppressions.addFromBounce(tx, t.workspaceId, BOUNCED, 'hard_bounce'));
    expect((await t.api.post('/v1/contacts', { email: BOUNCED })).body.status).toBe('cleaned');

    browser = await launchChromium();
    page = await signedInDashboard(browser, t.url, t.token, '/contacts', 'Contacts');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const bar = () => page.getByRole('region', { name: 'Selected contacts' });
  const summary = () => page.locator('#note .bulk-summary');
  /** The list's addresses, once it has loaded. */
  const listed = async () => {
    await page.locator('main .table-wrap, main p.empty').first().waitFor();
    return page.locator('main tbody tr td.cell-primary').allTextContents();
  };
  const open = async (route: string) => {
    await openView(page, t.url, route, 'Contacts');
    return listed();
  };
  const pick = (email: string) => page.getByLabel(`Select ${email}`, { exact: true }).check();
  const contact = async (email: string) =>
    ((await t.api.get(`/v1/contacts?email=${encodeURIComponent(email)}`)).body.data as Contact[]).find((c) => c.email === email);
  const tagged = async (name: string) => {
    const tag = ((await t.api.get('/v1/tags?limit=100')).body.data as Array<{ id: string; name: string }>).find((x) => x.name === name);
    if (!tag) return [];
    return ((await t.api.get(`/v1/contacts?tag_id=${tag.id}&limit=100`)).body.data as Contact[]).map((c) => c.email).sort();
  };
  const shots = (name: string) => desktopAndPhoneShots(page, name);

  it('shows the bar only while contacts are picked, and clears the selection', async () => {
    await open('/contacts');
    expect(await bar().isVisible()).toBe(false);
    await pick('r29@example.com');
    await pick('r28@example.com');
    expect(await bar().locator('.selection-count').textContent()).toBe('2 selected');
    expect(await page.locator('tr.picked').count()).toBe(2);
    await page.getByLabel('Select r28@example.com', { exact: true }).uncheck();
    expect(await bar().locator('.selection-count').textContent()).toBe('1 selected');
    await bar().getByRole('button', { name: 'Clear selection' }).click();
    expect(await bar().isVisible()).toBe(false);
    expect(await page.getByLabel('Select r29@example.com', { exact: true }).isChecked()).toBe(false);
  });

  it('tags the picked contacts with a new tag, which then filters exactly them, and takes it off again', async () => {
    const picked = ['r29@example.com', 'r27@example.com', 'r20@example.com'];
    await open('/contacts');
    for (const email of picked) await pick(email);
    await shots('selected');
    await bar().getByLabel('Tag to add').fill('Spring promo');
    await bar().getByRole('button', { name: 'Add tag' }).click();
    await summary().filter({ hasText: 'The tag “Spring promo” was created. Tagged 3 contacts with “Spring promo”.' }).waitFor();
    expect(await tagged('Spring promo')).toEqual([...picked].sort());
    // Drawn again, nothing picked.
    expect(await bar().isVisible()).toBe(false);
    expect(await page.locator('main tbody input[type="checkbox"]:checked').count()).toBe(0);

    await page.getByLabel('Tag', { exact: true }).selectOption({ label: 'Spring promo' });
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/tag_id=tag_/);
    await expect.poll(async () => (await listed()).sort()).toEqual([...picked].sort());

    // An existing tag, given to one that has it and one that does not: neither a failure.
    await pick('r20@example.com');
    await pick('r27@example.com');
    await bar().getByLabel('Tag to add').fill('NEWS');
    await bar().getByRole('button', { name: 'Add tag' }).click();
    await summary().filter({ hasText: 'Tagged 1 contact with “news”. 1 had it already.' }).waitFor();
    expect(await summary().locator('.bulk-failures').count()).toBe(0);
    expect(page.url()).toMatch(/tag_id=tag_/);

    await page.getByLabel('Select all on this page').check();
    expect(await bar().locator('.selection-count').textContent()).toBe('3 selected');
    // Offered: the tags the picked contacts have.
    expect(await bar().getByLabel('Tag to remove').locator('option').allTextContents()).toEqual(['tag to remove', 'news', 'Spring promo']);
    await bar().getByLabel('Tag to remove').selectOption({ label: 'Spring promo' });
    await bar().getByRole('button', { name: 'Remove tag' }).click();
    await summary().filter({ hasText: 'Took the tag “Spring promo” off 3 contacts.' }).waitFor();
    await page.locator('p.empty', { hasText: 'No contacts match these filters.' }).waitFor();
    expect(await tagged('Spring promo')).toEqual([]);
    expect(await tagged('news')).toContain('r27@example.com');
  });

  it('unsubscribes the picked contacts after asking how many, one already unsubscribed and one cleaned not counted as failures', async () => {
    await open('/contacts');
    for (const email of ['r26@example.com', 'r24@example.com', UNSUBSCRIBED, BOUNCED]) await pick(email);
    await bar().getByRole('button', { name: 'Unsubscribe' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('heading', { name: 'Unsubscribe 4 contacts?' }).waitFor();
    await dialog.getByText('2 are unsubscribed or cleaned already, and stay so.').waitFor();
    await dialog.getByRole('button', { name: 'Go back' }).click();
    expect((await contact('r26@example.com'))!.status).toBe('subscribed');
    expect(await bar().locator('.selection-count').textContent()).toBe('4 selected');

    await bar().getByRole('button', { name: 'Unsubscribe' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Unsubscribe 4 contacts' }).click();
    await summary().filter({ hasText: 'Unsubscribed 2 contacts. 1 was unsubscribed already. 1 is cleaned, and stays so: no email goes to a cleaned address either.' }).waitFor();
    expect(await summary().locator('.bulk-failures').count()).toBe(0);
    expect((await contact('r26@example.com'))!.status).toBe('unsubscribed');
    expect((await contact('r24@example.com'))!.status).toBe('unsubscribed');
    expect((await contact(BOUNCED))!.status).toBe('cleaned');
    const row = page.locator('main tbody tr', { hasText: 'r26@example.com' });
    expect(await row.locator('td.cell-status').textContent()).toBe('unsubscribed');
  });

  it('deletes a picked contact only once the question is confirmed', async () => {
    await open('/contacts');
    await pick('r25@example.com');
    await bar().getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('heading', { name: 'Delete 1 contact?' }).waitFor();
    await page.getByRole('dialog').getByRole('button', { name: 'Go back' }).click();
    expect(await contact('r25@example.com')).toBeDefined();

    await bar().getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete 1 contact' }).click();
    await summary().filter({ hasText: 'Deleted 1 contact.' }).waitFor();
    expect(await contact('r25@example.com')).toBeUndefined();
    expect(await listed()).not.toContain('r25@example.com');
  });

  it('picks all of a page, a few requests at a time, waits out the rate limit, and keeps the page it was on', async () => {
    await open('/contacts');
    const first = await listed();
    await page.getByRole('button', { name: 'Older' }).click();
    await page.waitForURL(/after=/);
    // The first page stays on screen until the second replaces it: wait for rows it does not hold.
    await expect.poll(async () => (await listed()).filter((address) => !first.includes(address)).length).toBeGreaterThan(1);
    const second = await listed();
    expect(second.some((address) => first.includes(address))).toBe(false);
    const all = page.getByLabel('Select all on this page');
    await all.check();
    expect(await bar().locator('.selection-count').textContent()).toBe(`${second.length} selected`);
    await page.getByLabel(`Select ${second[0]}`, { exact: true }).uncheck();
    expect(await all.evaluate((el) => (el as unknown as { indeterminate: boolean }).indeterminate)).toBe(true);
    await all.check();
    expect(await page.locator('main tbody input[type="checkbox"]:checked').count()).toBe(second.length);

    // Each request held a moment, to count those in flight; the fifth refused for the rate limit.
    let inFlight = 0;
    let most = 0;
    let calls = 0;
    await page.route('**/v1/contacts/*/tags/*', async (route) => {
      calls++;
      if (calls === 5) {
        await route.fulfill({ status: 429, headers: { 'Retry-After': '1', 'Content-Type': 'application/json' },
          body: JSON.stringify({ error: { code: 'rate_limit_exceeded', message: 'Too many requests.', request_id: 'req_1' } }) });
        return;
      }
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 150));
      inFlight--;
      await route.continue();
    });
    try {
      await bar().getByLabel('Tag to add').fill('page two');
      await bar().getByRole('button', { name: 'Add tag' }).click();
      await page.getByRole('progressbar', { name: 'Contacts done' }).waitFor();
      if (SCREENSHOTS) await bar().screenshot({ path: `${SCREENSHOTS}/progress-1440.png` });
      await summary().filter({ hasText: `Tagged ${second.length} contacts with “page two”.` }).waitFor({ timeout: 20_000 });
    } finally {
      await page.unroute('**/v1/contacts/*/tags/*');
    }
    expect(calls).toBe(second.length + 1);
    expect(most).toBe(4);
    expect(await tagged('page two')).toEqual([...second].sort());
    expect(page.url()).toMatch(/after=/);
    expect((await listed()).sort()).toEqual([...second].sort());
  });

  it('names a contact it failed for, with the API\'s reason, and counts one deleted meanwhile as deleted', async () => {
    await open('/contacts');
    for (const email of ['r23@example.com', 'r22@example.com', 'r21@example.com']) await pick(email);
    // Deleted through the API after the page was drawn.
    const gone = (await contact('r22@example.com'))!;
    expect((await t.api.delete(`/v1/contacts/${gone.id}`)).status).toBe(204);
    await bar().getByLabel('Tag to add').fill('autumn');
    await bar().getByLabel('Tag to add').press('Enter');
    const failures = summary().locator('.bulk-failures li');
    await failures.first().waitFor();
    expect(await summary().locator('p').first().textContent()).toBe('The tag “autumn” was created. Tagged 2 contacts with “autumn”.');
    await summary().getByText('Failed for 1 contact:').waitFor();
    expect(await failures.allTextContents()).toEqual([`r22@example.com: No contact with id '${gone.id}'.`]);
    expect(await tagged('autumn')).toEqual(['r21@example.com', 'r23@example.com']);
    await shots('summary');

    // Deleting one that is gone already ends as asked: said, not failed.
    await pick('r21@example.com');
    await pick('r23@example.com');
    const r21 = (await contact('r21@example.com'))!;
    expect((await t.api.delete(`/v1/contacts/${r21.id}`)).status).toBe(204);
    await bar().getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete 2 contacts' }).click();
    await summary().filter({ hasText: 'Deleted 1 contact. 1 was deleted already.' }).waitFor();
    expect(await summary().locator('.bulk-failures').count()).toBe(0);
  });

  it('puts the checkbox at the start of a card on a phone, with a select-all, and the bar within 390 pixels', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await open('/contacts');
      const row = page.locator('main tbody tr').first();
      const box = (await row.locator('td.cell-select input').boundingBox())!;
      const address = (await row.locator('td.cell-primary a').boundingBox())!;
      expect(box.x).toBeLessThan(address.x);
      expect(Math.abs(box.y + box.height / 2 - (address.y + address.height / 2))).toBeLessThan(10);
      const all = page.getByText('Select all on this page');
      expect(await all.isVisible()).toBe(true);
      await page.getByLabel('Select all on this page').check();
      await bar().waitFor();
      const widths = await page.evaluate(() => {
        const w = globalThis as unknown as Dom;
        return { page: w.document.documentElement.scrollWidth, screen: w.innerWidth };
      });
      expect(widths.page).toBeLessThanOrEqual(widths.screen);
      const barBox = (await bar().boundingBox())!;
      expect(barBox.x).toBeGreaterThanOrEqual(0);
      expect(barBox.x + barBox.width).toBeLessThanOrEqual(390);
      for (const name of ['Add tag', 'Remove tag', 'Unsubscribe', 'Delete', 'Clear selection']) {
        const b = (await bar().getByRole('button', { name }).boundingBox())!;
        expect(b.x + b.width, name).toBeLessThanOrEqual(390);
      }
      await shots('all-selected');
      await page.setViewportSize({ width: 390, height: 844 });

      // Picked contacts without a tag: the select says so in words wider than half the bar, and shows them whole, as it does on a wide screen.
      await page.getByLabel('Select all on this page').uncheck();
      const untagged = (await listed()).find((email) => !READERS.some((r) => r.email === email && r.tags));
      await pick(untagged!);
      const untag = bar().getByLabel('Tag to remove');
      expect(await untag.locator('option:checked').textContent()).toBe('none of them has a tag');
      const select = (await untag.boundingBox())!;
      expect(select.x).toBeGreaterThanOrEqual(0);
      expect(select.x + select.width).toBeLessThanOrEqual(390);
      expect(await untag.evaluate(optionFits)).toBe(true);
      await page.setViewportSize({ width: 1440, height: 900 });
      expect(await untag.evaluate(optionFits)).toBe(true);
      await shots('untagged-selected');
    } finally {
      await page.setViewportSize({ width: 1440, height: 900 });
    }
  });
});
