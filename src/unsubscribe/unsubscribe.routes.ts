import Router from '@koa/router';
import type { Context } from 'koa';
import { AppError } from '../core/errors.js';
import { contentCodingRefusal, readBody, type AppState } from '../http/op.js';
import type { ContactsService } from '../contacts/index.js';
import type { UnsubscribeLinks, UnsubscribeTarget } from './links.js';
import { escapeHtml } from '../core/html.js';

// The public unsubscribe endpoints, outside /v1 and without an API key: the
// token in the path is the credential.
//
// GET never unsubscribes: link scanners and mailbox providers fetch URLs in
// messages, so GET shows a confirmation page whose button POSTs (RFC 8058 §1).
// POST with the body "List-Unsubscribe=One-Click" is the one-click request
// mailbox providers send (RFC 8058 §3.1), form-urlencoded or multipart; the
// page's button sends the same. Errors are the usual JSON error object, or a
// small HTML page when the client prefers HTML (a person in a browser).

const MAX_BODY_BYTES = 8 * 1024;
const ONE_CLICK_MULTIPART = /content-disposition:\s*form-data;\s*name="?List-Unsubscribe"?\s*\r?\n(?:[^\r\n]+\r?\n)*\r?\nOne-Click\r?\n/i;


function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex"><title>${escapeHtml(title)}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f6f4;color:#222}main{max-width:32rem;margin:12vh auto;padding:2rem;background:#fff;border-radius:8px}button{font:inherit;padding:.6rem 1.2rem;border:0;border-radius:6px;background:#222;color:#fff;cursor:pointer}</style>
</head><body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>
`;
}

function sendHtml(ctx: Context, status: number, html: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  // The address is in the page: keep it out of caches and referrers.
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'");
  ctx.body = html;
}

/** Answers an error as HTML to a browser, as the JSON error object to anything else. */
function fail(ctx: Context, err: AppError): void {
  if (ctx.accepts('json', 'html') !== 'html') throw err;
  const title = err.code === 'not_found' ? 'Link not valid' : 'Not unsubscribed';
  sendHtml(ctx, err.status, page(title, `<p>${escapeHtml(err.message)}</p>`));
}

function target(ctx: Context, links: UnsubscribeLinks, token: string): UnsubscribeTarget | undefined {
  const t = links.read(token);
  if (!t) fail(ctx, new AppError('not_found', 'This unsubscribe link is not valid. Use the link from the message exactly as it is.'));
  return t;
}

function isOneClick(ctx: Context, body: string): boolean {
  if (ctx.is('application/x-www-form-urlencoded')) return new URLSearchParams(body).get('List-Unsubscribe') === 'One-Click';
  if (ctx.is('multipart/form-data')) return ONE_CLICK_MULTIPART.test(body);
  return false;
}

export function unsubscribeRoutes(links: UnsubscribeLinks, contacts: ContactsService): Router<AppState> {
  const r = new Router<AppState>({ prefix: '/u' });

  r.get('/:token', (ctx) => {
    const t = target(ctx, links, ctx.params.token);
    if (!t) return;
    sendHtml(ctx, 200, page('Unsubscribe', `<p>Stop sending email to <strong>${escapeHtml(t.email)}</strong>?</p>
<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>`));
  });

  r.post('/:token', async (ctx) => {
    const t = target(ctx, links, ctx.params.token);
    if (!t) return;
    const refusal = contentCodingRefusal(ctx, 'send the form uncompressed');
    if (refusal) {
      fail(ctx, refusal);
      return;
    }
    let body: string;
    try {
      body = (await readBody(ctx, MAX_BODY_BYTES)).toString('utf8');
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      fail(ctx, err);
      return;
    }
    if (!isOneClick(ctx, body)) {
      fail(ctx, new AppError('bad_request', 'An unsubscribe request carries the form field List-Unsubscribe=One-Click (RFC 8058).', { param: 'List-Unsubscribe' }));
      return;
    }
    await contacts.unsubscribeAddress(t.workspaceId, t.email, null);
    sendHtml(ctx, 200, page('Unsubscribed', `<p><strong>${escapeHtml(t.email)}</strong> will get no more email from this sender.</p>`));
  });

  return r;
}
