import Router from '@koa/router';
import { op, type AppState } from '../http/op.js';
import type { AnalyticsService } from './analytics.service.js';

// HTTP only: each handler is the operation of the same id in schema/.
export function analyticsRoutes(analytics: AnalyticsService): Router<AppState> {
  const r = new Router<AppState>({ prefix: '/v1/analytics' });
  r.get('/', op('getAnalytics', { scope: 'analytics:read' }, ({ auth, query }) => analytics.get(auth.workspaceId, query)));
  return r;
}
