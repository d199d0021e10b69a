import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchChromium, openDrawnView, overflowWidth, signedInDashboard, twoDigitHourZone } from '../helpers/browser.js';

// What a tablet (800 pixels wide, and 1024 held sideways) shows, measured in Chromium: the sections on one row of the
// top bar, as on a phone, and no view running off the side of the screen.

const TABLETS = [{ width: 800, height: 1100 }, { width: 1024, height: 768 }];
const LONG_DOMAIN = 'newsletters.acme-international-holdings-and-subsidiaries.test';
const SCREENSHOTS = process.env.MAILROOM_SCREENSHOTS;

interface Rect { top: number; bottom: number; left: number; right: number; width: number; height: number }
interface El { getBoundingClientRect(): Rect }

describe('the dashboard on a tablet', () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestApp({ env: { MAILROOM_WEBHOOK_ALLOW_PRIVATE: 'true' } });
    const domain = await t.seed.activeDomain(LONG_DOMAIN);
    ids.domain = domain.id;
    const from = `News <news@${LONG_DOMAIN}>`;
    const email = await t.api.post('/v1/emails', { from, to: ['reader@example.com', 'second.reader@example.com'], cc: ['copy@example.com'],
      subject: 'Your order has shipped', html: '<p>Your order has shipped.</p>', text: 'Your order has shipped.', tags: ['orders'] });
    expect(email.status).toBe(201);
    ids.email = email.body.id;
    await t.mailroom.delivery.drain();
    const draft = await t.api.post('/v1/broadcasts', { name: 'Spring collection preview', from, subject: 'Spring', text: 'News' });
    ids.broadcast = draft.body.id;
    const template = await t.api.post('/v1/templates', { name: 'Receipt', subject: 'Receipt for {{ first_name }}', html: '<p>Hi {{ first_name }}</p>',
      variables: [{ key: 'first_name', type: 'string', required: false }] });
    ids.template = template.body.id;
    const hook = await t.api.post('/v1/webhooks', { url: 'http://127.0.0.1:9/hooks/mailroom', event_types: ['email.delivered'] });
    ids.webhook = hook.body.id;
    for (let i = 0; i < 3; i++) expect((await t.api.post('/v1/contacts', { email: `reader${i}@example.com`, tags: ['news'] })).status).toBe(201);
    expect((await t.api.post('/v1/suppressions', { email: 'gone@example.org' })).status).toBe(201);
    ids.key = (await t.api.get('/v1/api-keys')).body.data[0].id;

    browser = await launchChromium();
    page = await signedInDashboard(browser, t.url, t.token, '/emails', 'Emails', { viewport: TABLETS[0], timezoneId: twoDigitHourZone() });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const open = (route: string) => openDrawnView(page, t.url, route);

  it('keeps the sections to one row of the top bar and every view within the screen', async () => {
    const routes = ['/emails', `/emails/${ids.email}`, '/domains', `/domains/${ids.domain}`, '/events', '/analytics', '/queue',
      '/inbound', '/templates', `/templates/${ids.template}`, '/broadcasts', `/broadcasts/${ids.broadcast}`, '/contacts',
      '/suppressions', '/webhooks', `/webhooks/${ids.webhook}`, '/api-keys', `/api-keys/${ids.key}`];
    const crowded: string[] = [];
    for (const viewport of TABLETS) {
      await page.setViewportSize(viewport);
      for (const route of routes) {
        await open(route);
        const at = `${route} at ${viewport.width}`;
        const nav = page.getByRole('navigation', { name: 'Main' });
        const tops = await nav.getByRole('link').evaluateAll((els) => els.map((el) => Math.round((el as unknown as El).getBoundingClientRect().top)));
        if (new Set(tops).size !== 1) crowded.push(`${at}: the sections take ${new Set(tops).size} rows`);
        const bar = (await page.locator('header.topbar').boundingBox())!;
        if (bar.height > 100) crowded.push(`${at}: the top bar is ${bar.height}px high`);
        const current = (await nav.locator('[aria-current="page"]').boundingBox())!;
        if (current.x < 0 || current.x + current.width > viewport.width) crowded.push(`${at}: its section is off the screen`);
        const by = await overflowWidth(page);
        if (by > 0) crowded.push(`${at}: wider than the screen by ${by}px`);
        if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/tablet-${viewport.width}-${route.slice(1).replace(/\//g, '-')}.png`, fullPage: true });
      }
    }
    expect(crowded).toEqual([]);
  });
});
