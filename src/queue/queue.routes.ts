import Router from '@koa/router';
import { op, type AppState } from '../http/op.js';
import type { QueueService } from './queue.service.js';

// HTTP only: each handler is the operation of the same id in schema/.

export function queueRoutes(queue: QueueService): Router<AppState> {
  const r = new Router<AppState>({ prefix: '/v1/queue' });
  // Destinations are ranked by what waits longest, not by a position: the cursor names a place in that ranking.
  r.get('/', op('listQueue', { scope: 'queue:read' }, ({ auth, page }) =>
    queue.destinations(auth.workspaceId, { limit: page.limit, offset: page.after ?? 0, cursor: page.cursor })));
  r.get('/items', op('listQueueItems', { scope: 'queue:read' }, ({ auth, query, page }) =>
    queue.items(auth.workspaceId, { domain: query.domain, state: query.state }, page)));
  r.post('/retry', op('retryQueue', { scope: 'queue:write' }, ({ auth, body }) => queue.retry(auth.workspaceId, body)));
  r.post('/hold', op('holdQueue', { scope: 'queue:write' }, ({ auth, body }) => queue.hold(auth.workspaceId, body.domain)));
  r.post('/release', op('releaseQueue', { scope: 'queue:write' }, ({ auth, body }) => queue.release(auth.workspaceId, body.domain)));
  return r;
}
