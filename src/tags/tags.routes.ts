import Router from '@koa/router';
import { op, type AppState } from '../http/op.js';
import type { TagsService } from './tags.service.js';

// HTTP only: each handler is the operation of the same id in schema/.
export function tagsRoutes(tags: TagsService): Router<AppState> {
  const r = new Router<AppState>({ prefix: '/v1/tags' });
  r.get('/', op('listTags', { scope: 'contacts:read' }, ({ auth, page }) => tags.list(auth.workspaceId, page)));
  r.post('/', op('createTag', { scope: 'contacts:write', status: 201, idempotent: true }, ({ auth, body }) =>
    tags.create(auth.workspaceId, body.name)));
  r.delete('/:tag_id', op('deleteTag', { scope: 'contacts:write', status: 204 }, ({ auth, params }) =>
    tags.remove(auth.workspaceId, params.tag_id)));
  return r;
}
