import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { answerDialog, launchChromium, openView, signedInDashboard } from '../helpers/browser.js';

// What a keyboard and a screen reader need of the dashboard's shared pieces, checked in Chromium: a focus ring in
// sight, the focus kept after an action, notes read out, refused fields marked and described, questions that say
// what they ask.

const SCREENSHOTS = process.env.MAILROOM_SCREENSHOTS;

/** The page's own globals, typed here: the tests compile without the DOM's types. */
interface El {
  id: string;
  tagName: string;
  textContent: string | null;
  getAttribute(name: string): string | null;
  getBoundingClientRect(): { top: number; bottom: number; left: number; right: number };
}
interface Dom {
  document: { activeElement: El | null; body: El; getElementById(id: string): El | null; querySelector(s: string): El | null };
  getComputedStyle(el: El): { outlineOffset: string; outlineWidth: string; outlineStyle: string };
}

describe('the dashboard for keyboard and screen reader in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  let domainId: string;
  let broadcastId: string;
  let templateId: string;
  let emailId: string;

  beforeAll(async () => {
    t = await startTestApp();
    const domain = await t.seed.activeDomain('shop.test');
    domainId = domain.id;
    expect((await t.api.post('/v1/suppressions', { email: 'gone@example.org' })).status).toBe(201);
    const draft = await t.api.post('/v1/broadcasts', { name: 'November', from: 'News <news@shop.test>', subject: 'November', text: 'News' });
    expect(draft.status).toBe(201);
    broadcastId = draft.body.id;
    const template = await t.api.post('/v1/templates', { name: 'Receipt', subject: 'Receipt for {{ first_name }}', html: '<p>Hi {{ first_name }}</p>',
      variables: [{ key: 'first_name', type: 'string', required: false }] });
    expect(template.status).toBe(201);
    templateId = template.body.id;
    const sent = await t.api.post('/v1/emails', { from: 'Shop <hi@shop.test>', to: ['ann@example.com'], subject: 'Hello', text: 'Hi' });
    expect(sent.status).toBe(201);
    emailId = sent.body.id;
    await t.mailroom.delivery.drain();
    browser = await launchChromium();
    page = await signedInDashboard(browser, t.url, t.token, '/emails', 'Emails');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** The focused element: its tag, id, text and label. */
  const focused = () => page.evaluate(() => {
    const el = (globalThis as unknown as Dom).document.activeElement;
    return { tag: el?.tagName.toLowerCase(), id: el?.id, text: el?.textContent?.trim(), label: el?.getAttribute('aria-label') };
  });

  const open = (route: string, heading: string) => openView(page, t.url, route, heading);

  it('starts the focus on the heading of the view a sign-in opens, and on the key\'s field before it', async () => {
    const fresh = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    try {
      await fresh.goto(`${t.url}/dashboard/#/suppressions`);
      const key = fresh.getByLabel('API key');
      await key.waitFor();
      expect(await key.evaluate((el) => el === (globalThis as unknown as Dom).document.activeElement)).toBe(true);
      await key.fill(t.token);
      await key.press('Enter');
      await fresh.getByRole('heading', { name: 'Suppressions', level: 1 }).waitFor();
      await expect.poll(() => fresh.evaluate(() => {
        const el = (globalThis as unknown as Dom).document.activeElement;
        return `${el?.tagName.toLowerCase()} ${el?.textContent}`;
      })).toBe('h1 Suppressions');
    } finally {
      await fresh.close();
    }
  });

  it('draws a section link\'s focus ring inside the row of sections, which clips what runs out of it', async () => {
    await open('/emails', 'Emails');
    // From the skip link, Tab reaches the first section by keyboard, as :focus-visible needs.
    await page.locator('.skip-link').focus();
    await page.keyboard.press('Tab');
    expect((await focused()).text).toBe('Emails');
    const ring = await page.evaluate(() => {
      const link = (globalThis as unknown as Dom).document.activeElement!;
      const nav = (globalThis as unknown as Dom).document.querySelector('.session nav')!;
      const style = (globalThis as unknown as Dom).getComputedStyle(link);
      // How far the ring reaches past the link's box: the outline's offset and width.
      const reach = Math.max(0, parseFloat(style.outlineOffset) + parseFloat(style.outlineWidth));
      const [l, n] = [link.getBoundingClientRect(), nav.getBoundingClientRect()];
      return { style: style.outlineStyle, inside: l.top - reach >= n.top && l.bottom + reach <= n.bottom && l.left - reach >= n.left };
    });
    expect(ring).toEqual({ style: 'solid', inside: true });
  });

  it('shows where the row of sections goes on out of sight at 800 pixels, and Tab brings each section into sight', async () => {
    await page.setViewportSize({ width: 800, height: 900 });
    try {
      await open('/emails', 'Emails');
      const nav = page.getByRole('navigation', { name: 'Main' });
      const [before, after] = [nav.locator('.section-more.before'), nav.locator('.section-more.after')];
      /** The focused section and how it lies: wholly in the row's sight, and clear of each arrow shown. */
      const seen = () => page.evaluate(() => {
        const { document } = globalThis as unknown as Dom;
        const link = document.activeElement!;
        const row = document.querySelector('.section-row')!.getBoundingClientRect();
        const at = link.getBoundingClientRect();
        const arrows = ['before', 'after'].map((side) => document.querySelector(`.section-more.${side}`)!.getBoundingClientRect())
          .filter((arrow) => arrow.right > arrow.left);
        // Within a pixel: the boxes lie at fractions of one.
        const clear = arrows.every((arrow) => at.right <= arrow.left + 1 || at.left >= arrow.right - 1);
        return { text: link.textContent, inSight: at.left >= row.left - 1 && at.right <= row.right + 1 && clear };
      });
      // At its start the row goes on after, not before.
      await after.waitFor();
      expect(await before.isVisible()).toBe(false);
      if (SCREENSHOTS) await page.locator('header.topbar').screenshot({ path: `${SCREENSHOTS}/a11y-sections-800-start.png` });
      await nav.getByRole('link', { name: 'Emails' }).focus();
      const reached: string[] = [];
      for (let i = 0; i < 11; i++) {
        await page.keyboard.press('Tab');
        // The arrows follow the row's scroll event, a moment after the focus moved it.
        await expect.poll(seen).toMatchObject({ inSight: true });
        reached.push((await seen()).text!);
      }
      expect(reached.slice(-3)).toEqual(['Suppressions', 'Webhooks', 'API keys']);
      // At its end the row goes on before, not after.
      await before.waitFor();
      await after.waitFor({ state: 'hidden' });
      if (SCREENSHOTS) await page.locator('header.topbar').screenshot({ path: `${SCREENSHOTS}/a11y-sections-800-end.png` });
      // An arrow scrolls the row back for a pointer.
      await before.click();
      await after.waitFor();
      await expect.poll(() => page.locator('.section-row').evaluate((row) => (row as unknown as { scrollLeft: number }).scrollLeft)).toBe(0);
      await before.waitFor({ state: 'hidden' });
    } finally {
      await page.setViewportSize({ width: 1440, height: 900 });
    }
    // Where every section fits, no arrow, once the row's resize observer has run.
    await expect.poll(() => page.locator('.section-more').evaluateAll((arrows) => arrows.filter((a) => (a as unknown as El).getBoundingClientRect().right > 0).length)).toBe(0);
  });

  /** The contrast of `selector`'s text with what is behind it, its opacity and its ancestors' applied (WCAG 2's ratio). */
  async function contrast(selector: string) {
    const seen = await page.locator(selector).first().evaluate((el) => {
      const { getComputedStyle } = globalThis as unknown as { getComputedStyle(e: unknown): { color: string; backgroundColor: string; opacity: string } };
      type Node = { parentElement: Node | null };
      let opacity = 1;
      let background = 'rgb(255, 255, 255)';
      let found = false;
      for (let at: Node | null = el as unknown as Node; at; at = at.parentElement) {
        const style = getComputedStyle(at);
        opacity *= Number(style.opacity);
        if (!found && !/^rgba\(.*, 0\)$|^transparent$/.test(style.backgroundColor)) [background, found] = [style.backgroundColor, true];
      }
      return { color: getComputedStyle(el).color, background, opacity };
    });
    const rgb = (css: string) => css.match(/[\d.]+/g)!.slice(0, 3).map(Number);
    const [fg, bg] = [rgb(seen.color), rgb(seen.background)];
    // The text as it shows, faded over its background.
    const shown = fg.map((c, i) => c * seen.opacity + bg[i] * (1 - seen.opacity));
    const luminance = (c: number[]) => {
      const [r, g, b] = c.map((v) => v / 255).map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const [a, b] = [luminance(shown), luminance(bg)];
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  }

  it('keeps muted text and an editor\'s placeholder readable', async () => {
    await open('/api-keys', 'API keys');
    await page.getByRole('radio', { name: 'Custom' }).check();
    expect(await contrast('#access-custom-what')).toBeGreaterThanOrEqual(4.5);
    expect(await contrast('#scope-emails\\:read-what')).toBeGreaterThanOrEqual(4.5);
    await open(`/templates/${templateId}`, 'Receipt');
    await page.locator('#template-text .cm-content').click();
    expect(await contrast('#template-text .cm-placeholder')).toBeGreaterThanOrEqual(4.5);
  });

  it('says an action\'s note through a live region kept from one view to the next', async () => {
    await open('/suppressions', 'Suppressions');
    const before = await page.evaluateHandle(() => (globalThis as unknown as Dom).document.getElementById('note'));
    expect(await before.evaluate((note) => note?.getAttribute('role'))).toBe('status');
    await page.getByLabel('Email address', { exact: true }).fill('new@example.org');
    await page.getByRole('button', { name: 'Suppress' }).click();
    await page.getByRole('status').filter({ hasText: 'new@example.org is suppressed' }).waitFor();
    // The same element, which a screen reader watched before its text came.
    expect(await before.evaluate((note) => note === (globalThis as unknown as Dom).document.getElementById('note'))).toBe(true);
    // One status for the note: the note inside it is not a second live region.
    expect(await page.locator('#note [role="status"]').count()).toBe(0);
  });

  it('marks a refused field and describes it by the refusal, until it is taken', async () => {
    await open('/suppressions', 'Suppressions');
    const field = page.getByLabel('Email address', { exact: true });
    await field.fill('not an address');
    await page.getByRole('button', { name: 'Suppress' }).click();
    await page.locator('.suppression-form').getByRole('alert').waitFor();
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    const described = await field.evaluate((el) => (el.getAttribute('aria-describedby') ?? '').split(' ')
      .map((id: string) => (globalThis as unknown as Dom).document.getElementById(id)?.textContent ?? '').join(' '));
    expect(described).toMatch(/email/i);
    expect(described).toBe(await page.locator('.suppression-form').getByRole('alert').textContent());

    // A new answer takes the old marks away: here a refusal of the whole form, not of the field.
    await page.route('**/v1/suppressions', (route) => (route.request().method() === 'POST'
      ? route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: { code: 'unavailable', message: 'Try again later.', request_id: 'req_x' } }) })
      : route.continue()));
    await field.fill('later@example.org');
    await page.getByRole('button', { name: 'Suppress' }).click();
    await page.locator('.suppression-form').getByRole('alert').filter({ hasText: 'Try again later.' }).waitFor();
    expect(await field.getAttribute('aria-invalid')).toBeNull();
    expect(await field.getAttribute('aria-describedby')).toBeNull();
    await page.unroute('**/v1/suppressions');
  });

  it('describes a refused filter by the refusal under the list', async () => {
    await open('/emails?status=bogus', 'Emails');
    const refusal = page.getByRole('alert').filter({ hasText: 'The Status filter was refused' });
    await refusal.waitFor();
    const status = page.locator('#filter-status');
    expect(await status.getAttribute('aria-invalid')).toBe('true');
    const describedBy = await status.getAttribute('aria-describedby');
    expect(describedBy).toBeTruthy();
    expect(await page.locator(`#${describedBy}`).textContent()).toContain('The Status filter was refused');
  });

  it('keeps the focus on a button its action disabled while it ran', async () => {
    await open(`/broadcasts/${broadcastId}`, 'November');
    await page.getByLabel('Subject', { exact: true }).fill('November news');
    const save = page.getByRole('button', { name: 'Save', exact: true });
    await save.focus();
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    expect(await focused()).toMatchObject({ tag: 'button', text: 'Save' });
  });

  it('moves the focus to the heading, not the top of the page, when an action draws its view anew', async () => {
    await open(`/domains/${domainId}`, 'shop.test');
    await page.getByRole('button', { name: 'Verify', exact: true }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'DNS checked' }).waitFor();
    // The button drawn in its place has it, for the next Verify.
    await expect.poll(focused).toMatchObject({ tag: 'button', text: 'Verify' });
  });

  it('moves the focus to a variable row added, and on from one removed', async () => {
    await open(`/templates/${templateId}`, 'Receipt');
    const rows = page.locator('.variable-row');
    await rows.first().waitFor();
    await page.getByRole('button', { name: 'Add variable' }).focus();
    await page.keyboard.press('Enter');
    expect(await rows.count()).toBe(2);
    expect(await focused()).toMatchObject({ tag: 'input', label: 'Name of variable 2' });
    await rows.nth(1).getByRole('button', { name: 'Remove' }).focus();
    await page.keyboard.press('Enter');
    expect(await rows.count()).toBe(1);
    // To the row before it, the last one gone; from the only one, to the button that adds one.
    expect(await focused()).toMatchObject({ tag: 'button', text: 'Remove' });
    await page.keyboard.press('Enter');
    expect(await rows.count()).toBe(0);
    expect(await focused()).toMatchObject({ tag: 'button', text: 'Add variable' });
    // The edits are left unsaved.
    await page.getByRole('link', { name: 'Emails', exact: true }).click();
    await answerDialog(page, 'Leave without saving');
    await page.getByRole('heading', { name: 'Emails', level: 1 }).waitFor();
  });

  it('names each variable row\'s controls by its variable, or by its place while it has no name', async () => {
    await open(`/templates/${templateId}`, 'Receipt');
    const rows = page.locator('.variable-row');
    await rows.first().waitFor();
    /** The names a screen reader gives the rows' controls, row by row. */
    const names = () => rows.evaluateAll((trs) => trs.map((tr) => [...(tr as unknown as { querySelectorAll(s: string): El[] })
      .querySelectorAll('input, select, button')].map((el) => el.getAttribute('aria-label'))));
    expect(await names()).toEqual([['Name of variable 1', 'Type of variable first_name', 'variable first_name is required',
      'Fallback of variable first_name', 'Sample value of variable first_name', 'Remove variable first_name']]);
    await page.getByRole('button', { name: 'Add variable' }).click();
    await page.getByRole('button', { name: 'Add variable' }).click();
    expect((await names())[2]).toEqual(['Name of variable 3', 'Type of variable 3', 'variable 3 is required', 'Fallback of variable 3',
      'Sample value of variable 3', 'Remove variable 3']);
    // Named as it is typed.
    await page.getByRole('textbox', { name: 'Name of variable 2', exact: true }).fill('plan');
    expect((await names())[1]).toEqual(['Name of variable 2', 'Type of variable plan', 'variable plan is required', 'Fallback of variable plan',
      'Sample value of variable plan', 'Remove variable plan']);
    // The rows after one removed move up a place, and say so.
    await page.getByRole('button', { name: 'Remove variable first_name', exact: true }).click();
    expect((await names()).map((row) => [row[0], row.at(-1)])).toEqual([['Name of variable 1', 'Remove variable plan'],
      ['Name of variable 2', 'Remove variable 2']]);
    // No two controls of the table share a name.
    const all = (await names()).flat();
    expect(new Set(all).size).toBe(all.length);
    await page.getByRole('link', { name: 'Emails', exact: true }).click();
    await answerDialog(page, 'Leave without saving');
    await page.getByRole('heading', { name: 'Emails', level: 1 }).waitFor();
  });

  it('says which older version the template editor holds from the live region, and keeps saying it while it is edited', async () => {
    const second = await t.api.patch(`/v1/templates/${templateId}`, { subject: 'Your receipt, {{ first_name }}' });
    expect(second.body.latest_version).toBe(2);
    await open(`/templates/${templateId}`, 'Receipt');
    const note = await page.evaluateHandle(() => (globalThis as unknown as Dom).document.getElementById('note'));
    const open1 = page.getByRole('row').filter({ hasText: 'version 1' }).getByRole('button', { name: 'Open' });
    await open1.focus();
    await page.keyboard.press('Enter');
    const said = page.getByRole('status').filter({ hasText: /^The editor holds version 1, saved .+\. Saving makes a copy of it, with your changes, version 3\.$/ });
    await said.waitFor();
    // Put into the region that was there, and watched, before: not a region of its own that came with its text.
    expect(await said.evaluate((el, watched) => el === watched, note)).toBe(true);
    expect(await page.locator('main [role="status"]:not(#note)').count()).toBe(0);
    expect(await focused()).toMatchObject({ tag: 'button', text: 'Open' });
    // An edit does not make it untrue, as it does a note of what an action did.
    await page.getByLabel('Subject', { exact: true }).fill('Receipt, edited');
    expect(await said.count()).toBe(1);
    // The latest version opened again, the editor holds no older one.
    await page.getByRole('row').filter({ hasText: 'version 2' }).getByRole('button', { name: 'Open' }).click();
    await answerDialog(page, /Open version 2/);
    await expect.poll(() => page.locator('#note').textContent()).toBe('');
  });

  it('gives the focus to the progress of an action on the contacts picked, whose controls it hides while it runs', async () => {
    for (const email of ['bulk0@example.com', 'bulk1@example.com']) expect((await t.api.post('/v1/contacts', { email })).status).toBe(201);
    // Each call held until the test lets them go, to look at the page while the action runs.
    let letGo = () => {};
    const held = new Promise<void>((resolve) => { letGo = resolve; });
    await page.route('**/v1/contacts/*/tags/*', async (route) => { await held; await route.continue(); });
    try {
      const bar = page.getByRole('region', { name: 'Selected contacts' });
      const pick = async () => {
        await open('/contacts', 'Contacts');
        for (const email of ['bulk0@example.com', 'bulk1@example.com']) await page.getByLabel(`Select ${email}`, { exact: true }).check();
      };
      const progressFocused = () => page.evaluate(() => {
        const el = (globalThis as unknown as Dom).document.activeElement;
        return { progress: el?.getAttribute('class') === 'selection-progress', text: el?.textContent };
      });

      // Started by Enter in the tag's field, which hides with the buttons.
      await pick();
      await bar.getByLabel('Tag to add').fill('bulk');
      await bar.getByLabel('Tag to add').press('Enter');
      await bar.getByRole('progressbar', { name: 'Contacts done' }).waitFor();
      expect(await progressFocused()).toEqual({ progress: true, text: 'Tagging 2 contacts with “bulk”…0 of 2' });
      // What it does on one line, on a phone too, where the bar goes under it.
      for (const width of [1440, 390]) {
        await page.setViewportSize({ width, height: 900 });
        expect((await bar.locator('.selection-progress > span').boundingBox())!.height, `at ${width}`).toBeLessThan(30);
        if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/a11y-bulk-progress-${width}.png` });
      }
      await page.setViewportSize({ width: 1440, height: 900 });
      letGo();
      await page.getByRole('status').filter({ hasText: 'Tagged 2 contacts with “bulk”.' }).waitFor();
      // The list drawn again, nothing picked, the bar gone: the focus goes to the heading.
      await expect.poll(focused).toMatchObject({ tag: 'h1', text: 'Contacts' });

      // Started from the dialog that asked first, which gives the focus back to a button held busy.
      await pick();
      const gate = new Promise<void>((resolve) => { letGo = resolve; });
      await page.route('**/v1/contacts/*', async (route) => {
        if (route.request().method() === 'DELETE') await gate;
        await route.continue();
      });
      await bar.getByRole('button', { name: 'Delete' }).focus();
      await page.keyboard.press('Enter');
      await answerDialog(page, 'Delete 2 contacts');
      await bar.getByRole('progressbar', { name: 'Contacts done' }).waitFor();
      expect(await progressFocused()).toEqual({ progress: true, text: 'Deleting 2 contacts…0 of 2' });
      letGo();
      await page.getByRole('status').filter({ hasText: 'Deleted 2 contacts.' }).waitFor();
    } finally {
      letGo();
      // Once the calls held have gone on.
      await page.unrouteAll({ behavior: 'wait' });
    }
  });

  it('gives the focus to an email\'s source once its button has gone, and lets the keyboard scroll it', async () => {
    await open(`/emails/${emailId}`, 'Hello');
    await page.getByRole('button', { name: 'Show the source' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('region', { name: 'Source' }).waitFor();
    expect(await focused()).toMatchObject({ tag: 'pre', label: 'Source' });
  });

  it('keeps the focus in its place on a page that keeps itself up to date', async () => {
    for (let i = 0; i < 6; i++) expect((await t.api.post('/v1/contacts', { email: `paced${i}@example.com`, tags: ['paced'] })).status).toBe(201);
    const tag = ((await t.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>).find((x) => x.name === 'paced')!;
    const paced = await t.api.post('/v1/broadcasts', { name: 'Paced', from: 'News <news@shop.test>', subject: 'One a second', text: 'Slowly',
      audience: { tag_ids: [tag.id] }, send_rate_per_minute: 60 });
    expect((await t.api.post(`/v1/broadcasts/${paced.body.id}/send`, {})).status).toBe(200);
    await open(`/broadcasts/${paced.body.id}`, 'Paced');
    const back = page.getByRole('link', { name: '← All broadcasts' });
    await back.focus();
    const shown = await page.locator('.progress-count').textContent();
    // Drawn again by the page's refresh, with a count that has moved.
    await page.locator('.progress-count').filter({ hasNotText: shown! }).waitFor();
    expect(await focused()).toMatchObject({ tag: 'a', text: '← All broadcasts' });
  });

  it('asks in a dialog that is named and described, holds the focus, closes on Escape and gives the focus back', async () => {
    await open('/suppressions', 'Suppressions');
    const remove = page.getByRole('row').filter({ hasText: 'gone@example.org' }).getByRole('button', { name: 'Remove' });
    await remove.focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Remove gone@example.org from the suppressions?' });
    await dialog.waitFor();
    const description = await dialog.evaluate((el) => (globalThis as unknown as Dom).document.getElementById(el.getAttribute('aria-describedby') ?? '')?.textContent);
    expect(description).toBe('Email to it will be sent again.');
    expect(await focused()).toMatchObject({ tag: 'button', text: 'Go back' });
    // Tab goes round the dialog's buttons and never reaches the page under it.
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => (globalThis as unknown as Dom).document.activeElement?.getAttribute('value') ?? 'outside')).toMatch(/^(cancel|confirm)$/);
    }
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    expect(await focused()).toMatchObject({ tag: 'button', text: 'Remove' });
    expect((await t.api.get('/v1/suppressions')).body.data.some((s: { email: string }) => s.email === 'gone@example.org')).toBe(true);

    // Confirmed, the row is gone with its button: the focus goes to the view's heading.
    await remove.focus();
    await page.keyboard.press('Enter');
    expect(await answerDialog(page, 'Remove')).toContain('Email to it will be sent again.');
    await page.getByRole('status').filter({ hasText: 'gone@example.org is no longer suppressed' }).waitFor();
    await expect.poll(focused).toMatchObject({ tag: 'h1', text: 'Suppressions' });
  });
});
