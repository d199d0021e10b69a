import Router from '@koa/router';
import type { Middleware } from 'koa';
import { op, type AppState } from '../http/op.js';
import type { InboundService } from './inbound.service.js';

// HTTP only: each handler is the operation of the same id in schema/.

/** A response that is a file rather than JSON: what the two download operations return. */
class Download {
  constructor(readonly content: Buffer, readonly contentType: string, readonly filename: string) {}
}

/**
 * Sends a Download as the body with its own media type. It wraps op(), which
 * has put the handler's result in ctx.body by the time it returns.
 */
const sendDownload: Middleware<AppState> = async (ctx, next) => {
  await next();
  if (!(ctx.body instanceof Download)) return;
  const d = ctx.body;
  ctx.body = d.content;
  ctx.type = d.contentType;
  // RFC 6266 §4.3: a plain ASCII name, plus filename* for anything else.
  const ascii = d.filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  ctx.set('Content-Disposition', `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(d.filename)}`);
  ctx.set('X-Content-Type-Options', 'nosniff');
};

export function inboundRoutes(inbound: InboundService): Router<AppState> {
  const r = new Router<AppState>({ prefix: '/v1/inbound' });
  r.get('/', op('listInboundEmails', { scope: 'inbound:read' }, ({ auth, query, page }) => inbound.list(auth.workspaceId, query, page!)));
  r.get('/:inbound_id', op('getInboundEmail', { scope: 'inbound:read' }, ({ auth, params }) => inbound.get(auth.workspaceId, params.inbound_id)));
  r.get('/:inbound_id/raw', sendDownload, op('getInboundEmailRaw', { scope: 'inbound:read' }, async ({ auth, params }) =>
    new Download(await inbound.raw(auth.workspaceId, params.inbound_id), 'message/rfc822', `${params.inbound_id}.eml`)));
  r.get('/:inbound_id/attachments/:index', sendDownload, op('getInboundAttachment', { scope: 'inbound:read' }, async ({ auth, params }) => {
    const index = Number(params.index);
    const a = await inbound.attachment(auth.workspaceId, params.inbound_id, index);
    return new Download(a.content, a.contentType, a.filename ?? `attachment-${index}`);
  }));
  return r;
}
