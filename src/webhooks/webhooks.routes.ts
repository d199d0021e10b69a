import Router from '@koa/router';
import { op, type AppState } from '../http/op.js';
import type { WebhooksService } from './webhooks.service.js';

// HTTP only: each handler is the operation of the same id in schema/.
export function webhooksRoutes(hooks: WebhooksService): Router<AppState> {
  const r = new Router<AppState>({ prefix: '/v1/webhooks' });
  r.get('/', op('listWebhooks', { scope: 'webhooks:read' }, ({ auth, query, page }) =>
    hooks.list(auth.workspaceId, { enabled: query.enabled }, page)));
  r.post('/', op('createWebhook', { scope: 'webhooks:write', status: 201, idempotent: true }, ({ auth, body }) =>
    hooks.create(auth.workspaceId, body)));
  r.get('/:webhook_id', op('getWebhook', { scope: 'webhooks:read' }, ({ auth, params }) => hooks.get(auth.workspaceId, params.webhook_id)));
  r.patch('/:webhook_id', op('updateWebhook', { scope: 'webhooks:write' }, ({ auth, params, body }) =>
    hooks.update(auth.workspaceId, params.webhook_id, body)));
  r.delete('/:webhook_id', op('deleteWebhook', { scope: 'webhooks:write', status: 204 }, ({ auth, params }) =>
    hooks.remove(auth.workspaceId, params.webhook_id)));
  r.post('/:webhook_id/rotate-secret', op('rotateWebhookSecret', { scope: 'webhooks:write', idempotent: true }, ({ auth, params }) =>
    hooks.rotateSecret(auth.workspaceId, params.webhook_id)));
  r.post('/:webhook_id/test', op('testWebhook', { scope: 'webhooks:write', idempotent: true }, ({ auth, params }) =>
    hooks.sendTest(auth.workspaceId, params.webhook_id)));
  r.get('/:webhook_id/deliveries', op('listWebhookDeliveries', { scope: 'webhooks:read' }, ({ auth, params, query, page }) =>
    hooks.deliveries(auth.workspaceId, params.webhook_id, { status: query.status }, page)));
  r.get('/:webhook_id/deliveries/:delivery_id', op('getWebhookDelivery', { scope: 'webhooks:read' }, ({ auth, params }) =>
    hooks.delivery(auth.workspaceId, params.webhook_id, params.delivery_id)));
  r.post('/:webhook_id/deliveries/:delivery_id/replay', op('replayWebhookDelivery', { scope: 'webhooks:write', status: 201, idempotent: true },
    ({ auth, params }) => hooks.replay(auth.workspaceId, params.webhook_id, params.delivery_id)));
  return r;
}
