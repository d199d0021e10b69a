import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page, Request } from 'playwright-core';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { answerDialog, desktopAndPhoneShots, launchChromium, noteSays, signedInDashboard, textShows } from '../helpers/browser.js';
import { publishDkim, resolverOf, startDns, type TestDns } from '../helpers/dns.js';
import { directDeliveryEnv, startScriptedMx, type ScriptedMx } from '../helpers/mx.js';
import { eventually } from '../helpers/smtp-app.js';
import { recordRecipientOutcomes } from '../../src/emails/outcomes.js';

// The Broadcasts view in Chromium: a broadcast written in the page, its
// audience counted live, previewed as a contact in the sandboxed frame (again
// after each save, saying when the form has moved on from it and which contact
// fields render empty, at a desktop's width or a phone's), tested,
// sent through a confirmation that states the audience, and watched to the
// end; then its mail read at a real MX, found through dnsmasq. A paced one is paused, resumed and
// cancelled from its page, and the API's refusals show beside their field. Bounces at that MX, and a complaint,
// show in red on the broadcast's page and in the list; a draft that lacks what sending needs, or a time the API would
// refuse, is stopped in the page, saying why.

const SCREENSHOTS = process.env.MAILROOM_SCREENSHOTS;
const DOMAIN = 'news.test';

interface Contact { id: string; email: string }

describe('the Broadcasts view in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  const contacts: Record<string, Contact> = {};

  const addContact = async (key: string, body: Record<string, unknown>) => {
    const res = await t.api.post('/v1/contacts', body);
    expect(res.status).toBe(201);
    contacts[key] = res.body;
    return res.body as Contact;
  };

  let testDns: TestDns;
  let mx: ScriptedMx;

  beforeAll(async () => {
    testDns = await startDns([
      { type: 'MX', name: 'example.com', exchange: 'mx.example.com', priority: 10 }, { type: 'A', name: 'mx.example.com', address: '127.0.0.4' },
    ]);
    // Mailboxes named bounce… do not exist there; those named slow… are greylisted, so their mail waits for a retry.
    // The greylisting reply does not ask to slow down ("try again later" would): that would pause the whole
    // destination, and mail still queued for it would wait with the greylisted one.
    mx = await startScriptedMx({ host: '127.0.0.4', reply: (stage, ctx) => (stage !== 'rcpt' ? undefined
      : ctx.address?.startsWith('bounce') ? '550 5.1.1 No such user here'
        : ctx.address?.startsWith('slow') ? '451 4.7.1 Greylisted: come back in 5 minutes' : undefined) });
    t = await startTestApp({ env: { ...directDeliveryEnv(testDns.server, mx.port), MAILROOM_PUBLIC_URL: 'https://mail.acme.test' } });
    await publishDkim(testDns, await t.seed.activeDomain(DOMAIN));
    await addContact('ann', { email: 'ann@example.com', name: 'Ann Lee', tags: ['news'] });
    await addContact('bob', { email: 'bob@example.com', name: 'Bob Stone', tags: ['news'] });
    await addContact('cy', { email: 'cy@example.com', name: 'Cy Young', tags: ['news'] });
    await addContact('untagged', { email: 'untagged@example.com', name: 'Una Tagg' });
    const gone = await addContact('unsubscribed', { email: 'gone@example.com', tags: ['news'] });
    expect((await t.api.post(`/v1/contacts/${gone.id}/unsubscribe`, {})).status).toBe(200);
    const deleted = await addContact('deleted', { email: 'deleted@example.com', tags: ['news'] });
    expect((await t.api.delete(`/v1/contacts/${deleted.id}`)).status).toBe(204);
    await addContact('suppressed', { email: 'blocked@example.com', tags: ['news'] });
    expect((await t.api.post('/v1/suppressions', { email: 'blocked@example.com' })).status).toBe(201);

    browser = await launchChromium();
    page = await signedInDashboard(browser, t.url, t.token, '/broadcasts', 'Broadcasts', { viewport: { width: 1280, height: 800 } });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await mx?.stop();
    await testDns?.stop();
  });

  /** What a person sees at 1280x800, from `scrolledTo` when given. */
  const shot = async (name: string, scrolledTo?: string) => {
    if (!SCREENSHOTS) return;
    if (scrolledTo) await page.locator(scrolledTo).evaluate((el) => el.scrollIntoView({ block: 'start' }));
    await page.screenshot({ path: `${SCREENSHOTS}/${name}.png` });
  };
  const emailsOf = async (id: string) => (await t.api.get(`/v1/emails?broadcast_id=${id}&limit=100`)).body.data as
    Array<{ id: string; contact_id: string; to: string[]; subject: string }>;
  const broadcastId = () => decodeURIComponent(/#\/broadcasts\/([^/?]+)/.exec(page.url())![1]);

  it('writes a broadcast, counts its audience live, previews, tests and sends it to exactly the tagged contacts', async () => {
    await page.getByRole('link', { name: 'New broadcast' }).click();
    await page.getByLabel('Name').fill('November news');
    await page.getByRole('button', { name: 'Create draft' }).click();
    await noteSays(page, 'The draft “November news” was created');
    const id = broadcastId();

    // The picker offers the active domain and fills a whole from line; an active domain needs no word beside it.
    await page.getByLabel('Pick an active domain').selectOption(DOMAIN);
    expect(await page.locator('#broadcast-from').inputValue()).toBe(`News <hello@${DOMAIN}>`);
    expect(await page.locator('#broadcast-from-note').isHidden()).toBe(true);
    await page.getByLabel('Subject').fill('News for {{ contact.first_name }}');
    await page.getByLabel('HTML').fill('<p id="greeting">Hello {{ contact.first_name }}, this is November.</p>');
    // The HTML is a code editor: numbered lines, HTML tags coloured apart from the text, and an edit is an unsaved change.
    expect(await page.locator('#broadcast-html .cm-lineNumbers .cm-gutterElement', { hasText: /^1$/ }).count()).toBe(1);
    const tagName = page.locator('#broadcast-html .cm-line span', { hasText: /^p$/ }).first();
    const colours = await tagName.evaluate((span) => {
      const { getComputedStyle } = globalThis as unknown as { getComputedStyle(e: unknown): { color: string } };
      return [getComputedStyle(span).color, getComputedStyle(span.closest('.cm-line')!).color];
    });
    expect(colours[0]).not.toBe(colours[1]);
    await page.getByText('Unsaved changes.').waitFor();
    // Before narrowing, every subscribed contact that is not deleted or suppressed: the three tagged and the untagged one.
    await textShows(page, '.audience-count', /^4 contacts$/);
    await page.getByRole('group', { name: 'Contacts with any of these tags' }).getByLabel('news').check();
    await textShows(page, '.audience-count', /^3 contacts$/);
    const sample = await page.locator('.audience-sample tbody tr td:first-child').allTextContents();
    expect(sample.sort()).toEqual(['ann@example.com', 'bob@example.com', 'cy@example.com']);
    // Engagement reads as it does in the contacts list, not as the API's tier id ("no data").
    const tierLabels: Record<string, string> = { no_data: 'No data yet', new: 'New', engaged: 'Engaged', at_risk: 'At risk', inactive: 'Inactive', cold: 'Cold' };
    const tierOf = new Map(((await t.api.get('/v1/contacts?limit=100')).body.data as Array<{ email: string; engagement_tier: string }>)
      .map((c) => [c.email, c.engagement_tier]));
    for (const row of await page.locator('.audience-sample tbody tr').all()) {
      const [email, , engagement] = await row.locator('td').allTextContents();
      expect(engagement).toBe(tierLabels[tierOf.get(email)!]);
    }
    // A short name stays on one line beside the address, not a word to a line.
    const nameLines = await page.locator('.audience-sample tbody td', { hasText: 'Ann Lee' }).evaluate((cell) => {
      const doc = (globalThis as unknown as { document: { createRange(): { selectNodeContents(n: unknown): void; getClientRects(): ArrayLike<{ top: number }> } } }).document;
      const range = doc.createRange();
      range.selectNodeContents(cell);
      return new Set(Array.from(range.getClientRects(), (r) => Math.round(r.top))).size;
    });
    expect(nameLines).toBe(1);
    await shot('composer', '.title-row');

    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await noteSays(page, 'Saved.');
    const stored = (await t.api.get(`/v1/broadcasts/${id}`)).body;
    const newsTag = ((await t.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>).find((x) => x.name === 'news')!.id;
    expect(stored).toMatchObject({ from: `News <hello@${DOMAIN}>`, subject: 'News for {{ contact.first_name }}', template: null,
      html: '<p id="greeting">Hello {{ contact.first_name }}, this is November.</p>', text: null,
      audience: { tag_ids: [newsTag], exclude_tag_ids: [], engagement_tiers: null }, stats: { audience_size: 3 } });

    // The preview is the server's rendering for one contact, in the sandboxed frame.
    await page.getByLabel('As', { exact: true }).selectOption({ label: 'Bob Stone <bob@example.com>' });
    await page.getByRole('button', { name: 'Preview', exact: true }).click();
    await textShows(page.frameLocator('.broadcast-preview iframe'), '#greeting', /^Hello Bob, this is November\.$/);
    await textShows(page, '.preview-subject', /^Subject: News for Bob$/);
    expect(await page.locator('.broadcast-preview iframe').getAttribute('sandbox')).toBe('');
    await shot('preview', '.preview-panel');

    await page.getByLabel('To', { exact: true }).fill('qa@acme.test');
    await page.getByRole('button', { name: 'Send test' }).click();
    // The result says where it went and leads to the email, not a bare id.
    const testSent = page.locator('.test-sends li');
    await testSent.waitFor();
    expect(await testSent.textContent()).toBe('Sent to qa@acme.test · View the test email');
    const testEmailId = decodeURIComponent(/^#\/emails\/(.+)$/.exec((await testSent.getByRole('link', { name: 'View the test email' }).getAttribute('href'))!)![1]);
    await shot('test-sent', '.composer-side section:nth-child(2)');
    expect((await t.api.get(`/v1/emails/${testEmailId}`)).body).toMatchObject({ subject: '[Test] News for', to: ['qa@acme.test'] });

    // The confirmation states the audience size before anything goes out.
    await page.getByRole('button', { name: 'Send now…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('Send to 3 contacts now?');
    expect(await emailsOf(id)).toEqual([]);
    await shot('confirm');
    await dialog.getByRole('button', { name: 'Send to 3 contacts' }).click();
    await noteSays(page, 'Sending to 3 contacts');

    // The page follows the broadcast to the end without a reload.
    await textShows(page, '.title-row .badge', /^sent$/);
    await textShows(page, '.progress-panel .outcome-count', /^3 of 3 delivered$/);
    await shot('sent');
    // No contact was skipped: no count of them, and no table.
    expect(await page.locator('[data-stat="skipped"], .skipped-panel').count()).toBe(0);
    // Its counts in one grid of cards as wide as each other; its content named as the composer's.
    expect(await page.locator('.broadcast-stats').count()).toBe(1);
    const cardWidths = await page.locator('.broadcast-stats .stat').evaluateAll((els) =>
      els.map((el) => Math.round((el as unknown as { getBoundingClientRect(): { width: number } }).getBoundingClientRect().width)));
    expect(cardWidths).toHaveLength(9);
    expect(new Set(cardWidths).size).toBe(1);
    expect(await page.locator('dt:text-is("Content") + dd').textContent()).toBe('written in the composer');

    const emails = await emailsOf(id);
    expect(emails.map((e) => e.to[0]).sort()).toEqual(['ann@example.com', 'bob@example.com', 'cy@example.com']);
    expect(new Set(emails.map((e) => e.contact_id))).toEqual(new Set([contacts.ann.id, contacts.bob.id, contacts.cy.id]));
    for (const other of ['untagged', 'unsubscribed', 'deleted', 'suppressed']) {
      expect(emails.some((e) => e.contact_id === contacts[other].id), other).toBe(false);
    }
    // At the MX: one message per contact, personalised, DKIM-signed, with one-click unsubscribe.
    const firstNames: Record<string, string> = { 'ann@example.com': 'Ann', 'bob@example.com': 'Bob', 'cy@example.com': 'Cy' };
    const arrived = await eventually(async () => {
      const mine = mx.received.filter((m) => /^Subject: News for /m.test(m.raw.toString('latin1')));
      return mine.length >= 3 ? mine : undefined;
    }, 15_000, 'the three messages at the MX');
    expect(arrived.flatMap((m) => m.rcptTo).sort()).toEqual(Object.keys(firstNames));
    const resolver = resolverOf(testDns);
    for (const message of arrived) {
      const raw = message.raw.toString('latin1');
      const firstName = firstNames[message.rcptTo[0]];
      expect(raw).toContain(`Subject: News for ${firstName}`);
      expect(raw).toContain(`Hello ${firstName}, this is November.`);
      expect(raw).toMatch(/^List-Unsubscribe:\s+<https:\/\/mail\.acme\.test\/u\/[\w-]+>\r$/m);
      expect(raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click\r$/m);
      const { results } = await dkimVerify(message.raw, { resolver: (name: string, type: string) => resolver.resolve(name, type as 'TXT') });
      expect(results).toEqual([expect.objectContaining({ signingDomain: DOMAIN, status: expect.objectContaining({ result: 'pass' }) })]);
    }

    // Its emails are one link away, in the Emails view narrowed to it.
    await page.getByRole('link', { name: 'Its emails, one per contact' }).click();
    await textShows(page, '.filter-note', 'The emails of the broadcast November news');
    await textShows(page, 'tbody', 'cy@example.com');
    expect(await page.locator('tbody tr').count()).toBe(3);

    // Once sent, its page still says to whom and what: the audience in words, the message as a contact got it.
    await page.goBack();
    await page.getByText('Subscribed contacts tagged “news”.').waitFor();
    await textShows(page.frameLocator('.broadcast-preview iframe'), '#greeting', /^Hello (Ann|Bob|Cy), this is November\.$/);
    await shot('sent-content', '.broadcast-preview');
    // Duplicated, it is a new draft with the same content and audience, to send again.
    await page.locator('.title-row').getByRole('button', { name: 'Duplicate' }).click();
    await noteSays(page, '“November news (copy)” is a new draft with the content and audience of “November news”.');
    const copy = (await t.api.get(`/v1/broadcasts/${broadcastId()}`)).body;
    expect(copy.id).not.toBe(id);
    expect(copy).toMatchObject({ name: 'November news (copy)', status: 'draft', from: stored.from, subject: stored.subject, html: stored.html,
      audience: stored.audience });
  });

  it('previews the draft as its first contact on opening and after each save, and says when the form has changed since', async () => {
    await addContact('dee', { email: 'dee@example.com', name: 'Dee Lane', tags: ['letters'] });
    await addContact('nameless', { email: 'nameless@example.com', tags: ['letters'] });
    const lettersTag = ((await t.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>).find((x) => x.name === 'letters')!.id;
    const created = await t.api.post('/v1/broadcasts', { name: 'Letters', from: `News <hello@${DOMAIN}>`,
      subject: 'Hi {{ contact.first_name }}, our news', html: '<p id="greeting">Hi {{ contact.first_name }}, this is our news.</p>',
      audience: { tag_ids: [lettersTag] } });
    const id = created.body.id as string;
    const frame = page.frameLocator('.broadcast-preview iframe');
    const stale = page.locator('.stale-note');
    const warning = page.locator('.empty-fields');

    // Opened, it shows the saved draft as the audience's first contact, without a press of Preview.
    await page.goto(`${t.url}/dashboard/#/broadcasts/${id}`);
    await textShows(frame, '#greeting', /^Hi Dee, this is our news\.$/);
    await textShows(page, '.preview-subject', /^Subject: Hi Dee, our news$/);
    expect(await page.getByLabel('As', { exact: true }).locator('option:checked').textContent()).toBe('Dee Lane <dee@example.com>');
    expect(await stale.isHidden()).toBe(true);
    expect(await warning.count()).toBe(0);
    // Read at a desktop's width: the message is laid out at the frame's own width, not shrunk into it.
    expect(await page.locator('.broadcast-preview iframe').evaluate((el) => (el as unknown as { style: { transform: string } }).style.transform)).toBe('');
    expect((await page.locator('.broadcast-preview .preview').boundingBox())!.width).toBeGreaterThanOrEqual(640);

    // Changed and not saved: the preview says it is out of date, and goes back to current when the change is undone.
    const subject = page.getByLabel('Subject');
    await subject.fill('Hello {{ contact.first_name }}, our news');
    await textShows(page, '.stale-note', 'Out of date: the draft has changed since this preview. Preview again saves and re-renders.');
    expect(await page.locator('.preview-subject').textContent()).toBe('Subject: Hi Dee, our news');
    await desktopAndPhoneShots(page, 'preview-stale', '.preview-panel');
    await subject.fill('Hi {{ contact.first_name }}, our news');
    await stale.waitFor({ state: 'hidden' });

    // Saved, it renders again by itself.
    await subject.fill('Hello {{ contact.first_name }}, our news');
    await stale.waitFor();
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await noteSays(page, 'Saved.');
    await textShows(page, '.preview-subject', /^Subject: Hello Dee, our news$/);
    await stale.waitFor({ state: 'hidden' });

    // Preview saves what changed, then renders it.
    await page.getByLabel('HTML').fill('<p id="greeting">Hello {{ contact.first_name }}, this is our news.</p>');
    await stale.waitFor();
    await page.getByRole('button', { name: 'Preview', exact: true }).click();
    await textShows(frame, '#greeting', /^Hello Dee, this is our news\.$/);
    await stale.waitFor({ state: 'hidden' });
    expect((await t.api.get(`/v1/broadcasts/${id}`)).body.html).toBe('<p id="greeting">Hello {{ contact.first_name }}, this is our news.</p>');

    // As a contact without a first name: "Hello ," and a warning that says how to give the field a fallback.
    await page.getByLabel('As', { exact: true }).selectOption({ label: 'nameless@example.com' });
    await textShows(frame, '#greeting', /^Hello , this is our news\.$/);
    await textShows(page, '.empty-fields', 'This contact has no first_name: it renders empty. Add a fallback: {{ contact.first_name | default: "there" }}');
    expect(await warning.locator('li').count()).toBe(1);
    await desktopAndPhoneShots(page, 'preview-empty-field', '.preview-panel');

    // Given a fallback, changed and then previewed by choosing the contact again: saved first, and no warning.
    await subject.fill('Hello {{ contact.first_name | default: "there" }}, our news');
    await page.getByLabel('HTML').fill('<p id="greeting">Hello {{ contact.first_name | default: "there" }}, this is our news.</p>');
    await page.getByLabel('As', { exact: true }).selectOption({ label: 'Dee Lane <dee@example.com>' });
    await textShows(page, '.preview-subject', /^Subject: Hello Dee, our news$/);
    expect((await t.api.get(`/v1/broadcasts/${id}`)).body.subject).toBe('Hello {{ contact.first_name | default: "there" }}, our news');
    await page.getByLabel('As', { exact: true }).selectOption({ label: 'nameless@example.com' });
    await textShows(frame, '#greeting', /^Hello there, this is our news\.$/);
    expect(await warning.count()).toBe(0);
    expect(await stale.isHidden()).toBe(true);

    // The phone's width: the message laid out 375 pixels wide, unscaled.
    await page.getByRole('button', { name: 'Phone' }).click();
    expect(await page.getByRole('button', { name: 'Phone' }).getAttribute('aria-pressed')).toBe('true');
    await textShows(frame, '#greeting', /^Hello there, this is our news\.$/);
    expect(Math.round((await page.locator('.broadcast-preview .preview').boundingBox())!.width)).toBe(377);
    expect(await page.locator('.broadcast-preview iframe').evaluate((el) => (el as unknown as { style: { transform: string } }).style.transform)).toBe('');
    await desktopAndPhoneShots(page, 'preview-phone', '.preview-panel');
    await page.getByRole('button', { name: 'Desktop' }).click();
    await page.setViewportSize({ width: 1280, height: 800 });

    // In the list, the subject's Liquid reads as the field it writes, never as braces.
    await page.locator('nav').getByRole('link', { name: 'Broadcasts' }).click();
    const row = page.locator('tbody tr', { has: page.getByRole('link', { name: 'Letters', exact: true }) });
    await row.waitFor();
    const listed = row.locator('.name-and-subject > div');
    expect(await listed.textContent()).toBe('Hello first_name, our news');
    expect(await listed.locator('.liquid-field').getAttribute('title')).toBe('{{ contact.first_name | default: "there" }}');
    await desktopAndPhoneShots(page, 'list-subjects');
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('says before asking when no contact would get it, when a time has passed, and when a template needs what a broadcast cannot give', async () => {
    const created = await t.api.post('/v1/broadcasts', { name: 'Nobody', from: `News <hello@${DOMAIN}>`, subject: 'Hi', text: 'Hello',
      audience: { engagement_tiers: ['cold'] } });
    await page.goto(`${t.url}/dashboard/#/broadcasts/${created.body.id}`);
    await textShows(page, '.audience-count', /^0 contacts$/);
    await page.getByRole('button', { name: 'Send now…' }).click();
    await textShows(page, '.composer-side [role="alert"]', /^No contact is in the audience now, so sending would make no email/);
    expect(await page.getByRole('dialog').count()).toBe(0);

    // A time the API would refuse is refused beside the field, before the question and without a request.
    const timeError = page.locator('.field-error[data-field="scheduled_at"] [role="alert"]');
    const requests: string[] = [];
    const heard = (r: Request) => { if (r.method() !== 'GET') requests.push(`${r.method()} ${r.url()}`); };
    page.on('request', heard);
    await page.getByLabel('At a time').check();
    await page.getByText(/^In your time zone \(.+\); at most 30 days ahead\.$/).waitFor();
    await page.getByLabel('Date and time').fill('2020-01-01T09:00');
    await page.getByRole('button', { name: 'Schedule…' }).click();
    await timeError.filter({ hasText: /has passed: pick a time ahead, or send now\.$/ }).waitFor();
    expect(await page.getByRole('dialog').count()).toBe(0);

    // The picker itself offers no time past 30 days from now, nor one gone by.
    const bounds = await page.evaluate(() => {
      const pad = (n: number) => String(n).padStart(2, '0');
      const local = (at: Date) => `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}T${pad(at.getHours())}:${pad(at.getMinutes())}`;
      const now = Date.now();
      return { min: local(new Date(now)), max: local(new Date(now + 30 * 86_400_000)), tooFar: local(new Date(now + 31 * 86_400_000)) };
    });
    const picker = page.getByLabel('Date and time');
    // Set when "At a time" was chosen, within the minute before.
    for (const [attribute, expected] of [['min', bounds.min], ['max', bounds.max]]) {
      const early = Date.parse(expected) - Date.parse((await picker.getAttribute(attribute))!);
      expect(early, attribute).toBeGreaterThanOrEqual(0);
      expect(early, attribute).toBeLessThanOrEqual(60_000);
    }
    await picker.fill(bounds.tooFar);
    await page.getByRole('button', { name: 'Schedule…' }).click();
    await timeError.filter({ hasText: /^Pick a time within the next 30 days\.$/ }).waitFor();
    expect(await page.getByRole('dialog').count()).toBe(0);
    page.off('request', heard);
    expect(requests).toEqual([]);
    await shot('too-far', '.composer-side section:last-child');
    expect((await t.api.get(`/v1/broadcasts/${created.body.id}`)).body.status).toBe('draft');

    const template = await t.api.post('/v1/templates', { name: 'Plan letter', subject: 'Your plan', html: '<p>{{ plan }}</p>',
      variables: [{ key: 'plan', type: 'string', required: true }] });
    expect((await t.api.post(`/v1/templates/${template.body.id}/publish`, {})).status).toBe(200);
    await page.goto(`${t.url}/dashboard/#/broadcasts`);
    await page.goto(`${t.url}/dashboard/#/broadcasts/${created.body.id}`);
    await page.getByLabel('Use a template').check();
    await page.getByLabel('Template', { exact: true }).selectOption({ label: 'Plan letter' });
    await textShows(page, '.template-hint', 'Version 1 needs “plan”, which a broadcast cannot give');
    await shot('template-hint', '.template-hint');

    // Changed and not saved, the composer asks before it is left.
    await page.locator('nav').getByRole('link', { name: 'Broadcasts' }).click();
    expect(await answerDialog(page, 'Leave without saving')).toBe('Discard your changes to “Nobody”?\nYour changes are not saved and will be lost.');
    await page.getByRole('heading', { name: 'Broadcasts', level: 1 }).waitFor();
  });

  it('pauses, resumes and cancels a paced broadcast from its page, which keeps itself current', async () => {
    for (let i = 0; i < 6; i++) await addContact(`paced${i}`, { email: `paced${i}@example.com`, tags: ['paced'] });
    const pacedTag = ((await t.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>).find((x) => x.name === 'paced')!.id;
    const created = await t.api.post('/v1/broadcasts', {
      name: 'Paced', from: `News <hello@${DOMAIN}>`, subject: 'One a second', text: 'Slowly', audience: { tag_ids: [pacedTag] }, send_rate_per_minute: 60,
    });
    const id = created.body.id as string;
    await page.goto(`${t.url}/dashboard/#/broadcasts/${id}`);
    await page.getByRole('button', { name: 'Send now…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Send to 6 contacts' }).click();
    await textShows(page, '.title-row .badge', /^sending$/);
    // The count moves without a reload.
    const first = Number(/^(\d+) of 6$/.exec((await page.locator('.progress-count').textContent())!)![1]);
    expect(first).toBeLessThan(5);
    await textShows(page, '.progress-count', new RegExp(`^[${first + 1}-5] of 6$`));
    await shot('sending');

    await page.getByRole('button', { name: 'Pause' }).click();
    await textShows(page, '.title-row .badge', /^paused$/);
    await noteSays(page, 'Paused');
    await textShows(page, '.flash.warn', 'paused by request');
    expect((await t.api.get(`/v1/broadcasts/${id}`)).body.status).toBe('paused');
    const atPause = (await emailsOf(id)).length;

    await page.getByRole('button', { name: 'Resume' }).click();
    await textShows(page, '.title-row .badge', /^sending$/);
    await noteSays(page, 'Resumed');
    expect((await t.api.get(`/v1/broadcasts/${id}`)).body.status).toBe('sending');

    const cancel = page.locator('.title-row').getByRole('button', { name: 'Cancel' });
    // Declined, the question gives the focus back to the button, which it did not hold busy while asking.
    await cancel.click();
    await answerDialog(page, 'Go back');
    expect(await cancel.evaluate((el) => (el as unknown as { matches(s: string): boolean }).matches(':focus'))).toBe(true);
    await cancel.click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    expect(await dialog.textContent()).toMatch(/of 6 are made; no more will be/);
    await dialog.getByRole('button', { name: 'Cancel the broadcast' }).click();
    await textShows(page, '.title-row .badge', /^cancelled$/);
    await noteSays(page, 'The broadcast was cancelled');
    const cancelled = (await t.api.get(`/v1/broadcasts/${id}`)).body;
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.stats.emails_created).toBeGreaterThanOrEqual(atPause);
    expect(cancelled.stats.emails_created).toBeLessThan(6);
    // Nothing is left to pause, resume or cancel; it can still be duplicated.
    expect(await page.locator('.title-row').getByRole('button').allTextContents()).toEqual(['Duplicate']);
  });

  it('schedules at a time picked in the page, stays editable, and turns into its progress page when sending starts', async () => {
    const created = await t.api.post('/v1/broadcasts', { name: 'Later', from: `News <hello@${DOMAIN}>`, subject: 'Later', text: 'Soon' });
    const id = created.body.id as string;
    await page.goto(`${t.url}/dashboard/#/broadcasts/${id}`);
    await textShows(page, '.audience-count', /contacts$/);
    await page.getByLabel('At a time').check();
    // Three hours from now, as the page's datetime field takes it: local time, to the minute.
    const local = await page.evaluate(() => {
      const at = new Date(Date.now() + 3 * 3_600_000);
      at.setSeconds(0, 0);
      const pad = (n: number) => String(n).padStart(2, '0');
      return { value: `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}T${pad(at.getHours())}:${pad(at.getMinutes())}`, iso: at.toISOString() };
    });
    await page.getByLabel('Date and time').fill(local.value);
    await page.getByRole('button', { name: 'Schedule…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    expect(await dialog.textContent()).toMatch(/Send “Later” to \d+ contacts on /);
    await dialog.getByRole('button', { name: 'Schedule' }).click();
    await noteSays(page, 'Scheduled for');
    expect((await t.api.get(`/v1/broadcasts/${id}`)).body).toMatchObject({ status: 'scheduled', scheduled_at: local.iso });
    await textShows(page, '.title-row .badge', /^scheduled$/);
    await textShows(page, '.flash', 'It can still change');
    // When, as a clock and as a distance, in the zone it is shown in.
    expect(await page.locator('.flash', { hasText: 'It can still change' }).textContent()).toMatch(/^Scheduled for .+ \(in [23] hours; in your time zone, .+\)\. It can still change: /);
    // Cancelling is said in full beside the form, and the question says how to move it instead.
    await page.locator('.title-row').getByRole('button', { name: 'Cancel broadcast', exact: true }).click();
    expect(await answerDialog(page, 'Go back')).toContain('Cancelled, it can never be sent: to send it later instead, pick another time under “Send now or at another time”.');
    await page.getByLabel('Subject').fill('Later today');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await noteSays(page, 'Saved.');
    expect((await t.api.get(`/v1/broadcasts/${id}`)).body).toMatchObject({ status: 'scheduled', subject: 'Later today' });

    // Sent at once from elsewhere: the open page notices and shows the progress.
    expect((await t.api.post(`/v1/broadcasts/${id}/send`, {})).status).toBe(200);
    await textShows(page, '.title-row .badge', /^(sending|sent)$/);
    await textShows(page, '.progress-panel h2', 'Progress');
  });

  it('takes its content from a published template, previewed as a contact, and names it once sent', async () => {
    const template = await t.api.post('/v1/templates', { name: 'Digest', alias: 'digest', subject: 'Digest for {{ contact.first_name }}',
      html: '<p id="digest">Your digest, {{ contact.name }}.</p>' });
    expect((await t.api.post(`/v1/templates/${template.body.id}/publish`, {})).status).toBe(200);
    const created = await t.api.post('/v1/broadcasts', { name: 'Digest week', from: `News <hello@${DOMAIN}>`, audience: { tag_ids: [] } });
    await page.goto(`${t.url}/dashboard/#/broadcasts/${created.body.id}`);
    await textShows(page, '.audience-count', /contacts$/);
    await page.getByLabel('Use a template').check();
    expect(await page.locator('#broadcast-html').isVisible()).toBe(false);
    await page.getByLabel('Template', { exact: true }).selectOption({ label: 'Digest (digest)' });
    expect(await page.getByLabel('Version').locator('option:checked').textContent()).toBe('Published (now version 1)');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await noteSays(page, 'Saved.');
    expect((await t.api.get(`/v1/broadcasts/${created.body.id}`)).body).toMatchObject({
      template: { id: template.body.id, version: null }, html: null, text: null, subject: null });

    await page.getByLabel('As', { exact: true }).selectOption({ label: 'Cy Young <cy@example.com>' });
    await page.getByRole('button', { name: 'Preview', exact: true }).click();
    await textShows(page.frameLocator('.broadcast-preview iframe'), '#digest', /^Your digest, Cy Young\.$/);
    await textShows(page, '.preview-subject', /^Subject: Digest for Cy$/);

    // Sent, its page names the template and the version sending fixed, and leads to it.
    const newsTag = ((await t.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>).find((x) => x.name === 'news')!.id;
    expect((await t.api.patch(`/v1/broadcasts/${created.body.id}`, { audience: { tag_ids: [newsTag] } })).status).toBe(200);
    expect((await t.api.post(`/v1/broadcasts/${created.body.id}/send`, {})).status).toBe(200);
    await page.reload();
    const content = page.locator('dt:text-is("Content") + dd');
    await textShows(content, 'a', /^Digest$/);
    expect(await content.textContent()).toBe('template Digest, version 1');
    expect(await content.getByRole('link').getAttribute('href')).toBe(`#/templates/${template.body.id}`);
  });

  it('shows, beside the counts, the contacts that got no email and why, a page at a time', async () => {
    await addContact('fine', { email: 'fine@example.com', tags: ['coded'], properties: { code: 'spring%20sale' } });
    // A malformed percent-encoding: url_decode fails on each of these contacts' data.
    for (let i = 0; i < 11; i++) await addContact(`garbled${i}`, { email: `garbled${i}@example.com`, tags: ['coded'], properties: { code: `%G${i}` } });
    // A decoded BEL in the subject, and a domain whose ASCII form has a label over 63 characters: refused as emails.
    await addContact('bell', { email: 'bell@example.com', tags: ['coded'], properties: { code: 'spring%07sale' } });
    const idn = await addContact('idn', { email: 'idn@example.com', tags: ['coded'], properties: { code: 'x' } });
    // An address the contacts API no longer takes, as a contact saved before it checked addresses as sending does.
    await t.mailroom.services.store.write((tx) => tx.updateTable('contacts')
      .set({ email: 'info@bürgerbüro-der-verbandsgemeinde-südliche-weinstraße-landau.de' }).where('id', '=', idn.id).execute());
    const codedTag = ((await t.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>).find((x) => x.name === 'coded')!.id;
    const created = await t.api.post('/v1/broadcasts', {
      name: 'Codes', from: `News <hello@${DOMAIN}>`, subject: 'Your code: {{ contact.properties.code | url_decode }}', text: 'Code: {{ contact.properties.code | url_decode }}',
      audience: { tag_ids: [codedTag] },
    });
    expect((await t.api.post(`/v1/broadcasts/${created.body.id}/send`, {})).status).toBe(200);
    await page.goto(`${t.url}/dashboard/#/broadcasts/${created.body.id}`);
    await textShows(page, '.title-row .badge', /^sent$/);
    await textShows(page, '[data-stat="skipped"] .stat-value', /^13$/);
    // Through with all 14, the bar shows what became of the one email made.
    await textShows(page, '.progress-panel .outcome-count', /^1 of 1 delivered$/);
    await textShows(page, '.progress-panel p', /^1 email made and 13 contacts skipped for an audience of 14 contacts\.$/);
    const panel = page.locator('.skipped-panel');
    await textShows(panel, 'h2', 'Skipped: 13 contacts got no email');
    await textShows(panel, 'tbody tr', 'garbled10@example.com');
    expect(await panel.locator('tbody tr').count()).toBe(10);
    // Newest first: the chunk's refused emails were recorded after the messages that did not render.
    const row = (n: number) => panel.locator('tbody tr').nth(n).locator('td');
    expect(await row(0).nth(1).textContent()).toBe('Address refused');
    expect(await row(0).nth(2).textContent()).toMatch(/^No email can be sent to info@bürgerbüro-.*: its domain has no valid ASCII form/);
    expect(await row(1).nth(1).textContent()).toBe('Subject refused');
    expect(await row(1).nth(2).textContent()).toMatch(/^The subject rendered for this contact holds the control character U\+0007/);
    expect(await row(2).nth(1).textContent()).toBe('Did not render');
    expect(await row(2).nth(2).textContent()).toMatch(/^Rendering subject, line 1, column \d+ failed: .*URI malformed/);
    expect(await row(2).getByRole('link', { name: 'garbled10@example.com' }).getAttribute('href')).toBe(`#/contacts/${contacts.garbled10.id}`);
    // At a desktop's width and a phone's, with the first page and the button for more.
    if (SCREENSHOTS) {
      for (const width of [1440, 390]) {
        await page.setViewportSize({ width, height: 900 });
        await page.screenshot({ path: `${SCREENSHOTS}/skipped-${width}.png`, fullPage: true });
        await panel.screenshot({ path: `${SCREENSHOTS}/skipped-panel-${width}.png` });
      }
      await page.setViewportSize({ width: 1280, height: 800 });
    }
    await panel.getByRole('button', { name: 'Show more' }).click();
    await textShows(panel, 'tbody tr', 'garbled0@example.com');
    expect(await panel.locator('tbody tr').count()).toBe(13);
    expect(await panel.getByRole('button', { name: 'Show more' }).count()).toBe(0);
  });

  it('shows the API refusal beside the field it names', async () => {
    const created = await t.api.post('/v1/broadcasts', { name: 'Stranger', from: 'Someone <hi@unknown.test>', text: 'Hello' });
    await page.goto(`${t.url}/dashboard/#/broadcasts/${created.body.id}`);
    await textShows(page, '.audience-count', /contacts$/);
    // A sender whose domain is not active says, beside the field, what a send from it would do.
    const fromNote = page.locator('#broadcast-from-note');
    expect(await fromNote.textContent()).toBe('unknown.test is not a verified domain: a live key sends only from a verified domain, '
      + 'so sending this would be refused. Verify it under Domains first.');
    expect(await page.locator('#broadcast-from').getAttribute('aria-describedby')).toBe('broadcast-from-note');
    await desktopAndPhoneShots(page, 'from-unverified', '.composer');
    await page.setViewportSize({ width: 1280, height: 800 });
    // It follows the address as it is typed.
    await page.locator('#broadcast-from').fill(`Someone <hi@${DOMAIN.toUpperCase()}>`);
    await fromNote.waitFor({ state: 'hidden' });
    // The stored text is in its editor; an empty HTML editor shows nothing but its line number.
    expect(await page.locator('#broadcast-text .cm-content').textContent()).toBe('Hello');
    expect(await page.locator('#broadcast-html .cm-content').textContent()).toBe('');

    // Refused on save: the address cannot be parsed.
    await page.locator('#broadcast-from').fill('not an address');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await textShows(page, '.field-error[data-field="from"] [role="alert"]', "'from'");

    // Refused on send: a live key sends only from an active domain of its own.
    await page.locator('#broadcast-from').fill('Someone <hi@unknown.test>');
    await page.getByLabel('Subject').fill('Hello');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await noteSays(page, 'Saved.');
    await page.getByRole('button', { name: 'Send now…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: /^Send to \d+ contacts?$/ }).click();
    await textShows(page, '.field-error[data-field="from"] [role="alert"]', 'is not an active domain of this workspace');
    await textShows(page, '.composer-side .error-pointer', 'Not done: see the problem beside From.');
    await shot('error', '.title-row');
    expect((await t.api.get(`/v1/broadcasts/${created.body.id}`)).body.status).toBe('draft');

    // The list, and its filter by status.
    await page.locator('nav').getByRole('link', { name: 'Broadcasts' }).click();
    await textShows(page, 'tbody', 'November news');
    await shot('list');
    await page.getByLabel('Status').selectOption('cancelled');
    await textShows(page, 'tbody tr', 'Paced');
    expect(await page.locator('tbody tr').count()).toBe(1);
  });

  it('says to a test key that it may send from a domain not verified, its mail kept', async () => {
    const created = await t.api.post('/v1/broadcasts', { name: 'Trial', from: 'Someone <hi@unknown.test>', text: 'Hello' });
    const { token } = await t.seed.key({ name: 'trying it out', mode: 'test' });
    const tester = await signedInDashboard(browser, t.url, token, `/broadcasts/${created.body.id}`, 'Trial');
    try {
      await textShows(tester, '.audience-count', /contacts$/);
      expect(await tester.locator('#broadcast-from-note').textContent())
        .toBe('unknown.test is not a verified domain: this test key may send from it (its mail is kept here, never sent).');
    } finally {
      await tester.close();
    }
  });

  it('says nothing of the sender\'s domain to a key that may not list domains, as it cannot know', async () => {
    const created = await t.api.post('/v1/broadcasts', { name: 'Unlisted', from: 'Someone <hi@unknown.test>', text: 'Hello' });
    const { token } = await t.seed.key({ name: 'broadcasts only', scopes: ['broadcasts:read', 'broadcasts:write'] });
    const limited = await signedInDashboard(browser, t.url, token, `/broadcasts/${created.body.id}`, 'Unlisted');
    try {
      await textShows(limited, '.audience-count', /contacts$/);
      expect(await limited.locator('#broadcast-from-note').isHidden()).toBe(true);
      expect(await limited.locator('#broadcast-from').getAttribute('aria-describedby')).toBeNull();
    } finally {
      await limited.close();
    }
  });

  it('keeps Send off until the saved draft has a sender, a subject and content, and says what is missing', async () => {
    await page.goto(`${t.url}/dashboard/#/broadcasts/new`);
    await page.getByLabel('Name').fill('Empty draft');
    await page.getByRole('button', { name: 'Create draft' }).click();
    await noteSays(page, 'The draft “Empty draft” was created');
    await textShows(page, '.audience-count', /contacts$/);
    const send = page.getByRole('button', { name: 'Send now…' });
    const why = page.locator('#send-blocked');
    expect(await send.isDisabled()).toBe(true);
    expect(await why.textContent()).toBe('Add a From address, a subject and content before sending.');
    // Nothing to render yet: the preview says what it needs rather than failing.
    await textShows(page, '.broadcast-preview', /^Nothing to preview yet: write a subject and content, or choose a template, and save\.$/);
    // The note describes the button to a screen reader.
    expect(await send.getAttribute('aria-describedby')).toBe('send-blocked');
    await shot('send-blocked', '.composer-side section:last-child');

    // It follows the form: what is still to add, then, all there but not saved, to save.
    await page.getByLabel('Subject').fill('Hello');
    await textShows(page, '#send-blocked', /^Add a From address and content before sending\.$/);
    await page.getByLabel('Pick an active domain').selectOption(DOMAIN);
    await page.getByLabel('Text', { exact: true }).fill('Hello there');
    await textShows(page, '#send-blocked', /^Save to send: the saved draft has no From address, subject or content yet\.$/);
    expect(await send.isDisabled()).toBe(true);
    await page.getByLabel('At a time').check();
    expect(await page.getByRole('button', { name: 'Schedule…' }).isDisabled()).toBe(true);

    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await noteSays(page, 'Saved.');
    expect(await page.getByRole('button', { name: 'Schedule…' }).isEnabled()).toBe(true);
    expect(await why.isHidden()).toBe(true);
    // Emptied again, the subject turns it off once saved.
    await page.getByLabel('Subject').fill('');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await noteSays(page, 'Saved.');
    expect(await page.getByRole('button', { name: 'Schedule…' }).isDisabled()).toBe(true);
    expect(await why.textContent()).toBe('Add a subject before sending.');
  });

  it('shows bounces and complaints in red, not as a finished green bar, on the broadcast\'s page and in the list', async () => {
    for (const local of ['bounce1', 'bounce2', 'bounce3', 'fine1', 'fine2', 'slow1']) {
      await addContact(local, { email: `${local}@example.com`, tags: ['risky'] });
    }
    const riskyTag = ((await t.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>).find((x) => x.name === 'risky')!.id;
    const created = await t.api.post('/v1/broadcasts', {
      name: 'Old list', from: `News <hello@${DOMAIN}>`, subject: 'Still there?', text: 'Hello', audience: { tag_ids: [riskyTag] },
    });
    const id = created.body.id as string;
    expect((await t.api.post(`/v1/broadcasts/${id}/send`, {})).status).toBe(200);
    await page.goto(`${t.url}/dashboard/#/broadcasts/${id}`);
    await textShows(page, '.title-row .badge', /^sent$/);
    // The page keeps itself current while the outcomes come in: three bounce, two arrive, one waits for its retry.
    const panel = page.locator('.progress-panel');
    await textShows(panel, '[data-outcome="bounced"]', /^Bounced 3$/);
    await textShows(panel, '[data-outcome="delivered"]', /^Delivered 2$/);
    await textShows(panel, '[data-outcome="in-flight"]', /^In flight 1$/);
    expect(await panel.locator('.outcome-count').textContent()).toBe('2 of 6 delivered');
    // No bar of contacts done, green when full: the outcome bar, split, with the bounces in the danger colour.
    expect(await panel.locator('.progress-fill').count()).toBe(0);
    const parts = await panel.locator('.outcome-part').evaluateAll((els) => els.map((el) => {
      const { getComputedStyle } = globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } };
      return [el.getAttribute('class'), (el as unknown as { style: { width: string } }).style.width, getComputedStyle(el).backgroundColor];
    }));
    expect(parts).toEqual([
      ['outcome-part outcome-delivered', '33.3%', 'rgb(23, 128, 61)'],
      ['outcome-part outcome-bounced', '50%', 'rgb(179, 38, 30)'],
      ['outcome-part outcome-in-flight', '16.7%', expect.any(String)],
    ]);
    expect(await panel.locator('.outcome-track').getAttribute('aria-label')).toBe('Of 6 emails: 2 delivered, 3 bounced, 1 in flight');
    expect(await panel.locator('.outcome-alert').textContent()).toBe('3 of 6 emails bounced. See which →');
    expect(await panel.getByRole('link', { name: 'See which →' }).getAttribute('href'))
      .toBe(`#/emails?broadcast_id=${encodeURIComponent(id)}&outcome=bounced`);
    expect(await page.locator('[data-stat="bounced"]').getAttribute('class')).toBe('stat alarming');
    expect(await page.locator('[data-stat="complained"]').getAttribute('class')).toBe('stat');

    // A recipient who got it reports it as spam, as a feedback loop's report says: the page counts it, in red too.
    const { store, suppressions } = t.mailroom.services;
    const reported = await store.db.selectFrom('emails as e').innerJoin('email_recipients as r', 'r.email_id', 'e.id')
      .select(['e.id as emailId', 'r.id as recipientId', 'r.address']).where('e.broadcast_id', '=', id).where('r.address', '=', 'fine1@example.com')
      .executeTakeFirstOrThrow();
    await store.write((tx) => recordRecipientOutcomes(tx, suppressions, [{ emailId: reported.emailId,
      outcomes: [{ kind: 'complained', recipientId: reported.recipientId, address: reported.address, feedbackType: 'abuse' }] }], Date.now()));
    await textShows(page, '[data-stat="complained"].alarming .stat-value', /^1$/);
    expect(await page.locator('[data-stat="complained"] .stat-value').evaluate((el) =>
      (globalThis as unknown as { getComputedStyle(e: unknown): { color: string } }).getComputedStyle(el).color)).toBe('rgb(179, 38, 30)');
    await desktopAndPhoneShots(page, 'bounced', '.progress-panel');

    // The list: Bounced and Complained columns, red where there are any; the bar's count of deliveries stays plain.
    await page.goto(`${t.url}/dashboard/#/broadcasts`);
    const row = page.locator('tbody tr', { has: page.getByRole('link', { name: 'Old list', exact: true }) });
    await row.waitFor();
    const headers = await page.locator('thead th').allTextContents();
    const colourOf = (el: unknown) => (globalThis as unknown as { getComputedStyle(e: unknown): { color: string } }).getComputedStyle(el).color;
    const bounced = row.locator('td').nth(headers.indexOf('Bounced'));
    expect(await bounced.innerText()).toBe('3');
    expect(await bounced.locator('.alarming-count').first().evaluate(colourOf)).toBe('rgb(179, 38, 30)');
    const complained = row.locator('td').nth(headers.indexOf('Complained'));
    expect(await complained.textContent()).toBe('1');
    expect(await complained.locator('.alarming-count').evaluate(colourOf)).toBe('rgb(179, 38, 30)');
    expect(await row.locator('.outcome-count').textContent()).toMatch(/^\d of 6 delivered$/);
    expect(await row.locator('.outcome-count').evaluate(colourOf)).not.toBe('rgb(179, 38, 30)');
    const clean = page.locator('tbody tr', { has: page.getByRole('link', { name: 'November news', exact: true }) });
    expect(await clean.locator('td').nth(headers.indexOf('Bounced')).textContent()).toBe('0');
    expect(await clean.locator('td').nth(headers.indexOf('Complained')).textContent()).toBe('0');
    expect(await clean.locator('.alarming-count').count()).toBe(0);
    // A draft has made no email yet: a dash for each count, as for its progress, not a zero.
    const draft = page.locator('tbody tr', { has: page.getByRole('link', { name: 'Empty draft', exact: true }) });
    const counts = ['Delivered', 'Bounced', 'Complained', 'Opened', 'Clicked'].map((header) => draft.locator('td').nth(headers.indexOf(header)));
    expect(await Promise.all(counts.map((cell) => cell.textContent()))).toEqual(['—', '—', '—', '—', '—']);
    expect(await draft.locator('td').nth(headers.indexOf('Progress')).textContent()).toBe('—');
    // A tablet leaves the Complained column out; the Bounced cell says the complaints instead, in red too.
    await page.setViewportSize({ width: 800, height: 1000 });
    expect(await page.locator('thead th', { hasText: 'Complained' }).isVisible()).toBe(false);
    expect(await bounced.innerText()).toBe('3\n1 complaint');
    expect(await bounced.locator('.folded-complaints').evaluate(colourOf)).toBe('rgb(179, 38, 30)');
    expect(await clean.locator('td').nth(headers.indexOf('Bounced')).innerText()).toBe('0');
    if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/list-bounced-800.png`, fullPage: true });
    // On a phone, a card with the count labelled.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await bounced.isVisible()).toBe(true);
    expect(await bounced.getAttribute('data-label')).toBe('Bounced');
    // A draft's card leaves out the figures it has none of yet, and keeps its audience and when it was made.
    expect(await Promise.all(counts.map((cell) => cell.isVisible()))).toEqual([false, false, false, false, false]);
    expect(await draft.locator('td').nth(headers.indexOf('Progress')).isVisible()).toBe(false);
    expect(await draft.locator('td').nth(headers.indexOf('Audience')).isVisible()).toBe(true);
    expect(await draft.locator('td').nth(headers.indexOf('When')).isVisible()).toBe(true);
    await page.setViewportSize({ width: 1280, height: 800 });
    await desktopAndPhoneShots(page, 'list-bounced');
    await page.setViewportSize({ width: 1280, height: 800 });
  });
});
