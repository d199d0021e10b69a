import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startDns, type TestDns } from '../helpers/dns.js';
import { directDeliveryEnv, startScriptedMx, type ScriptedMx } from '../helpers/mx.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { answerDialog, launchChromium, noteSays, signedInDashboard, twoDigitHourZone } from '../helpers/browser.js';
import { eventually } from '../helpers/smtp-app.js';

// The Queue view in Chromium, against a real MX found through dnsmasq that
// defers a domain: the domain listed with its waiting mail and the reply, its
// emails, and the three levers: hold, release and retry now.

const SCREENSHOTS = process.env.MAILROOM_SCREENSHOTS;

describe('the Queue view in Chromium', () => {
  let dns: TestDns;
  let mx: ScriptedMx;
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  let deferring = true;
  // As long as a provider's (and not asking to slow down): a reply wrapped in its column made each row many lines high.
  const REPLY = '451 4.2.1 <ann@slow.test>: Recipient address rejected: the mailbox is busy with other deliveries, come back soon';

  beforeAll(async () => {
    mx = await startScriptedMx({ reply: (stage, ctx) => (stage === 'rcpt' && deferring && ctx.address!.endsWith('@slow.test') ? REPLY : undefined) });
    dns = await startDns([{ type: 'MX', name: 'slow.test', exchange: 'mx.slow.test', priority: 10 }, { type: 'A', name: 'mx.slow.test', address: '127.0.0.1' }]);
    t = await startTestApp({ env: directDeliveryEnv(dns.server, mx.port) });
    await t.seed.activeDomain('acme.test');
    for (const to of [['ann@slow.test', 'bob@slow.test'], ['cy@slow.test']]) {
      const res = await t.api.post('/v1/emails', { from: 'news@acme.test', to, subject: `Order for ${to[0]}`, text: 'Hello.' });
      expect(res.status).toBe(201);
    }
    await eventually(async () => ((await t.api.get('/v1/queue')).body.data[0]?.deferred === 3 ? true : undefined), 10_000, 'the deferrals');
    browser = await launchChromium();
    page = await signedInDashboard(browser, t.url, t.token, '/queue', 'Queue', { viewport: { width: 1280, height: 800 }, timezoneId: twoDigitHourZone() });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await mx?.stop();
    await dns?.stop();
  });

  /** How far the list runs past its box on this laptop-sized window: 0 when every column, buttons included, shows. */
  const listOverflow = () => page.locator('.table-wrap').evaluate((el) => {
    const box = el as unknown as { scrollWidth: number; clientWidth: number };
    return box.scrollWidth - box.clientWidth;
  });

  it('lists the domain with its waiting mail and the remote\'s last reply', async () => {
    const row = page.locator('tbody tr').filter({ hasText: 'slow.test' });
    await row.waitFor();
    const cells = await row.locator('td').allTextContents();
    // Domain, queued, deferred, sending now, emails, oldest, next attempt, last reply.
    expect(cells.slice(0, 5)).toEqual(['slow.test', '0', '3', '0', '2']);
    expect(await page.locator('thead th').nth(3).textContent()).toBe('Sending now');
    expect(cells[7]).toBe(REPLY);
    // The reply is kept to a line, whole in its title, so a row stays a line high beside its buttons.
    const reply = row.locator('.clip.reply');
    expect(await reply.getAttribute('title')).toBe(REPLY);
    expect((await reply.boundingBox())!.height).toBeLessThan(30);
    expect(await listOverflow()).toBe(0);
    if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/queue.png`, fullPage: true });
  });

  it('opens the domain, its emails with their recipients, and holds and releases it', async () => {
    await page.getByRole('link', { name: 'slow.test', exact: true }).click();
    await page.getByRole('heading', { name: 'slow.test', level: 1 }).waitFor();
    await page.locator('tbody tr').filter({ hasText: 'ann@slow.test, bob@slow.test' }).waitFor();
    expect(await page.locator('tbody tr').count()).toBe(2);
    // Above them, the destination's last reply whole: it says why the mail waits.
    expect(await page.locator('.last-reply-note').textContent()).toBe(`The last reply from slow.test's servers: ${REPLY}`);
    // Subjects and recipients are kept to a line, each whole in its title.
    expect(await page.getByRole('link', { name: 'Order for ann@slow.test' }).getAttribute('title')).toBe('Order for ann@slow.test');
    expect(await page.locator('tbody [title="ann@slow.test, bob@slow.test"]').count()).toBe(1);
    // The reply too, so a row per email stays a line high and the list fits the window.
    const reply = page.locator('tbody tr').first().locator('.clip.reply');
    expect(await reply.getAttribute('title')).toBe(REPLY);
    expect((await reply.boundingBox())!.height).toBeLessThan(30);
    expect(await listOverflow()).toBe(0);
    await page.getByRole('button', { name: 'Hold' }).click();
    expect(await answerDialog(page, 'Hold')).toContain('Nothing is sent there until you release it.');
    await noteSays(page, 'is held');
    await page.locator('h1 + .badge-held').waitFor();
    await page.locator('tbody tr .badge-held').first().waitFor();
    expect((await t.api.get('/v1/queue')).body.data[0]).toMatchObject({ domain: 'slow.test', held: true });
    if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/queue-domain-held.png`, fullPage: true });
    await page.getByRole('button', { name: 'Release' }).click();
    await answerDialog(page, 'Release');
    // Not 'is released' alone: the note of the hold ends "until it is released."
    await noteSays(page, 'is released and goes out');
    expect((await t.api.get('/v1/queue')).body.data[0]).toMatchObject({ held: false });
  });

  it('says "due now" of a next attempt gone by, and offers a domain nothing waits for a hold but no retry', async () => {
    // A browser two hours on: the deferrals' next attempts, minutes after the first, have come.
    const later = await signedInDashboard(browser, t.url, t.token, '/queue', 'Queue', {
      viewport: { width: 1280, height: 800 }, beforeSignIn: (p) => p.clock.setFixedTime(Date.now() + 2 * 3_600_000) });
    try {
      const due = later.locator('tbody tr').filter({ hasText: 'slow.test' }).locator('td[data-label="Next attempt"] time');
      expect(await due.textContent()).toBe('due now');
      expect(await due.getAttribute('title')).toMatch(/^due since /);
      await later.goto(`${t.url}/dashboard/#/queue/slow.test`);
      await later.locator('tbody tr').first().waitFor();
      expect(await later.locator('tbody td[data-label="Next attempt"]').allTextContents()).toEqual(['due now', 'due now']);
      // Mail waits here: it may be retried.
      expect(await later.getByRole('button', { name: 'Retry now' }).count()).toBe(1);
      await later.goto(`${t.url}/dashboard/#/queue/quiet.test`);
      await later.getByRole('heading', { name: 'quiet.test', level: 1 }).waitFor();
      await later.getByText('No email waits for this domain.').waitFor();
      expect(await later.getByRole('button', { name: 'Hold' }).count()).toBe(1);
      expect(await later.getByRole('button', { name: 'Retry now' }).count()).toBe(0);
    } finally {
      await later.close();
    }
  });

  it('retries now, and the fixed remote gets the mail at once', async () => {
    deferring = false;
    await page.getByRole('button', { name: 'Retry now' }).click();
    await answerDialog(page, 'Retry now');
    await noteSays(page, /2 emails to slow\.test will be tried now/);
    await mx.waitFor(2, 10_000);
    await page.getByRole('link', { name: '← The whole queue' }).click();
    await eventually(async () => {
      await page.reload();
      await page.getByRole('heading', { name: 'Queue', level: 1 }).waitFor();
      return (await page.locator('main').textContent())?.includes('Nothing is waiting') ? true : undefined;
    }, 10_000, 'an empty queue in the page');
  });

  it('holds a domain with nothing queued from the form, and says why a bad name is refused', async () => {
    await page.getByLabel('Domain', { exact: true }).fill('not a domain');
    await page.locator('form').filter({ hasText: 'Domain' }).getByRole('button', { name: 'Hold' }).click();
    await page.getByRole('alert').filter({ hasText: /not a domain name/ }).waitFor();
    await page.getByLabel('Domain', { exact: true }).fill('paused.example');
    await page.locator('form').filter({ hasText: 'Domain' }).getByRole('button', { name: 'Hold' }).click();
    await noteSays(page, 'paused.example is held');
    const res = await t.api.post('/v1/queue/release', { domain: 'paused.example' });
    expect(res.status).toBe(200);
  });
});
