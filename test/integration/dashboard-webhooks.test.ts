import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { answerDialog, desktopAndPhoneShots, launchChromium, noteSays, overflowWidth, signedInDashboard, textShows } from '../helpers/browser.js';
import { until } from '../helpers/child-server.js';

// The Webhooks view in Chromium, against a real receiving endpoint on
// loopback: an endpoint added in the page with its event filter, its secret
// shown once, a test event delivered and listed with the answer, a replay,
// disable and enable, and a rotated secret; each delivery's state and what
// its event is about.

const SCREENSHOTS = process.env.MAILROOM_SCREENSHOTS;

describe('the Webhooks view in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  const received: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });

  beforeAll(async () => {
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    t = await startTestApp({ env: { MAILROOM_WEBHOOK_ALLOW_PRIVATE: 'true' } });
    browser = await launchChromium();
    page = await signedInDashboard(browser, t.url, t.token, '/webhooks', 'Webhooks', { viewport: { width: 1280, height: 900 } });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });


  it('adds an endpoint with its filter, shows the secret once, sends a test, replays it, disables it and rotates the secret', async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    await page.getByLabel('URL').fill(url);
    await page.getByLabel('Description').fill('Our CRM');
    await page.getByLabel('email.opened').check();
    await page.getByLabel('email.failed').uncheck();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await noteSays(page, /Its signing secret/);
    const secret = await page.locator('.flash code.token').textContent();
    expect(secret).toMatch(/^whsec_/);
    const [created] = (await t.api.get('/v1/webhooks')).body.data;
    expect(created).toMatchObject({ url, description: 'Our CRM', enabled: true });
    expect(created.event_types.sort()).toEqual(['email.bounced', 'email.complained', 'email.delivered', 'email.opened']);
    if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/webhook.png`, fullPage: true });
    // The secret stays while the page is changed, until the person says they have it.
    await page.getByLabel('email.sent').check();
    expect(await page.locator('#note code.token').textContent()).toBe(secret);
    await page.getByLabel('email.sent').uncheck();
    await page.getByRole('button', { name: 'Done, I have copied it' }).click();
    expect(await page.locator('#note').textContent()).toBe('');
    expect(await page.locator('main h1:focus').count()).toBe(1);

    // Harmless, so sent at once: no question first, the endpoint's answer in the note.
    await page.getByRole('button', { name: 'Send a test' }).click();
    await noteSays(page, /^A test event was sent; the endpoint answered 204 in \d+ ms\. Its delivery is listed below\.$/);
    expect(await page.getByRole('dialog').count()).toBe(0);
    await until('the test event at the endpoint', () => received.length >= 1);
    expect(received[0].headers['webhook-signature']).toMatch(/^v1,/);
    await page.reload();
    await textShows(page, 'tbody tr', /succeeded/);
    await textShows(page, 'tbody tr', /204/);

    await page.locator('tbody tr').first().getByRole('button', { name: 'Replay' }).click();
    await answerDialog(page, 'Replay');
    await noteSays(page, 'The delivery was replayed');
    await until('the replay at the endpoint', () => received.length >= 2);
    await page.reload();
    await textShows(page, 'tbody tr', /replay/);

    await page.getByRole('button', { name: 'Disable' }).click();
    expect(await answerDialog(page, 'Disable')).toContain('Events are not sent to it until it is enabled again.');
    await noteSays(page, 'The endpoint is disabled');
    expect((await t.api.get(`/v1/webhooks/${created.id}`)).body.enabled).toBe(false);
    await page.getByRole('button', { name: 'Enable' }).click();
    await answerDialog(page, 'Enable');
    await noteSays(page, 'The endpoint is enabled');

    await page.getByLabel('email.clicked').check();
    await page.getByRole('button', { name: 'Save the filter' }).click();
    await noteSays(page, 'The event filter was saved');
    expect((await t.api.get(`/v1/webhooks/${created.id}`)).body.event_types).toContain('email.clicked');

    // The list names the endpoint by its description, its URL under it.
    await page.goto(`${t.url}/dashboard/#/webhooks`);
    const row = page.locator('main tbody tr').filter({ has: page.getByRole('link', { name: 'Our CRM', exact: true }) });
    expect(await row.getByRole('link', { name: 'Our CRM', exact: true }).getAttribute('href')).toBe(`#/webhooks/${created.id}`);
    expect(await row.locator('td').first().innerText()).toBe(`Our CRM\n${url}`);
    await desktopAndPhoneShots(page, 'webhooks');
    await row.getByRole('link', { name: 'Our CRM', exact: true }).click();
    await page.getByRole('heading', { name: url, level: 1 }).waitFor();

    await page.getByRole('button', { name: 'Rotate secret' }).click();
    expect(await answerDialog(page, 'Make a new secret')).toBe('Make a new signing secret?\nFor the next 24 hours each delivery is signed with both '
      + 'secrets, so the endpoint can switch to the new one; after that, with the new one only.');
    await noteSays(page, 'The new signing secret');
    const rotated = await page.locator('.flash code.token').textContent();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/webhook-deliveries.png`, fullPage: true });

    await page.locator('.title-row').getByRole('button', { name: 'Delete' }).click();
    await answerDialog(page, 'Delete');
    await noteSays(page, 'was deleted');
    expect((await t.api.get('/v1/webhooks')).body.data).toEqual([]);
  });

  it('shows the API\'s reason when an endpoint is refused', async () => {
    await page.goto(`${t.url}/dashboard/#/webhooks`);
    await page.getByLabel('URL').fill('ftp://example.com/hooks');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await textShows(page, '[role="alert"]', /url|URL/);
  });

  it('asks for an event, in words, when none is checked, and adds nothing', async () => {
    await page.goto(`${t.url}/dashboard/#/webhooks`);
    await page.getByLabel('URL').fill(`http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`);
    for (const box of await page.getByRole('group', { name: 'Events' }).getByRole('checkbox').all()) await box.uncheck();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await textShows(page, '[role="alert"]', 'Choose at least one event to post to this endpoint.');
    expect((await t.api.get('/v1/webhooks')).body.data).toEqual([]);
  });

  it('says a delivery that failed is retrying, how many attempts failed and when it is tried next, as the API plans it', async () => {
    // Nothing listens on port 9: every attempt is refused.
    const hook = await t.api.post('/v1/webhooks', { url: 'http://127.0.0.1:9/refused', event_types: ['email.delivered'] });
    expect(hook.status).toBe(201);
    const id = hook.body.id as string;
    try {
      expect((await t.api.post(`/v1/webhooks/${id}/test`)).status).toBeLessThan(300);
      expect((await t.api.post('/v1/emails', { from: 'Shop <orders@shop.test>', to: ['ann@example.org'], subject: 'Order 7', text: 'Shipped.' })).status).toBe(201);
      await t.mailroom.delivery.drain();
      await t.mailroom.services.webhookDispatcher.drain();
      const rowOf = (type: string) => page.locator('main tbody tr').filter({ hasText: type });
      const attemptsOf = (type: string) => rowOf(type).locator('td[data-label="Attempts"]');
      await page.goto(`${t.url}/dashboard/#/webhooks/${id}`);
      type Listed = { id: string; event_type: string; status: string; attempt_count: number; next_attempt_at: string | null };
      let retried: Listed | undefined;
      // The dispatcher may try again between the page's read and this one's: then the page is read again.
      await expect.poll(async () => {
        await page.reload();
        await attemptsOf('email.delivered').waitFor();
        const shown = await attemptsOf('email.delivered').locator('time').getAttribute('datetime');
        const status = await rowOf('email.delivered').locator('td[data-label="Status"] > *').allTextContents();
        retried = ((await t.api.get(`/v1/webhooks/${id}/deliveries`)).body.data as Listed[]).find((d) => d.event_type === 'email.delivered');
        return retried?.status === 'pending' && retried.next_attempt_at !== null && shown === retried.next_attempt_at
          && status.join(' · ') === `retrying · ${retried.attempt_count} failed`;
      }).toBe(true);
      expect(await attemptsOf('email.delivered').textContent()).toMatch(/^\d+next try \w/);
      // In the failing colour, not the amber of one waiting for its first try.
      expect(await rowOf('email.delivered').locator('.badge').getAttribute('class')).toBe('badge badge-retrying');
      // What the event is about, under its type.
      expect(await rowOf('email.delivered').locator('.event-about').textContent()).toBe('ann@example.org · Order 7');
      // The test event is not retried: its one attempt is all there is, and it failed.
      expect(await attemptsOf('webhook.test').textContent()).toBe('1');
      expect(await rowOf('webhook.test').locator('td[data-label="Status"]').textContent()).toBe('failed');
      // Each answer ("connect ECONNREFUSED 127.0.0.1:9 in 2 ms") is read on one line, its time beside it.
      const answers = page.locator('main tbody td[data-label="Last answer"] .answer');
      expect(await answers.count()).toBe(2);
      expect(await answers.evaluateAll((els) => els.map((el) => (el as unknown as { getClientRects(): { length: number } }).getClientRects().length)))
        .toEqual([1, 1]);
      await desktopAndPhoneShots(page, 'webhook-retrying', 'main table');

      // Its own page says the same; its webhook-id is the event's id, named once.
      await rowOf('email.delivered').getByRole('link', { name: 'email.delivered' }).click();
      await page.getByRole('heading', { name: 'email.delivered', level: 1 }).waitFor();
      expect(await page.locator('.title-row .badge-retrying').textContent()).toBe('retrying');
      await textShows(page, '.title-row .badge-retrying + div', /^\d+ failed$/);
      expect(await page.locator('.details dt').allTextContents()).toEqual(['Created', 'Attempts', 'webhook-id (the event\'s id)']);
      const full = (await t.api.get(`/v1/webhooks/${id}/deliveries/${retried!.id}`)).body as { event_id: string };
      expect(await page.locator('.details dd').nth(2).locator('code').textContent()).toBe(full.event_id);
      await desktopAndPhoneShots(page, 'webhook-delivery-retrying');
    } finally {
      await t.api.delete(`/v1/webhooks/${id}`);
    }
  });

  it('calls a delivery not tried yet pending, and tells deliveries of one type apart by their recipients and subjects', async () => {
    // An endpoint that holds each POST until the test lets it answer: meanwhile its deliveries are out for the first time.
    let letAnswer = () => {};
    const answering = new Promise<void>((resolve) => (letAnswer = resolve));
    let arrived = 0;
    const holding = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        arrived++;
        void answering.then(() => res.writeHead(204).end());
      });
    });
    await new Promise<void>((resolve) => holding.listen(0, '127.0.0.1', resolve));
    const hook = await t.api.post('/v1/webhooks', {
      url: `http://127.0.0.1:${(holding.address() as AddressInfo).port}/held`, event_types: ['email.delivered'],
    });
    const id = hook.body.id as string;
    try {
      for (const [to, subject] of [['bob@example.org', 'Invoice 12'], ['cat@example.org', 'Invoice 13']]) {
        expect((await t.api.post('/v1/emails', { from: 'Shop <billing@shop.test>', to: [to], subject, text: 'Attached.' })).status).toBe(201);
      }
      await t.mailroom.delivery.drain();
      await until('both deliveries at the endpoint', () => arrived >= 2);
      await page.goto(`${t.url}/dashboard/#/webhooks/${id}`);
      const rows = page.locator('main tbody tr');
      await rows.nth(1).waitFor();
      expect(await rows.locator('td[data-label="Status"]').allTextContents()).toEqual(['pending', 'pending']);
      // Made in the same instant, the two may be listed in either order.
      expect((await rows.locator('.event-about').allTextContents()).sort()).toEqual(['bob@example.org · Invoice 12', 'cat@example.org · Invoice 13']);
      await desktopAndPhoneShots(page, 'webhook-pending', 'main table');
    } finally {
      letAnswer();
      await t.api.delete(`/v1/webhooks/${id}`);
      holding.closeAllConnections();
      await new Promise<void>((resolve) => holding.close(() => resolve()));
    }
  });

  it('names the contact and the broadcast an event is about, and keeps the actions together beside a long URL', async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/mailroom/events/with/a/rather/long/path?token=abcdef0123456789`;
    const hook = await t.api.post('/v1/webhooks', { url, description: 'Newsletter sync', event_types: ['contact.unsubscribed', 'broadcast.sending'] });
    const id = hook.body.id as string;
    try {
      await t.seed.activeDomain('news.test');
      const contact = await t.api.post('/v1/contacts', { email: 'dora@example.org' });
      expect(contact.status).toBe(201);
      const broadcast = await t.api.post('/v1/broadcasts', { name: 'Spring news', from: 'News <news@news.test>', subject: 'Spring', text: 'News' });
      expect((await t.api.post(`/v1/broadcasts/${broadcast.body.id}/send`, {})).status).toBe(200);
      expect((await t.api.post(`/v1/contacts/${contact.body.id}/unsubscribe`, {})).status).toBe(200);
      await t.mailroom.services.webhookDispatcher.drain();
      await page.goto(`${t.url}/dashboard/#/webhooks/${id}`);
      const aboutOf = (type: string) => page.locator('main tbody tr').filter({ hasText: type }).locator('.event-about');
      await aboutOf('contact.unsubscribed').waitFor();
      expect(await aboutOf('contact.unsubscribed').textContent()).toBe('dora@example.org');
      expect(await aboutOf('broadcast.sending').textContent()).toBe('Spring news');

      // The URL wraps within its part of the title row; the actions stay together: on one line beside it on a desktop,
      // two by two under it on a phone, none alone on a line.
      const heading = page.getByRole('heading', { name: url, level: 1 });
      const buttons = page.locator('.endpoint-actions button');
      expect(await buttons.allTextContents()).toEqual(['Send a test', 'Disable', 'Rotate secret', 'Delete']);
      /** How many buttons share each line. */
      const perLine = async () => {
        const tops = await buttons.evaluateAll((all) =>
          all.map((b) => Math.round((b as unknown as { getBoundingClientRect(): { top: number } }).getBoundingClientRect().top)));
        return [...new Set(tops)].map((top) => tops.filter((other) => other === top).length);
      };
      expect(await perLine()).toEqual([4]);
      const [title, actions] = [await heading.boundingBox(), await page.locator('.endpoint-actions').boundingBox()];
      expect(actions!.x).toBeGreaterThan(title!.x + title!.width);
      expect(actions!.y).toBeLessThan(title!.y + title!.height / 2);
      await page.setViewportSize({ width: 390, height: 844 });
      expect(await perLine()).toEqual([2, 2]);
      expect(await overflowWidth(page)).toBe(0);
      await desktopAndPhoneShots(page, 'webhook-long-url');
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
      await t.api.delete(`/v1/webhooks/${id}`);
    }
  });

  it('opens a delivery: the body the endpoint received, each attempt with its answer, and a replay that opens the new delivery', async () => {
    // An endpoint that refuses with a reason in its body, as a receiver's framework does.
    const refusing = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(422, { 'content-type': 'text/plain' }).end('Unknown event type: webhook.test'));
    });
    await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
    const hook = await t.api.post('/v1/webhooks', {
      url: `http://127.0.0.1:${(refusing.address() as AddressInfo).port}/hooks`, event_types: ['email.delivered'],
    });
    const id = hook.body.id as string;
    try {
      await page.goto(`${t.url}/dashboard/#/webhooks/${id}`);
      await page.getByRole('button', { name: 'Send a test' }).click();
      await noteSays(page, /^A test event was sent; it failed: the endpoint answered 422 in \d+ ms\. Its delivery is listed below\.$/);
      await page.locator('main tbody').getByRole('link', { name: 'webhook.test' }).click();
      await page.getByRole('heading', { name: 'webhook.test', level: 1 }).waitFor();
      const [delivery] = (await t.api.get(`/v1/webhooks/${id}/deliveries`)).body.data as Array<{ id: string; message_id: string }>;
      expect(page.url()).toContain(`#/webhooks/${id}/deliveries/${delivery.id}`);
      await textShows(page, '.title-row .badge', 'failed');
      // The body, set out: every field of it readable, the same JSON the endpoint was sent.
      const body = await page.getByRole('region', { name: 'Body posted' }).textContent();
      expect(JSON.parse(body ?? '')).toMatchObject({ type: 'webhook.test', data: { webhook_id: id } });
      expect(body).toContain('\n  "type": "webhook.test"');
      await textShows(page, '.details dd', delivery.message_id);
      // A test is of no event: its webhook-id is its own.
      expect(await page.locator('.details dt').allTextContents()).toEqual(['Created', 'Attempts', 'webhook-id', 'Event']);
      await textShows(page, '.details dd', 'a test, of no event');
      const attempt = page.locator('main tbody tr').first();
      await textShows(attempt, 'td[data-label="Outcome"]', 'failed');
      await textShows(attempt, 'td[data-label="Answer"]', /^422 in \d+ ms$/);
      await textShows(attempt, 'td[data-label="Body of the answer"]', 'Unknown event type: webhook.test');
      await desktopAndPhoneShots(page, 'webhook-delivery');

      await page.locator('.title-row').getByRole('button', { name: 'Replay' }).click();
      expect(await answerDialog(page, 'Replay')).toContain('It goes as a new delivery with the same body');
      await noteSays(page, 'The delivery was replayed');
      const replay = ((await t.api.get(`/v1/webhooks/${id}/deliveries`)).body.data as Array<{ id: string; replay_of: string | null }>)
        .find((d) => d.replay_of === delivery.id);
      expect(replay).toBeDefined();
      await expect.poll(() => page.url()).toContain(`/deliveries/${replay?.id}`);
      await page.locator('.details').getByRole('link', { name: delivery.id }).waitFor();
      // The replay goes with the webhook-id of the first, so a receiver can tell it has seen the event.
      await textShows(page, '.details dd', delivery.message_id);
    } finally {
      await t.api.delete(`/v1/webhooks/${id}`);
      await new Promise<void>((resolve) => refusing.close(() => resolve()));
    }
  });

  it('says so when a delivery is not found, with the way back to its endpoint', async () => {
    const hook = await t.api.post('/v1/webhooks', { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`, event_types: ['email.delivered'] });
    const id = hook.body.id as string;
    try {
      await page.goto(`${t.url}/dashboard/#/webhooks/${id}/deliveries/whd_missing`);
      await textShows(page, '[role="alert"]', /whd_missing/);
      await page.getByRole('link', { name: '← The endpoint' }).click();
      await page.getByRole('heading', { name: /\/hooks$/, level: 1 }).waitFor();
    } finally {
      await t.api.delete(`/v1/webhooks/${id}`);
    }
  });
});
