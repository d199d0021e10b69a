import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ACTIVE_DOMAIN_CACHE_MS } from '../../src/emails/sender-cache.js';
import { SENDING_ENV, startTestApp, type TestApp } from '../helpers/app.js';
import { answerDialog, launchChromium, noteSays, openView, signedInDashboard } from '../helpers/browser.js';
import { until } from '../helpers/child-server.js';

// Acting from the dashboard in Chromium, each action checked through the API
// and each refusal shown beside its field or button: an email resent and
// rescheduled (in a browser zone with a half-hour offset), a domain's
// settings changed, its DKIM key rotated and the domain deleted, an address
// suppressed and found, and an API key made with chosen scopes, with its
// activity on its own page.

const SCREENSHOTS = process.env.MAILROOM_SCREENSHOTS;
/** The browser's zone in the emails test: +05:30, so a time sent without its offset would be hours off. */
const ZONE = 'Asia/Kolkata';
const ZONE_OFFSET_MS = 5.5 * 3600_000;
const DAY = 86_400_000;

interface DomainRecord { record: string; name: string; key_state?: string }

describe('operating the dashboard in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    t = await startTestApp();
    await t.seed.activeDomain('acme.test');
    browser = await launchChromium();
    page = await signedInDashboard(browser, t.url, t.token, '/emails', 'Emails');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const shot = async (on: Page, name: string) => {
    if (SCREENSHOTS) await on.screenshot({ path: `${SCREENSHOTS}/${name}.png`, fullPage: true });
  };
  const open = (on: Page, route: string, heading: string | RegExp) => openView(on, t.url, route, heading);
  const send = async (extra: Record<string, unknown> = {}) => {
    const res = await t.api.post('/v1/emails', { from: 'Ann <ann@acme.test>', to: ['delivered@mailroom.test'], subject: 'Your receipt', text: 'Thanks.', ...extra });
    expect(res.status).toBe(201);
    return res.body as { id: string; scheduled_at: string | null };
  };

  describe('an email', () => {
    /** A page whose clock reads the zone's time: the input shows it, and the API must get the same instant. */
    let zoned: Page;

    beforeAll(async () => {
      zoned = await signedInDashboard(browser, t.url, t.token, '/emails', 'Emails', { timezoneId: ZONE });
    });

    it('is resent as a new email, which the page goes to', async () => {
      const sent = await send();
      await t.mailroom.delivery.drain();
      await open(page, `/emails/${sent.id}`, 'Your receipt');
      expect(await page.getByRole('button', { name: 'Cancel' }).count()).toBe(0);
      await page.getByRole('button', { name: 'Resend' }).click();
      expect(await answerDialog(page, 'Resend')).toBe(
        'Send this email again?\n“Your receipt” to 1 recipient goes out again, as a new email; each recipient gets it a second time.');
      await noteSays(page, 'Resent: this is the new email');
      const copyId = decodeURIComponent(new URL(page.url()).hash.replace('#/emails/', ''));
      expect(copyId).not.toBe(sent.id);
      expect((await t.api.get(`/v1/emails/${copyId}`)).body).toMatchObject({ resent_from: sent.id, subject: 'Your receipt' });
      await page.locator('dl.details').getByRole('link', { name: sent.id }).waitFor();
      await shot(page, 'email-resent');
    });

    it('is cancelled only once the question is answered', async () => {
      const scheduled = await send({ scheduled_at: 'in 2 days' });
      await open(page, `/emails/${scheduled.id}`, 'Your receipt');
      // Its recipient waits as the email does: scheduled, not queued.
      expect(await page.locator('main table').first().locator('td[data-label="Status"]').textContent()).toBe('scheduled');
      await page.getByRole('button', { name: 'Cancel', exact: true }).click();
      expect(await answerDialog(page, 'Go back')).toBe(
        'Cancel this email?\n“Your receipt” to 1 recipient is not sent.\n\nThis cannot be undone; a resend would make a new email.');
      expect((await t.api.get(`/v1/emails/${scheduled.id}`)).body.status).toBe('scheduled');
      await page.getByRole('button', { name: 'Cancel', exact: true }).click();
      await answerDialog(page, 'Cancel the email');
      await noteSays(page, 'The email was cancelled.');
      expect((await t.api.get(`/v1/emails/${scheduled.id}`)).body.status).toBe('cancelled');
    });

    it('is rescheduled at the time chosen in the browser\'s zone, and refused a time in the past or too far ahead', async () => {
      const scheduled = await send({ scheduled_at: 'in 2 days' });
      await open(zoned, `/emails/${scheduled.id}`, 'Your receipt');
      const input = zoned.getByLabel('Send at');
      // The schedule's time as the zone reads it, to the minute.
      const local = new Date(Date.parse(scheduled.scheduled_at!) + ZONE_OFFSET_MS).toISOString().slice(0, 16);
      expect(await input.inputValue()).toBe(local);
      expect(await zoned.getByText(/In your time zone \(Asia\/(Kolkata|Calcutta)\)/).count()).toBe(1);
      await shot(zoned, 'email-scheduled');
      // Left as shown, the time keeps its seconds, which the input does not show.
      await zoned.getByRole('button', { name: 'Reschedule' }).click();
      await noteSays(zoned, 'The email is rescheduled for');
      expect((await t.api.get(`/v1/emails/${scheduled.id}`)).body.scheduled_at).toBe(scheduled.scheduled_at);

      const target = new Date(Date.now() + 3 * DAY);
      const wanted = `${target.toISOString().slice(0, 10)}T09:30`;
      await input.fill(wanted);
      await zoned.getByRole('button', { name: 'Reschedule' }).click();
      // The first reschedule's note reads the same until the page is drawn again: wait for the new time itself.
      const movedTo = new Date(Date.parse(`${wanted}:00Z`) - ZONE_OFFSET_MS).toISOString();
      await expect.poll(async () => (await t.api.get(`/v1/emails/${scheduled.id}`)).body.scheduled_at).toBe(movedTo);
      await noteSays(zoned, 'The email is rescheduled for');
      const moved = (await t.api.get(`/v1/emails/${scheduled.id}`)).body;
      expect(moved).toMatchObject({ status: 'scheduled', scheduled_at: movedTo });
      await expect.poll(() => zoned.getByLabel('Send at').inputValue()).toBe(wanted);

      const slot = zoned.locator('.field-error[data-field="scheduled_at"]');
      await zoned.getByLabel('Send at').fill(`${new Date(Date.now() - 2 * DAY).toISOString().slice(0, 10)}T09:30`);
      await zoned.getByRole('button', { name: 'Reschedule' }).click();
      await slot.getByRole('alert').filter({ hasText: 'is in the past' }).waitFor();
      await zoned.getByLabel('Send at').fill(`${new Date(Date.now() + 40 * DAY).toISOString().slice(0, 10)}T09:30`);
      await zoned.getByRole('button', { name: 'Reschedule' }).click();
      await slot.getByRole('alert').filter({ hasText: 'more than 30 days ahead' }).waitFor();
      await shot(zoned, 'email-reschedule-refused');
      expect((await t.api.get(`/v1/emails/${scheduled.id}`)).body.scheduled_at).toBe(moved.scheduled_at);
    });

    it('is rescheduled from pending, before delivery has taken it, as the API allows', async () => {
      // New emails held as pending an hour, so that delivery does not take this one first.
      await using held = await startTestApp({ env: { MAILROOM_SEND_DELAY: '3600' } });
      await held.seed.activeDomain('acme.test');
      const res = await held.api.post('/v1/emails', { from: 'ann@acme.test', to: ['delivered@mailroom.test'], subject: 'Held back', text: 'Hi.' });
      expect(res.body.status).toBe('pending');
      const heldPage = await signedInDashboard(browser, held.url, held.token, `/emails/${res.body.id}`, 'Held back');
      try {
        // Offered an hour from now.
        expect(await heldPage.getByLabel('Send at').inputValue()).not.toBe('');
        await heldPage.getByRole('button', { name: 'Reschedule' }).click();
        await noteSays(heldPage, 'The email is rescheduled for');
        expect((await held.api.get(`/v1/emails/${res.body.id}`)).body.status).toBe('scheduled');
        await shot(heldPage, 'email-pending-rescheduled');
        await heldPage.setViewportSize({ width: 390, height: 844 });
        await shot(heldPage, 'email-pending-rescheduled-390');
      } finally {
        await heldPage.close();
      }
    });

    it('offers no reschedule once an email is no longer scheduled', async () => {
      const sent = await send();
      await t.mailroom.delivery.drain();
      await open(page, `/emails/${sent.id}`, 'Your receipt');
      await page.getByRole('button', { name: 'Resend' }).waitFor();
      expect(await page.getByLabel('Send at').count()).toBe(0);
    });
  });

  describe('an email from a domain the workspace no longer has', () => {
    // Sending for real (to a relay that is not there), where the from domain must be an active one of the workspace.
    let live: TestApp;
    let livePage: Page;

    beforeAll(async () => {
      live = await startTestApp({ env: SENDING_ENV });
      await live.seed.activeDomain('acme.test');
      const gone = await live.seed.activeDomain('gone.test');
      const sent = await live.api.post('/v1/emails', { from: 'ann@gone.test', to: ['someone@example.org'], subject: 'Old news', text: 'Hi.' });
      expect(sent.status).toBe(201);
      await until('the email sent', async () => (await live.api.get(`/v1/emails/${sent.body.id}`)).body.status === 'sent');
      expect((await live.api.delete(`/v1/domains/${gone.id}`)).status).toBe(204);
      livePage = await signedInDashboard(browser, live.url, live.token, `/emails/${sent.body.id}`, 'Old news');
    });

    afterAll(async () => {
      await livePage?.close();
      await live?.close();
    });

    it('shows beside Resend why it cannot be resent', async () => {
      // Past the moment the sending domain is remembered as active.
      await new Promise((r) => setTimeout(r, ACTIVE_DOMAIN_CACHE_MS + 100));
      await livePage.getByRole('button', { name: 'Resend' }).click();
      await answerDialog(livePage, 'Resend');
      const alert = livePage.locator('.actions', { has: livePage.getByRole('button', { name: 'Resend' }) }).getByRole('alert');
      await alert.filter({ hasText: "The domain 'gone.test' of 'from' is not a domain of this workspace" }).waitFor();
      await shot(livePage, 'email-resend-refused');
      expect((await live.api.get('/v1/emails')).body.data).toHaveLength(1);
    });
  });

  describe('a domain', () => {
    let owner: Page;
    let token: string;
    let keep: { id: string };
    let other: { id: string };

    beforeAll(async () => {
      // A workspace of its own: deleting its domains leaves the others' sending alone.
      const ws = await t.seed.workspace();
      token = (await t.seed.key({ workspaceId: ws.id, name: 'domains' })).token;
      keep = await t.seed.activeDomain('keep.example', { workspaceId: ws.id });
      other = await t.seed.activeDomain('other.example', { workspaceId: ws.id });
      owner = await signedInDashboard(browser, t.url, token, `/domains/${keep.id}`, 'keep.example');
    });

    const domain = async (id: string) => (await t.api.as(token).get(`/v1/domains/${id}`)).body;

    it('saves its tracking and inbound settings, and says which records that adds', async () => {
      expect(await owner.getByLabel('Open tracking').isChecked()).toBe(false);
      await owner.getByLabel('Open tracking').check();
      await owner.getByLabel('Inbound mail').check();
      await owner.getByLabel('Tracking subdomain').fill('links');
      await owner.getByRole('button', { name: 'Save settings' }).click();
      await noteSays(owner, 'The settings were saved. An MX record for keep.example was added below. A CNAME record for links.keep.example was added below. Publish them at your DNS provider, then press Verify.');
      expect(await domain(keep.id)).toMatchObject({ open_tracking: true, click_tracking: false, inbound_enabled: true, tracking_subdomain: 'links' });
      await owner.locator('tbody tr', { hasText: 'Inbound MX' }).waitFor();
      expect(await owner.getByLabel('Open tracking').isChecked()).toBe(true);
      await shot(owner, 'domain-settings');
    });

    it('shows beside the field a tracking subdomain the API refuses', async () => {
      await owner.getByLabel('Tracking subdomain').fill('bounces');
      await owner.getByRole('button', { name: 'Save settings' }).click();
      await owner.locator('.field-error[data-field="tracking_subdomain"]').getByRole('alert').waitFor();
      expect((await domain(keep.id)).tracking_subdomain).toBe('links');
    });

    it('rotates its DKIM key after saying what that does, lists the new records, and refuses a second rotation', async () => {
      await owner.getByRole('button', { name: 'Rotate DKIM key' }).click();
      const dialog = owner.getByRole('dialog');
      await dialog.getByText('Nothing changes for mail until the new RSA record is seen in DNS').waitFor();
      // Escape declines; the button has the focus back, usable.
      await owner.keyboard.press('Escape');
      await dialog.waitFor({ state: 'detached' });
      expect(await owner.locator(':focus').textContent()).toBe('Rotate DKIM key');
      expect(await owner.getByRole('button', { name: 'Rotate DKIM key' }).isEnabled()).toBe(true);
      await owner.getByRole('button', { name: 'Rotate DKIM key' }).click();
      await dialog.getByText('Nothing changes for mail until the new RSA record is seen in DNS').waitFor();
      await shot(owner, 'domain-rotate-question');
      await dialog.getByRole('button', { name: 'Make a new key' }).click();
      await noteSays(owner, 'A new DKIM key pair was made');
      const pending = (await domain(keep.id)).records.filter((r: DomainRecord) => r.key_state === 'pending');
      expect(pending.map((r: DomainRecord) => r.record).sort()).toEqual(['DKIM', 'DKIM_ED25519']);
      for (const r of pending) await owner.locator('tbody tr', { hasText: r.name }).filter({ hasText: 'new key' }).waitFor();
      await shot(owner, 'domain-rotated');

      await owner.getByRole('button', { name: 'Rotate DKIM key' }).click();
      await owner.getByRole('dialog').getByRole('button', { name: 'Make a new key' }).click();
      await owner.getByRole('alert').filter({ hasText: 'already waiting for its DNS record' }).waitFor();
    });

    it('is deleted after a question that says what stops working, and the last active one is refused', async () => {
      await open(owner, `/domains/${other.id}`, 'other.example');
      await owner.getByRole('button', { name: 'Delete' }).click();
      const dialog = owner.getByRole('dialog');
      await dialog.getByText('Email from addresses at other.example can no longer be sent with a live key').waitFor();
      // Going back does nothing.
      await dialog.getByRole('button', { name: 'Go back' }).click();
      expect((await t.api.as(token).get(`/v1/domains/${other.id}`)).status).toBe(200);
      await owner.getByRole('button', { name: 'Delete' }).click();
      await owner.getByRole('dialog').getByRole('button', { name: 'Delete the domain' }).click();
      await noteSays(owner, 'other.example was deleted.');
      expect((await t.api.as(token).get(`/v1/domains/${other.id}`)).status).toBe(404);

      await open(owner, `/domains/${keep.id}`, 'keep.example');
      await owner.getByRole('button', { name: 'Delete' }).click();
      await owner.getByRole('dialog').getByText('Mail to keep.example is no longer received here.').waitFor();
      await owner.getByRole('dialog').getByRole('button', { name: 'Delete the domain' }).click();
      await owner.getByRole('alert').filter({ hasText: 'only active domain of the workspace' }).waitFor();
      await shot(owner, 'domain-delete-refused');
      expect((await t.api.as(token).get(`/v1/domains/${keep.id}`)).status).toBe(200);
    });
  });

  describe('the suppressions', () => {
    it('suppress an address added by hand, found by address and by reason', async () => {
      for (const email of ['first@example.org', 'second@example.org']) expect((await t.api.post('/v1/suppressions', { email })).status).toBe(201);
      await open(page, '/suppressions', 'Suppressions');
      await page.getByLabel('Email address').fill('  Someone@Example.org ');
      await page.getByRole('button', { name: 'Suppress' }).click();
      await noteSays(page, 'someone@example.org is suppressed');
      // The list is filtered to it.
      await page.waitForFunction(() => (globalThis as unknown as { document: { querySelectorAll(s: string): { length: number } } }).document.querySelectorAll('main tbody tr').length === 1);
      expect(await page.getByLabel('Address', { exact: true }).inputValue()).toBe('someone@example.org');
      const [added] = (await t.api.get('/v1/suppressions?email=someone@example.org')).body.data;
      expect(added).toMatchObject({ email: 'someone@example.org', reason: 'manual' });
      await shot(page, 'suppressions');

      await open(page, '/suppressions', 'Suppressions');
      await page.getByLabel('Address', { exact: true }).fill('second@example.org');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.waitForFunction(() => (globalThis as unknown as { location: { hash: string } }).location.hash.includes('email='));
      // The unfiltered list holds the address too: wait for the filtered one.
      await expect.poll(() => page.locator('main tbody tr').count()).toBe(1);
      await page.locator('main tbody tr', { hasText: 'second@example.org' }).waitFor();

      const contact = (await t.api.post('/v1/contacts', { email: 'leaving@example.org' })).body;
      expect((await t.api.post(`/v1/contacts/${contact.id}/unsubscribe`, {})).status).toBe(200);
      await open(page, '/suppressions', 'Suppressions');
      await page.getByLabel('Reason').selectOption({ label: 'Unsubscribe' });
      await page.getByRole('button', { name: 'Search' }).click();
      await page.waitForFunction(() => (globalThis as unknown as { location: { hash: string } }).location.hash.includes('reason=unsubscribe'));
      await expect.poll(() => page.locator('main tbody tr').count()).toBe(1);
      await page.locator('main tbody tr', { hasText: 'leaving@example.org' }).waitFor();
    });

    it('keep their filters in the address through a reload, and say which one the API refused', async () => {
      await open(page, '/suppressions', 'Suppressions');
      await page.getByLabel('Reason').selectOption({ label: 'Added by hand' });
      await page.getByLabel('Address', { exact: true }).fill('first@example.org');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.waitForURL(/#\/suppressions\?email=first%40example\.org&reason=manual$/);
      await expect.poll(() => page.locator('main tbody tr').allTextContents()).toEqual([expect.stringContaining('first@example.org')]);
      await page.reload();
      await expect.poll(() => page.locator('main tbody tr').allTextContents()).toEqual([expect.stringContaining('first@example.org')]);
      expect(await page.getByLabel('Reason').inputValue()).toBe('manual');
      expect(await page.getByLabel('Address', { exact: true }).inputValue()).toBe('first@example.org');

      await open(page, '/suppressions?reason=bounced&email=first%40example.org', 'Suppressions');
      await expect.poll(() => page.locator('main .error-box').first().textContent())
        .toMatch(/^The Reason filter was refused: 'reason' must be one of: .*hard_bounce/);
      expect(await page.getByLabel('Reason').inputValue()).toBe('bounced');
      expect(await page.getByLabel('Reason').getAttribute('aria-invalid')).toBe('true');
      expect(await page.getByLabel('Address', { exact: true }).getAttribute('aria-invalid')).toBeNull();
      await page.getByRole('link', { name: 'Show the list without filters' }).click();
      await page.waitForURL(/#\/suppressions$/);
      await expect.poll(() => page.locator('main tbody tr').count()).toBeGreaterThan(1);
      expect(await page.locator('main .error-box').count()).toBe(0);
    });

    it('show beside the address why it cannot be suppressed', async () => {
      await open(page, '/suppressions', 'Suppressions');
      const slot = page.locator('.field-error[data-field="email"]');
      await page.getByLabel('Email address').fill('not an address');
      await page.getByRole('button', { name: 'Suppress' }).click();
      await slot.getByRole('alert').filter({ hasText: 'is not a valid email address' }).waitFor();
      await page.getByLabel('Email address').fill('first@example.org');
      await page.getByRole('button', { name: 'Suppress' }).click();
      await slot.getByRole('alert').filter({ hasText: 'first@example.org is already suppressed' }).waitFor();
      await shot(page, 'suppressions-refused');
      await slot.getByRole('link', { name: 'Show it in the list' }).click();
      // The list before the link holds the address too: only the filtered one, drawn anew, has it alone.
      await page.waitForURL(/#\/suppressions\?email=first%40example\.org$/);
      await expect.poll(() => page.locator('main tbody tr').allTextContents()).toEqual([expect.stringContaining('first@example.org')]);
    });
  });

  describe('the API keys', () => {
    it('create a key with the scopes chosen', async () => {
      await open(page, '/api-keys', 'API keys');
      expect(await page.getByRole('radio', { name: 'Full access' }).isChecked()).toBe(true);
      expect(await page.getByLabel('domains:read').isHidden()).toBe(true);
      await page.getByLabel('Key name').fill('reporting');
      await page.getByRole('radio', { name: 'Custom' }).check();
      await page.getByLabel('emails:read').check();
      await page.getByLabel('analytics:read').check();
      await shot(page, 'api-keys-create');
      await page.getByRole('button', { name: 'Create key' }).click();
      await noteSays(page, 'Key “reporting” created');
      const keys = (await t.api.get('/v1/api-keys')).body.data as Array<{ name: string; scopes: string[] }>;
      expect(keys.find((k) => k.name === 'reporting')?.scopes.sort()).toEqual(['analytics:read', 'emails:read']);
    });

    it('show beside the scopes why a key cannot be made without one', async () => {
      await open(page, '/api-keys', 'API keys');
      await page.getByLabel('Key name').fill('nothing');
      await page.getByRole('radio', { name: 'Custom' }).check();
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.locator('.field-error[data-field="scopes"]').getByRole('alert').waitFor();
      await shot(page, 'api-keys-refused');
      const keys = (await t.api.get('/v1/api-keys')).body.data as Array<{ name: string }>;
      expect(keys.some((k) => k.name === 'nothing')).toBe(false);
    });

    it('open a key\'s page from the list, with its activity linking to what it acted on', async () => {
      const sent = await send({ subject: 'Activity' });
      await open(page, '/api-keys', 'API keys');
      await page.getByRole('link', { name: 'harness', exact: true }).click();
      await page.getByRole('heading', { name: 'harness', level: 1 }).waitFor();
      const row = page.locator('main tbody tr', { hasText: 'createEmail' }).first();
      await row.waitFor();
      expect(await row.textContent()).toContain('POST /v1/emails');
      expect(await row.textContent()).toContain('201');
      await shot(page, 'api-key');
      await row.getByRole('link', { name: sent.id }).click();
      await page.getByRole('heading', { name: 'Activity', level: 1 }).waitFor();
    });

    it('page through a key\'s activity', async () => {
      const { id, token } = await t.seed.key({ name: 'busy' });
      const busy = t.api.as(token);
      for (let i = 0; i < 27; i++) expect((await busy.post('/v1/suppressions', { email: `busy${i}@example.org` })).status).toBe(201);
      await open(page, `/api-keys/${id}`, 'busy');
      await page.locator('main tbody tr').first().waitFor();
      expect(await page.locator('main tbody tr').count()).toBe(25);
      await page.getByRole('button', { name: 'Older' }).click();
      await page.waitForFunction(() => (globalThis as unknown as { document: { querySelectorAll(s: string): { length: number } } }).document.querySelectorAll('main tbody tr').length === 2);
      expect(await page.locator('main tbody tr').last().textContent()).toContain('createSuppression');
    });
  });
});
