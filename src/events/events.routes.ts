import Router from '@koa/router';
import { op, type AppState } from '../http/op.js';
import type { EventsService } from './events.service.js';

// HTTP only: each handler is the operation of the same id in schema/.
export function eventsRoutes(events: EventsService): Router<AppState> {
  const r = new Router<AppState>({ prefix: '/v1/events' });
  r.get('/', op('listEvents', { scope: 'events:read' }, ({ auth, query, page }) => events.list(auth.workspaceId, query, page)));
  r.get('/:event_id', op('getEvent', { scope: 'events:read' }, ({ auth, params }) => events.get(auth.workspaceId, params.event_id)));
  return r;
}
