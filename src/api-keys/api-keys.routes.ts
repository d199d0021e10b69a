import Router from '@koa/router';
import { op, type AppState } from '../http/op.js';
import type { ApiKeysService } from './api-keys.service.js';

// HTTP only: each handler is the operation of the same id in schema/.
export function apiKeysRoutes(keys: ApiKeysService): Router<AppState> {
  const r = new Router<AppState>({ prefix: '/v1/api-keys' });
  r.get('/', op('listApiKeys', { scope: 'api_keys:read' }, ({ auth, query, page }) => keys.list(auth.workspaceId, { mode: query.mode }, page)));
  r.post('/', op('createApiKey', { scope: 'api_keys:write', status: 201, idempotent: true }, ({ auth, body }) =>
    keys.create({ workspaceId: auth.workspaceId, creator: auth, name: body.name, scopes: body.scopes, mode: body.mode })));
  // Registered before '/:key_id', which would otherwise take 'current' for an id (ids start 'key_').
  r.get('/current', op('getCurrentApiKey', { scope: null }, ({ auth }) => keys.current(auth)));
  r.get('/:key_id', op('getApiKey', { scope: 'api_keys:read' }, ({ auth, params }) => keys.get(auth.workspaceId, params.key_id)));
  r.delete('/:key_id', op('revokeApiKey', { scope: 'api_keys:write', status: 204 }, ({ auth, params }) =>
    keys.revoke(auth.workspaceId, params.key_id, auth)));
  r.get('/:key_id/activity', op('listApiKeyActivity', { scope: 'api_keys:read' }, ({ auth, params, page }) =>
    keys.activity(auth.workspaceId, params.key_id, page)));
  return r;
}
