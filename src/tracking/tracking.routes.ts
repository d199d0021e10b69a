import Router from '@koa/router';
import { AppError } from '../core/errors.js';
import type { AppState } from '../http/op.js';
import { failForPerson } from '../http/public-page.js';
import type { TrackingService } from './tracking.service.js';

// Public endpoints reached from inside messages, outside /v1 and without a
// key. The pixel answers the same image for every genuine token, of an email
// kept or not (a mail client must never show a broken image); a token that is
// not genuine is a 404.

// The smallest transparent GIF (1x1, one colour, transparent).
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

const visitOf = (ctx: { ip: string; get(h: string): string }) => ({ ip: ctx.ip, userAgent: ctx.get('User-Agent').slice(0, 512) });

export function trackingRoutes(tracking: TrackingService): Router<AppState> {
  const r = new Router<AppState>({ prefix: '/t' });
  r.get('/o/:token', async (ctx) => {
    // HEAD is answered by Koa from GET; only a GET counts as an open.
    const counted = ctx.method === 'GET' ? await tracking.recordOpen(ctx.params.token, visitOf(ctx)) : true;
    if (!counted) throw new AppError('not_found', 'No such tracking link.');
    ctx.set('Cache-Control', 'no-store, no-cache, must-revalidate, private');
    ctx.type = 'image/gif';
    ctx.body = PIXEL;
  });
  r.get('/c/:token', async (ctx) => {
    const url = await tracking.recordClick(ctx.params.token, visitOf(ctx), ctx.method === 'GET');
    // A person in a browser is answered with a page, a program with the error object.
    const fail = (message: string) => failForPerson(ctx, new AppError('not_found', message), 'Link not available');
    if (url === undefined) return fail('This link is not valid. Use the link from the message exactly as it is.');
    if (url === null) return fail('This link has expired: the message it was in is no longer kept by its sender.');
    // A header is ASCII: a link written with other characters (a path in
    // Unicode, an IDN host) goes as a browser would have asked for it,
    // percent-encoded and in punycode. Links that were no URL are not tracked.
    if (!URL.canParse(url)) return fail('This link leads to no valid address.');
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.status = 302;
    ctx.set('Location', new URL(url).href);
    ctx.body = '';
  });
  return r;
}
