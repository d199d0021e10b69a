import Router from '@koa/router';
import { Download, sendDownload } from '../http/download.js';
import { op, type AppState } from '../http/op.js';
import type { InboundService } from './inbound.service.js';

// HTTP only: each handler is the operation of the same id in schema/.

export function inboundRoutes(inbound: InboundService): Router<AppState> {
  const r = new Router<AppState>({ prefix: '/v1/inbound' });
  r.get('/', op('listInboundEmails', { scope: 'inbound:read' }, ({ auth, query, page }) => inbound.list(auth.workspaceId, query, page)));
  r.get('/:inbound_id', op('getInboundEmail', { scope: 'inbound:read' }, ({ auth, params }) => inbound.get(auth.workspaceId, params.inbound_id)));
  r.get('/:inbound_id/raw', sendDownload, op('getInboundEmailRaw', { scope: 'inbound:read' }, async ({ auth, params }) =>
    new Download(await inbound.raw(auth.workspaceId, params.inbound_id), 'message/rfc822', `${params.inbound_id}.eml`)));
  r.get('/:inbound_id/attachments/:index', sendDownload, op('getInboundAttachment', { scope: 'inbound:read' }, async ({ auth, params }) => {
    const index = params.index;
    const a = await inbound.attachment(auth.workspaceId, params.inbound_id, index);
    return new Download(a.content, a.contentType, a.filename ?? `attachment-${index}`);
  }));
  return r;
}
