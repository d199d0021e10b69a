import type { Context } from 'koa';
import { AppError } from '../core/errors.js';
import { escapeHtml } from '../core/html.js';

// The pages a person reaches from inside a message (unsubscribe, a tracked
// link), outside /v1 and without a key: plain HTML with no script, never
// cached, never telling where it was reached from.

/** A page with `title` as its heading and `body` (HTML, already escaped) under it. */
export function publicPage(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex"><title>${escapeHtml(title)}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f6f4;color:#222}main{max-width:32rem;margin:12vh auto;padding:2rem;background:#fff;border-radius:8px}button{font:inherit;padding:.6rem 1.2rem;border:0;border-radius:6px;background:#222;color:#fff;cursor:pointer}</style>
</head><body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>
`;
}

export function sendPublicPage(ctx: Context, status: number, html: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  // A page may name an address: keep it out of caches and referrers.
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'");
  ctx.body = html;
}

/** Answers `err` as a page titled `title` to a browser, and as the JSON error object to anything else. */
export function failForPerson(ctx: Context, err: AppError, title: string): void {
  if (ctx.accepts('json', 'html') !== 'html') throw err;
  sendPublicPage(ctx, err.status, publicPage(title, `<p>${escapeHtml(err.message)}</p>`));
}
