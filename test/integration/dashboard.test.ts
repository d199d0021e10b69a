import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { startTestApp, type TestApp } from '../helpers/app.js';

// The dashboard's files as the server hands them out: the headers that keep
// the page to itself, revalidation, and nothing else reachable under its prefix.

describe('the dashboard files', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('sends a browser that opens the server\'s own address to the dashboard', async () => {
    const root = await fetch(`${t.url}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/dashboard/');
  });

  it('serves the page\'s icon, named by the page and at the address browsers ask for by themselves', async () => {
    const html = await (await fetch(`${t.url}/dashboard/`)).text();
    expect(html).toContain('<link rel="icon" href="/dashboard/favicon.svg" type="image/svg+xml">');
    const icon = await fetch(`${t.url}/dashboard/favicon.svg`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect(await icon.text()).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    const asked = await fetch(`${t.url}/favicon.ico`, { redirect: 'manual' });
    expect(asked.status).toBe(302);
    expect(asked.headers.get('location')).toBe('/dashboard/favicon.svg');
  });

  it('redirects /dashboard to /dashboard/, where the page is', async () => {
    const bare = await fetch(`${t.url}/dashboard`, { redirect: 'manual' });
    expect(bare.status).toBe(302);
    expect(bare.headers.get('location')).toBe('/dashboard/');

    const page = await fetch(`${t.url}/dashboard/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await page.text();
    expect(html).toMatch(/^<!doctype html>/i);
    expect(html).toContain('<script type="module" src="/dashboard/app.js"></script>');
    expect(html).toContain('href="/dashboard/app.css"');
  });

  it('serves the page, script and stylesheet with a policy that allows only their own origin', async () => {
    for (const [path, type] of [['/dashboard/', 'text/html'], ['/dashboard/app.js', 'text/javascript'], ['/dashboard/app.css', 'text/css'],
      ['/dashboard/vendor/uplot.js', 'text/javascript'], ['/dashboard/vendor/uplot.css', 'text/css'], ['/dashboard/vendor/papaparse.js', 'text/javascript'],
      ['/dashboard/views/contacts.js', 'text/javascript'], ['/dashboard/views/contact-import.js', 'text/javascript'], ['/dashboard/work.js', 'text/javascript']]) {
      const res = await fetch(t.url + path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type')).toBe(`${type}; charset=utf-8`);
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'none'");
      expect(csp).toMatch(/(^|; )script-src 'self'(;|$)/);
      expect(csp).toContain("connect-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("img-src 'self' data:");
      // A preview's frame is a srcdoc, fetched from nowhere: no frame may load or be navigated to any address,
      // this origin's /t/c/ links included.
      expect(csp).toMatch(/(^|; )frame-src 'none'(;|$)/);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('cache-control')).toBe('no-cache');
    }
  });

  it('serves the code editor, bundled into one module that needs nothing the policy forbids', async () => {
    const res = await fetch(`${t.url}/dashboard/editor-bundle.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toMatch(/(^|; )script-src 'self'(;|$)/);
    const bundle = await res.text();
    expect(bundle).toMatch(/export\s*\{[^}]*\bcreateEditor\b/);
    // No eval or Function, which script-src 'self' refuses.
    expect(bundle).not.toMatch(/\beval\s*\(|\bnew Function\b|\bFunction\s*\(/);
    expect((await fetch(`${t.url}/dashboard/code-editor.js`)).status).toBe(200);
  });

  it('has no inline script or style in the page, which the policy would block', async () => {
    const html = await (await fetch(`${t.url}/dashboard/`)).text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
    expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=/i);
  });

  it('answers 304 to a revalidation while the file is unchanged', async () => {
    const first = await fetch(`${t.url}/dashboard/app.js`);
    const etag = first.headers.get('etag');
    expect(etag).toMatch(/^"[\w-]{22}"$/);
    // node:http, not fetch: fetch adds Cache-Control: no-cache to a conditional request, which asks for a full answer.
    const revalidate = (tag: string) => new Promise<{ status: number; body: string }>((resolve, reject) => {
      http.get(`${t.url}/dashboard/app.js`, { headers: { 'If-None-Match': tag } }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => (body += c)).on('end', () => resolve({ status: res.statusCode!, body }));
      }).on('error', reject);
    });
    expect(await revalidate(etag!)).toEqual({ status: 304, body: '' });
    expect((await revalidate('"something-else"')).status).toBe(200);
  });

  it('serves uPlot\'s and Papa Parse\'s browser builds from the installed packages, revalidated like the page\'s own files', async () => {
    const require = createRequire(import.meta.url);
    for (const [path, file] of [['/dashboard/vendor/uplot.js', 'uplot/dist/uPlot.iife.min.js'], ['/dashboard/vendor/uplot.css', 'uplot/dist/uPlot.min.css'],
      ['/dashboard/vendor/papaparse.js', 'papaparse/papaparse.min.js']]) {
      const res = await fetch(t.url + path);
      expect(res.status, path).toBe(200);
      expect(await res.text()).toBe(readFileSync(require.resolve(file), 'utf8'));
      expect(res.headers.get('etag')).toMatch(/^"[\w-]{22}"$/);
    }
  });

  it('answers 404 in the error object for any other path, traversal included', async () => {
    for (const path of ['/dashboard/nope.js', '/dashboard/..%2fpackage.json', '/dashboard/%2e%2e%2f%2e%2e%2fpackage.json',
      '/dashboard/assets/app.js', '/dashboard/app.js/x', '/dashboard/dashboard.routes.ts', '/dashboard/vendor/uPlot.esm.js',
      '/dashboard/vendor/..%2f..%2fpackage.json', '/dashboard/vendor/app.js']) {
      const res = await fetch(t.url + path);
      expect(res.status, path).toBe(404);
      const body = await res.json() as { error: { code: string; request_id: string } };
      expect(body.error.code).toBe('not_found');
      expect(body.error.request_id).toMatch(/^req_/);
    }
  });

  it('answers 405 to a method other than GET or HEAD, and HEAD without a body', async () => {
    const post = await fetch(`${t.url}/dashboard/app.js`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect((await post.json() as { error: { code: string } }).error.code).toBe('method_not_allowed');
    const head = await fetch(`${t.url}/dashboard/app.css`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });

  it('holds no data of its own: the API still asks for a key', async () => {
    const res = await fetch(`${t.url}/v1/emails`, { headers: { Referer: `${t.url}/dashboard/` } });
    expect(res.status).toBe(401);
  });
});
