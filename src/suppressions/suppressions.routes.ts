import Router from '@koa/router';
import { op, type AppState } from '../http/op.js';
import type { SuppressionsService } from './suppressions.service.js';

// HTTP only: each handler is the operation of the same id in schema/.
export function suppressionsRoutes(suppressions: SuppressionsService): Router<AppState> {
  const r = new Router<AppState>({ prefix: '/v1/suppressions' });
  r.get('/', op('listSuppressions', { scope: 'suppressions:read' }, ({ auth, query, page }) =>
    suppressions.list(auth.workspaceId, { reason: query.reason, email: query.email }, page)));
  r.post('/', op('createSuppression', { scope: 'suppressions:write', status: 201, idempotent: true }, ({ auth, body }) =>
    suppressions.create(auth.workspaceId, body.email)));
  r.delete('/:suppression', op('deleteSuppression', { scope: 'suppressions:write', status: 204 }, ({ auth, params }) =>
    suppressions.remove(auth.workspaceId, params.suppression)));
  return r;
}
