import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { newId } from '../../src/core/ids.js';
import { insertInbound } from '../../src/inbound/inbound.repo.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { desktopAndPhoneShots, launchChromium, openDrawnView, overflowWidth, signedInDashboard, twoDigitHourZone } from '../helpers/browser.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { eventually } from '../helpers/smtp-app.js';

// How the dashboard lays out long, real-world values in Chromium: lists keep a
// row to one line and the whole value in a title, no view runs off a 390-pixel
// phone screen, and an empty list says what to do about it.

const run = promisify(execFile);

const LONG_DOMAIN = 'newsletters.acme-international-holdings.test';
const LONG_SUBJECT = 'Your order #A-10293 has shipped and is on its way to you — track it with the link inside the email';
const LONG_TO = 'alexandria.konstantinopoulou-vanderberg@subdomain.very-long-customer-domain-example.mailroom.test';
const LONG_SUPPRESSED = 'an.exceptionally.long.suppressed.address.that.keeps.going@some-very-long-domain-name.example.org';
const LONG_HOOK = 'http://127.0.0.1:9/hooks/mailroom/events/with/a/rather/long/path?token=abcdef0123456789';
const LONG_BROADCAST = 'Spring collection preview for returning wholesale customers in Scandinavia';
/** 60 characters, without a hyphen to break at. */
const LONG_RECIPIENT = 'christopher.vanderhoeven@accountspayable.worldlogistics.test';
/** Recipients of one email and the last replies of their providers, as long as those come. */
const PROVIDER_REPLIES = [
  { address: LONG_RECIPIENT, status: 'bounced', code: 550, detail: '550-5.1.1 The email account that you tried to reach does not exist. Please try '
    + 'double-checking the recipient\'s email address for typos or unnecessary spaces. For more information, go to '
    + 'https://support.google.com/mail/?p=NoSuchUser a640c23a62f3a-aa5f1e5a1c2si1234567b.112 - gsmtp' },
  { address: 'ops@northwind.test', status: 'delivered', code: 250, detail: '250 2.6.0 <0102018f2c9d@billing.test> [InternalId=21822880161341, '
    + 'Hostname=AM9PR01MB7284.eurprd01.prod.exchangelabs.com] 48213 bytes in 0.204, 230.553 KB/sec Queued mail for delivery' },
  { address: 'finance-archive@globex.test', status: 'deferred', code: 451, detail: '451 4.7.650 The mail server [203.0.113.25] has been temporarily '
    + 'rate limited due to IP reputation. For e-mail delivery information, see https://aka.ms/postmaster (S775) '
    + '[BN1NAM02FT040.eop-nam02.prod.protection.outlook.com 2026-11-28T07:58:12.345Z 08DD0F1A2B3C4D5E]' },
  { address: 'audit@initech.test', status: 'bounced', code: 554, detail: '554 5.7.9 Message not accepted for policy reasons. '
    + 'See https://senders.yahooinc.com/error-codes' },
] as const;
const SCREENSHOTS = process.env.MAILROOM_SCREENSHOTS;

/** A message as a large provider delivers it: folded signatures, a tracking URL with no place to break. */
const receivedMessage = (to: string) => Buffer.from([
  `Received: from mail-ej1-f41.google.com (mail-ej1-f41.google.com [209.85.218.41]) by mx.mailroom.test with ESMTPS id 4XzQ2s1Hb0z9sWc for <${to}>; Sat, 28 Nov 2026 07:41:09 +0000`,
  'DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=sender.test; s=20230601; t=1732779669; x=1733384469; h=to:subject:message-id:date:from:mime-version;',
  ` bh=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=; b=${randomBytes(256).toString('base64').replace(/.{70}/g, '$&\r\n  ')}`,
  `X-Google-Smtp-Source: AGHT+${randomBytes(90).toString('base64')}`,
  `List-Unsubscribe: <https://click.mail.sender.test/ls/unsubscribe/${randomBytes(120).toString('hex')}?utm_source=newsletter&utm_medium=email>`,
  'From: Konstantina Papadopoulou-Richardson <konstantina@sender.test>',
  `To: ${to}`,
  'Subject: Re: Invoice INV-2026-00481 — remittance advice and the updated bank details for the fourth quarter',
  `Message-ID: <CAF=${randomBytes(30).toString('base64url')}@mail.gmail.com>`,
  'Date: Sat, 28 Nov 2026 07:41:08 +0000',
  'MIME-Version: 1.0',
  'Content-Type: text/plain; charset=utf-8',
  '',
  'Payment went out this morning.',
  '',
].join('\r\n'));

describe('the dashboard\'s layout in Chromium', () => {
  let t: TestApp;
  let dns: TestDns;
  let browser: Browser;
  let page: Page;
  let emptyKey: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    // Answers only what a test publishes: a received message's checks and a domain's verification stay on this machine.
    dns = await startDns();
    t = await startTestApp({ env: { MAILROOM_WEBHOOK_ALLOW_PRIVATE: 'true', MAILROOM_DNS_SERVERS: dns.server } });
    const domain = await t.seed.activeDomain(LONG_DOMAIN);
    ids.domain = domain.id;
    const sent = await t.api.post('/v1/emails', {
      from: `Billing department <billing-department-noreply@${LONG_DOMAIN}>`, to: [LONG_TO, 'second.recipient@mailroom.test'],
      subject: LONG_SUBJECT, html: '<p>Shipped.</p>', text: 'Shipped.',
    });
    expect(sent.status).toBe(201);
    ids.email = sent.body.id;
    const later = await t.api.post('/v1/emails', { from: `Billing <billing@${LONG_DOMAIN}>`, to: [LONG_TO], subject: 'Reminder: your trial ends soon', text: 'Soon.',
      scheduled_at: 'in 2 days' });
    expect(later.status).toBe(201);
    ids.scheduled = later.body.id;
    // The domain's page with every optional record, and a DKIM key waiting for its record.
    expect((await t.api.patch(`/v1/domains/${domain.id}`, { open_tracking: true, inbound_enabled: true })).status).toBe(200);
    expect((await t.api.post(`/v1/domains/${domain.id}/dkim/rotate`)).status).toBe(200);
    // More than a page of them (25), for the pager; the long one newest, on the first.
    for (let i = 0; i < 25; i++) expect((await t.api.post('/v1/suppressions', { email: `gone${i}@example.org` })).status).toBe(201);
    expect((await t.api.post('/v1/suppressions', { email: LONG_SUPPRESSED })).status).toBe(201);
    const hook = await t.api.post('/v1/webhooks', { url: LONG_HOOK, event_types: ['email.delivered'] });
    expect(hook.status).toBe(201);
    ids.webhook = hook.body.id;
    const template = await t.api.post('/v1/templates', { name: 'Receipt', alias: 'order-receipt', subject: 'Receipt for {{ first_name }}', html: '<p>Hi {{ first_name }}</p>',
      variables: [{ key: 'first_name', type: 'string', required: true }] });
    expect(template.status).toBe(201);
    ids.template = template.body.id;
    for (let i = 0; i < 3; i++) expect((await t.api.post('/v1/contacts', { email: `reader${i}@example.com`, tags: ['news'] })).status).toBe(201);
    const reader = await t.api.post('/v1/contacts', { email: LONG_TO, name: 'Alexandria Konstantinopoulou-Vanderberg',
      tags: ['news', 'customers-in-the-european-economic-area', 'vip'], properties: { company: 'Acme International Holdings', note: LONG_SUBJECT } });
    expect(reader.status).toBe(201);
    ids.contact = reader.body.id;
    const from = `News <news@${LONG_DOMAIN}>`;
    const draft = await t.api.post('/v1/broadcasts', { name: 'November update', from, subject: 'November', text: 'News' });
    ids.draft = draft.body.id;
    ids.longDraft = (await t.api.post('/v1/broadcasts', { name: LONG_BROADCAST, from, subject: 'Spring', text: 'News' })).body.id;
    const done = await t.api.post('/v1/broadcasts', { name: 'October update', from, subject: 'October', text: 'News' });
    ids.sent = done.body.id;
    expect((await t.api.post(`/v1/broadcasts/${ids.sent}/send`, {})).status).toBe(200);
    await t.mailroom.delivery.drain();
    ids.key = (await t.api.get('/v1/api-keys')).body.data.find((k: { name: string }) => k.name === 'harness').id;
    // Several recipients, their providers' replies recorded as delivery would record them.
    const [to, cc, bcc] = [PROVIDER_REPLIES.slice(0, 2), PROVIDER_REPLIES.slice(2, 3), PROVIDER_REPLIES.slice(3)].map((list) => list.map((r) => r.address));
    const replied = await t.api.post('/v1/emails', { from: `Billing <billing@${LONG_DOMAIN}>`, to, cc, bcc, subject: 'Invoice INV-2026-00481', text: 'Attached.' });
    expect(replied.status).toBe(201);
    ids.replies = replied.body.id;
    await t.mailroom.delivery.drain();
    await t.mailroom.services.store.write(async (tx) => {
      for (const r of PROVIDER_REPLIES) {
        await tx.updateTable('email_recipients').set({ status: r.status, smtp_code: r.code, detail: r.detail })
          .where('email_id', '=', ids.replies).where('address', '=', r.address).execute();
      }
    });
    // A message received for the domain, processed as the MX listener's would be.
    ids.inbound = newId('in', Date.now());
    await t.mailroom.services.store.write((tx) => insertInbound(tx, [{
      id: ids.inbound, workspaceId: t.workspaceId, domainId: domain.id, kind: 'message', mailFrom: 'konstantina@sender.test',
      rcptTo: [`accounts-receivable@${LONG_DOMAIN}`], remoteIp: '209.85.218.41', helo: 'mail-ej1-f41.google.com', tls: true, receivedAt: Date.now(),
      raw: receivedMessage(`accounts-receivable@${LONG_DOMAIN}`),
    }]));
    await eventually(async () => ((await t.api.get(`/v1/inbound/${ids.inbound}`)).body.status === 'processed' ? true : undefined), 10_000,
      'the received message to be processed');
    // The signing key's record published with another key: the check says what DNS holds, a whole 2048-bit key.
    const dkim = (await t.api.get(`/v1/domains/${domain.id}`)).body.records.find((r: { record: string; key_state?: string }) =>
      r.record === 'DKIM' && r.key_state !== 'pending');
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    await dns.add({ type: 'TXT', name: dkim.name, value: `v=DKIM1; k=rsa; p=${other}` });
    expect((await t.api.post(`/v1/domains/${domain.id}/verify`)).status).toBe(200);
    const empty = await t.seed.workspace({ name: 'nothing yet' });
    ids.emptyWorkspace = empty.id;
    emptyKey = (await t.seed.key({ workspaceId: empty.id, name: 'empty' })).token;

    browser = await launchChromium();
    page = await signedInDashboard(browser, t.url, t.token, '/emails', 'Emails', { timezoneId: twoDigitHourZone() });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await dns?.stop();
  });

  const open = (route: string) => openDrawnView(page, t.url, route);


  it('keeps a long subject and address to one line in the list, each whole in its title', async () => {
    await open('/emails');
    const subject = page.getByRole('link', { name: LONG_SUBJECT, exact: true });
    expect(await subject.getAttribute('title')).toBe(LONG_SUBJECT);
    // Cut, not wrapped: the link is one line high and its text runs past its box.
    const cut = await subject.evaluate((el) => {
      const box = el as unknown as { scrollWidth: number; clientWidth: number; getBoundingClientRect(): { height: number } };
      return { cut: box.scrollWidth > box.clientWidth, height: box.getBoundingClientRect().height };
    });
    expect(cut.cut).toBe(true);
    expect(cut.height).toBeLessThan(30);
    const to = page.locator('tbody').locator(`[title="${LONG_TO}, second.recipient@mailroom.test"]`);
    expect(await to.textContent()).toBe(`${LONG_TO}, second.recipient@mailroom.test`);

    await open('/suppressions');
    expect(await page.locator(`tbody [title="${LONG_SUPPRESSED}"]`).textContent()).toBe(LONG_SUPPRESSED);
    await open('/webhooks');
    expect(await page.getByRole('link', { name: LONG_HOOK }).getAttribute('title')).toBe(LONG_HOOK);
  });

  it('offers paging only where there is another page', async () => {
    await open('/suppressions');
    await page.getByRole('button', { name: 'Older' }).click();
    // The first page stays on screen until the older one replaces it.
    await expect.poll(() => page.getByRole('button', { name: 'Older' }).isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Newer' }).isEnabled()).toBe(true);
    await open('/webhooks');
    await page.locator('tbody tr').first().waitFor();
    expect(await page.locator('.pager').count()).toBe(0);
  });

  it('names the email\'s domain, and keeps an event type whole on its line', async () => {
    await open(`/emails/${ids.email}`);
    const domain = page.locator('dl.details').getByRole('link', { name: LONG_DOMAIN, exact: true });
    await domain.waitFor();
    expect(await domain.getAttribute('title')).toBe(ids.domain);
    const type = page.locator('td', { hasText: /^email\.queued$/ }).first();
    await type.waitFor();
    expect(await type.evaluate((el) => (el as unknown as { getBoundingClientRect(): { height: number } }).getBoundingClientRect().height)).toBeLessThan(45);
  });

  it('spaces a row\'s buttons apart and keeps the variables\' headers apart', async () => {
    await open(`/templates/${ids.template}`);
    const open_ = page.locator('.row-actions').getByRole('button', { name: 'Open' });
    const publish = page.locator('.row-actions').getByRole('button', { name: 'Publish' });
    await publish.waitFor();
    const [a, b] = [await open_.boundingBox(), await publish.boundingBox()];
    expect(b!.x - (a!.x + a!.width)).toBeGreaterThanOrEqual(4);
    const required = page.locator('.variables th', { hasText: 'Required' });
    expect(await required.evaluate((el) => {
      const box = el as unknown as { scrollWidth: number; clientWidth: number };
      return box.scrollWidth <= box.clientWidth;
    })).toBe(true);
  });

  it('offers the way back to the list beside a record that cannot be read', async () => {
    for (const [route, list] of [['/emails/em_doesnotexist', 'All emails'], ['/webhooks/wh_doesnotexist', 'All endpoints'],
      ['/contacts/ct_doesnotexist', 'All contacts'], ['/api-keys/key_doesnotexist', 'All API keys']]) {
      await open(route);
      await page.getByRole('alert').waitFor();
      await page.getByRole('link', { name: `← ${list}` }).click();
      await page.locator('main table, main p.empty').first().waitFor();
    }
  });

  it('previews a saved template at once, a required variable shown by its name, and asks for a new one\'s sample value', async () => {
    await open(`/templates/${ids.template}`);
    const preview = page.locator('.template-preview');
    await page.frameLocator('.template-preview iframe').getByText('Hi first_name').waitFor();
    expect(await page.locator('.variable-row').first().getByLabel('Sample value').inputValue()).toBe('first_name');
    await page.locator('.variable-row').first().getByLabel('Sample value').fill('Ada');
    await page.frameLocator('.template-preview iframe').getByText('Hi Ada').waitFor();
    // A required variable added now has no sample: said as what to do, instead of the API's refusal.
    await page.getByRole('button', { name: 'Add variable' }).click();
    await page.getByLabel('Name of variable 2', { exact: true }).fill('plan');
    await page.getByLabel('variable plan is required', { exact: true }).check();
    await preview.locator('p.empty').filter({ hasText: 'Give “plan” a sample value under Variables to see the preview.' }).waitFor();
    expect(await preview.getByRole('alert').count()).toBe(0);
    // Nothing left unsaved to hold up the next view.
    await page.getByRole('button', { name: 'Remove variable plan' }).click();
  });

  it('leaves the address field room beside a long domain in the broadcast\'s From', async () => {
    await open(`/broadcasts/${ids.draft}`);
    const from = page.locator('#broadcast-from');
    await from.waitFor();
    const [input, picker] = [await from.boundingBox(), await page.locator('#broadcast-from-domain').boundingBox()];
    expect(input!.width).toBeGreaterThan(picker!.width);
  });

  it('keeps the audience sample of a broadcast within its panel, a long address cut and whole in its title', async () => {
    await open(`/broadcasts/${ids.draft}`);
    const address = page.locator('.audience-sample tbody .clip', { hasText: LONG_TO });
    await address.waitFor();
    expect(await address.getAttribute('title')).toBe(LONG_TO);
    expect(await sidewaysLists()).toBe(0);
  });

  it('gives a DKIM key the room of the row, its record\'s name wrapping above it', async () => {
    await open(`/domains/${ids.domain}`);
    const dkim = page.locator('tbody tr', { hasText: 'DKIM' }).first();
    await dkim.waitFor();
    // The name over the value, both in the column the short ones leave: most of the row.
    const [row, entry] = [await dkim.boundingBox(), await dkim.locator('td.dns-entry-cell').boundingBox()];
    expect(entry!.width).toBeGreaterThan(row!.width / 2);
  });

  /** How many times in the view's lists take more than a line. */
  const wrappedTimes = () => page.locator('tbody time').evaluateAll((els) =>
    els.filter((el) => (el as unknown as { getBoundingClientRect(): { height: number } }).getBoundingClientRect().height > 30).length);

  /** How many of the view's lists are wider than their box, to be scrolled sideways (an editor's grid may be). */
  const sidewaysLists = () => page.locator('.table-wrap').evaluateAll((els) =>
    els.filter((el) => { const box = el as unknown as { scrollWidth: number; clientWidth: number }; return box.scrollWidth > box.clientWidth; }).length);

  /** The emails list's row of the long subject: its subject's box, its time's, and the row's display. */
  const longEmailRow = async () => {
    const link = page.getByRole('link', { name: LONG_SUBJECT, exact: true });
    const row = page.locator('tbody tr', { has: link });
    await link.waitFor();
    const display = await row.evaluate((el) =>
      (globalThis as unknown as { getComputedStyle(e: unknown): { display: string } }).getComputedStyle(el).display);
    return { row, subject: (await link.boundingBox())!, created: (await row.locator('time').boundingBox())!, display };
  };

  it('keeps every section of the navigation on one line of a 1280-pixel window', async () => {
    await page.setViewportSize({ width: 1280, height: 800 });
    await open('/contacts');
    const links = await page.getByRole('navigation', { name: 'Main' }).getByRole('link').evaluateAll((els) =>
      els.map((el) => (el as unknown as { getBoundingClientRect(): { top: number } }).getBoundingClientRect().top));
    expect(links).toHaveLength(12);
    expect(new Set(links).size).toBe(1);
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it('keeps a list a table on a wide screen, its subject beside the time it was created', async () => {
    await open('/emails');
    const row = await longEmailRow();
    expect(row.display).toBe('table-row');
    expect(await page.locator('thead th', { hasText: 'Subject' }).isVisible()).toBe(true);
    expect(Math.abs(row.subject.y - row.created.y)).toBeLessThan(8);
    expect(row.subject.x).toBeGreaterThan(row.created.x);
  });

  it('shows a list as cards on a phone, the subject first and whole on the screen, the other values beneath', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await open('/emails');
    const row = await longEmailRow();
    expect(row.display).toBe('flex');
    expect(row.subject.x).toBeGreaterThanOrEqual(0);
    expect(row.subject.x + row.subject.width).toBeLessThanOrEqual(390);
    expect(row.created.y).toBeGreaterThan(row.subject.y);
    // The first email's subject too, on the screen without scrolling either way.
    const first = (await page.locator('tbody tr').first().locator('td.cell-primary a').boundingBox())!;
    expect(first.x).toBeGreaterThanOrEqual(0);
    expect(first.x + first.width).toBeLessThanOrEqual(390);
    expect(first.y + first.height).toBeLessThanOrEqual(844);
    // The header row is for screen readers; each value is named on its card, the status beside the subject.
    expect((await page.locator('thead').boundingBox())!.height).toBeLessThanOrEqual(1);
    expect(await row.row.locator('td.cell-primary').getAttribute('data-label')).toBe('Subject');
    const status = (await row.row.locator('td.cell-status .badge').boundingBox())!;
    expect(Math.abs(status.y + status.height / 2 - (row.subject.y + row.subject.height / 2))).toBeLessThan(8);
    expect(await sidewaysLists()).toBe(0);
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it('runs off no side of a 390-pixel screen, on any view, and keeps each time in a list on one line', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    const routes = ['/emails', `/emails/${ids.email}`, '/domains', `/domains/${ids.domain}`, '/events', '/analytics', '/queue',
      '/inbound', '/templates', `/templates/${ids.template}`, '/templates/new', '/broadcasts', '/broadcasts/new', `/broadcasts/${ids.draft}`,
      `/broadcasts/${ids.sent}`, '/contacts', `/contacts/${ids.contact}`, '/contacts/tags', '/contacts/import', '/suppressions', '/webhooks',
      `/webhooks/${ids.webhook}`, '/api-keys', `/api-keys/${ids.key}`, `/emails/${ids.scheduled}`];
    const wide: string[] = [];
    for (const route of routes) {
      await open(route);
      const by = await overflowWidth(page);
      if (by > 0) wide.push(`${route} by ${by}px`);
      const wrapped = await wrappedTimes();
      if (wrapped > 0) wide.push(`${route}: ${wrapped} times wrapped`);
      const scrolled = await sidewaysLists();
      if (scrolled > 0) wide.push(`${route}: ${scrolled} lists scroll sideways`);
    }
    expect(wide).toEqual([]);
    // An SMTP reply keeps a readable measure in a squeezed table, not a word to a line.
    await open(`/emails/${ids.email}`);
    await page.locator('summary', { hasText: 'Recipients' }).click();
    const reply = page.locator('td.prose', { hasText: 'kept by the Mailroom sink' }).first();
    expect((await reply.boundingBox())!.width).toBeGreaterThanOrEqual(250);
    // A template's card keeps each value to a line: "version 1" and its alias are not broken.
    await open('/templates');
    expect(await page.locator('tbody tr').count()).toBe(1);
    const cells = await page.locator('tbody td').evaluateAll((els) =>
      els.map((el) => (el as unknown as { getBoundingClientRect(): { height: number } }).getBoundingClientRect().height));
    expect(cells.filter((height) => height > 30)).toEqual([]);
  });

  it('puts the sections on their own line below the brand and sign-out on a phone', async () => {
    const brand = await page.locator('.brand').boundingBox();
    const signOut = await page.getByRole('button', { name: 'Sign out' }).boundingBox();
    const nav = await page.getByRole('navigation', { name: 'Main' }).boundingBox();
    expect(Math.abs(brand!.y + brand!.height / 2 - (signOut!.y + signOut!.height / 2))).toBeLessThan(4);
    expect(nav!.y).toBeGreaterThanOrEqual(signOut!.y + signOut!.height);
    expect(nav!.x).toBeLessThanOrEqual(brand!.x);
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it('wraps a long name in a heading between its words on a phone, breaking only a word wider than the screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    /** The pieces of the heading's text set on more than one line: words, and the parts of a name after each hyphen. */
    const split = () => page.locator('main h1').first().evaluate((h1) => {
      const doc = (globalThis as unknown as { document: { createRange(): DomRange } }).document;
      interface DomRange { setStart(node: unknown, at: number): void; setEnd(node: unknown, at: number): void;
        getClientRects(): ArrayLike<{ top: number }> }
      const text = (h1 as unknown as { firstChild: { textContent: string } }).firstChild;
      const broken: string[] = [];
      for (const piece of text.textContent.matchAll(/[^\s-]+-?/g)) {
        const range = doc.createRange();
        range.setStart(text, piece.index);
        range.setEnd(text, piece.index + piece[0].length);
        if (new Set(Array.from(range.getClientRects(), (r) => Math.round(r.top))).size > 1) broken.push(piece[0]);
      }
      return broken;
    });
    const lines = async () => Math.round((await page.locator('main h1').first().boundingBox())!.height / 36);
    await open(`/broadcasts/${ids.longDraft}`);
    expect(await lines()).toBeGreaterThan(1);
    expect(await split()).toEqual([]);
    await open(`/domains/${ids.domain}`);
    expect(await lines()).toBeGreaterThan(1);
    expect(await split()).toEqual([]);
    // One word wider than the screen: broken, within it.
    await open(`/webhooks/${ids.webhook}`);
    expect(await split()).toEqual([LONG_HOOK.split('-')[0]]);
    expect(await overflowWidth(page)).toBe(0);
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it('fits each list to an 800-pixel tablet screen, leaving out its minor columns there only', async () => {
    await page.setViewportSize({ width: 800, height: 1000 });
    const wide: string[] = [];
    for (const route of ['/emails', '/events', '/contacts', '/suppressions', '/domains', '/webhooks', '/broadcasts', '/templates',
      '/queue', '/api-keys', `/webhooks/${ids.webhook}`]) {
      await open(route);
      const by = await overflowWidth(page);
      if (by > 0) wide.push(`${route} by ${by}px`);
      const scrolled = await sidewaysLists();
      if (scrolled > 0) wide.push(`${route}: ${scrolled} lists scroll sideways`);
    }
    expect(wide).toEqual([]);
    await open('/emails');
    const from = page.locator('thead th', { hasText: 'From' });
    expect(await from.isVisible()).toBe(false);
    // A phone's card names the sender again, and so does a wide screen's table.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.locator('tbody td[data-label="From"]').first().waitFor({ state: 'visible' });
    await page.setViewportSize({ width: 1440, height: 900 });
    expect(await from.isVisible()).toBe(true);
  });

  /** The box of the text of `cell` (which may run past the cell's own box), and of its row's status badge. */
  const textAndBadge = (cell: Locator) => cell.evaluate((el) => {
    interface Rect { left: number; right: number; top: number; bottom: number }
    const doc = (globalThis as unknown as { document: { createRange(): { selectNodeContents(n: unknown): void; getBoundingClientRect(): Rect } } }).document;
    const range = doc.createRange();
    range.selectNodeContents(el);
    const row = (el as unknown as { closest(s: string): { querySelector(s: string): { getBoundingClientRect(): Rect } } }).closest('tr');
    const { left, right, top, bottom } = range.getBoundingClientRect();
    const badge = row.querySelector('td.cell-status .badge').getBoundingClientRect();
    return { text: { left, right, top, bottom }, badge: { left: badge.left, right: badge.right, top: badge.top, bottom: badge.bottom } };
  });

  /** The long address's cell in the email's recipients (its events name it too). */
  const recipientCell = () => page.locator('.table-wrap').first().locator('tbody td', { hasText: LONG_RECIPIENT });

  it('fits an email\'s page to a tablet: its recipients\' addresses whole, their providers\' replies at a readable measure', async () => {
    await page.setViewportSize({ width: 800, height: 1000 });
    for (const id of [ids.email, ids.replies]) {
      await open(`/emails/${id}`);
      expect({ id, by: await overflowWidth(page), lists: await sidewaysLists() }).toEqual({ id, by: 0, lists: 0 });
    }
    const address = recipientCell();
    expect(await address.textContent()).toBe(LONG_RECIPIENT);
    const { text } = await textAndBadge(address);
    const cell = (await address.boundingBox())!;
    expect(text.right).toBeLessThanOrEqual(cell.x + cell.width);
    const reply = page.locator('td.prose', { hasText: 'rate limited due to IP reputation' });
    expect((await reply.boundingBox())!.width).toBeGreaterThanOrEqual(170);
    if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/email-recipients-800.png`, fullPage: true });
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it('keeps a long recipient\'s address beside its status on a phone, wrapped, not under the badge', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await open(`/emails/${ids.replies}`);
    await page.locator('summary', { hasText: 'Recipients' }).click();
    const address = recipientCell();
    const { text, badge } = await textAndBadge(address);
    expect(text.right).toBeLessThanOrEqual(badge.left);
    expect(text.left).toBeGreaterThanOrEqual(0);
    // Wrapped rather than cut: the address is read whole.
    expect(text.bottom - text.top).toBeGreaterThan(30);
    expect(await overflowWidth(page)).toBe(0);
    if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/email-recipients-390.png`, fullPage: true });
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it('fits a domain\'s DNS records to a tablet, each value on one line with a button that copies it whole', async () => {
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.url });
    const domain = (await t.api.get(`/v1/domains/${ids.domain}`)).body as { records: Array<{ record: string; name: string; value: string;
      status: string; detail?: string; key_state?: string }> };
    const signing = domain.records.find((r) => r.record === 'DKIM' && r.key_state !== 'pending')!;
    expect(signing.value).toMatch(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{392}$/);
    expect(signing).toMatchObject({ status: 'failed', detail: expect.stringContaining('different public key') });
    for (const width of [800, 1440, 390]) {
      await page.setViewportSize({ width, height: 1000 });
      await open(`/domains/${ids.domain}`);
      expect({ width, by: await overflowWidth(page), lists: await sidewaysLists() }).toEqual({ width, by: 0, lists: 0 });
      const row = page.locator('tbody tr', { has: page.locator('.copy-text', { hasText: signing.value }) });
      const value = row.locator('.dns-entry .copy-field.cut .copy-text');
      expect(await value.getAttribute('title')).toBe(signing.value);
      expect((await value.boundingBox())!.height).toBeLessThan(30);
      // The name is read whole, wrapped where it must be.
      const name = row.locator('.dns-entry .copy-field:not(.cut) .copy-text');
      expect(await name.textContent()).toBe(signing.name);
      expect(await name.evaluate((el) => { const box = el as unknown as { scrollWidth: number; clientWidth: number }; return box.scrollWidth <= box.clientWidth; }))
        .toBe(true);
      // Wrapped only after a dot (or a hyphen), never inside a label: the characters that end its lines.
      type Range = { setStart(node: unknown, at: number): void; setEnd(node: unknown, at: number): void; getClientRects(): ArrayLike<{ top: number }> };
      const lineEnds = await name.evaluate((el) => {
        const doc = (globalThis as unknown as { document: { createRange(): Range } }).document;
        const texts = Array.from((el as unknown as { childNodes: ArrayLike<{ nodeType: number; data: string }> }).childNodes).filter((n) => n.nodeType === 3);
        const chars = texts.flatMap((node) => Array.from(node.data, (char, at) => {
          const range = doc.createRange();
          range.setStart(node, at);
          range.setEnd(node, at + 1);
          return { char, top: Math.round(range.getClientRects()[0].top) };
        }));
        return chars.filter((c, i) => i + 1 < chars.length && chars[i + 1].top > c.top).map((c) => c.char).join('');
      });
      expect(lineEnds).toMatch(width === 390 ? /^[.-]+$/ : /^[.-]*$/);
      // What DNS holds instead is quoted, three lines of it.
      expect((await row.locator('td.cell-status .clamped').boundingBox())!.height).toBeLessThan(70);
      if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/domain-${width}.png`, fullPage: true });
    }
    const row = page.locator('tbody tr', { has: page.locator('.copy-text', { hasText: signing.value }) });
    await row.getByRole('button', { name: 'Copy the value of the DKIM record' }).click();
    await row.getByRole('button', { name: 'Copy the value of the DKIM record' }).filter({ hasText: 'Copied' }).waitFor();
    expect(await page.evaluate(() => (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }).navigator.clipboard.readText()))
      .toBe(signing.value);
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it('fits each record\'s page to a phone, a tablet, a laptop and a wide screen', async () => {
    const records: Record<string, string> = {
      email: `/emails/${ids.email}`, 'email-replies': `/emails/${ids.replies}`, 'email-scheduled': `/emails/${ids.scheduled}`,
      domain: `/domains/${ids.domain}`, inbound: `/inbound/${ids.inbound}`, contact: `/contacts/${ids.contact}`,
      'broadcast-draft': `/broadcasts/${ids.draft}`, 'broadcast-sent': `/broadcasts/${ids.sent}`, template: `/templates/${ids.template}`,
      webhook: `/webhooks/${ids.webhook}`, 'api-key': `/api-keys/${ids.key}`,
    };
    const wide: string[] = [];
    for (const width of [390, 800, 1280, 1440]) {
      await page.setViewportSize({ width, height: 900 });
      for (const [name, route] of Object.entries(records)) {
        await open(route);
        // Every header of the received message, a signature's and a tracking URL among them.
        if (name === 'inbound') {
          await page.getByText('All headers').click();
          // A raw UTF-8 field (RFC 6532) reads as it was written.
          expect(await page.locator('details.headers').textContent()).toContain('INV-2026-00481 — remittance advice');
        }
        const by = await overflowWidth(page);
        if (by > 0) wide.push(`${name} at ${width} by ${by}px`);
        const scrolled = await sidewaysLists();
        if (scrolled > 0) wide.push(`${name} at ${width}: ${scrolled} lists scroll sideways`);
        if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/record-${name}-${width}.png`, fullPage: true });
      }
    }
    expect(wide).toEqual([]);
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it('says in the domains list which records each domain still needs, and that all are found for one whose DNS is done', async () => {
    const ready = await t.api.post('/v1/domains', { name: 'mail.ready.test' });
    expect(ready.status).toBe(201);
    try {
      const records = ready.body.records as Array<{ record: string; name: string; value: string }>;
      const find = (kind: string) => records.find((r) => r.record === kind)!;
      await dns.add(
        { type: 'TXT', name: find('DKIM').name, value: find('DKIM').value },
        { type: 'TXT', name: find('SPF').name, value: find('SPF').value },
        { type: 'MX', name: find('MX_BOUNCE').name, exchange: find('MX_BOUNCE').value, priority: 10 },
      );
      expect((await t.api.post(`/v1/domains/${ready.body.id}/verify`)).body.status).toBe('active');
      await open('/domains');
      const dnsCell = (name: string) => page.locator('main tbody tr').filter({ hasText: name }).locator('td[data-label="DNS records"]');
      expect(await dnsCell('mail.ready.test').textContent()).toBe('All 3 needed foundOptional, not found: DKIM (Ed25519), DMARC');
      // The long domain's signing key is published with another key, and nothing else of it is.
      expect(await dnsCell(LONG_DOMAIN).locator('.records-missing').textContent()).toBe('Needs DKIM, SPF, Return-path MX (0 of 3 found)');
      expect(await dnsCell(LONG_DOMAIN).textContent()).toContain('new DKIM');
      await desktopAndPhoneShots(page, 'domains');
      await page.setViewportSize({ width: 390, height: 844 });
      expect(await overflowWidth(page)).toBe(0);
    } finally {
      await page.setViewportSize({ width: 1440, height: 900 });
      await t.api.delete(`/v1/domains/${ready.body.id}`);
    }
  });

  it('says in each empty list what to do about it', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    // The same page signed in again, with a key of a workspace that has nothing yet.
    await page.goto(`${t.url}/dashboard/#/emails`);
    await page.getByLabel('API key').fill(emptyKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Emails', level: 1 }).waitFor();
    const expected: Array<[string, RegExp]> = [
      ['/emails', /No emails yet\. Send one through the API \(POST \/v1\/emails\)/],
      ['/domains', /No domains yet\. Add the domain you send from below/],
      ['/events', /No events yet\. They are recorded as emails are sent/],
      ['/inbound', /No inbound mail yet\. Mail is received for a domain with inbound mail on/],
      ['/templates', /No templates yet\. Press New template to write one/],
      ['/webhooks', /No endpoints yet\. Add one below/],
      ['/suppressions', /No suppressed addresses\. An address is added when it bounces hard/],
      ['/contacts', /No contacts yet\. Add one below, or import a CSV file of them\./],
      ['/contacts/tags', /No tags yet\. Create one below/],
    ];
    for (const [route, text] of expected) {
      await open(route);
      expect(await page.locator('p.empty').textContent()).toMatch(text);
    }
    await open('/emails');
    await page.locator('p.empty').getByRole('link', { name: 'domain' }).click();
    await page.getByRole('heading', { name: 'Domains', level: 1 }).waitFor();
    // A broadcast's audience without tags to choose leads to the page that makes them.
    const draft = await t.api.as(emptyKey).post('/v1/broadcasts', { name: 'First news' });
    await open(`/broadcasts/${draft.body.id}`);
    await page.getByRole('group', { name: 'Contacts with any of these tags' }).getByRole('link', { name: 'tag contacts' }).click();
    await page.getByRole('heading', { name: 'Tags', level: 1 }).waitFor();

    // The empty list of emails gives the command that sends a first one: run in a shell with a test key, it does.
    await open('/emails');
    const command = await page.locator('p.empty pre.copy-block').textContent();
    expect(command).toContain(`curl ${t.url}/v1/emails`);
    await desktopAndPhoneShots(page, 'emails-empty');
    expect(await overflowWidth(page)).toBe(0);
    const testKey = (await t.seed.key({ workspaceId: ids.emptyWorkspace, name: 'first steps', mode: 'test' })).token;
    // Not spawnSync: the server answering it runs in this process.
    const sent = await run('bash', ['-c', command!], { env: { ...process.env, MAILROOM_API_KEY: testKey }, encoding: 'utf8', timeout: 10_000 });
    const email = JSON.parse(sent.stdout) as { id: string };
    expect((await t.api.as(testKey).get(`/v1/emails/${email.id}`)).body).toMatchObject({ subject: 'Hello from Mailroom', to: ['delivered@mailroom.test'] });
    await page.reload();
    await page.getByRole('link', { name: 'Hello from Mailroom' }).waitFor();
  });

  it('shows the command that makes a key on one line of its own, on a phone', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.setViewportSize({ width: 390, height: 844 });
    const command = page.locator('.signin code', { hasText: 'npx mailroom keys create --name dashboard' });
    expect((await command.boundingBox())!.height).toBeLessThan(25);
    expect(await page.locator('.signin').textContent()).toContain('Add --test for a key whose email is kept here for you to read and never sent');
    await desktopAndPhoneShots(page, 'sign-in');
    expect(await overflowWidth(page)).toBe(0);
  });
});
