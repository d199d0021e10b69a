import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { newId } from '../../src/core/ids.js';
import { insertInbound } from '../../src/inbound/inbound.repo.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { answerDialog, launchChromium, signedInDashboard } from '../helpers/browser.js';

// The dashboard in a real browser against a real server: sign in with a key,
// read what the sink kept, and see that nothing an email carries can run in
// the page.

const HOSTILE_SUBJECT = '<img src=x onerror="document.title=\'pwned\'">';
/** The email's HTML: styled inline, with a script, an event handler and a remote pixel at `pixelUrl`. */
const hostileHtml = (pixelUrl: string) => `<p id="styled" style="color: rgb(204, 51, 51)">Hello from the preview</p>
<script>try { parent.document.title = 'pwned'; } catch (e) {} document.body.append('script ran');</script>
<img src="x" onerror="this.replaceWith('handler ran')">
<img id="pixel" src="${pixelUrl}" width="1" height="1">`;

describe('the dashboard in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  let testKey: string;
  let emailId: string;
  const dialogs: string[] = [];
  // Stands in for a sender's tracking pixel: a preview must never fetch it.
  let pixelHits = 0;
  const pixelServer = http.createServer((_req, res) => {
    pixelHits++;
    res.end();
  });

  beforeAll(async () => {
    await new Promise<void>((resolve) => pixelServer.listen(0, '127.0.0.1', resolve));
    const pixelUrl = `http://127.0.0.1:${(pixelServer.address() as AddressInfo).port}/open.gif`;
    t = await startTestApp();
    testKey = (await t.seed.key({ mode: 'test', name: 'dashboard' })).token;
    const api = t.api.as(testKey);
    const sent = await api.post('/v1/emails', {
      from: 'Shop <hello@shop.test>', to: ['delivered@mailroom.test'], subject: HOSTILE_SUBJECT,
      html: hostileHtml(pixelUrl), text: 'Hello in plain text',
    });
    expect(sent.status).toBe(201);
    emailId = sent.body.id;
    await t.mailroom.delivery.drain();
    expect((await api.get(`/v1/emails/${emailId}`)).body.status).toBe('delivered');

    browser = await launchChromium();
    page = await browser.newPage();
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    page.setDefaultTimeout(10_000);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    pixelServer.close();
  });

  /** The key the page keeps for its tab (the test compiles without the DOM's types). */
  const storedKey = () => page.evaluate(() =>
    (globalThis as unknown as { sessionStorage: { getItem(name: string): string | null } }).sessionStorage.getItem('mailroom.apiKey'));

  async function signIn(key: string) {
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  it('refuses a wrong key with the API\'s message, and keeps no key', async () => {
    await page.goto(`${t.url}/dashboard/`);
    await signIn('svc_test_not-a-real-key');
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/key/i);
    await page.getByLabel('API key').waitFor();
    expect(await storedKey()).toBeNull();
  });

  it('refuses a key that may read no section, naming its scopes', async () => {
    const sendingOnly = (await t.seed.key({ scopes: ['sending_access'] })).token;
    await page.goto(`${t.url}/dashboard/`);
    await signIn(sendingOnly);
    await expect.poll(() => page.getByRole('alert').textContent())
      .toContain('This key can read no section of the dashboard (its scopes: sending_access).');
    expect(await storedKey()).toBeNull();
  });

  it('signs in with a test key and lists the email, its subject shown as text', async () => {
    await page.goto(`${t.url}/dashboard/`);
    await signIn(testKey);
    await page.getByRole('heading', { name: 'Emails', level: 1 }).waitFor();
    expect(await storedKey()).toBe(testKey);
    const link = page.getByRole('link', { name: HOSTILE_SUBJECT, exact: true });
    await link.waitFor();
    expect(await page.locator('tbody tr').count()).toBe(1);
    expect(await page.locator('tbody').textContent()).toContain('delivered@mailroom.test');
    expect(await page.locator('tbody img').count()).toBe(0);
    // Named by the view, and no handler of the subject's ran to rename it.
    expect(await page.title()).toBe('Emails · Mailroom');
  });

  it('opens the email: its fields, its events and a preview in which nothing runs', async () => {
    await page.getByRole('link', { name: HOSTILE_SUBJECT, exact: true }).click();
    await page.waitForURL(new RegExp(`#/emails/${emailId}$`));
    await page.getByRole('heading', { name: HOSTILE_SUBJECT, level: 1 }).waitFor();
    await expect.poll(() => page.locator('main').textContent()).toContain('email.delivered');
    const text = await page.locator('main').textContent();
    expect(text).toContain(emailId);
    expect(text).toContain('email.sent');
    expect(text).toContain('Hello in plain text');

    const frame = page.frameLocator('iframe[title="HTML preview"]');
    await frame.getByText('Hello from the preview').waitFor();
    const preview = await frame.locator('body').innerText();
    expect(preview).not.toContain('script ran');
    expect(preview).not.toContain('handler ran');
    expect(await page.locator('iframe[title="HTML preview"]').getAttribute('sandbox')).toBe('');
    // Emails are styled inline, and that still shows; the remote pixel is never asked for.
    expect(await frame.locator('#styled').evaluate((el) =>
      (globalThis as unknown as { getComputedStyle(e: unknown): { color: string } }).getComputedStyle(el).color)).toBe('rgb(204, 51, 51)');
    expect(await frame.locator('#pixel').evaluate((el) => (el as unknown as { complete: boolean }).complete)).toBe(true);
    expect(pixelHits).toBe(0);
    // The tab is named by the subject as text: its markup is not run.
    expect(await page.title()).toBe(`${HOSTILE_SUBJECT} · Mailroom`);
    expect(dialogs).toEqual([]);
  });

  it('shows the source the sink kept, headers and all, as text', async () => {
    await page.getByRole('button', { name: 'Show the source' }).click();
    const source = page.locator('pre.source');
    await source.waitFor();
    const text = await source.textContent();
    expect(text).toMatch(/^Subject: /m);
    expect(text).toContain('Hello in plain text');
    // The hostile subject stays text inside the source, too.
    expect(await page.locator('pre.source img').count()).toBe(0);
  });

  it('tells test mail from live mail: a mode column and filter', async () => {
    await page.getByRole('link', { name: 'Emails', exact: true }).click();
    await page.getByRole('link', { name: HOSTILE_SUBJECT, exact: true }).waitFor();
    expect(await page.locator('tbody tr').first().textContent()).toContain('test');
    await page.getByLabel('Mode').selectOption('live');
    await page.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => page.locator('main').textContent()).toMatch(/No emails match/i);
    await page.getByLabel('Mode').selectOption('test');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: HOSTILE_SUBJECT, exact: true }).click();
    // Back on the email's page, as the next test expects to start.
    await page.getByRole('heading', { name: HOSTILE_SUBJECT, level: 1 }).waitFor();
  });

  it('filters the list by recipient, sender and subject, the filters kept in the address', async () => {
    await page.getByRole('link', { name: 'Emails', exact: true }).click();
    await page.getByLabel('To', { exact: true }).fill('nobody-like-this');
    await page.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => page.locator('main').textContent()).toMatch(/No emails/i);
    await page.getByLabel('To', { exact: true }).fill('delivered@');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: HOSTILE_SUBJECT, exact: true }).waitFor();
    await page.getByLabel('To', { exact: true }).fill('');
    await page.getByLabel('From', { exact: true }).fill('Other shop');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/from=Other\+shop/);
    await expect.poll(() => page.locator('main p.empty').textContent()).toMatch(/^No emails match these filters/);
    await page.getByLabel('From', { exact: true }).fill('shop');
    await page.getByLabel('Subject', { exact: true }).fill(HOSTILE_SUBJECT.slice(0, 12));
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/subject=/);
    await page.getByRole('link', { name: HOSTILE_SUBJECT, exact: true }).waitFor();
  });

  it('shows a status the API refuses as asked in the form, with the refusal naming the filter', async () => {
    await page.goto(`${t.url}/dashboard/#/emails?status=bounced`);
    await page.getByRole('alert').waitFor();
    expect(await page.getByLabel('Status').inputValue()).toBe('bounced');
    expect(await page.getByRole('alert').textContent())
      .toMatch(/^The Status filter was refused: 'status' must be one of: pending, scheduled, sent, delivered/);
    expect(await page.getByLabel('Status').getAttribute('aria-invalid')).toBe('true');
    await page.getByRole('link', { name: 'Show the list without filters' }).click();
    await page.getByRole('link', { name: HOSTILE_SUBJECT, exact: true }).waitFor();
    expect(await page.getByLabel('Status').inputValue()).toBe('');
  });

  it('says a bounce\'s and a deferral\'s codes once when the remote\'s reply opens with them', async () => {
    const api = t.api.as(testKey);
    const ids: string[] = [];
    for (const to of ['bounced@mailroom.test', 'delayed@mailroom.test']) {
      const sent = await api.post('/v1/emails', { from: 'Shop <hello@shop.test>', to: [to], subject: `For ${to}`, text: 'Hi' });
      expect(sent.status).toBe(201);
      ids.push(sent.body.id);
    }
    await t.mailroom.delivery.drain();
    const detailOf = async (id: string, type: string) => {
      await page.goto(`${t.url}/dashboard/#/emails/${id}`);
      const row = page.locator('tbody tr').filter({ has: page.getByRole('cell', { name: type, exact: true }) });
      return (await row.locator('td').last().textContent()) ?? '';
    };
    expect(await detailOf(ids[0], 'email.bounced')).toMatch(/^hard bounce \(\w+\) · 550 5\.1\.1 The email account/);
    expect(await detailOf(ids[1], 'email.delayed')).toMatch(/^451 4\.7\.1 Temporarily deferred.* · attempt 1 · next try /);
  });

  it('copies a new key with its Copy button, by the selection where the browser gives no clipboard', async () => {
    const own = await browser.newContext();
    await own.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.url });
    // A dashboard reached over plain HTTP at a LAN address is no secure context: the browser has no navigator.clipboard.
    const plain = await browser.newContext();
    await plain.addInitScript(() => Object.defineProperty((globalThis as unknown as { navigator: object }).navigator, 'clipboard', { value: undefined }));
    try {
      for (const context of [own, plain]) {
        const tab = await context.newPage();
        tab.setDefaultTimeout(10_000);
        const errors: string[] = [];
        tab.on('pageerror', (err) => errors.push(err.message));
        await tab.goto(`${t.url}/dashboard/#/api-keys`);
        await tab.getByLabel('API key').fill(testKey);
        await tab.getByRole('button', { name: 'Sign in' }).click();
        await tab.getByLabel('Key name').fill(context === own ? 'copied' : 'copied without a clipboard');
        await tab.getByRole('button', { name: 'Create key' }).click();
        const token = await tab.locator('.flash code.token').textContent();
        expect(token).toMatch(/^svc_test_/);
        await tab.getByRole('button', { name: 'Copy the new key' }).click();
        await tab.getByRole('button', { name: 'Copy the new key' }).filter({ hasText: 'Copied' }).waitFor();
        const copied = await tab.evaluate((): Promise<string> | string => {
          const { navigator, getSelection } = globalThis as unknown as { navigator: { clipboard?: { readText(): Promise<string> } };
            getSelection(): { toString(): string } };
          return navigator.clipboard ? navigator.clipboard.readText() : getSelection().toString();
        });
        expect(copied).toBe(token);
        expect(errors).toEqual([]);
      }
    } finally {
      await own.close();
      await plain.close();
    }
  });

  it('adds a domain and shows the DNS records to publish', async () => {
    await page.getByRole('link', { name: 'Domains', exact: true }).click();
    await page.getByRole('heading', { name: 'Domains', level: 1 }).waitFor();
    await page.getByLabel('Domain name').fill('not a domain');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/name/i);

    await page.getByLabel('Domain name').fill('news.shop.test');
    await page.getByRole('button', { name: 'Add domain' }).click();
    // Not yet checked: the list says what sending waits for, and that DNS was never looked at.
    const listed = page.locator('main tbody tr').filter({ hasText: 'news.shop.test' });
    await listed.locator('.records-missing', { hasText: 'Needs DKIM, SPF, Return-path MX (0 of 3 found)' }).waitFor();
    expect(await listed.locator('td[data-label="Last checked"]').textContent()).toBe('never');
    await page.getByRole('link', { name: 'news.shop.test', exact: true }).click();
    await page.getByRole('heading', { name: 'news.shop.test', level: 1 }).waitFor();
    const records = await page.locator('main table').textContent();
    expect(records).toContain('DKIM');
    expect(records).toContain('_domainkey.news.shop.test');
    expect(records).toContain('SPF');
    expect(records).toContain('v=spf1');

    const domains = (await t.api.as(testKey).get('/v1/domains')).body.data as Array<{ name: string }>;
    expect(domains.map((d) => d.name)).toContain('news.shop.test');
  });

  it('says above a domain\'s records when the server\'s host name is not one a receiver can look up', async () => {
    const laptop = await startTestApp({ env: { MAILROOM_HOSTNAME: 'vm' } });
    const own = await browser.newPage();
    try {
      const domain = await laptop.api.post('/v1/domains', { name: 'shop.test' });
      expect(domain.body.records.find((r: { record: string }) => r.record === 'MX_BOUNCE').value).toBe('vm');
      await own.goto(`${laptop.url}/dashboard/#/domains/${domain.body.id}`);
      await own.getByLabel('API key').fill(laptop.token);
      await own.getByRole('button', { name: 'Sign in' }).click();
      const note = own.locator('.host-note');
      await note.waitFor();
      expect(await note.textContent()).toBe('These records cannot verify yet: they name this server as vm, which is not a full host name, so no receiver '
        + 'can look it up. Start the server with MAILROOM_HOSTNAME set to its public name (such as mail.example.com, with an A record pointing at it); '
        + 'the records follow it.');
      // The records are named as DNS guides name them, not by the API's codes.
      await own.locator('main tbody tr', { hasText: 'Return-path MX' }).waitFor();
      // A server with a full name says nothing of the kind.
      const named = await t.api.post('/v1/domains', { name: 'named.test' });
      await page.goto(`${t.url}/dashboard/#/domains/${named.body.id}`);
      await page.getByRole('heading', { name: 'named.test', level: 1 }).waitFor();
      await page.locator('main tbody tr').first().waitFor();
      expect(await page.locator('.host-note').count()).toBe(0);
    } finally {
      await own.close();
      await laptop.close();
    }
  });

  it('creates an API key and shows its token once', async () => {
    await page.getByRole('link', { name: 'API keys', exact: true }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await page.getByLabel('Key name').fill('from the dashboard');
    await page.getByRole('button', { name: 'Create key' }).click();
    const status = page.locator('#note[role="status"]');
    await expect.poll(() => status.textContent()).toMatch(/svc_test_\S+/);
    const token = /svc_test_\S+/.exec((await status.locator('code').textContent()) ?? '')?.[0];
    expect(token).toBeDefined();
    // The shown token is a working key.
    expect((await t.api.as(token!).get('/v1/emails?limit=1')).status).toBe(200);
    await expect.poll(() => page.locator('main table').textContent()).toContain('from the dashboard');
  });

  it('shows received mail with its processing status, and a failed message with why', async () => {
    const domain = await t.seed.activeDomain('in.shop.test');
    const now = Date.now();
    const [waiting, failed] = [newId('in', now), newId('in', now + 1)];
    await t.mailroom.services.store.write(async (tx) => {
      await insertInbound(tx, [waiting, failed].map((id) => ({
        id, workspaceId: t.workspaceId, domainId: domain.id, kind: 'message' as const, mailFrom: 'ann@outside.test', rcptTo: ['desk@in.shop.test'],
        remoteIp: '127.0.0.1', helo: 'client.test', tls: false, receivedAt: now, raw: Buffer.from('Subject: hi\r\n\r\nhi\r\n'),
        // Held by a processor of another host, so it stays received while the page looks.
        lease: { owner: 'elsewhere:1:0badf00d', until: now + 3_600_000 },
      })));
      await tx.updateTable('inbound_messages').set({ status: 'failed', last_error: 'not processed: the message has over 500 MIME parts', lease_owner: null })
        .where('id', '=', failed).execute();
    });
    await page.getByRole('link', { name: 'Inbound', exact: true }).click();
    await page.getByRole('heading', { name: 'Inbound', level: 1 }).waitFor();
    const rows = page.locator('main table tbody tr');
    await expect.poll(() => rows.count()).toBe(2);
    expect((await rows.allTextContents()).map((r) => /received|failed/.exec(r)?.[0]).sort()).toEqual(['failed', 'received']);

    await page.goto(`${t.url}/dashboard/#/inbound/${failed}`);
    await expect.poll(() => page.locator('main dl').textContent()).toContain('failed not processed: the message has over 500 MIME parts');
    // No authentication results for a message that was not read.
    expect(await page.locator('main dl').textContent()).not.toContain('SPF');
  });

  it('signs out: the key is forgotten and the sign-in form is back', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await storedKey()).toBeNull();
    await page.reload();
    await page.getByLabel('API key').waitFor();
  });

  it('creates a key, shows its token once, revokes it, and signs out when the key in use is revoked', async () => {
    const keeper = await t.seed.key({ mode: 'test', name: 'keeper' });
    const own = await signedInDashboard(browser, t.url, keeper.token, '/api-keys', 'API keys');
    try {
      await own.getByLabel('Key name').fill('ci deploy');
      await own.getByRole('button', { name: 'Create key' }).click();
      const token = await own.locator('code.token').textContent();
      expect(token).toMatch(/^svc_test_/);
      const created = (await t.api.as(keeper.token).get('/v1/api-keys?limit=100')).body.data.find((k: { name: string }) => k.name === 'ci deploy');
      expect(created.revoked_at).toBeNull();

      await own.getByRole('row').filter({ hasText: 'ci deploy' }).getByRole('button', { name: 'Revoke' }).click();
      expect(await answerDialog(own, 'Revoke')).toBe('Revoke “ci deploy”?\nAnything using it stops working at once.');
      await expect.poll(() => own.locator('#note').textContent()).toContain('“ci deploy” was revoked.');
      expect((await t.api.as(token!).get('/v1/emails')).status).toBe(401);

      await own.getByRole('row').filter({ hasText: 'this key' }).getByRole('button', { name: 'Revoke' }).click();
      expect(await answerDialog(own, 'Revoke')).toContain('It is the key you are signed in with');
      await own.getByLabel('API key').waitFor();
      await expect.poll(() => own.getByRole('alert').textContent()).toBe('You revoked the key you were signed in with.');
      expect((await t.api.as(keeper.token).get('/v1/emails')).status).toBe(401);
    } finally {
      await own.close();
    }
  });

  it('signs out by itself when the key stops working', async () => {
    const doomed = await t.seed.key({ mode: 'test', name: 'doomed' });
    await page.goto(`${t.url}/dashboard/#/emails`);
    await signIn(doomed.token);
    await page.getByRole('heading', { name: 'Emails', level: 1 }).waitFor();
    expect((await t.api.delete(`/v1/api-keys/${doomed.id}`)).status).toBeLessThan(300);
    await page.getByRole('link', { name: 'Events', exact: true }).click();
    await page.getByLabel('API key').waitFor();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/key/i);
    expect(await storedKey()).toBeNull();
  });
});
