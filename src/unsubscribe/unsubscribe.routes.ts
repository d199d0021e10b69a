import Router from '@koa/router';
import type { Context } from 'koa';
import { AppError } from '../core/errors.js';
import { contentCodingRefusal, readBody, type AppState } from '../http/op.js';
import type { ContactsService } from '../contacts/index.js';
import type { UnsubscribeLinks, UnsubscribeTarget } from './links.js';
import { escapeHtml } from '../core/html.js';
import { failForPerson, publicPage, sendPublicPage } from '../http/public-page.js';

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

/** Answers an error as HTML to a browser, as the JSON error object to anything else. */
function fail(ctx: Context, err: AppError): void {
  failForPerson(ctx, err, err.code === 'not_found' ? 'Link not valid' : 'Not unsubscribed');
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
    sendPublicPage(ctx, 200, publicPage('Unsubscribe', `<p>Stop sending email to <strong>${escapeHtml(t.email)}</strong>?</p>
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
    sendPublicPage(ctx, 200, publicPage('Unsubscribed', `<p><strong>${escapeHtml(t.email)}</strong> will get no more email from this sender.</p>`));
  });

  return r;
}
