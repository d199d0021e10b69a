import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simpleParser } from 'mailparser';
import type { Browser, FrameLocator, Page } from 'playwright-core';
import { launchChromium, signedInDashboard } from '../helpers/browser.js';
import { eventually, inboundDomain, sendRaw, startSmtpTestApp, type SmtpTestApp } from '../helpers/smtp-app.js';

// Mailroom's own open pixel and tracked links inside messages the dashboard
// shows: an email sent quoting them, and a reply received quoting them.
// Viewing either, and clicking a link in its preview, counts no open and no
// click; the same pixel and link fetched by a mail client still count.

const SCREENSHOTS = process.env.MAILROOM_SCREENSHOTS;
const BROWSER = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15';
/** A 1x1 GIF carried in the message itself: the one kind of image a preview loads. */
const INLINE_GIF = 'data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7';

/** A message quoting a tracked one: its pixel as an image, a background and a stylesheet, its link as a link and a frame. */
const quoting = (pixel: string, link: string) => `<!DOCTYPE html>
<html><head><link rel="stylesheet" href="${pixel}"></head>
<body><p id="styled" style="color: rgb(204, 51, 51); background: url(${pixel})">Thanks, it came.</p>
<blockquote><p><a href="${link}">See it</a></p><img src="${pixel}" width="1" height="1" alt=""><iframe src="${link}"></iframe></blockquote>
<img id="inline" src="${INLINE_GIF}" width="8" height="8" alt="inline"></body></html>`;

describe('message previews in the dashboard', () => {
  let t: SmtpTestApp;
  let browser: Browser;
  let page: Page;
  let tracked: string;
  let pixel: string;
  let link: string;

  const counted = async (type: 'opened' | 'clicked') =>
    (await t.api.get(`/v1/events?email_id=${tracked}&event_type=${type}`)).body.data as Array<{ data: Record<string, unknown> }>;

  beforeAll(async () => {
    t = await startSmtpTestApp();
    const domain = await t.seed.activeDomain('track.test');
    expect((await t.api.patch(`/v1/domains/${domain.id}`, { open_tracking: true, click_tracking: true })).status).toBe(200);
    await inboundDomain(t, 'in.track.test');
    await t.seed.activeDomain('plain.test');
    tracked = (await t.api.post('/v1/emails', {
      from: 'Shop <shop@track.test>', to: 'reader@example.net', subject: 'Your order', html: '<p><a href="https://shop.example/p">See it</a></p>',
    })).body.id;
    await t.mailroom.delivery.drain();
    const built = await t.mailroom.services.store.db.selectFrom('sink_messages').select('raw').where('email_id', '=', tracked).executeTakeFirstOrThrow();
    const html = String((await simpleParser(built.raw)).html);
    pixel = /<img src="([^"]+\/t\/o\/[^"]+)"/.exec(html)![1];
    link = /href="([^"]+\/t\/c\/[^"]+)"/.exec(html)![1];
    // The server's own origin: the one the dashboard's page may load from.
    expect(new URL(pixel).origin).toBe(t.url);
    browser = await launchChromium();
    page = await signedInDashboard(browser, t.url, t.token, '/emails', 'Emails');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** The preview once it has loaded all it was going to: its images, stylesheets and frames have been asked for by then. */
  async function loadedPreview(): Promise<FrameLocator> {
    const frame = page.frameLocator('iframe[title="HTML preview"]');
    await frame.getByText('Thanks, it came.').waitFor();
    await expect.poll(() => frame.locator('html').evaluate(() => (globalThis as unknown as { document: { readyState: string } }).document.readyState)).toBe('complete');
    return frame;
  }

  /** Clicks the tracked link in the preview, and waits until the frame has gone wherever the click took it. */
  async function clickLinkIn(frame: FrameLocator): Promise<void> {
    const navigated = page.waitForEvent('framenavigated', (f) => f !== page.mainFrame());
    await frame.getByRole('link', { name: 'See it' }).click();
    await navigated;
  }

  async function expectShownAsWritten(frame: FrameLocator): Promise<void> {
    // Inline styles and images the message carries show; the doctype still sets the rendering mode.
    expect(await frame.locator('#styled').evaluate((el) =>
      (globalThis as unknown as { getComputedStyle(e: unknown): { color: string } }).getComputedStyle(el).color)).toBe('rgb(204, 51, 51)');
    expect(await frame.locator('#inline').evaluate((el) => (el as unknown as { naturalWidth: number }).naturalWidth)).toBe(1);
    expect(await frame.locator('html').evaluate(() => (globalThis as unknown as { document: { compatMode: string } }).document.compatMode)).toBe('CSS1Compat');
  }

  it('counts no open or click when a sent email that quotes the pixel and link is viewed, nor when its link is clicked', async () => {
    const quoted = await t.api.post('/v1/emails', {
      from: 'desk@plain.test', to: 'boss@example.net', subject: 'Fwd: Your order', html: quoting(pixel, link),
    });
    expect(quoted.status).toBe(201);
    await page.goto(`${t.url}/dashboard/#/emails/${quoted.body.id}`);
    await page.getByRole('heading', { name: 'Fwd: Your order', level: 1 }).waitFor();
    const frame = await loadedPreview();
    await expectShownAsWritten(frame);
    if (SCREENSHOTS) await page.locator('.preview').screenshot({ path: `${SCREENSHOTS}/preview-sent-quoting-pixel.png` });
    expect(await counted('opened')).toEqual([]);
    await clickLinkIn(frame);
    expect(await counted('clicked')).toEqual([]);
    expect(await counted('opened')).toEqual([]);
  });

  it('counts no open or click when a received reply that quotes them is viewed', async () => {
    const raw = ['From: Reader <reader@example.net>', 'To: desk@in.track.test', 'Subject: Re: Your order', 'MIME-Version: 1.0',
      'Content-Type: text/html; charset=utf-8', '', quoting(pixel, link), ''].join('\r\n');
    const reply = await sendRaw(t.mxPort, { from: 'reader@example.net', to: ['desk@in.track.test'] }, raw);
    const id = /queued as (in_\w+)/.exec(reply)![1];
    await eventually(async () => ((await t.api.get(`/v1/inbound/${id}`)).body.html ? true : undefined), 10_000, 'the reply processed');
    await page.goto(`${t.url}/dashboard/#/inbound/${id}`);
    await page.getByRole('heading', { name: 'Re: Your order', level: 1 }).waitFor();
    const frame = await loadedPreview();
    await expectShownAsWritten(frame);
    if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/preview-inbound-quoting-pixel.png`, fullPage: true });
    await clickLinkIn(frame);
    expect(await counted('opened')).toEqual([]);
    expect(await counted('clicked')).toEqual([]);
  });

  it('still counts the pixel and the link fetched as a mail client does', async () => {
    const open = await fetch(pixel, { headers: { 'User-Agent': BROWSER } });
    expect(open.status).toBe(200);
    expect(open.headers.get('content-type')).toBe('image/gif');
    const click = await fetch(link, { redirect: 'manual', headers: { 'User-Agent': BROWSER } });
    expect(click.headers.get('location')).toBe('https://shop.example/p');
    expect((await counted('opened')).map((e) => e.data.open_count)).toEqual([1]);
    expect((await counted('clicked')).map((e) => e.data.click_count)).toEqual([1]);
  });
});
