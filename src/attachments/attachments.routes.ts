import Router from '@koa/router';
import { op, type AppState } from '../http/op.js';
import { MAX_UPLOAD_BODY_BYTES, type AttachmentsService } from './attachments.service.js';

// HTTP only: each handler is the operation of the same id in schema/.
export function attachmentsRoutes(attachments: AttachmentsService): Router<AppState> {
  const r = new Router<AppState>({ prefix: '/v1/attachments' });
  r.post('/', op('createAttachment', { scope: 'emails:send', status: 201, maxBodyBytes: MAX_UPLOAD_BODY_BYTES }, ({ auth, body }) =>
    attachments.upload(auth.workspaceId, body)));
  return r;
}
