import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page, Request } from 'playwright-core';
import { sinkMessagesFor } from '../../src/delivery/sink.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import {
  answerDialog, desktopAndPhoneShots, launchChromium, leavingIsQuestioned, noteSays, overflowWidth, signedInDashboard, textShows,
} from '../helpers/browser.js';

// The Templates view in Chromium: a template authored entirely in the page,
// its live preview rendered by the server, published there, and then used by
// a send through the API whose kept message has the variables filled in.

const SCREENSHOTS = process.env.MAILROOM_SCREENSHOTS;

describe('the Templates view in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    t = await startTestApp();
    await t.seed.activeDomain('shop.test');
    browser = await launchChromium();
    page = await signedInDashboard(browser, t.url, t.token, '/templates', 'Templates', { viewport: { width: 1280, height: 900 } });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const previewFrame = () => page.frameLocator('.template-preview iframe');
  /** Waits until the subject field holds `value` (it is filled once the template or a version is loaded). */
  const subjectIs = async (value: string) => {
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
      if (await page.locator('#template-subject').inputValue().catch(() => '') === value) return;
    }
    throw new Error(`the subject never became ${value}`);
  };
  /** The editable area of a source editor (CodeMirror's contenteditable). */
  const source = (id: string) => page.locator(`#${id} .cm-content`);
  /** The text in a source editor, line by line. */
  const sourceText = (id: string) => source(id).evaluate((el) => [...el.querySelectorAll('.cm-line')].map((line) => line.textContent).join('\n'));

  it('creates, edits with a live preview, publishes, and the template sends with its variables filled in', async () => {
    await page.getByRole('link', { name: 'New template' }).click();
    await page.getByRole('heading', { name: 'New template', level: 1 }).waitFor();
    // A new template starts empty (no newsletter greeting, no unsubscribe link), and the preview says what to do.
    await textShows(page, '.template-preview', /^Write the HTML or text, and the preview shows here\.$/);
    expect(await page.getByLabel('Subject').inputValue()).toBe('');
    expect(await sourceText('template-html')).toBe('');
    // The text shows only its placeholder.
    expect(await page.locator('#template-text .cm-placeholder').count()).toBe(1);
    expect(await page.locator(':focus').getAttribute('id')).toBe('template-name');
    if (SCREENSHOTS) await desktopAndPhoneShots(page, 'template-new');
    await page.getByLabel('Name', { exact: true }).fill('Welcome');
    await page.getByLabel('Alias', { exact: true }).fill('welcome');

    await page.getByLabel('Subject').fill('Welcome, {{ first }}');
    await source('template-html').fill('<p id="greeting">Hi {{ first }}, your plan is {{ plan }}.</p>');
    await page.getByRole('button', { name: 'Add variable' }).click();
    await page.getByRole('button', { name: 'Add variable' }).click();
    // Each row's controls are named by its variable once it has a name, by its place before.
    await page.getByLabel('Name of variable 1', { exact: true }).fill('first');
    await page.getByLabel('variable first is required', { exact: true }).check();
    await page.getByLabel('Sample value of variable first', { exact: true }).fill('Ada');
    await page.getByLabel('Name of variable 2', { exact: true }).fill('plan');
    await page.getByLabel('Fallback of variable plan', { exact: true }).fill('Free');

    // The preview is the server's rendering of the unsaved sources, in the sandboxed frame.
    await textShows(previewFrame(), '#greeting', /^Hi Ada, your plan is Free\.$/);
    await textShows(page, '.preview-subject', /^Subject: Welcome, Ada$/);
    await textShows(page, '.template-preview pre', 'Hi Ada, your plan is Free.');
    if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/template-editor.png`, fullPage: true });

    // Created with what was written as its version 1, and opened in its own editor with the sample values typed.
    await page.getByRole('button', { name: 'Create template' }).click();
    await noteSays(page, 'Welcome was created as version 1, a draft. Publish it to send with it.');
    await page.getByRole('heading', { name: 'Welcome', level: 1 }).waitFor();
    expect((await t.api.get('/v1/templates/welcome')).body).toMatchObject({ latest_version: 1, published_version: null,
      latest: { subject: 'Welcome, {{ first }}', html: '<p id="greeting">Hi {{ first }}, your plan is {{ plan }}.</p>', text: null } });
    await textShows(previewFrame(), '#greeting', /^Hi Ada, your plan is Free\.$/);

    // The sources are code editors: numbered lines, and HTML tags coloured apart from the text.
    expect(await page.locator('#template-html .cm-lineNumbers .cm-gutterElement', { hasText: /^1$/ }).count()).toBe(1);
    expect(await page.locator('#template-text .cm-lineNumbers .cm-gutterElement', { hasText: /^1$/ }).count()).toBe(1);
    const tagName = page.locator('#template-html .cm-line span', { hasText: /^p$/ }).first();
    const colours = await tagName.evaluate((span) => {
      const { getComputedStyle } = globalThis as unknown as { getComputedStyle(e: unknown): { color: string } };
      return [getComputedStyle(span).color, getComputedStyle(span.closest('.cm-line')!).color];
    });
    expect(colours[0]).not.toBe(colours[1]);

    // Typed key by key, the preview follows; the editor closes the tag as it is typed.
    await source('template-html').click();
    await page.keyboard.press('Control+End');
    await page.keyboard.press('Enter');
    await page.keyboard.type('<p id="typed">Typed by keys');
    expect(await sourceText('template-html')).toBe('<p id="greeting">Hi {{ first }}, your plan is {{ plan }}.</p>\n<p id="typed">Typed by keys</p>');
    await textShows(previewFrame(), '#typed', /^Typed by keys$/);
    // Undone (typing is undone in runs, the closed tag apart), the editor and the preview are back to what they were.
    const before = '<p id="greeting">Hi {{ first }}, your plan is {{ plan }}.</p>';
    for (let presses = 0; presses < 4 && await sourceText('template-html') !== before; presses++) await page.keyboard.press('Control+z');
    expect(await sourceText('template-html')).toBe(before);
    await previewFrame().locator('#typed').waitFor({ state: 'detached' });

    // Tab indents inside the editor; Escape then Tab leaves it for the next field, so the keyboard is never trapped.
    await page.keyboard.press('Control+Home');
    await page.keyboard.press('Tab');
    expect(await sourceText('template-html')).toMatch(/^\s+<p id="greeting">/);
    await page.keyboard.press('Shift+Tab');
    expect(await sourceText('template-html')).toMatch(/^<p id="greeting">/);
    await page.keyboard.press('Escape');
    await page.keyboard.press('Tab');
    expect(await source('template-text').evaluate((el) => el.matches(':focus'))).toBe(true);

    // The editor's search and go-to-line work inside the page's form without submitting it.
    const saves: string[] = [];
    const countSaves = (request: Request) => void (request.method() === 'PATCH' && saves.push(request.url()));
    page.on('request', countSaves);
    await source('template-html').click();
    await page.keyboard.press('Control+f');
    await page.locator('#template-html .cm-search input[name="search"]').fill('plan');
    await page.keyboard.press('Enter');
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+Alt+g');
    await page.locator('#template-html .cm-dialog input').fill('1');
    await page.locator('#template-html .cm-dialog button[type="submit"]').click();
    await page.locator('#template-html .cm-dialog').waitFor({ state: 'detached' });
    await new Promise((resolve) => setTimeout(resolve, 500));
    page.off('request', countSaves);
    expect(saves).toEqual([]);

    // A syntax error is shown with its line and column, and nothing is saved.
    await source('template-html').fill('<p>{% if first %}Hi</p>');
    await textShows(page, '.template-preview [role="alert"]', /line 1, col/);
    await source('template-html').fill('<p id="greeting">Hi {{ first }}, your plan is {{ plan }}.</p>');
    await textShows(previewFrame(), '#greeting', /^Hi Ada, your plan is Free\.$/);
    await source('template-text').fill('Hi {{ first }}, your plan is {{ plan }}.');

    await page.getByRole('button', { name: 'Save as a new version' }).click();
    await noteSays(page, 'Saved as version 2, a draft');
    // The view's main action, asked as every action is: a refusal is said under the title, and goes once it is tried again.
    let refused = false;
    let letThrough = () => {};
    const retried = new Promise<void>((resolve) => { letThrough = resolve; });
    await page.route('**/v1/templates/*/publish', async (route) => {
      if (refused) {
        await retried;
        await route.continue();
        return;
      }
      refused = true;
      await route.fulfill({ status: 409, contentType: 'application/json',
        body: JSON.stringify({ error: { code: 'conflict', message: 'The template changed meanwhile.' } }) });
    });
    const publish = page.locator('.title-row').getByRole('button', { name: 'Publish version 2' });
    expect(await publish.getAttribute('class')).toBeNull();
    await publish.click();
    expect(await answerDialog(page, 'Publish version 2')).toBe('Publish version 2?\nSends by this template use it from now on.');
    await textShows(page, '[role="alert"]', 'The template changed meanwhile.');
    await publish.click();
    await answerDialog(page, 'Publish version 2');
    await expect.poll(() => page.getByRole('alert').filter({ hasText: 'changed meanwhile' }).count()).toBe(0);
    expect(await publish.isDisabled()).toBe(true);
    letThrough();
    await noteSays(page, 'Version 2 is published');
    // The editor drawn again keeps the sample values typed in it, and its preview with them.
    await textShows(previewFrame(), '#greeting', /^Hi Ada, your plan is Free\.$/);
    expect(await page.getByLabel('Sample value of variable first').inputValue()).toBe('Ada');
    await page.unroute('**/v1/templates/*/publish');
    await textShows(page, 'tbody tr', /version 2.*published/);
    if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/template-published.png`, fullPage: true });

    const sent = await t.api.post('/v1/emails', { from: 'Shop <hello@shop.test>', to: 'grace@example.test', template: { id: 'welcome', variables: { first: 'Grace' } } });
    expect(sent.status).toBe(201);
    expect(sent.body).toMatchObject({ subject: 'Welcome, Grace', template_version: 2 });
    await t.mailroom.delivery.drain();
    const [kept] = await sinkMessagesFor(t.mailroom.services.store.db, sent.body.id);
    const raw = kept.raw.toString();
    expect(raw).toContain('Subject: Welcome, Grace');
    expect(raw).toContain('Hi Grace, your plan is Free.');

    // The list shows it published.
    await page.locator('nav').getByRole('link', { name: 'Templates' }).click();
    await textShows(page, 'tbody tr', /Welcome\s*welcome\s*published\s*version 2\s*version 2/);
    if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/templates-list.png`, fullPage: true });
  });

  it('opens an older version into the editor, duplicates and deletes', async () => {
    const created = await t.api.post('/v1/templates', { name: 'Receipt', subject: 'Receipt v1', html: '<p>One</p>' });
    await t.api.patch(`/v1/templates/${created.body.id}`, { subject: 'Receipt v2', html: '<p>Two</p>' });
    await page.goto(`${t.url}/dashboard/#/templates/${created.body.id}`);
    await subjectIs('Receipt v2');
    await page.locator('tbody tr', { hasText: 'Receipt v1' }).getByRole('button', { name: 'Open' }).click();
    await subjectIs('Receipt v1');
    expect(await sourceText('template-html')).toBe('<p>One</p>');
    // Said in the note above the view, with what saving does with it.
    await textShows(page, '#note', /^The editor holds version 1, saved .+\. Saving makes a copy of it, with your changes, version 3\.$/);

    await page.locator('.title-row').getByRole('button', { name: 'Duplicate' }).click();
    expect(await answerDialog(page, 'Duplicate')).toContain('a draft named “Receipt (copy)”');
    await noteSays(page, 'is a copy of Receipt');
    const copyId = decodeURIComponent(page.url().split('/').pop()!);
    expect(copyId).not.toBe(created.body.id);
    // The copy's page, drawn once it is read.
    await page.locator('main code', { hasText: copyId }).waitFor();
    await page.locator('.title-row').getByRole('button', { name: 'Delete' }).click();
    await answerDialog(page, 'Delete');
    await noteSays(page, 'was deleted');
    const remaining = (await t.api.get('/v1/templates')).body.data.map((x: { name: string }) => x.name);
    expect(remaining).toContain('Receipt');
    expect(remaining.filter((n: string) => n.startsWith('Receipt')).length).toBe(1);
  });

  it('deletes when Delete is pressed just as the preview loads its new content', async () => {
    // Long enough that its frame is still loading when Delete is pressed: the browser's own confirmation box
    // closed unanswered then, and the click did nothing.
    const html = Array.from({ length: 3000 }, (_, i) => `<p>Line ${i} of a long letter</p>`).join('\n');
    const created = await t.api.post('/v1/templates', { name: 'Long letter', subject: 'Long', html });
    expect(created.status).toBe(201);
    await page.goto(`${t.url}/dashboard/#/templates/${created.body.id}`);
    await subjectIs('Long');
    await previewFrame().locator('p').first().waitFor();
    // Delete is pressed in the same turn as the new preview frame goes in, its content not loaded yet.
    await page.evaluate(`(() => {
      const preview = document.querySelector('.template-preview');
      new MutationObserver((_, observer) => {
        if (!preview.querySelector('iframe')) return;
        observer.disconnect();
        [...document.querySelectorAll('.title-row button')].find((b) => b.textContent === 'Delete').click();
      }).observe(preview, { childList: true });
    })()`);
    await source('template-html').click();
    await page.keyboard.press('Control+Home');
    await page.keyboard.type('<h1>Edited');
    expect(await answerDialog(page, 'Delete')).toContain('Delete “Long letter”?');
    await noteSays(page, 'Long letter was deleted');
    expect((await t.api.get(`/v1/templates/${created.body.id}`)).status).toBe(404);
  });

  it('shows a refused save beside the field it names, and says so beside the button', async () => {
    const created = await t.api.post('/v1/templates', { name: 'Refused', subject: 'Refused', html: '<p>Refused</p>' });
    await page.goto(`${t.url}/dashboard/#/templates/${created.body.id}`);
    await subjectIs('Refused');
    const save = page.getByRole('button', { name: 'Save as a new version' });
    const beside = (field: string) => page.locator(`.field-error[data-field="${field}"] [role="alert"]`);
    const pointer = page.locator('.template-editor + div .error-pointer');

    await page.getByLabel('Default from').fill('not an address');
    await save.click();
    await beside('from').filter({ hasText: "'from'" }).waitFor();
    await pointer.filter({ hasText: 'Not done: see the problem beside Default from.' }).waitFor();

    // Put right, the next refusal moves to its own field: a Liquid error beside the HTML, with where it is.
    await page.getByLabel('Default from').fill('');
    await source('template-html').fill('<p>{% if first %}Hi</p>');
    await save.click();
    await beside('html').filter({ hasText: /line 1, col/ }).waitFor();
    expect(await beside('from').count()).toBe(0);
    await pointer.filter({ hasText: 'beside HTML.' }).waitFor();
    if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/template-refused.png`, fullPage: true });

    await source('template-html').fill('<p>Hi {{ first }}</p>');
    await page.getByRole('button', { name: 'Add variable' }).click();
    const key = page.getByLabel('Name of variable 1', { exact: true });
    // A name the browser itself refuses stops the save there, and the older refusal goes.
    await key.fill('1st');
    await save.click();
    await expect.poll(() => beside('html').count()).toBe(0);
    expect(await pointer.count()).toBe(0);
    expect(await key.evaluate((el) => (el as unknown as { validity: { patternMismatch: boolean } }).validity.patternMismatch)).toBe(true);

    await key.fill('contact');
    await save.click();
    await beside('variables').filter({ hasText: "'contact' is filled in by Mailroom" }).waitFor();
    await pointer.filter({ hasText: 'beside Variables.' }).waitFor();

    // Nothing was saved along the way.
    expect((await t.api.get(`/v1/templates/${created.body.id}`)).body.latest_version).toBe(1);
    await page.locator('nav').getByRole('link', { name: 'Templates' }).click();
    await answerDialog(page, 'Leave without saving');
    await page.getByRole('heading', { name: 'Templates', level: 1 }).waitFor();
  });

  it('shows each of several Liquid errors beside its own field, in the live preview too', async () => {
    const created = await t.api.post('/v1/templates', { name: 'Broken twice', subject: 'Fine', html: '<p>Fine</p>' });
    await page.goto(`${t.url}/dashboard/#/templates/${created.body.id}`);
    await subjectIs('Fine');
    const beside = (field: string) => page.locator(`.field-error[data-field="${field}"] [role="alert"]`);
    await page.getByLabel('Subject').fill('Hi {{ first');
    await source('template-html').fill('<p>{% if x %}open</p>');
    // The preview lists both problems, and no request id: the refusal says all there is.
    await textShows(page, '.template-preview [role="alert"]', /^subject, line 1, column 4: /);
    await textShows(page, '.template-preview [role="alert"]', /^html, line 1, column 4: /);
    expect(await page.locator('.template-preview').innerText()).not.toMatch(/see problems|Request id/);

    await page.getByRole('button', { name: 'Save as a new version' }).click();
    await beside('subject').filter({ hasText: /^subject, line 1, column 4: / }).waitFor();
    await beside('html').filter({ hasText: /^html, line 1, column 4: / }).waitFor();
    expect(await beside('subject').allInnerTexts()).toEqual([expect.stringMatching(/^subject, /)]);
    await page.locator('.template-editor + div .error-pointer').filter({ hasText: 'Not done: see the problems beside Subject and HTML.' }).waitFor();
    if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/template-two-errors.png`, fullPage: true });

    await page.getByLabel('Subject').fill('Fine');
    await source('template-html').fill('<p>Fine</p>');
    await page.getByRole('button', { name: 'Save as a new version' }).click();
    await noteSays(page, 'the content did not change');
  });

  it('names the variable and the field whose typed value is not of its type', async () => {
    const created = await t.api.post('/v1/templates', { name: 'Seats', subject: 'Seats', html: '<p>{{ seats }}</p>',
      variables: [{ key: 'seats', type: 'number', fallback: 1 }] });
    await page.goto(`${t.url}/dashboard/#/templates/${created.body.id}`);
    await subjectIs('Seats');
    const row = page.locator('tr.variable-row').first();
    await row.getByLabel('Sample value').fill('many');
    await textShows(page, '.template-preview [role="alert"]', 'The sample value of “seats”: “many” is not a number.');
    await row.getByLabel('Sample value').fill('3');
    await row.getByLabel('Fallback').fill('one');
    await page.getByRole('button', { name: 'Save as a new version' }).click();
    await textShows(page, '.template-editor + div [role="alert"]', 'The fallback of “seats”: “one” is not a number.');
    await row.getByLabel('Fallback').fill('1');
    await page.getByRole('button', { name: 'Save as a new version' }).click();
    await noteSays(page, 'the content did not change');
  });

  it('asks before unsaved changes are lost: leaving, reloading, opening a version, publishing', async () => {
    const created = await t.api.post('/v1/templates', { name: 'Careful', subject: 'Careful v1', html: '<p>One</p>' });
    const id = created.body.id as string;
    await t.api.patch(`/v1/templates/${id}`, { subject: 'Careful v2', html: '<p>Two</p>' });
    await page.goto(`${t.url}/dashboard/#/templates`);
    await page.getByRole('heading', { name: 'Templates', level: 1 }).waitFor();
    await page.goto(`${t.url}/dashboard/#/templates/${id}`);
    await subjectIs('Careful v2');
    const wouldAskOnUnload = () => leavingIsQuestioned(page);
    // Nothing typed: nothing asks.
    expect(await wouldAskOnUnload()).toBe(false);

    await source('template-html').fill('<p>Two, edited</p>');
    expect(await wouldAskOnUnload()).toBe(true);

    // Leaving by the menu asks; staying keeps the edits and the address.
    await page.locator('nav').getByRole('link', { name: 'Emails' }).click();
    expect(await answerDialog(page, 'Go back')).toBe('Discard your changes to “Careful”?\nYour changes are not saved and will be lost.');
    expect(decodeURIComponent(new URL(page.url()).hash)).toBe(`#/templates/${id}`);
    expect(await sourceText('template-html')).toBe('<p>Two, edited</p>');

    // Opening an older version asks too; declined, the editor keeps the edits.
    const openV1 = page.locator('tbody tr', { hasText: 'Careful v1' }).getByRole('button', { name: 'Open' });
    await openV1.click();
    await answerDialog(page, 'Go back');
    expect(await sourceText('template-html')).toBe('<p>Two, edited</p>');

    // Publishing says the edits are not in what is published.
    await page.locator('.title-row').getByRole('button', { name: 'Publish version 2' }).click();
    expect(await answerDialog(page, 'Go back')).toContain(
      'Your changes in the editor are not saved: they are not in version 2, and publishing discards them. Save first to publish them.');

    // Confirmed, the version is opened and nothing is left to ask about.
    await openV1.click();
    await answerDialog(page, 'Open version 1');
    await subjectIs('Careful v1');
    expect(await wouldAskOnUnload()).toBe(false);

    // Saved edits ask nothing.
    await page.getByLabel('Subject').fill('Careful v3');
    await page.getByRole('button', { name: 'Save as a new version' }).click();
    await noteSays(page, 'Saved as version 3');
    expect(await wouldAskOnUnload()).toBe(false);
    // Edited again, the note of the save goes: it would speak for edits it does not cover.
    await page.getByLabel('Subject').fill('Careful v4');
    expect(await page.locator('#note').textContent()).toBe('');

    // The back button asks as the menu does; leaving then goes where the person went.
    await page.goBack();
    await answerDialog(page, 'Leave without saving');
    await page.getByRole('heading', { name: 'Templates', level: 1 }).waitFor();
    expect((await t.api.get(`/v1/templates/${id}`)).body.latest_version).toBe(3);
  });

  it('clears the API\'s refusal of a new template when the browser itself stops the next try', async () => {
    await page.goto(`${t.url}/dashboard/#/templates/new`);
    await page.getByRole('heading', { name: 'New template', level: 1 }).waitFor();
    const alias = page.getByLabel('Alias', { exact: true });
    const refusal = page.locator('.field-error[data-field="alias"] [role="alert"]');
    const create = page.getByRole('button', { name: 'Create template' });
    await page.getByLabel('Name', { exact: true }).fill('Prefixed');
    await page.getByLabel('Subject').fill('News');
    await source('template-text').fill('News');
    await alias.fill('tpl_news');
    await create.click();
    await refusal.filter({ hasText: "cannot start with 'tpl_'" }).waitFor();

    await alias.fill('Not An Alias');
    await create.click();
    await expect.poll(() => refusal.count()).toBe(0);
    expect(await alias.evaluate((el) => (el as unknown as { validity: { patternMismatch: boolean } }).validity.patternMismatch)).toBe(true);
    const names = (await t.api.get('/v1/templates')).body.data.map((x: { name: string }) => x.name);
    expect(names).not.toContain('Prefixed');

    // Nothing written is refused as an empty version, beside the HTML, and nothing is created.
    await alias.fill('');
    await source('template-text').fill('');
    await textShows(page, '.template-preview', /^Write the HTML or text, and the preview shows here\.$/);
    await create.click();
    await page.locator('.field-error[data-field="html"] [role="alert"]').filter({ hasText: 'A version needs html, text or both.' }).waitFor();
    expect((await t.api.get('/v1/templates')).body.data.map((x: { name: string }) => x.name)).not.toContain('Prefixed');

    // What was typed is asked about before it is left.
    await page.locator('nav').getByRole('link', { name: 'Templates' }).click();
    expect(await answerDialog(page, 'Leave without saving')).toBe('Discard your changes to the new template?\nYour changes are not saved and will be lost.');
    await page.getByRole('heading', { name: 'Templates', level: 1 }).waitFor();
  });

  it('keeps the template when the question is declined, by Go back or by Escape', async () => {
    const created = await t.api.post('/v1/templates', { name: 'Kept', subject: 'Kept', html: '<p>Kept</p>' });
    await page.goto(`${t.url}/dashboard/#/templates/${created.body.id}`);
    await subjectIs('Kept');
    const remove = page.locator('.title-row').getByRole('button', { name: 'Delete' });
    await remove.click();
    expect(await answerDialog(page, 'Go back')).toBe(
      'Delete “Kept”?\nThe template and all its versions are deleted; this cannot be undone.\n\nEmails already sent with it keep their content.');

    if (SCREENSHOTS) {
      for (const [width, height] of [[1440, 900], [390, 844]]) {
        await page.setViewportSize({ width, height });
        await remove.click();
        await page.getByRole('dialog').waitFor();
        await page.screenshot({ path: `${SCREENSHOTS}/template-delete-question-${width}.png` });
        await answerDialog(page, 'Go back');
      }
      await page.setViewportSize({ width: 1280, height: 900 });
    }

    await remove.click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    // The dialog takes the focus, on the answer that does nothing.
    expect(await page.locator(':focus').textContent()).toBe('Go back');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    // Back on the button that asked.
    expect(await page.locator(':focus').textContent()).toBe('Delete');
    expect((await t.api.get(`/v1/templates/${created.body.id}`)).status).toBe(200);
    expect(await page.getByRole('status').filter({ hasText: 'was deleted' }).count()).toBe(0);

    // Gone back in the browser's history, the page under the question changes: it goes away unanswered.
    await remove.click();
    await dialog.waitFor();
    await page.goBack();
    await dialog.waitFor({ state: 'detached' });
    expect((await t.api.get(`/v1/templates/${created.body.id}`)).status).toBe(200);
  });

  it('says in the title which version is being edited and which one sends, as the list does', async () => {
    const created = await t.api.post('/v1/templates', { name: 'Shipping note', subject: 'Shipped', html: '<p>Shipped</p>' });
    await t.api.post('/v1/templates', { name: 'Unsent note', subject: 'Unsent', html: '<p>Unsent</p>' });
    await page.goto(`${t.url}/dashboard/#/templates/${created.body.id}`);
    await subjectIs('Shipped');
    const title = page.locator('.title-row');
    const said = async () => [await title.locator('.badge').textContent(), await title.locator('.publish-state').textContent()];
    expect(await said()).toEqual(['draft', 'never published']);
    if (SCREENSHOTS) await desktopAndPhoneShots(page, 'template-title-never-published');

    await title.getByRole('button', { name: 'Publish version 1' }).click();
    await answerDialog(page, 'Publish version 1');
    await noteSays(page, 'Version 1 is published');
    await textShows(page, '.title-row .publish-state', /^version 1 sends$/);
    expect(await said()).toEqual(['published', 'version 1 sends']);
    expect(await title.getByRole('button', { name: 'Publish version 1' }).isDisabled()).toBe(true);

    // A newer version saved: the template is still published (version 1 sends), and the title says the newer one is a draft.
    await page.getByLabel('Subject').fill('Shipped today');
    await page.getByRole('button', { name: 'Save as a new version' }).click();
    await noteSays(page, 'Saved as version 2, a draft');
    await textShows(page, '.title-row .publish-state', /version 2 is a draft/);
    expect(await said()).toEqual(['published', 'version 1 sends; version 2 is a draft, not yet published']);
    expect(await title.getByRole('button', { name: 'Publish version 2' }).isEnabled()).toBe(true);
    // The versions say the same: the newer one a draft, the older one published.
    const versionStatus = (n: number) => page.locator('tbody tr', { hasText: `version ${n}` }).locator('td[data-label="Status"]').innerText();
    await expect.poll(() => versionStatus(2)).toBe('draft');
    expect(await versionStatus(1)).toBe('published');
    await desktopAndPhoneShots(page, 'template-title-newer-draft');

    // The list says the same of each: its status (with a newer draft beside it), the version that sends, the latest.
    await page.locator('nav').getByRole('link', { name: 'Templates' }).click();
    const cells = async (name: string) => {
      const row = page.locator('tbody tr', { hasText: name });
      await row.waitFor();
      return Promise.all(['Status', 'Published', 'Latest'].map((label) => row.locator(`td[data-label="${label}"]`).innerText()));
    };
    expect(await cells('Shipping note')).toEqual(['published draft v2', 'version 1', 'version 2']);
    expect(await page.locator('tbody tr', { hasText: 'Shipping note' }).locator('.template-draft-note').getAttribute('title'))
      .toBe('Version 2 is a draft, not yet published');
    expect(await cells('Unsent note')).toEqual(['draft', 'never', 'version 1']);
    expect(await cells('Welcome')).toEqual(['published', 'version 2', 'version 2']);
    await desktopAndPhoneShots(page, 'templates-list-states');
  });

  it('declares a variable the content uses but does not declare, with one press beside its name', async () => {
    const created = await t.api.post('/v1/templates', { name: 'Tracking', subject: 'On its way', html: '<p>On its way</p>' });
    await page.goto(`${t.url}/dashboard/#/templates/${created.body.id}`);
    await subjectIs('On its way');
    const noVariables = page.getByText('No variables are declared.');
    await noVariables.waitFor();
    expect(await leavingIsQuestioned(page)).toBe(false);

    await source('template-html').fill('<p id="tracking">Follow it at {{ tracking_url }}, here in {{ eta_days }} days.</p>');
    const note = page.locator('.template-preview .undeclared-note');
    await textShows(note, 'li', /^eta_days/);
    expect(await note.locator('li').allInnerTexts()).toEqual([
      expect.stringMatching(/^tracking_url\s*in the HTML, line 1\s*Declare$/), expect.stringMatching(/^eta_days\s*in the HTML, line 1\s*Declare$/)]);
    await desktopAndPhoneShots(page, 'template-undeclared', '.template-preview');

    // By the keyboard: the button is named by the variable it declares.
    await note.getByRole('button', { name: 'Declare tracking_url', exact: true }).focus();
    await page.keyboard.press('Enter');
    const rows = page.locator('.variable-row');
    expect(await rows.count()).toBe(1);
    await noVariables.waitFor({ state: 'hidden' });
    // A required string without a fallback; its type has the focus, to be changed if it is not a string.
    expect(await page.getByLabel('Name of variable 1', { exact: true }).inputValue()).toBe('tracking_url');
    expect(await page.getByLabel('Type of variable tracking_url').inputValue()).toBe('string');
    expect(await page.getByLabel('variable tracking_url is required').isChecked()).toBe(true);
    expect(await page.getByLabel('Fallback of variable tracking_url').inputValue()).toBe('');
    expect(await page.locator(':focus').getAttribute('aria-label')).toBe('Type of variable tracking_url');
    // The note names only the variable left, and the edit is one that leaving asks about.
    await expect.poll(() => note.locator('li code').allInnerTexts()).toEqual(['eta_days']);
    expect(await leavingIsQuestioned(page)).toBe(true);

    await note.getByRole('button', { name: 'Declare eta_days', exact: true }).click();
    await note.waitFor({ state: 'detached' });
    // Each shown in the preview by its name, until a sample value is typed.
    await textShows(previewFrame(), '#tracking', /^Follow it at tracking_url, here in eta_days days\.$/);
    await desktopAndPhoneShots(page, 'template-declared', 'table.variables');
    await page.getByLabel('Type of variable eta_days').selectOption('number');
    await page.getByLabel('Sample value of variable eta_days').fill('3');
    await textShows(previewFrame(), '#tracking', /^Follow it at tracking_url, here in 3 days\.$/);

    await page.getByRole('button', { name: 'Save as a new version' }).click();
    await noteSays(page, 'Saved as version 2, a draft');
    expect((await t.api.get(`/v1/templates/${created.body.id}`)).body.latest.variables).toEqual([
      { key: 'tracking_url', type: 'string', required: true, fallback: null },
      { key: 'eta_days', type: 'number', required: true, fallback: null },
    ]);
  });

  it('asks no render that is sure to be refused again while only sample values change', async () => {
    const created = await t.api.post('/v1/templates', { name: 'Invoice', subject: 'Invoice', html: '<p>Invoice</p>' });
    // The page's timers are the test's to run: the preview is rendered a moment after the last keystroke.
    const clocked = await signedInDashboard(browser, t.url, t.token, `/templates/${created.body.id}`, 'Invoice',
      { viewport: { width: 1280, height: 900 }, beforeSignIn: (p) => p.clock.install() });
    try {
      const note = clocked.locator('.template-preview .undeclared-note');
      await clocked.locator('#template-html .cm-content').fill('<p id="invoice">Invoice {{ invoice_number }}</p>');
      await note.locator('li code', { hasText: /^invoice_number$/ }).waitFor();
      await clocked.clock.pauseAt(Date.now() + 60_000);
      const renders: Array<{ subject: string, data: { contact: { name: string } } }> = [];
      clocked.on('request', (request) => void (request.url().endsWith('/v1/templates/render') && renders.push(request.postDataJSON())));

      // The contact's name changes nothing the refusal is about: no request.
      await clocked.getByLabel('Contact name').fill('Grace Hopper');
      await clocked.clock.runFor(1000);
      expect(await note.locator('li code').allInnerTexts()).toEqual(['invoice_number']);
      // The subject is a source: asked again, once, with the name typed before.
      await clocked.getByLabel('Subject').fill('Invoice {{ invoice_number }}');
      const asked = clocked.waitForRequest('**/v1/templates/render');
      await clocked.clock.runFor(1000);
      await asked;
      expect(renders.map((r) => [r.subject, r.data.contact.name])).toEqual([['Invoice {{ invoice_number }}', 'Grace Hopper']]);
      await textShows(note, 'li', /^invoice_number\s*in the subject, line 1/);

      // Declared, it is rendered.
      await clocked.clock.resume();
      await note.getByRole('button', { name: 'Declare invoice_number', exact: true }).click();
      await textShows(clocked.frameLocator('.template-preview iframe'), '#invoice', /^Invoice invoice_number$/);
      expect(renders).toHaveLength(2);
    } finally {
      await clocked.close();
    }
  });

  it('gives each variable\'s inputs room to read and edit, on a desktop and on a phone', async () => {
    const created = await t.api.post('/v1/templates', { name: 'Order shipped', subject: 'Order {{ order_number }} shipped',
      html: '<p>Hi {{ first_name }}, {{ order_number }} goes by {{ carrier }}: {% for item in items %}{{ item }} {% endfor %}</p>',
      variables: [{ key: 'first_name', type: 'string', required: true }, { key: 'order_number', type: 'string', required: true, fallback: 'A-1001' },
        { key: 'carrier', type: 'string', fallback: 'the post' }, { key: 'items', type: 'list', fallback: ['Wool socks', 'Winter hat'] }] });
    await page.goto(`${t.url}/dashboard/#/templates/${created.body.id}`);
    await subjectIs('Order {{ order_number }} shipped');
    const widths = () => page.locator('.variable-row input[type="text"]').evaluateAll((inputs) =>
      inputs.map((el) => (el as unknown as { getBoundingClientRect(): { width: number } }).getBoundingClientRect().width));
    /** The height of each variable's Required, to tell a label on one line from one wrapped. */
    const requiredHeights = () => page.locator('.variable-required label').evaluateAll((labels) =>
      labels.map((el) => (el as unknown as { getBoundingClientRect(): { height: number } }).getBoundingClientRect().height));

    /** Whether an input shows the whole of its value. */
    const whole = (label: string) => page.getByLabel(label).evaluate((el) => {
      const input = el as unknown as { scrollWidth: number; clientWidth: number };
      return input.scrollWidth <= input.clientWidth;
    });

    await page.setViewportSize({ width: 1440, height: 900 });
    // Each input is a third of the editor's width or more (the six columns gave a fallback 60 pixels), and a list's
    // fallback shows whole.
    expect(Math.min(...await widths())).toBeGreaterThan(200);
    expect(await whole('Fallback of variable items')).toBe(true);
    expect(Math.max(...await requiredHeights())).toBeLessThan(40);
    await desktopAndPhoneShots(page, 'template-variables', 'table.variables');

    await page.setViewportSize({ width: 390, height: 844 });
    expect(await overflowWidth(page)).toBe(0);
    expect(Math.min(...await widths())).toBeGreaterThan(140);
    expect(Math.max(...await requiredHeights())).toBeLessThan(40);
    await page.setViewportSize({ width: 1280, height: 900 });
  });
});
