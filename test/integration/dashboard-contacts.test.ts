import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { answerDialog, desktopAndPhoneShots, launchChromium, noteSays, signedInDashboard } from '../helpers/browser.js';

// The Contacts view in Chromium: the list and its filters, a contact added
// after the API refused its address, a CSV file imported through the bulk API
// with a bad row named by its line, a contact's tags added and removed, its
// name edited, unsubscribed and deleted; and the tags' own page.

interface Contact { id: string; email: string; name: string | null; status: string; tags: Array<{ id: string; name: string }>; properties: Record<string, unknown> }

const FIRST = ['Ann', 'Bob', 'Cy', 'Dee', 'Eli', 'Fay', 'Gus', 'Hal', 'Ida', 'Jo'];
const LAST = ['Lee', 'Stone', 'Young'];
/** Thirty readers: every third tagged news, every fifteenth also vip, every fourth with a company and a plan. */
const READERS = Array.from({ length: 30 }, (_, i) => ({
  email: `${FIRST[i % 10].toLowerCase()}.${LAST[i % 3].toLowerCase()}${i}@example.com`, name: `${FIRST[i % 10]} ${LAST[i % 3]}`,
  ...(i % 3 === 0 && { tags: i % 5 === 0 ? ['news', 'vip'] : ['news'] }),
  ...(i % 4 === 0 && { properties: { company: `Company ${i}`, plan: i % 8 === 0 ? 'pro' : 'free' } }),
}));
/** Every seventh of them, from the second. */
const UNSUBSCRIBED = READERS.filter((_, i) => i % 7 === 1).map((r) => r.email);

describe('the Contacts view in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailroom-contacts-'));
    t = await startTestApp();
    const bulk = await t.api.post('/v1/contacts/bulk', { contacts: READERS });
    expect(bulk.body).toMatchObject({ created: 30, failed: 0 });
    for (const email of UNSUBSCRIBED) {
      const contact = (await t.api.get(`/v1/contacts?email=${email}`)).body.data[0] as Contact;
      expect((await t.api.post(`/v1/contacts/${contact.id}/unsubscribe`, {})).status).toBe(200);
    }

    browser = await launchChromium();
    page = await signedInDashboard(browser, t.url, t.token, '/contacts', 'Contacts');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const rows = () => page.locator('main tbody tr');
  /** Waits for the list's rows, or its empty note, after a search. */
  const listed = async () => {
    await page.waitForFunction(() => !(globalThis as unknown as { document: { body: { textContent: string } } }).document.body.textContent.includes('Loading…'));
    return page.locator('main tbody tr td.cell-primary').allTextContents();
  };
  const contactByEmail = async (email: string) =>
    ((await t.api.get(`/v1/contacts?email=${encodeURIComponent(email)}`)).body.data as Contact[]).find((c) => c.email === email);
  const shots = (name: string, scrolledTo?: string) => desktopAndPhoneShots(page, name, scrolledTo);

  it('lists the contacts with status, engagement and tags, and filters them, the filters kept in the address', async () => {
    await page.getByRole('link', { name: 'Contacts', exact: true }).click();
    await expect.poll(async () => (await listed()).length).toBe(25);
    await page.getByRole('button', { name: 'Older' }).waitFor();
    const row = rows().filter({ hasText: 'fay.lee15@example.com' });
    expect(await row.locator('td.cell-status').textContent()).toBe('unsubscribed');
    expect(await row.locator('.tag').allTextContents()).toEqual(['news', 'vip']);
    await shots('list');

    await page.getByLabel('Address', { exact: true }).fill('LEE');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/email=LEE/);
    await expect.poll(async () => (await listed()).filter((e) => e.includes('lee')).length).toBe(10);
    expect(await listed()).toHaveLength(10);

    await page.getByLabel('Address', { exact: true }).fill('');
    await page.getByLabel('Status', { exact: true }).selectOption('unsubscribed');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/status=unsubscribed/);
    await expect.poll(async () => (await listed()).sort()).toEqual([...UNSUBSCRIBED].sort());

    await page.getByLabel('Status', { exact: true }).selectOption('');
    await page.getByLabel('Tag', { exact: true }).selectOption({ label: 'vip' });
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/tag_id=tag_/);
    await expect.poll(async () => (await listed()).sort()).toEqual(['ann.lee0@example.com', 'fay.lee15@example.com']);
    // Reloaded, the page keeps its filters.
    await page.reload();
    expect(await page.getByLabel('Tag', { exact: true }).locator('option:checked').textContent()).toBe('vip');
    await expect.poll(async () => (await listed()).length).toBe(2);

    await page.getByLabel('Tag', { exact: true }).selectOption('');
    await page.getByLabel('Engagement').selectOption('engaged');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.locator('p.empty', { hasText: 'No contacts match these filters.' }).waitFor();
    await page.locator('p.empty').getByRole('link', { name: 'Show all contacts' }).click();
    await rows().nth(24).waitFor();
    expect(page.url()).toMatch(/#\/contacts$/);
  });

  it('narrows the list to the contacts created in a range chosen in the browser\'s zone', async () => {
    await page.goto(`${t.url}/dashboard/#/contacts`);
    await expect.poll(async () => (await listed()).length).toBe(25);
    await page.getByLabel('Created after').fill('2099-01-01T00:00');
    await page.getByRole('button', { name: 'Search' }).click();
    // Sent with the browser's offset, as the person read the time.
    await page.waitForURL(/created_after=/);
    expect(decodeURIComponent(page.url())).toMatch(/created_after=2099-01-01T00:00:00[+-]\d\d:\d\d/);
    await page.locator('p.empty', { hasText: 'No contacts match these filters.' }).waitFor();

    await page.getByLabel('Created after').fill('');
    await page.getByLabel('Created before').fill('2099-01-01T00:00');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/created_before=2099/);
    await expect.poll(async () => (await listed()).length).toBe(25);
    await page.reload();
    expect(await page.getByLabel('Created before').inputValue()).toBe('2099-01-01T00:00');
    expect(await page.getByLabel('Created after').inputValue()).toBe('');
  });

  it('says which filter the API refused, marks it, shows it as asked, and leads back to the whole list', async () => {
    await page.goto(`${t.url}/dashboard/#/contacts?engagement_tier=dormant&email=lee`);
    await expect.poll(() => page.locator('main .error-box').textContent())
      .toMatch(/^The Engagement filter was refused: 'engagement_tier' must be one of: .*engaged/);
    expect(await page.getByLabel('Engagement').inputValue()).toBe('dormant');
    expect(await page.getByLabel('Engagement').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByLabel('Address', { exact: true }).inputValue()).toBe('lee');
    expect(await page.getByLabel('Address', { exact: true }).getAttribute('aria-invalid')).toBeNull();

    // A search from the form asks for what it shows: still refused, and still named.
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/email=lee&engagement_tier=dormant/);
    await page.getByRole('link', { name: 'Show the list without filters' }).click();
    await page.waitForURL(/#\/contacts$/);
    await expect.poll(async () => (await listed()).length).toBe(25);
    expect(await page.locator('main .error-box').count()).toBe(0);
    expect(await page.getByLabel('Engagement').inputValue()).toBe('');
  });

  it('adds a contact, the API\'s refusal of its address shown beside the field', async () => {
    await page.goto(`${t.url}/dashboard/#/contacts`);
    await rows().first().waitFor();
    await page.getByRole('button', { name: 'Add a contact' }).click();
    await page.getByLabel('Email address').fill('zoe at example.com');
    await page.getByLabel('Full name').fill('Zoe van der Berg');
    // What templates read of the name is said as it is typed, as the server splits it.
    await page.locator('#new-contact-name-parts').filter({ hasText: 'In a message, {{ contact.first_name }} is “Zoe” and {{ contact.last_name }} is “Berg”.' }).waitFor();
    await page.getByLabel('Tags', { exact: true }).fill('news, newcomers');
    await page.getByRole('button', { name: 'Add contact' }).click();
    const refusal = page.locator('.field-error[data-field="email"] [role="alert"]');
    await refusal.waitFor();
    expect(await refusal.textContent()).toContain('is not a valid email address');

    await page.getByLabel('Email address').fill('Zoe@Example.com');
    await page.getByRole('button', { name: 'Add contact' }).click();
    await noteSays(page, 'zoe@example.com was added.');
    const zoe = (await contactByEmail('zoe@example.com'))!;
    expect(zoe).toMatchObject({ name: 'Zoe van der Berg', status: 'subscribed' });
    expect(zoe.tags.map((x) => x.name).sort()).toEqual(['newcomers', 'news']);
    // The note links to the new contact, listed first.
    await expect.poll(async () => (await listed())[0]).toBe('zoe@example.com');
    await page.locator('#note').getByRole('link', { name: 'zoe@example.com' }).click();
    await page.getByRole('heading', { name: 'zoe@example.com', level: 1 }).waitFor();
  });

  it('imports a CSV file through the bulk API: shown as read first, then created, updated and the bad row named by its line', async () => {
    // Line 3's quoted cell holds a comma and a line break; line 5 names a contact already there; line 6 is no address.
    const csv = [
      'Email,First Name,Last Name,tags,company',
      'kim@example.com,Kim,Park,news|vip,Acme',
      '"lou@example.com",Lou,Ross,customers;news,"Ross, Ross',
      '& Partners"',
      'ann.lee0@example.com,Annie,Lee,,Acme',
      'not-an-address,Nobody,,news,',
      'max@example.com,Max,,,',
    ].join('\r\n') + '\r\n';
    const file = join(dir, 'contacts.csv');
    writeFileSync(file, `\uFEFF${csv}`);
    await page.goto(`${t.url}/dashboard/#/contacts/import`);
    await page.getByRole('heading', { name: 'Import contacts' }).waitFor();
    await page.getByLabel('CSV file').setInputFiles(file);
    const reading = page.locator('.import-reading');
    await reading.waitFor();
    expect(await reading.locator('p').first().textContent()).toBe('5 rows of contacts under the header, in 7 lines, columns separated by commas.');
    const readAs = await reading.locator('table').first().locator('tbody tr').evaluateAll((trs) =>
      trs.map((tr) => (tr as unknown as { innerText: string }).innerText.replace(/\s+/g, ' ').trim()));
    expect(readAs).toEqual(['Email Address', 'First Name First name', 'Last Name Last name', 'tags Tags', 'company Property company']);
    expect(await t.api.get('/v1/contacts?email=kim@').then((r) => r.body.data.length)).toBe(0);
    await shots('import-read', '.import-reading');

    await page.getByRole('button', { name: 'Import 5 contacts' }).click();
    const summary = page.locator('.import-summary');
    await summary.waitFor();
    expect(await summary.locator('h2').textContent()).toBe('Import finished');
    expect(await summary.locator('[data-stat="created"] .stat-value').textContent()).toBe('3');
    expect(await summary.locator('[data-stat="updated"] .stat-value').textContent()).toBe('1');
    expect(await summary.locator('[data-stat="failed"] .stat-value').textContent()).toBe('1');
    const failed = summary.locator('tbody tr');
    expect(await failed.count()).toBe(1);
    expect(await failed.locator('td').first().textContent()).toBe('6');
    expect(await failed.locator('td.cell-primary').textContent()).toBe('not-an-address');
    expect(await failed.locator('td.prose').textContent()).toContain('is not a valid email address');
    await shots('import-summary', '.import-summary');

    const lou = (await contactByEmail('lou@example.com'))!;
    expect(lou).toMatchObject({ name: 'Lou Ross', properties: { company: 'Ross, Ross\r\n& Partners' } });
    expect(lou.tags.map((x) => x.name).sort()).toEqual(['customers', 'news']);
    expect((await contactByEmail('kim@example.com'))!.tags.map((x) => x.name).sort()).toEqual(['news', 'vip']);
    // Updated: a new name and property; its tags, given no cell, kept.
    const ann = (await contactByEmail('ann.lee0@example.com'))!;
    expect(ann).toMatchObject({ name: 'Annie Lee', properties: { company: 'Acme', plan: 'pro' } });
    expect(ann.tags.map((x) => x.name).sort()).toEqual(['news', 'vip']);
    expect((await contactByEmail('max@example.com'))!).toMatchObject({ name: 'Max', tags: [], properties: {} });
    await page.goto(`${t.url}/dashboard/#/contacts/${ann.id}`);
    await page.getByRole('heading', { name: 'ann.lee0@example.com', level: 1 }).waitFor();
    await shots('contact');
  });

  it('reads semicolons, and says why it sends nothing for an empty file, a header alone or no email column', async () => {
    const count = async () => (await t.api.get('/v1/contacts?limit=100')).body.data.length as number;
    const before = await count();
    await page.goto(`${t.url}/dashboard/#/contacts/import`);
    const choose = (name: string, text: string) => page.getByLabel('CSV file').setInputFiles({ name, mimeType: 'text/csv', buffer: Buffer.from(text) });
    const refusal = page.locator('main [role="alert"]');

    await choose('empty.csv', '');
    await refusal.filter({ hasText: 'The file is empty' }).waitFor();
    await choose('header.csv', 'email,first_name\n\n');
    await refusal.filter({ hasText: 'The file has its header line but no contacts under it.' }).waitFor();
    await choose('nomail.csv', 'address,name\nnia@example.com,Nia\n');
    await refusal.filter({ hasText: 'No column is named “email”' }).waitFor();
    expect(await refusal.textContent()).toContain('“address”, “name”');
    await choose('twice.csv', 'Email,name,email address\nnia@example.com,Nia,nia@example.org\n');
    await refusal.filter({ hasText: 'The first line names “Email” and “email address”, one column twice' }).waitFor();
    expect(await page.getByRole('button', { name: /^Import/ }).count()).toBe(0);
    expect(await count()).toBe(before);

    // Semicolons between columns (as a spreadsheet set to a comma decimal writes them), tags split by bars; a row cut short is
    // read too, but one with more cells than the header has columns is not sent: its values would land in the wrong columns.
    // Lines of empty cells, as a spreadsheet leaves them, are skipped and still counted.
    await choose('semi.csv', 'email;name;tags;city\nnia@example.com;Nia Long;news|vip;Lyon\n;;;\n  \nomar@example.com\nzed@example.com;Zed;;Paris;France\n');
    const reading = page.locator('.import-reading').filter({ hasText: 'columns separated by semicolons' });
    await reading.waitFor();
    await reading.getByRole('heading', { name: '1 row is not read whole, and will not be sent' }).waitFor();
    await page.getByRole('button', { name: 'Import 2 contacts' }).click();
    const summary = page.locator('.import-summary');
    await summary.locator('[data-stat="created"] .stat-value').filter({ hasText: '2' }).waitFor();
    expect(await summary.locator('[data-stat="failed"] .stat-value').textContent()).toBe('1');
    expect(await summary.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => (tr as unknown as { innerText: string }).innerText.replace(/\s+/g, ' ').trim())))
      .toEqual(['6 zed@example.com 5 cells where the header names 4 columns: a semicolon inside a value needs the value in quotes.']);
    expect(await contactByEmail('zed@example.com')).toBeUndefined();
    expect((await contactByEmail('nia@example.com'))!).toMatchObject({ name: 'Nia Long', properties: { city: 'Lyon' } });
    expect(await count()).toBe(before + 2);
  });

  it('reads a file a spreadsheet saved in Windows-1252 as such, and says so', async () => {
    await page.goto(`${t.url}/dashboard/#/contacts/import`);
    // "José Müller" as Excel's "CSV" writes it on Windows: é and ü a byte each, not UTF-8.
    const bytes = Buffer.from('email,name,city\njose@example.com,Jos\xe9 M\xfcller,Z\xfcrich\n', 'latin1');
    await page.getByLabel('CSV file').setInputFiles({ name: 'excel.csv', mimeType: 'text/csv', buffer: bytes });
    const reading = page.locator('.import-reading');
    await reading.filter({ hasText: 'The file is not UTF-8: it was read as Windows-1252' }).waitFor();
    await page.getByRole('button', { name: 'Import 1 contact' }).click();
    await page.locator('.import-summary [data-stat="created"] .stat-value').filter({ hasText: '1' }).waitFor();
    expect((await contactByEmail('jose@example.com'))!).toMatchObject({ name: 'José Müller', properties: { city: 'Zürich' } });

    // A UTF-8 file says nothing of its encoding.
    await page.getByLabel('CSV file').setInputFiles({ name: 'utf8.csv', mimeType: 'text/csv', buffer: Buffer.from('email,name\nzoe@example.com,Zoë\n') });
    await page.getByRole('button', { name: 'Import 1 contact' }).waitFor();
    expect(await reading.textContent()).not.toContain('not UTF-8');
  });

  it('imports a file of more than a thousand rows a thousand at a time, naming a bad row of the second request by its line', async () => {
    // Row 1200's note runs over two lines, so the bad row, the 1501st, is on line 1503.
    const lines = ['email,first_name,note', ...Array.from({ length: 2100 }, (_, i) =>
      (i === 1500 ? 'p1500 at example.com,P,' : `p${i}@example.com,P${i},${i === 1200 ? '"line one\nline two"' : ''}`))];
    await page.goto(`${t.url}/dashboard/#/contacts/import`);
    await page.getByLabel('CSV file').setInputFiles({ name: 'many.csv', mimeType: 'text/csv', buffer: Buffer.from(lines.join('\n')) });
    await page.locator('.import-reading').filter({ hasText: 'Sent 1,000 at a time at most.' }).waitFor();
    await page.getByRole('button', { name: 'Import 2,100 contacts' }).click();
    const summary = page.locator('.import-summary');
    await summary.waitFor({ timeout: 30_000 });
    expect(await summary.locator('[data-stat="created"] .stat-value').textContent()).toBe('2,099');
    expect(await summary.locator('[data-stat="failed"] .stat-value').textContent()).toBe('1');
    expect(await summary.locator('tbody td.line-number').allTextContents()).toEqual(['1503']);
    expect(await page.getByRole('progressbar', { name: 'Rows imported' }).getAttribute('aria-valuenow')).toBe('2100');
    expect((await contactByEmail('p1200@example.com'))!.properties).toEqual({ note: 'line one\nline two' });
  });

  it('sends a file of long properties in requests small enough for the API\'s 4 MiB body limit', async () => {
    // A thousand rows of ten 480-character properties are some 4.9 MB of JSON: more than one request may carry.
    const long = (i: number, p: number) => `${i}-${p}-`.padEnd(480, 'x');
    const lines = [['email', ...Array.from({ length: 10 }, (_, p) => `p${p}`)].join(','),
      ...Array.from({ length: 1000 }, (_, i) => [`long${i}@example.com`, ...Array.from({ length: 10 }, (_, p) => long(i, p))].join(','))];
    await page.goto(`${t.url}/dashboard/#/contacts/import`);
    await page.getByLabel('CSV file').setInputFiles({ name: 'long.csv', mimeType: 'text/csv', buffer: Buffer.from(lines.join('\n')) });
    await page.getByRole('button', { name: 'Import 1,000 contacts' }).click();
    const summary = page.locator('.import-summary');
    await summary.waitFor({ timeout: 30_000 });
    expect(await summary.locator('h2').textContent()).toBe('Import finished');
    expect(await summary.locator('[data-stat="created"] .stat-value').textContent()).toBe('1,000');
    expect((await contactByEmail('long999@example.com'))!.properties.p9).toBe(long(999, 9));
  });

  it('waits out the rate limit, and stops at a request that fails, saying from which line nothing was sent', async () => {
    const lines = ['email', ...Array.from({ length: 1500 }, (_, i) => `r${i}@example.com`)];
    // The first request is refused for the rate limit, the next passes, the one after fails.
    let calls = 0;
    await page.route('**/v1/contacts/bulk', async (route) => {
      calls++;
      if (calls === 1) {
        await route.fulfill({ status: 429, headers: { 'Retry-After': '1', 'Content-Type': 'application/json' },
          body: JSON.stringify({ error: { code: 'rate_limit_exceeded', message: 'Too many requests.', request_id: 'req_1' } }) });
      } else if (calls === 3) {
        await route.fulfill({ status: 503, headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ error: { code: 'storage_full', message: 'The disk is full.', request_id: 'req_3' } }) });
      } else {
        await route.continue();
      }
    });
    try {
      await page.goto(`${t.url}/dashboard/#/contacts/import`);
      await page.getByLabel('CSV file').setInputFiles({ name: 'r.csv', mimeType: 'text/csv', buffer: Buffer.from(lines.join('\n')) });
      await page.getByRole('button', { name: 'Import 1,500 contacts' }).click();
      const summary = page.locator('.import-summary');
      await summary.waitFor();
      expect(await summary.locator('h2').textContent()).toBe('Import stopped');
      expect(await summary.getByRole('alert').textContent()).toBe('The disk is full.');
      await summary.getByText('The rows from line 1002 on were not sent.').waitFor();
      expect(await summary.locator('[data-stat="created"] .stat-value').textContent()).toBe('1,000');
      expect(await page.getByRole('progressbar', { name: 'Rows imported' }).getAttribute('aria-valuenow')).toBe('1000');
      expect(calls).toBe(3);
    } finally {
      await page.unroute('**/v1/contacts/bulk');
    }
  });

  it('adds and removes tags on a contact\'s page, edits its name, unsubscribes it and deletes it', async () => {
    const max = (await contactByEmail('max@example.com'))!;
    await page.goto(`${t.url}/dashboard/#/contacts/${max.id}`);
    await page.getByRole('heading', { name: 'max@example.com', level: 1 }).waitFor();

    await page.getByLabel('Add a tag').fill('VIP');
    await page.getByRole('button', { name: 'Add tag' }).click();
    await noteSays(page, 'The tag “vip” was added.');
    await page.getByLabel('Add a tag').fill('Early birds');
    await page.getByRole('button', { name: 'Add tag' }).click();
    await noteSays(page, 'The tag “Early birds” was created and added.');
    expect((await contactByEmail('max@example.com'))!.tags.map((x) => x.name).sort()).toEqual(['Early birds', 'vip']);
    // A tag made since the page was drawn is not offered, and is found, not made twice.
    expect((await t.api.post('/v1/tags', { name: 'Late' })).status).toBe(201);
    await page.getByLabel('Add a tag').fill('late');
    await page.getByRole('button', { name: 'Add tag' }).click();
    await noteSays(page, 'The tag “late” was added.');
    await page.getByRole('button', { name: 'Remove the tag Late' }).click();
    await noteSays(page, 'The tag “Late” was removed.');
    await page.getByRole('button', { name: 'Remove the tag vip' }).click();
    await noteSays(page, 'The tag “vip” was removed.');
    expect((await contactByEmail('max@example.com'))!.tags.map((x) => x.name)).toEqual(['Early birds']);

    await page.getByLabel('Full name').fill('Maxine  Moss ');
    await page.getByRole('button', { name: 'Save the name' }).click();
    await noteSays(page, 'The name was saved.');
    expect((await contactByEmail('max@example.com'))!.name).toBe('Maxine Moss');

    await page.getByRole('button', { name: 'Unsubscribe' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('the address is added to the suppressions').waitFor();
    await dialog.getByRole('button', { name: 'Unsubscribe' }).click();
    await noteSays(page, 'max@example.com is unsubscribed.');
    expect((await contactByEmail('max@example.com'))!.status).toBe('unsubscribed');
    expect((await t.api.get('/v1/suppressions')).body.data.map((s: { email: string }) => s.email)).toContain('max@example.com');
    expect(await page.getByRole('button', { name: 'Unsubscribe' }).count()).toBe(0);

    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Go back' }).click();
    expect((await t.api.get(`/v1/contacts/${max.id}`)).status).toBe(200);
    // Declined, the button is usable again and has the focus back.
    expect(await page.locator(':focus').textContent()).toBe('Delete');
    expect(await page.getByRole('button', { name: 'Delete' }).isEnabled()).toBe(true);
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await noteSays(page, 'max@example.com was deleted.');
    await page.getByRole('heading', { name: 'Contacts', level: 1 }).waitFor();
    expect((await t.api.get(`/v1/contacts/${max.id}`)).status).toBe(404);
  });

  it('says on a subscribed contact\'s page that its address is suppressed, and leads to the suppression and the mail sent to it', async () => {
    const bounced = await t.api.post('/v1/contacts', { email: 'bounced@example.com' });
    expect(bounced.status).toBe(201);
    expect((await t.api.post('/v1/suppressions', { email: 'bounced@example.com' })).status).toBe(201);
    await page.goto(`${t.url}/dashboard/#/contacts/${bounced.body.id}`);
    await page.getByRole('heading', { name: 'bounced@example.com', level: 1 }).waitFor();
    const note = page.locator('.suppressed-note');
    await note.waitFor();
    expect(await note.textContent()).toMatch(/^No email goes to this address: it is suppressed \(added by hand, since .+\)\. See it in Suppressions$/);
    expect(await page.locator('.title-row .badge').textContent()).toBe('subscribed');
    await desktopAndPhoneShots(page, 'contact-suppressed');

    await note.getByRole('link', { name: 'See it in Suppressions' }).click();
    await page.getByRole('heading', { name: 'Suppressions', level: 1 }).waitFor();
    expect(await page.getByLabel('Address', { exact: true }).inputValue()).toBe('bounced@example.com');
    // From the suppression, the address leads to the mail sent to it.
    await page.locator('main tbody').getByRole('link', { name: 'bounced@example.com' }).click();
    await page.getByRole('heading', { name: 'Emails', level: 1 }).waitFor();
    expect(await page.getByLabel('To', { exact: true }).inputValue()).toBe('bounced@example.com');

    await page.goto(`${t.url}/dashboard/#/contacts/${bounced.body.id}`);
    await page.getByRole('link', { name: 'Their events' }).click();
    await page.getByRole('heading', { name: 'Events', level: 1 }).waitFor();
    expect(await page.getByLabel('To', { exact: true }).inputValue()).toBe('bounced@example.com');

    // An address nothing suppresses says nothing of the kind.
    const reader = (await contactByEmail(READERS[0].email))!;
    await page.goto(`${t.url}/dashboard/#/contacts/${reader.id}`);
    await page.getByRole('link', { name: 'Emails to this address' }).waitFor();
    expect(await page.locator('.suppressed-note').count()).toBe(0);
  });

  it('takes a tag name as long as the API does, in characters, and shows the API error past it', async () => {
    // 60 emoji are 60 characters to the API (at most 100) but 120 UTF-16 units to an input's maxlength.
    const emoji = '\u{1F431}'.repeat(60);
    await page.goto(`${t.url}/dashboard/#/contacts/tags`);
    await page.getByRole('heading', { name: 'Tags', level: 1 }).waitFor();
    await page.getByLabel('Name').fill(emoji);
    await page.getByRole('button', { name: 'Create tag' }).click();
    await noteSays(page, `The tag “${emoji}” was created.`);
    const names = ((await t.api.get('/v1/tags')).body.data as Array<{ name: string }>).map((x) => x.name);
    expect(names).toContain(emoji);

    // Pasted text past the limit is not cut short without a word: the API says why it was refused.
    await page.getByLabel('Name').fill('x'.repeat(101));
    expect(await page.getByLabel('Name').inputValue()).toHaveLength(101);
    await page.getByRole('button', { name: 'Create tag' }).click();
    await page.locator('.field-error[data-field="name"] [role="alert"]').filter({ hasText: 'more than 100 characters' }).waitFor();
    const after = (await t.api.get('/v1/tags')).body.data as Array<{ id: string, name: string }>;
    expect(after).toHaveLength(names.length);

    // An empty name is stopped by the browser, which says why itself: the API's older refusal goes.
    await page.getByLabel('Name').fill('');
    await page.getByRole('button', { name: 'Create tag' }).click();
    await expect.poll(() => page.locator('.field-error[data-field="name"]').textContent()).toBe('');
    expect(await page.getByLabel('Name').evaluate((input) => (input as unknown as { validity: { valueMissing: boolean } }).validity.valueMissing)).toBe(true);
    // The tags test below counts on its own tags alone.
    expect((await t.api.delete(`/v1/tags/${after.find((x) => x.name === emoji)!.id}`)).status).toBe(204);
  });

  it('lists, creates and deletes tags on their own page, each leading to its contacts', async () => {
    await page.goto(`${t.url}/dashboard/#/contacts`);
    await page.getByRole('link', { name: 'Tags', exact: true }).click();
    await page.getByRole('heading', { name: 'Tags', level: 1 }).waitFor();
    await page.getByLabel('Name').fill('news');
    await page.getByRole('button', { name: 'Create tag' }).click();
    await page.locator('.field-error[data-field="name"] [role="alert"]').filter({ hasText: 'already exists' }).waitFor();
    await page.getByLabel('Name').fill('Partners');
    await page.getByRole('button', { name: 'Create tag' }).click();
    await noteSays(page, 'The tag “Partners” was created.');
    await rows().filter({ hasText: 'Partners' }).waitFor();
    await shots('tags');

    const early = rows().filter({ hasText: 'Early birds' });
    await early.getByRole('button', { name: 'Delete' }).click();
    expect(await answerDialog(page, 'Delete')).toContain('Delete the tag “Early birds”?');
    await noteSays(page, 'The tag “Early birds” was deleted.');
    const names = ((await t.api.get('/v1/tags')).body.data as Array<{ name: string }>).map((x) => x.name);
    expect(names).toContain('Partners');
    expect(names).not.toContain('Early birds');

    await rows().getByRole('link', { name: 'vip', exact: true }).click();
    await page.waitForURL(/#\/contacts\?tag_id=tag_/);
    await expect.poll(async () => (await listed()).sort()).toEqual(['ann.lee0@example.com', 'fay.lee15@example.com', 'kim@example.com', 'nia@example.com']);
  });
  it('offers every tag in its pickers, past the API\'s page of a hundred', async () => {
    for (let i = 0; i < 105; i++) expect((await t.api.post('/v1/tags', { name: `segment ${String(i).padStart(3, '0')}` })).status).toBe(201);
    expect((await t.api.get('/v1/tags?limit=100')).body.has_more).toBe(true);
    await page.goto(`${t.url}/dashboard/#/contacts`);
    const options = page.locator('#filter-tag_id option');
    // The oldest tags come last: the first one made in this file, and the first of these.
    await options.filter({ hasText: 'segment 000' }).waitFor({ state: 'attached' });
    await options.filter({ hasText: 'vip' }).waitFor({ state: 'attached' });
  });
});
