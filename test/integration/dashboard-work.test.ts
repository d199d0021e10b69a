import { fork } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page, Route } from 'playwright-core';
import { apiClient, startTestApp, type TestApp } from '../helpers/app.js';
import { answerDialog, launchChromium, leavingIsQuestioned, signedInDashboard } from '../helpers/browser.js';
import { until } from '../helpers/child-server.js';
import { onPostgres } from '../helpers/database.js';

// Work of many requests in the dashboard, in Chromium: an action on many
// contacts and a CSV import go on when the person opens another page, their
// progress and then their summary shown in a notice above that page, with a
// link back; the tab has the browser ask before closing while requests are still going; and
// a 429 that waiting will not lift (a send quota) stops the work at once,
// saying which limit, while the request rate's 429 is waited out.

const SCREENSHOTS = process.env.MAILROOM_SCREENSHOTS;

/** The send quota's answers, as the API gives them on a send; the contacts' routes never do, so they are stood in for. */
const DAILY_QUOTA = {
  status: 429, headers: { 'Retry-After': '16000', 'Content-Type': 'application/json' },
  body: JSON.stringify({ error: { code: 'daily_quota_exceeded', request_id: 'req_daily',
    message: 'This would exceed the daily send quota of 100 emails (100 used today, UTC); it resets at UTC midnight.' } }),
};
const MONTHLY_QUOTA = {
  status: 429, headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify({ error: { code: 'monthly_quota_exceeded', request_id: 'req_monthly',
    message: 'This would exceed the monthly send quota of 3000 emails (3000 used this month, UTC).' } }),
};

interface Contact { email: string; tags: Array<{ name: string }> }

describe('work of many requests in the dashboard, in Chromium', () => {
  let t: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    t = await startTestApp();
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** What a person sees, at 1440 and at 390 pixels wide. */
  const shots = async (page: Page, name: string) => {
    if (!SCREENSHOTS) return;
    for (const width of [1440, 390]) {
      await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
      await page.screenshot({ path: `${SCREENSHOTS}/${name}-${width}.png` });
    }
    await page.setViewportSize({ width: 1440, height: 900 });
  };
  const notices = (page: Page) => page.locator('#work .work-notice');

  /** Holds the page's calls matching `pattern` until released, counting them as they come and as they are answered. */
  const holdCalls = async (page: Page, pattern: string) => {
    let release = () => {};
    const held = new Promise<void>((resolve) => { release = resolve; });
    const counts = { calls: 0, answered: 0 };
    await page.route(pattern, async (route: Route) => {
      counts.calls++;
      await held;
      await route.continue();
      counts.answered++;
    });
    return { counts, release: () => release() };
  };

  /** Picks every contact listed and starts tagging them with `tag`; answers the selection bar. */
  const tagAllListed = async (page: Page, tag: string) => {
    await page.locator('main tbody tr').first().waitFor();
    await page.getByLabel('Select all on this page').check();
    const bar = page.getByRole('region', { name: 'Selected contacts' });
    await bar.getByLabel('Tag to add').fill(tag);
    await bar.getByRole('button', { name: 'Add tag' }).click();
    return bar;
  };

  it('goes on while another page is open, with its progress there, then its summary, and asks before the tab closes meanwhile', async () => {
    // The free plan's two requests a second make 24 contacts take several seconds: real 429s, waited out.
    const ws = await t.seed.workspace({ plan: 'free' });
    const { token } = await t.seed.key({ workspaceId: ws.id });
    const api = apiClient(t.url, token);
    const emails = Array.from({ length: 24 }, (_, i) => `slow${String(i).padStart(2, '0')}@example.com`);
    expect((await api.post('/v1/contacts/bulk', { contacts: emails.map((email) => ({ email })) })).body).toMatchObject({ created: 24 });
    const page = await signedInDashboard(browser, t.url, token, '/contacts', 'Contacts');
    try {
      const bar = await tagAllListed(page, 'spring');
      await bar.getByRole('progressbar', { name: 'Contacts done' }).waitFor();
      // On its own page the bar shows the progress: no notice besides.
      expect(await notices(page).count()).toBe(0);

      await page.getByRole('link', { name: 'Import CSV' }).click();
      await page.getByRole('heading', { name: 'Import contacts', level: 1 }).waitFor();
      const notice = notices(page);
      await notice.getByText('Tagging 24 contacts with “spring”…').waitFor();
      const bar2 = notice.getByRole('progressbar', { name: 'Contacts done' });
      expect(Number(await bar2.getAttribute('aria-valuenow'))).toBeLessThan(24);
      expect(await notice.getByRole('link', { name: 'Back to the contacts' }).getAttribute('href')).toBe('#/contacts');
      expect(await notice.getByRole('button', { name: 'Dismiss' }).count()).toBe(0);
      await shots(page, 'running');

      // Closing the tab would stop the requests: the page asks the browser to ask first.
      expect(await leavingIsQuestioned(page)).toBe(true);

      await notice.getByText('Tagging 24 contacts with “spring”: finished').waitFor({ timeout: 30_000 });
      const summary = notice.locator('.bulk-summary');
      expect(await summary.locator('p').first().textContent()).toBe('The tag “spring” was created. Tagged 24 contacts with “spring”.');
      expect(await page.locator('#work-said').textContent()).toBe('Tagging 24 contacts with “spring”: finished.');
      // Asked again while this workspace's small allowance refuses the question too.
      const tagged = async () => {
        const res = await api.get('/v1/contacts?limit=100');
        return res.status === 200 ? (res.body.data as Contact[]).filter((c) => c.tags.some((x) => x.name === 'spring')).length : res.status;
      };
      await expect.poll(tagged, { timeout: 10_000, interval: 500 }).toBe(24);
      await shots(page, 'finished');

      // The summary stays while the person moves on, until dismissed.
      await notice.getByRole('link', { name: 'Back to the contacts' }).click();
      await page.getByRole('heading', { name: 'Contacts', level: 1 }).waitFor();
      expect(await notices(page).count()).toBe(1);
      // The notice drops its link once the view it leads to is shown, which may be a moment after the heading.
      await expect.poll(() => notice.getByRole('link', { name: 'Back to the contacts' }).count(), { timeout: 5_000 }).toBe(0);
      await notice.getByRole('button', { name: 'Dismiss' }).click();
      expect(await notices(page).count()).toBe(0);

      // Nothing under way: the tab closes without asking.
      expect(await leavingIsQuestioned(page)).toBe(false);
    } finally {
      await page.close();
    }
  }, 60_000);

  it('stops an action at a send quota\'s 429 at once, saying which limit with the API\'s message, and tries no further contact', async () => {
    const emails = Array.from({ length: 10 }, (_, i) => `quota${i}@example.com`);
    expect((await t.api.post('/v1/contacts/bulk', { contacts: emails.map((email) => ({ email })) })).body).toMatchObject({ created: 10 });
    const page = await signedInDashboard(browser, t.url, t.token, '/contacts?email=quota', 'Contacts');
    let calls = 0;
    // Four at once, each held a moment; the second refused for the quota.
    await page.route('**/v1/contacts/*/tags/*', async (route: Route) => {
      calls++;
      if (calls === 2) return route.fulfill(DAILY_QUOTA);
      await new Promise((resolve) => setTimeout(resolve, 200));
      return route.continue();
    });
    try {
      await page.locator('main tbody tr').first().waitFor();
      await page.getByLabel('Select all on this page').check();
      const bar = page.getByRole('region', { name: 'Selected contacts' });
      await bar.getByLabel('Tag to add').fill('capped');
      const started = Date.now();
      await bar.getByRole('button', { name: 'Add tag' }).click();
      const summary = page.locator('#note .bulk-summary');
      await summary.waitFor();
      // Not the Retry-After's hours, nor ten tries a second apart.
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(await summary.locator('.bulk-stopped').textContent()).toBe('Stopped at the daily send quota, which waiting will not lift. '
        + 'This would exceed the daily send quota of 100 emails (100 used today, UTC); it resets at UTC midnight.');
      expect(await summary.textContent()).toContain('Tagged 3 contacts with “capped”.');
      expect(await summary.textContent()).toContain('7 contacts were not done: act on them again once the limit allows.');
      // The refused contact is among those not done, not listed as a failure of its own.
      expect(await summary.locator('.bulk-failures').count()).toBe(0);
      expect(calls).toBe(4);
      expect(await summary.getAttribute('class')).toContain('warn');
      await shots(page, 'quota-stopped');
    } finally {
      await page.close();
    }
  });

  it('signing out asks while work runs, then stops it and puts its notice away, the sign-in form alone on the page', async () => {
    const emails = Array.from({ length: 12 }, (_, i) => `leaving${String(i).padStart(2, '0')}@example.com`);
    expect((await t.api.post('/v1/contacts/bulk', { contacts: emails.map((email) => ({ email })) })).body).toMatchObject({ created: 12 });
    const page = await signedInDashboard(browser, t.url, t.token, '/contacts?email=leaving', 'Contacts');
    // The first calls held until the person has signed out; any call after them would carry on the work.
    const { counts, release } = await holdCalls(page, '**/v1/contacts/*/tags/*');
    try {
      await tagAllListed(page, 'parting');
      await page.getByRole('link', { name: 'Emails', exact: true }).click();
      await notices(page).getByText('Tagging 12 contacts with “parting”…').waitFor();
      await until('the first calls', () => (counts.calls > 0 ? true : undefined));

      // Asked as closing the tab is; declining keeps the session and the work.
      await page.getByRole('button', { name: 'Sign out' }).click();
      expect(await answerDialog(page, 'Go back')).toBe('Sign out while work is under way?\nWork is still under way in this tab. Signing out stops it where it is.');
      expect(await notices(page).count()).toBe(1);
      expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(1);

      await page.getByRole('button', { name: 'Sign out' }).click();
      await answerDialog(page, 'Sign out');
      await page.getByRole('heading', { name: 'Mailroom dashboard' }).waitFor();
      expect(await notices(page).count()).toBe(0);
      expect(await leavingIsQuestioned(page)).toBe(false);
      await shots(page, 'signed-out');

      const inFlight = counts.calls;
      release();
      await until('the calls under way to be answered', () => (counts.answered === inFlight ? true : undefined));
      // Answered once more by the page itself, after the workers have taken their next turn.
      await page.evaluate(() => new Promise((resolve) => setTimeout(resolve)));
      expect(counts.calls).toBe(inFlight);
      expect(inFlight).toBeLessThan(12);
      expect(await notices(page).count()).toBe(0);
      expect(await page.locator('#work-said').textContent()).toBe('');
    } finally {
      await page.close();
    }
  });

  it('puts away the sign-out question when the session ends under it, the sign-in form alone on the page', async () => {
    const emails = Array.from({ length: 4 }, (_, i) => `ending${i}@example.com`);
    expect((await t.api.post('/v1/contacts/bulk', { contacts: emails.map((email) => ({ email })) })).body).toMatchObject({ created: 4 });
    const key = await t.seed.key({ name: 'revoked while asking' });
    const page = await signedInDashboard(browser, t.url, key.token, '/contacts?email=ending', 'Contacts');
    const { release } = await holdCalls(page, '**/v1/contacts/*/tags/*');
    try {
      await tagAllListed(page, 'ending');
      await page.getByRole('link', { name: 'Emails', exact: true }).click();
      await notices(page).getByText('Tagging 4 contacts').waitFor();
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('dialog').waitFor();
      // The key is revoked elsewhere; the held calls are answered 401, which ends the session.
      expect((await t.api.delete(`/v1/api-keys/${key.id}`)).status).toBe(204);
      release();
      await page.getByRole('heading', { name: 'Mailroom dashboard' }).waitFor();
      expect(await page.getByRole('alert').textContent()).toBe('The API key is not valid.');
      expect(await page.getByRole('dialog').count()).toBe(0);
      await expect.poll(() => page.locator('dialog').count()).toBe(0);
      expect(await notices(page).count()).toBe(0);
    } finally {
      await page.close();
    }
  });

  it('back on the contacts while an action or an import runs, the controls that would start it again are disabled, saying why', async () => {
    const emails = Array.from({ length: 6 }, (_, i) => `twice${i}@example.com`);
    expect((await t.api.post('/v1/contacts/bulk', { contacts: emails.map((email) => ({ email })) })).body).toMatchObject({ created: 6 });
    const page = await signedInDashboard(browser, t.url, t.token, '/contacts?email=twice', 'Contacts');
    // The calls held until the person has come back and seen the controls held.
    const { release } = await holdCalls(page, '**/v1/contacts/*/tags/*');
    try {
      const bar = await tagAllListed(page, 'once');
      await page.getByRole('link', { name: 'Emails', exact: true }).click();
      const notice = notices(page);
      await notice.getByRole('link', { name: 'Back to the contacts' }).click();
      await page.locator('main tbody tr').first().waitFor();
      // Its progress shows in the notice on the page it started on, now that the view has been drawn anew.
      expect(await notice.getByText('Tagging 6 contacts with “once”…').count()).toBe(1);
      // Already on the contacts: no link back to them.
      expect(await notice.getByRole('link').count()).toBe(0);
      await page.getByLabel('Select all on this page').check();
      for (const name of ['Add tag', 'Remove tag', 'Unsubscribe', 'Delete']) expect(await bar.getByRole('button', { name }).isDisabled()).toBe(true);
      const why = bar.getByRole('note');
      expect(await why.textContent()).toBe('Tagging 6 contacts with “once” is still under way: see its progress. Start again once it has ended.');
      await shots(page, 'held-bulk');
      release();
      await notice.getByText('Tagging 6 contacts with “once”: finished').waitFor();
      expect(await bar.getByRole('button', { name: 'Add tag' }).isEnabled()).toBe(true);
      expect(await why.count()).toBe(0);
      await notice.getByRole('button', { name: 'Dismiss' }).click();
      await page.unroute('**/v1/contacts/*/tags/*');

      const { release: releaseImport } = await holdCalls(page, '**/v1/contacts/bulk');
      const readPasted = async () => {
        await page.getByText('Or paste the text').click();
        await page.getByLabel('CSV text').fill('email\ntwice9@example.com\n');
        await page.getByRole('button', { name: 'Read the text' }).click();
      };
      await page.goto(`${t.url}/dashboard/#/contacts/import`);
      await readPasted();
      await page.getByRole('button', { name: 'Import 1 contact' }).click();
      await page.getByRole('link', { name: '← All contacts' }).click();
      await page.getByRole('link', { name: 'Import CSV' }).click();
      await readPasted();
      expect(await page.getByRole('button', { name: 'Import 1 contact' }).isDisabled()).toBe(true);
      expect(await page.locator('.import-actions').getByRole('note').textContent())
        .toBe('Importing 1 contact is still under way: see its progress. Start again once it has ended.');
      await shots(page, 'held-import');
      releaseImport();
      await notice.getByText('Importing 1 contact: finished').waitFor();
      expect(await page.getByRole('button', { name: 'Import 1 contact' }).isEnabled()).toBe(true);
    } finally {
      await page.close();
    }
  });

  // Another process holding the SQLite file's write lock past busy_timeout (5 s) makes the API answer 503
  // store_unavailable with Retry-After: 5, as a PostgreSQL restart would.
  it.skipIf(onPostgres)('waits out a 503 of a store briefly unavailable, saying so, then goes on', async () => {
    const file = t.databaseUrl.replace(/^sqlite:/, '');
    const page = await signedInDashboard(browser, t.url, t.token, '/contacts/import', 'Import contacts');
    const holder = fork(resolve(import.meta.dirname, '../helpers/sqlite-lock-holder.ts'), [file, '7000'], { execArgv: ['--import', 'tsx'], stdio: 'ignore' });
    const exited = new Promise((r) => holder.once('exit', r));
    try {
      await new Promise<void>((resolve, reject) => {
        holder.once('message', () => resolve());
        holder.once('exit', (code) => reject(new Error(`the lock holder exited (${code}) before it held the lock`)));
      });
      await page.getByText('Or paste the text').click();
      await page.getByLabel('CSV text').fill('email\nheld1@example.com\nheld2@example.com\n');
      await page.getByRole('button', { name: 'Read the text' }).click();
      await page.getByRole('button', { name: 'Import 2 contacts' }).click();
      const held = page.locator('.import-actions .progress-held');
      await held.waitFor({ timeout: 15_000 });
      expect(await held.textContent()).toBe('The server\'s store is briefly unavailable: trying again in 5 s (wait 1 of 4).');
      await page.getByRole('link', { name: 'Emails', exact: true }).click();
      const notice = notices(page);
      expect(await notice.locator('.progress-held').textContent()).toBe('The server\'s store is briefly unavailable: trying again in 5 s (wait 1 of 4).');
      await shots(page, 'store-wait');
      await notice.getByText('Importing 2 contacts: finished').waitFor({ timeout: 30_000 });
      expect(await notice.locator('[data-stat="created"] .stat-value').textContent()).toBe('2');
      await notice.getByRole('button', { name: 'Dismiss' }).click();
    } finally {
      holder.kill();
      await exited;
      await page.close();
    }
  }, 60_000);

  it('finishes an import while another page is open, and stops an import at the monthly quota with its message', async () => {
    const page = await signedInDashboard(browser, t.url, t.token, '/contacts/import', 'Import contacts');
    try {
      // The bulk request held until the person has left the page.
      const { release } = await holdCalls(page, '**/v1/contacts/bulk');
      await page.getByText('Or paste the text').click();
      await page.getByLabel('CSV text').fill('email,name\naway1@example.com,Ann\naway2@example.com,Bo\nnot an address,Cy\n');
      await page.getByRole('button', { name: 'Read the text' }).click();
      await page.getByRole('button', { name: 'Import 3 contacts' }).click();
      await page.getByRole('progressbar', { name: 'Rows imported' }).waitFor();
      await page.getByRole('link', { name: 'Emails', exact: true }).click();
      const notice = notices(page);
      await notice.getByText('Importing 3 contacts…').waitFor();
      release();
      await notice.getByText('Importing 3 contacts: finished').waitFor();
      expect(await notice.locator('[data-stat="created"] .stat-value').textContent()).toBe('2');
      expect(await notice.locator('[data-stat="failed"] .stat-value').textContent()).toBe('1');
      expect(await notice.locator('tbody tr td').first().textContent()).toBe('4');
      expect(await notice.getByRole('link', { name: 'See the contacts' }).getAttribute('href')).toBe('#/contacts');
      await shots(page, 'import-finished');
      await notice.getByRole('button', { name: 'Dismiss' }).click();
      await page.unroute('**/v1/contacts/bulk');

      let calls = 0;
      await page.route('**/v1/contacts/bulk', (route: Route) => {
        calls++;
        return route.fulfill(MONTHLY_QUOTA);
      });
      await page.goto(`${t.url}/dashboard/#/contacts/import`);
      await page.getByText('Or paste the text').click();
      await page.getByLabel('CSV text').fill('email\nmonth1@example.com\n');
      await page.getByRole('button', { name: 'Read the text' }).click();
      await page.getByRole('button', { name: 'Import 1 contact' }).click();
      const summary = page.locator('.import-summary');
      await summary.waitFor();
      expect(await summary.locator('h2').textContent()).toBe('Import stopped');
      expect(await summary.getByRole('alert').textContent()).toBe('Stopped at the monthly send quota, which waiting will not lift. '
        + 'This would exceed the monthly send quota of 3000 emails (3000 used this month, UTC).');
      expect(await summary.textContent()).toContain('Import the file again to finish once the limit allows');
      expect(calls).toBe(1);
      expect(await notices(page).count()).toBe(0);
    } finally {
      await page.close();
    }
  });
});
