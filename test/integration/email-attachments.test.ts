import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchChromium, signedInDashboard } from '../helpers/browser.js';

// The attachments of sent mail, downloaded over HTTP byte for byte, from
// inline content and from an upload, under their own names, and from the
// email's page in the dashboard.

const BINARY = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 37 + 11) % 256));
const NAME = 'Relevé "mars" – été.pdf';

describe('attachments of sent mail', () => {
  let t: TestApp;
  let emailId: string;
  let browser: Browser | undefined;

  beforeAll(async () => {
    t = await startTestApp();
    await t.seed.activeDomain('acme.test');
    const upload = await t.api.post('/v1/attachments', { content: Buffer.from('uploaded, kept with the email').toString('base64'), filename: 'notes.txt' });
    expect(upload.status).toBe(201);
    const sent = await t.api.post('/v1/emails', {
      from: 'ann@acme.test', to: 'bob@example.org', subject: 'Your statement', text: 'Attached.',
      attachments: [
        { content: BINARY.toString('base64'), filename: NAME, content_type: 'application/pdf' },
        { attachment_id: upload.body.id },
      ],
    });
    expect(sent.status).toBe(201);
    emailId = sent.body.id;
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const get = (path: string, token = t.token) => fetch(`${t.url}${path}`, { headers: { Authorization: `Bearer ${token}` } });

  it('serves each byte for byte, as a download under its own name', async () => {
    const pdf = await get(`/v1/emails/${emailId}/attachments/0`);
    expect(pdf.status).toBe(200);
    expect(pdf.headers.get('content-type')).toBe('application/pdf');
    expect(pdf.headers.get('content-disposition')).toBe(`attachment; filename="Relev_ _mars_ _ _t_.pdf"; filename*=UTF-8''${encodeURIComponent(NAME)}`);
    expect(pdf.headers.get('x-content-type-options')).toBe('nosniff');
    expect(Buffer.from(await pdf.arrayBuffer()).equals(BINARY)).toBe(true);
    const notes = await get(`/v1/emails/${emailId}/attachments/1`);
    expect(await notes.text()).toBe('uploaded, kept with the email');
    expect(notes.headers.get('content-disposition')).toContain('filename="notes.txt"');
  });

  it('answers 404 for an index the email does not have, an email of another workspace, and 403 without emails:read', async () => {
    const missing = await get(`/v1/emails/${emailId}/attachments/2`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: unknown }).error).toMatchObject({ code: 'not_found', param: 'index' });
    expect((await get('/v1/emails/em_00000000000000000000000000/attachments/0')).status).toBe(404);
    const other = await t.seed.workspace();
    expect((await get(`/v1/emails/${emailId}/attachments/0`, (await t.seed.key({ workspaceId: other.id })).token)).status).toBe(404);
    expect((await get(`/v1/emails/${emailId}/attachments/0`, (await t.seed.key({ scopes: ['emails:send'] })).token)).status).toBe(403);
    const named = await get(`/v1/emails/${emailId}/attachments/x`);
    expect(named.status).toBe(404);
    expect(((await named.json()) as { error: { param: string } }).error.param).toBe('index');
  });

  it('downloads from the email\'s page in the dashboard', async () => {
    browser = await launchChromium();
    // Playwright accepts downloads unless told not to.
    const page = await signedInDashboard(browser, t.url, t.token, `/emails/${emailId}`, 'Your statement');
    await page.getByRole('heading', { name: 'Attachments' }).waitFor();
    const row = page.locator('tr').filter({ hasText: 'application/pdf' });
    const [download] = await Promise.all([page.waitForEvent('download'), row.getByRole('button', { name: 'Download' }).click()]);
    // The browser keeps the name, but for the quotes it does not allow in file names.
    expect(download.suggestedFilename()).toBe('Relevé _mars_ – été.pdf');
    expect((await readFile((await download.path())!)).equals(BINARY)).toBe(true);
  });
});
