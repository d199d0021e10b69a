import Router from '@koa/router';
import { op, type AppState } from '../http/op.js';
import type { DomainsService } from './domains.service.js';

// HTTP only: each handler is the operation of the same id in schema/.
export function domainsRoutes(domains: DomainsService): Router<AppState> {
  const r = new Router<AppState>({ prefix: '/v1/domains' });
  r.get('/', op('listDomains', { scope: 'domains:read' }, ({ auth, query, page }) =>
    domains.list(auth.workspaceId, { status: query.status }, page)));
  r.post('/', op('createDomain', { scope: 'domains:write', status: 201 }, ({ auth, body }) =>
    domains.create(auth.workspaceId, {
      name: body.name, region: body.region, returnPath: body.return_path, trackingSubdomain: body.tracking_subdomain,
      openTracking: body.open_tracking, clickTracking: body.click_tracking, inboundEnabled: body.inbound_enabled,
    })));
  r.get('/:domain_id', op('getDomain', { scope: 'domains:read' }, ({ auth, params }) => domains.get(auth.workspaceId, params.domain_id)));
  r.patch('/:domain_id', op('updateDomain', { scope: 'domains:write' }, ({ auth, params, body }) =>
    domains.update(auth.workspaceId, params.domain_id, {
      openTracking: body.open_tracking, clickTracking: body.click_tracking,
      trackingSubdomain: body.tracking_subdomain, inboundEnabled: body.inbound_enabled,
    })));
  r.delete('/:domain_id', op('deleteDomain', { scope: 'domains:write', status: 204 }, ({ auth, params }) =>
    domains.remove(auth.workspaceId, params.domain_id)));
  r.post('/:domain_id/verify', op('verifyDomain', { scope: 'domains:write' }, ({ auth, params }) =>
    domains.verify(auth.workspaceId, params.domain_id)));
  r.post('/:domain_id/dkim/rotate', op('rotateDomainDkim', { scope: 'domains:write' }, ({ auth, params }) =>
    domains.rotateDkim(auth.workspaceId, params.domain_id)));
  return r;
}
