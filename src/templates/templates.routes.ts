import Router from '@koa/router';
import { op, type AppState } from '../http/op.js';
import type { TemplatesService } from './templates.service.js';

// HTTP only: each handler is the operation of the same id in schema/.
// {template_id} is a template's id or its alias.

/** Room for the largest sources (1,000,000 characters each of html and text) in JSON. */
const MAX_TEMPLATE_BODY_BYTES = 8 * 1024 * 1024;

export function templatesRoutes(templates: TemplatesService): Router<AppState> {
  const r = new Router<AppState>({ prefix: '/v1/templates' });
  r.get('/', op('listTemplates', { scope: 'templates:read' }, ({ auth, query, page }) =>
    templates.list(auth.workspaceId, { name: query.name }, page)));
  r.post('/', op('createTemplate', { scope: 'templates:write', status: 201, idempotent: true, maxBodyBytes: MAX_TEMPLATE_BODY_BYTES },
    ({ auth, body }) => templates.create(auth.workspaceId, body)));
  // Before /:template_id, which would otherwise take "render" for a name.
  r.post('/render', op('previewTemplate', { scope: 'templates:read', maxBodyBytes: MAX_TEMPLATE_BODY_BYTES, changesNothing: true }, ({ body }) =>
    templates.preview(body)));
  r.get('/:template_id', op('getTemplate', { scope: 'templates:read' }, ({ auth, params }) =>
    templates.get(auth.workspaceId, params.template_id)));
  r.patch('/:template_id', op('updateTemplate', { scope: 'templates:write', maxBodyBytes: MAX_TEMPLATE_BODY_BYTES }, ({ auth, params, body }) =>
    templates.update(auth.workspaceId, params.template_id, body)));
  r.delete('/:template_id', op('deleteTemplate', { scope: 'templates:write', status: 204 }, ({ auth, params }) =>
    templates.remove(auth.workspaceId, params.template_id)));
  r.post('/:template_id/publish', op('publishTemplate', { scope: 'templates:write' }, ({ auth, params, body }) =>
    templates.publish(auth.workspaceId, params.template_id, body.version)));
  r.post('/:template_id/duplicate', op('duplicateTemplate', { scope: 'templates:write', status: 201, idempotent: true }, ({ auth, params, body }) =>
    templates.duplicate(auth.workspaceId, params.template_id, body)));
  r.get('/:template_id/versions', op('listTemplateVersions', { scope: 'templates:read' }, ({ auth, params, page }) =>
    templates.versions(auth.workspaceId, params.template_id, page)));
  r.get('/:template_id/versions/:version', op('getTemplateVersion', { scope: 'templates:read' }, ({ auth, params }) =>
    templates.version(auth.workspaceId, params.template_id, params.version)));
  r.post('/:template_id/render', op('renderTemplate', { scope: 'templates:read', changesNothing: true }, ({ auth, params, body }) =>
    templates.render(auth.workspaceId, params.template_id, body)));
  return r;
}
