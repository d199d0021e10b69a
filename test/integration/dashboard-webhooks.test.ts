import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { answerDialog, desktopAndPhoneShots, launchChromium, noteSays, signedInDashboard, textShows } from '../helpers/browser.js';
import { until } from '../helpers/child-server.js';

// The Webhooks view in Chromium, against a real receiving endpoint on
// loopback: an endpoint added in the page with its event filter, its secret
// shown once, a test event delivered and listed with the answer, a replay,
// disable and enable, and a rotated secret.

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

    await page.getByRole('button', { name: 'Send a test' }).click();
    await answerDialog(page, 'Send a test');
    await noteSays(page, 'A test event was sent');
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

  it('says when a delivery that failed is tried next, as the API plans it, and nothing of the kind for one that is over', async () => {
    // Nothing listens on port 9: every attempt is refused.
    const hook = await t.api.post('/v1/webhooks', { url: 'http://127.0.0.1:9/refused', event_types: ['email.delivered'] });
    expect(hook.status).toBe(201);
    const id = hook.body.id as string;
    try {
      expect((await t.api.post(`/v1/webhooks/${id}/test`)).status).toBeLessThan(300);
      expect((await t.api.post('/v1/emails', { from: 'Shop <orders@shop.test>', to: ['ann@example.org'], subject: 'Order 7', text: 'Shipped.' })).status).toBe(201);
      await t.mailroom.delivery.drain();
      await t.mailroom.services.webhookDispatcher.drain();
      const attemptsOf = (type: string) => page.locator('main tbody tr').filter({ hasText: type }).locator('td[data-label="Attempts"]');
      await page.goto(`${t.url}/dashboard/#/webhooks/${id}`);
      // The dispatcher may try again between the page's read and this one's: then the page is read again.
      await expect.poll(async () => {
        await page.reload();
        await attemptsOf('email.delivered').waitFor();
        const shown = await attemptsOf('email.delivered').locator('time').getAttribute('datetime');
        const deliveries = (await t.api.get(`/v1/webhooks/${id}/deliveries`)).body.data as Array<{ event_type: string; status: string; next_attempt_at: string | null }>;
        const retried = deliveries.find((d) => d.event_type === 'email.delivered');
        return retried?.status === 'pending' && retried.next_attempt_at !== null && shown === retried.next_attempt_at;
      }).toBe(true);
      expect(await attemptsOf('email.delivered').textContent()).toMatch(/^\d+next try \w/);
      // The test event is not retried: its one attempt is all there is.
      expect(await attemptsOf('webhook.test').textContent()).toBe('1');
      // Each answer ("connect ECONNREFUSED 127.0.0.1:9 in 2 ms") is read on one line, its time beside it.
      const answers = page.locator('main tbody td[data-label="Last answer"] .answer');
      expect(await answers.count()).toBe(2);
      expect(await answers.evaluateAll((els) => els.map((el) => (el as unknown as { getClientRects(): { length: number } }).getClientRects().length)))
        .toEqual([1, 1]);
    } finally {
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
      expect((await t.api.post(`/v1/webhooks/${id}/test`)).status).toBeLessThan(300);
      await page.goto(`${t.url}/dashboard/#/webhooks/${id}`);
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
