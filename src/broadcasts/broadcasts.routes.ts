import Router from '@koa/router';
import { op, type AppState } from '../http/op.js';
import type { AuthContext } from '../api-keys/index.js';
import type { Sender } from '../emails/index.js';
import type { BroadcastsService } from './broadcasts.service.js';

// HTTP only: each handler is the operation of the same id in schema/.

/** Room for the largest sources (1,000,000 characters each of html and text) in JSON. */
const MAX_BROADCAST_BODY_BYTES = 8 * 1024 * 1024;

const sender = (auth: AuthContext): Sender => ({ workspaceId: auth.workspaceId, plan: auth.plan, mode: auth.mode });

export function broadcastsRoutes(broadcasts: BroadcastsService): Router<AppState> {
  const r = new Router<AppState>({ prefix: '/v1/broadcasts' });
  r.get('/', op('listBroadcasts', { scope: 'broadcasts:read' }, ({ auth, query, page }) =>
    broadcasts.list(auth.workspaceId, { status: query.status }, page)));
  r.post('/', op('createBroadcast', { scope: 'broadcasts:write', status: 201, idempotent: true, maxBodyBytes: MAX_BROADCAST_BODY_BYTES },
    ({ auth, body }) => broadcasts.create(auth.workspaceId, body)));
  r.get('/:broadcast_id', op('getBroadcast', { scope: 'broadcasts:read' }, ({ auth, params }) =>
    broadcasts.get(auth.workspaceId, params.broadcast_id)));
  r.get('/:broadcast_id/skipped', op('listBroadcastSkips', { scope: 'broadcasts:read' }, ({ auth, params, page }) =>
    broadcasts.skipped(auth.workspaceId, params.broadcast_id, page)));
  r.patch('/:broadcast_id', op('updateBroadcast', { scope: 'broadcasts:write', maxBodyBytes: MAX_BROADCAST_BODY_BYTES }, ({ auth, params, body }) =>
    broadcasts.update(auth.workspaceId, params.broadcast_id, body)));
  r.delete('/:broadcast_id', op('deleteBroadcast', { scope: 'broadcasts:write', status: 204 }, ({ auth, params }) =>
    broadcasts.remove(auth.workspaceId, params.broadcast_id)));
  r.post('/:broadcast_id/audience', op('previewBroadcastAudience', { scope: 'broadcasts:read', changesNothing: true }, ({ auth, params, body }) =>
    broadcasts.audience(auth.workspaceId, params.broadcast_id, body)));
  r.post('/:broadcast_id/preview', op('previewBroadcast', { scope: 'broadcasts:read', changesNothing: true }, ({ auth, params, body }) =>
    broadcasts.preview(auth.workspaceId, params.broadcast_id, body.contact_id)));
  r.post('/:broadcast_id/test', op('sendBroadcastTest', { scope: 'broadcasts:write', idempotent: true }, ({ auth, params, body }) =>
    broadcasts.test(sender(auth), params.broadcast_id, body.to)));
  r.post('/:broadcast_id/send', op('sendBroadcast', { scope: 'broadcasts:write', idempotent: true }, ({ auth, params, body }) =>
    broadcasts.send(sender(auth), params.broadcast_id, body)));
  r.post('/:broadcast_id/pause', op('pauseBroadcast', { scope: 'broadcasts:write' }, ({ auth, params }) =>
    broadcasts.pause(auth.workspaceId, params.broadcast_id)));
  r.post('/:broadcast_id/resume', op('resumeBroadcast', { scope: 'broadcasts:write' }, ({ auth, params }) =>
    broadcasts.resume(auth.workspaceId, params.broadcast_id)));
  r.post('/:broadcast_id/cancel', op('cancelBroadcast', { scope: 'broadcasts:write' }, ({ auth, params }) =>
    broadcasts.cancel(auth.workspaceId, params.broadcast_id)));
  return r;
}
