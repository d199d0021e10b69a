import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startDns, type TestDns } from '../helpers/dns.js';
import { launchChromium, openView, signedInDashboard } from '../helpers/browser.js';
import { eventually, inboundDomain, sendRaw, startSmtpTestApp, type SmtpTestApp } from '../helpers/smtp-app.js';

// What became of sent mail, as the dashboard shows it in Chromium: a
// complaint and a partial bounce told apart from plain delivery, in the list
// (and found by its outcome filter) and on the email's page; replies linked
// both ways; each event's email named by its subject; and a broadcast's
// emails linked to their broadcast by its name.

const SCREENSHOTS = process.env.MAILROOM_SCREENSHOTS;
const DOMAIN = 'shop.test';
const BROADCAST_NAME = 'November news';

describe('the outcomes and links of sent mail in Chromium', () => {
  let dns: TestDns;
  let t: SmtpTestApp;
  let browser: Browser;
  let page: Page;
  const ids: Record<string, string> = {};
  let replyId: string;
  let broadcastId: string;

  /** Sends from the shop; the sink's simulated outcomes go by the recipient's local part. */
  const send = async (name: string, to: string[], subject: string) => {
    const res = await t.api.post('/v1/emails', { from: `Shop <orders@${DOMAIN}>`, to, subject, text: 'Shipped.' });
    expect(res.status).toBe(201);
    ids[name] = res.body.id;
    return res.body as { id: string; message_id: string };
  };

  beforeAll(async () => {
    dns = await startDns([]);
    t = await startSmtpTestApp({ env: { MAILROOM_DNS_SERVERS: dns.server } });
    await inboundDomain(t, DOMAIN);
    await send('partly', ['delivered@mailroom.test', 'bounced@mailroom.test'], 'Order 1 shipped');
    await send('complained', ['complained@mailroom.test'], 'Order 2 shipped');
    await send('bounced', ['bounced@mailroom.test'], 'Order 3 shipped');
    await send('delayed', ['delayed@mailroom.test'], 'Order 4 shipped');
    const answered = await send('answered', ['Kim <kim@customer.test>'], 'Your order');

    expect((await t.api.post('/v1/contacts', { email: 'ann@example.com', name: 'Ann Lee' })).status).toBe(201);
    const broadcast = await t.api.post('/v1/broadcasts', { name: BROADCAST_NAME, from: `News <news@${DOMAIN}>`, subject: 'News', text: 'Hi' });
    expect(broadcast.status).toBe(201);
    broadcastId = broadcast.body.id;
    expect((await t.api.post(`/v1/broadcasts/${broadcastId}/send`, {})).status).toBe(200);
    ids.broadcast = await eventually(async () => (await t.api.get(`/v1/emails?broadcast_id=${broadcastId}`)).body.data[0]?.id as string | undefined,
      15_000, 'the broadcast\'s email');
    await t.mailroom.delivery.drain();

    // Kim answers, threaded to the email by In-Reply-To.
    const raw = await new MailComposer({ from: 'Kim <kim@customer.test>', to: `orders@${DOMAIN}`, subject: 'Re: Your order', text: 'Thanks!',
      inReplyTo: answered.message_id }).compile().build();
    await sendRaw(t.mxPort, { from: 'kim@customer.test', to: [`orders@${DOMAIN}`] }, raw);
    replyId = await eventually(async () => {
      const [latest] = (await t.api.get('/v1/inbound?limit=1')).body.data;
      return latest?.in_reply_to_email_id === answered.id ? latest.id as string : undefined;
    }, 10_000, 'the reply to be processed');

    browser = await launchChromium();
    page = await signedInDashboard(browser, t.url, t.token, '/emails', 'Emails');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await dns?.stop();
  });

  /** The whole page, or what a phone shows at first (`fullPage` false). */
  const shot = async (name: string, fullPage = true) => {
    if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/${name}.png`, fullPage });
  };
  const open = (route: string, heading: string) => openView(page, t.url, route, heading);
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
    // Failed because its recipient bounced: said so, the status kept in the title.
    expect(await statusOf('Order 3 shipped').textContent()).toBe('bounced');
    expect(await statusOf('Order 3 shipped').locator('.badge').getAttribute('title')).toBe('failed: 1 recipient bounced');
    expect(await statusOf('Your order').textContent()).toBe('delivered');
    // As a mail client lists mail: the sender by its name, the recipient by its address; each whole in its title.
    const answered = page.locator('main tbody tr', { hasText: 'Your order' });
    expect(await answered.locator('td[data-label="From"]').textContent()).toBe('Shop');
    expect(await answered.locator('td[data-label="From"] .clip').getAttribute('title')).toBe(`Shop <orders@${DOMAIN}>`);
    expect(await answered.locator('td[data-label="To"]').textContent()).toBe('kim@customer.test');
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

    // First on the page, the recipient it did not reach, and the reply that refused it.
    const note = page.locator('main h1 + p + [role="note"]');
    expect(await page.locator('main h1 + p').getByRole('link').textContent()).toBe('← All emails');
    expect(await note.locator('p').textContent()).toBe('Not delivered to 1 of 2 recipients');
    expect(await note.locator('li').allTextContents()).toEqual([expect.stringMatching(/^bounced@mailroom\.test bounced: 550 5\.1\.1 /)]);

    await open(`/emails/${ids.bounced}`, 'Order 3 shipped');
    expect(await note.locator('p').textContent()).toBe('Not delivered');
    await open(`/emails/${ids.delayed}`, 'Order 4 shipped');
    expect(await note.locator('p').textContent()).toBe('Delayed for 1 recipient · tried again later, on the retry schedule');
    expect(await note.locator('li').allTextContents()).toEqual([expect.stringMatching(/^delayed@mailroom\.test deferred: 451 4\.7\.1 /)]);
    await shot('email-delayed');

    // Fields the email does not have are left out.
    expect(await detail('Cc').count()).toBe(0);
    expect(await detail('Scheduled for').count()).toBe(0);

    await open(`/emails/${ids.complained}`, 'Order 2 shipped');
    expect(await note.count()).toBe(0);
    expect(await detail('Status').textContent()).toBe('complained 1 recipient reported it as spam');
    // The recipient stays delivered; the timeline, once read, says it complained.
    await expect.poll(() => recipients.locator('td.cell-status').allTextContents()).toEqual(['delivered complained']);
    await shot('email-complained');
  });

  it('links a reply both ways: the email lists it and its timeline says who replied, the reply names the email it answers', async () => {
    await open(`/emails/${ids.answered}`, 'Your order');
    const replies = page.locator('main h2:text-is("Replies") + div');
    await expect.poll(() => replies.locator('tbody td.cell-primary').allTextContents()).toEqual(['Re: Your order']);
    const replied = page.locator('main tbody tr', { hasText: 'email.replied' });
    expect(await replied.locator('td[data-label="Detail"]').textContent()).toBe('from Kim <kim@customer.test> · “Re: Your order”');
    expect(await replied.getByRole('link', { name: '“Re: Your order”' }).getAttribute('href')).toBe(`#/inbound/${replyId}`);
    await shot('email-with-reply');

    await replies.getByRole('link', { name: 'Re: Your order' }).click();
    await page.getByRole('heading', { name: 'Re: Your order', level: 1 }).waitFor();
    // Named by the email's subject once it is read.
    await expect.poll(() => detail('In reply to').textContent()).toBe('Your order');
    await shot('inbound-reply');
    await detail('In reply to').getByRole('link').click();
    await page.getByRole('heading', { name: 'Your order', level: 1 }).waitFor();
    expect(new URL(page.url()).hash).toBe(`#/emails/${ids.answered}`);
  });

  it('names the email of each event by the subject its data carries, the id kept in the link', async () => {
    await open('/events?event_type=replied', 'Events');
    const cell = page.locator('main tbody td[data-label="Email"]').first();
    await expect.poll(() => cell.locator('.clip').textContent()).toBe('Your order');
    expect(await cell.locator('code').textContent()).toBe(ids.answered);
    expect(await cell.getByRole('link').getAttribute('href')).toBe(`#/emails/${ids.answered}`);
    expect(await page.locator('main tbody td[data-label="Detail"]').first().textContent()).toBe('from Kim <kim@customer.test> · “Re: Your order”');

    await open('/events', 'Events');
    await page.locator('main tbody tr').first().waitFor();
    await shot('events-with-subjects');
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await shot('events-with-subjects-phone', false);
    } finally {
      await page.setViewportSize({ width: 1440, height: 900 });
    }
    // A received message is named by its subject too, and linked to its own page.
    await open('/events?event_type=received', 'Events');
    await expect.poll(() => page.locator('main tbody td[data-label="Email"] .clip').first().textContent()).toBe('Re: Your order');
    expect(await page.locator('main tbody td[data-label="Email"] a').first().getAttribute('href')).toBe(`#/inbound/${replyId}`);
  });

  it('links a broadcast\'s email to its broadcast, and names the broadcast over its emails', async () => {
    await open(`/emails/${ids.broadcast}`, 'News');
    await expect.poll(() => detail('Broadcast').textContent()).toBe(BROADCAST_NAME);
    expect(await detail('Broadcast').getByRole('link').getAttribute('href')).toBe(`#/broadcasts/${broadcastId}`);
    await shot('email-of-broadcast');
    // An email of no broadcast has no such line.
    await open(`/emails/${ids.partly}`, 'Order 1 shipped');
    expect(await detail('Broadcast').count()).toBe(0);

    await open(`/emails?broadcast_id=${broadcastId}`, 'Emails');
    await expect.poll(() => page.locator('main .filter-note').textContent()).toBe(`The emails of the broadcast ${BROADCAST_NAME} · all emails`);
    expect(await page.locator('main .filter-note').getByRole('link', { name: BROADCAST_NAME }).getAttribute('href')).toBe(`#/broadcasts/${broadcastId}`);
    expect(await subjectsShown()).toEqual(['News']);
    await shot('emails-of-broadcast');
  });
});
