import Router, { type RouterContext } from '@koa/router';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { AppState } from '../http/op.js';

// The web dashboard: static files served under /dashboard. The page is
// a client of the public /v1 API and nothing more; it signs in with an API
// key, so it sees exactly what that key may see, and the server holds no
// session for it.

/** Resolved from the repository root, so it holds for src/ (tsx) and dist/ (built) alike. */
const ASSETS_DIR = fileURLToPath(new URL('../../src/dashboard/assets/', import.meta.url));

const HTML = 'text/html; charset=utf-8';
const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';
const SVG = 'image/svg+xml';

/** Built by scripts/build-dashboard-editor.mjs, not kept in git. */
const EDITOR_BUNDLE = 'editor-bundle.js';

/** Every file of the page: the entry module, its shared modules, and one module per view. */
const ASSETS = {
  'index.html': HTML, 'app.css': CSS, 'favicon.svg': SVG,
  'app.js': JS, 'api.js': JS, 'access.js': JS, 'ui.js': JS, 'nav.js': JS, 'lists.js': JS, 'preview.js': JS, 'work.js': JS, 'unsaved.js': JS,
  'code-editor.js': JS, [EDITOR_BUNDLE]: JS,
  'views/emails.js': JS, 'views/domains.js': JS, 'views/events.js': JS, 'views/inbound.js': JS, 'views/suppressions.js': JS,
  'views/api-keys.js': JS, 'views/templates.js': JS, 'views/webhooks.js': JS, 'views/analytics.js': JS, 'views/queue.js': JS, 'views/broadcasts.js': JS,
  'views/contacts.js': JS, 'views/contact-import.js': JS,
} as const;

/**
 * Files of packages the page uses, served under vendor/ from node_modules: uPlot draws the analytics chart,
 * Papa Parse reads the CSV files of a contact import. Resolved as Node resolves a package, so it holds for
 * src/ and dist/ alike.
 */
const VENDOR_ASSETS = {
  'vendor/uplot.js': ['uplot/dist/uPlot.iife.min.js', JS],
  'vendor/uplot.css': ['uplot/dist/uPlot.min.css', CSS],
  'vendor/papaparse.js': ['papaparse/papaparse.min.js', JS],
} as const;

/**
 * The page runs only its own script and talks only to its own origin. Email
 * HTML is previewed in a sandboxed srcdoc frame, which inherits this policy
 * and adds its own (preview.js): its scripts never run and it loads nothing
 * from anywhere, this origin included, so a preview never fetches a tracking
 * pixel, Mailroom's own either. The frame itself may never be navigated
 * (frame-src 'none'; a srcdoc is no fetch and still loads): a link clicked in
 * a preview would otherwise reach this origin's /t/c/ and count a click.
 * Inline styles are allowed because emails are styled inline; the page
 * itself never writes markup from data, and the frame's own origin is
 * opaque, so they reach nothing.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:", "connect-src 'self'",
  "frame-src 'none'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
].join('; ');

interface Asset { body: Buffer; type: string; etag: string }

function loadAssets(): Map<string, Asset> {
  if (!existsSync(`${ASSETS_DIR}${EDITOR_BUNDLE}`)) {
    throw new Error(`The dashboard's ${EDITOR_BUNDLE} is not built: run npm run build:dashboard-editor (npm ci runs it)`);
  }
  const require = createRequire(import.meta.url);
  const files: Array<[string, string, string]> = [
    ...Object.entries(ASSETS).map(([name, type]): [string, string, string] => [name, `${ASSETS_DIR}${name}`, type]),
    ...Object.entries(VENDOR_ASSETS).map(([name, [file, type]]): [string, string, string] => [name, require.resolve(file), type]),
  ];
  return new Map(files.map(([name, path, type]) => {
    const body = readFileSync(path);
    return [name, { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` }];
  }));
}

/** The server's own address leads a person who opens it in a browser to the dashboard. */
export function rootRedirect(): Router<AppState> {
  const r = new Router<AppState>();
  r.get('/', (ctx) => ctx.redirect('/dashboard/'));
  // Asked for by browsers on their own, on any page of the origin (the dashboard's page names its icon itself).
  r.get('/favicon.ico', (ctx) => ctx.redirect('/dashboard/favicon.svg'));
  return r;
}

export function dashboardRoutes(): Router<AppState> {
  const assets = loadAssets();
  const r = new Router<AppState>({ prefix: '/dashboard' });
  r.get('/', (ctx, next) => {
    // "/dashboard" and "/dashboard/" both reach here; the page has one address, with the slash.
    if (!ctx.path.endsWith('/')) return ctx.redirect('/dashboard/');
    return serve(ctx, 'index.html', next);
  });
  r.get('/:file', (ctx, next) => serve(ctx, ctx.params.file, next));
  r.get('/views/:file', (ctx, next) => serve(ctx, `views/${ctx.params.file}`, next));
  r.get('/vendor/:file', (ctx, next) => serve(ctx, `vendor/${ctx.params.file}`, next));

  function serve(ctx: RouterContext<AppState>, name: string, next: () => Promise<unknown>) {
    const asset = assets.get(name);
    if (!asset) return next(); // the app's 404
    ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    // Revalidated each time, answered 304 while unchanged: a new version shows on the next load.
    ctx.set('Cache-Control', 'no-cache');
    ctx.set('ETag', asset.etag);
    ctx.type = asset.type;
    ctx.status = 200; // Koa judges freshness only for a 2xx or 304 status
    if (ctx.fresh) {
      ctx.status = 304;
      return;
    }
    ctx.body = asset.body;
  }
  return r;
}
