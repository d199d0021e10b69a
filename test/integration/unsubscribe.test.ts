import { brotliCompressSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

const PUBLIC_URL = 'https://mail.example.test';

async function start(): Promise<TestApp> {
  return startTestApp({ env: { MAILROOM_PUBLIC_URL: PUBLIC_URL } });
}

/** The /u/… path of the List-Unsubscribe URL Mailroom gives senders for this recipient. */
function unsubscribePath(t: TestApp, address: string, workspaceId = t.workspaceId): string {
  const headers = t.mailroom.services.unsubscribe.unsubscribeHeaders(workspaceId, address);
  expect(headers['List-Unsubscribe-Post']).toBe('List-Unsubscribe=One-Click');
  const m = /^<(https:\/\/mail\.example\.test)(\/u\/[A-Za-z0-9_-]+)>$/.exec(headers['List-Unsubscribe']);
  expect(m, headers['List-Unsubscribe']).not.toBeNull();
  return m![2];
}

const oneClick = (t: TestApp, path: string, init: RequestInit = {}) => fetch(t.url + path, {
  method: 'POST',
  headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
  body: 'List-Unsubscribe=One-Click',
  ...init,
});

describe('one-click unsubscribe (RFC 8058)', () => {
  it('shows a confirmation page on GET without unsubscribing', async () => {
    await using t = await start();
    const c = (await t.api.post('/v1/contacts', { email: 'ann@example.com' })).body;
    const res = await fetch(t.url + unsubscribePath(t, 'Ann@Example.com'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const html = await res.text();
    expect(html).toContain('ann@example.com');
    expect(html).toMatch(/<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click">/);
    expect((await t.api.get(`/v1/contacts/${c.id}`)).body.status).toBe('subscribed');
    expect((await t.api.get('/v1/suppressions')).body.data).toEqual([]);
  });

  it('unsubscribes the contact and suppresses the address on the one-click POST, without an API key', async () => {
    await using t = await start();
    const c = (await t.api.post('/v1/contacts', { email: 'ann@example.com' })).body;
    const path = unsubscribePath(t, 'ann@example.com');
    const res = await oneClick(t, path);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('will get no more email');

    const after = (await t.api.get(`/v1/contacts/${c.id}`)).body;
    expect(after.status).toBe('unsubscribed');
    expect(after.unsubscribed_at).not.toBeNull();
    expect((await t.api.get('/v1/suppressions')).body.data).toMatchObject([{ email: 'ann@example.com', reason: 'unsubscribe' }]);
    expect(await t.mailroom.services.suppressions.check(t.workspaceId, ['ann@example.com'])).toEqual(new Map([['ann@example.com', 'unsubscribe']]));

    // Mailbox providers may repeat the request.
    expect((await oneClick(t, path)).status).toBe(200);
    expect((await t.api.get('/v1/suppressions')).body.data).toHaveLength(1);
  });

  it('accepts the multipart/form-data encoding as well', async () => {
    await using t = await start();
    const c = (await t.api.post('/v1/contacts', { email: 'bo@example.com' })).body;
    const form = new FormData();
    form.set('List-Unsubscribe', 'One-Click');
    const res = await fetch(t.url + unsubscribePath(t, 'bo@example.com'), { method: 'POST', body: form });
    expect(res.status).toBe(200);
    expect((await t.api.get(`/v1/contacts/${c.id}`)).body.status).toBe('unsubscribed');
  });

  it('suppresses an address that has no contact', async () => {
    await using t = await start();
    expect((await oneClick(t, unsubscribePath(t, 'stranger@example.com'))).status).toBe(200);
    expect((await t.api.get('/v1/suppressions')).body.data).toMatchObject([{ email: 'stranger@example.com', reason: 'unsubscribe' }]);
    // A contact made later starts unsubscribed.
    expect((await t.api.post('/v1/contacts', { email: 'stranger@example.com' })).body.status).toBe('unsubscribed');
  });

  it('answers 404 to a tampered or malformed token, as JSON or as a page for browsers', async () => {
    await using t = await start();
    await t.api.post('/v1/contacts', { email: 'ann@example.com' });
    const path = unsubscribePath(t, 'ann@example.com');
    const token = path.slice(3);
    const flipped = token.slice(0, 20) + (token[20] === 'A' ? 'B' : 'A') + token.slice(21);
    for (const bad of [flipped, token.slice(0, -1), token + 'A', 'x', 'a'.repeat(700), '%00']) {
      const res = await oneClick(t, `/u/${bad}`);
      expect(res.status, bad).toBe(404);
      const body = (await res.json()) as { error: { code: string; request_id: string } };
      expect(body.error).toMatchObject({ code: 'not_found' });
      expect(body.error.request_id).toMatch(/^req_/);
    }
    const page = await fetch(`${t.url}/u/${flipped}`, { headers: { Accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    expect(page.status).toBe(404);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(await page.text()).toContain('not valid');
    expect((await t.api.get('/v1/suppressions')).body.data).toEqual([]);
  });

  it('answers 400 when the one-click field is missing, and changes nothing', async () => {
    await using t = await start();
    const c = (await t.api.post('/v1/contacts', { email: 'ann@example.com' })).body;
    const path = unsubscribePath(t, 'ann@example.com');
    for (const init of [
      { body: '' },
      { body: 'List-Unsubscribe=Yes' },
      { body: '{"List-Unsubscribe":"One-Click"}', headers: { 'Content-Type': 'application/json' } },
      { body: 'List-Unsubscribe=One-Click', headers: { 'Content-Type': 'text/plain' } },
    ]) {
      const res = await oneClick(t, path, init);
      expect(res.status, JSON.stringify(init)).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('bad_request');
    }
    const huge = await oneClick(t, path, { body: `List-Unsubscribe=One-Click&pad=${'x'.repeat(10_000)}` });
    expect(huge.status).toBe(413);
    // The rest of the body is not read, so the connection does not carry another request.
    expect(huge.headers.get('connection')).toBe('close');
    expect(((await huge.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
    // A person in a browser gets the page, not JSON.
    const hugePage = await oneClick(t, path, {
      body: `List-Unsubscribe=One-Click&pad=${'x'.repeat(10_000)}`, headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
    });
    expect(hugePage.status).toBe(413);
    expect(hugePage.headers.get('content-type')).toContain('text/html');
    const hugeHtml = await hugePage.text();
    expect(hugeHtml).toContain('<h1>Not unsubscribed</h1>');
    expect(hugeHtml).toContain('over 8192 bytes');
    expect((await fetch(t.url + path, { method: 'PUT' })).status).toBe(405);
    expect((await t.api.get(`/v1/contacts/${c.id}`)).body.status).toBe('subscribed');
  });

  it('answers 415 to a compressed body, naming its Content-Encoding, as JSON or as a page for browsers, and changes nothing', async () => {
    await using t = await start();
    const c = (await t.api.post('/v1/contacts', { email: 'ann@example.com' })).body;
    const path = unsubscribePath(t, 'ann@example.com');
    const form = 'List-Unsubscribe=One-Click';
    const compressed = (encoding: string, body: Buffer, accept = 'application/json') => oneClick(t, path, {
      body, headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Encoding': encoding, Accept: accept },
    });
    for (const [encoding, body] of [['gzip', gzipSync(form)], ['BR', brotliCompressSync(form)], ['gzip, identity', gzipSync(form)]] as const) {
      const res = await compressed(encoding, body);
      expect(res.status, encoding).toBe(415);
      // RFC 7694: a server that takes no content coding says which it takes.
      expect(res.headers.get('accept-encoding'), encoding).toBe('identity');
      const { error } = (await res.json()) as { error: Record<string, string> };
      expect(error, encoding).toMatchObject({ code: 'unsupported_media_type', param: 'Content-Encoding' });
      expect(error.message, encoding).toContain(`'${encoding}'`);
    }
    const page = await compressed('gzip', gzipSync(form), 'text/html,application/xhtml+xml,*/*;q=0.8');
    expect(page.status).toBe(415);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.headers.get('accept-encoding')).toBe('identity');
    expect(await page.text()).toContain('Content-Encoding &#39;gzip&#39;');
    expect((await t.api.get(`/v1/contacts/${c.id}`)).body.status).toBe('subscribed');
    // identity is no coding at all.
    const plain = await oneClick(t, path, { headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Encoding': 'identity' } });
    expect(plain.status).toBe(200);
    expect((await t.api.get(`/v1/contacts/${c.id}`)).body.status).toBe('unsubscribed');
  });

  it("a workspace's link touches only that workspace", async () => {
    await using t = await start();
    const other = await t.seed.workspace();
    const them = t.api.as((await t.seed.key({ workspaceId: other.id })).token);
    const mine = (await t.api.post('/v1/contacts', { email: 'shared@example.com' })).body;
    const theirs = (await them.post('/v1/contacts', { email: 'shared@example.com' })).body;
    expect((await oneClick(t, unsubscribePath(t, 'shared@example.com', other.id))).status).toBe(200);
    expect((await them.get(`/v1/contacts/${theirs.id}`)).body.status).toBe('unsubscribed');
    expect((await t.api.get(`/v1/contacts/${mine.id}`)).body.status).toBe('subscribed');
    expect((await t.api.get('/v1/suppressions')).body.data).toEqual([]);
  });
});
