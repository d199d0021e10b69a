import Router from '@koa/router';
import type { AppState } from '../http/op.js';

// Health for load balancers and orchestrators, outside /v1: no key, no rate
// limit, cheap. /healthz says the process answers; /readyz that it can do
// its work (store writable, migrations current, engines running), else 503
// with the reasons, so a balancer takes the node out.

export interface Readiness {
  /** What keeps this node from serving; empty when it is ready. */
  problems(): Promise<string[]>;
}

export function healthRoutes(readiness: Readiness): Router<AppState> {
  const r = new Router<AppState>();
  r.get('/healthz', (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { status: 'ok' };
  });
  r.get('/readyz', async (ctx) => {
    const problems = await readiness.problems();
    ctx.set('Cache-Control', 'no-store');
    ctx.status = problems.length === 0 ? 200 : 503;
    ctx.body = problems.length === 0 ? { status: 'ready' } : { status: 'not_ready', problems };
  });
  return r;
}
