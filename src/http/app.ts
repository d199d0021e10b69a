import Koa from 'koa';
import type Router from '@koa/router';
import { AppError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { errorBody, type AppState, type HttpDeps, type OpMiddleware } from './op.js';

// The Koa application: request id -> error shaper (which also turns an
// unanswered request into 404/405) -> routers. Everything operation-specific happens inside op().

/** The operations the routers serve; fails start-up when one is not in the contract. */
export function routedOperations(deps: HttpDeps, routers: Router<AppState>[]): Set<string> {
  const ids = new Set<string>();
  for (const router of routers) {
    for (const layer of router.stack) {
      for (const handler of layer.stack) {
        const id = (handler as Partial<OpMiddleware>).operationId;
        if (id !== undefined && !deps.contract.operation(id)) {
          throw new Error(`Route ${layer.methods.join(',')} ${layer.path} names operation '${id}', which schema/ does not define`);
        }
        if (id !== undefined) ids.add(id);
      }
    }
  }
  return ids;
}

export function createApp(deps: HttpDeps, routers: Router<AppState>[]): Koa<AppState> {
  routedOperations(deps, routers);
  const app = new Koa<AppState>({ proxy: false });
  app.context.mailroom = deps;
  app.silent = true;

  app.use(async (ctx, next) => {
    ctx.state.requestId = newId('req');
    ctx.set('X-Request-Id', ctx.state.requestId);
    await next();
  });

  app.use(async (ctx, next) => {
    try {
      await next();
      // Nothing answered: allowedMethods() has set 405 when the path exists.
      if (ctx.status === 405) throw new AppError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}.`, { headers: { Allow: String(ctx.response.get('Allow')) } });
      if (ctx.body === undefined && ctx.status === 404) throw new AppError('not_found', `No route for ${ctx.method} ${ctx.path}.`);
    } catch (err) {
      const appErr = toAppError(err);
      if (appErr.status >= 500) {
        deps.logger.error({ err, request_id: ctx.state.requestId, method: ctx.method, path: ctx.path }, 'request failed');
      }
      ctx.status = appErr.status;
      for (const [k, v] of Object.entries(appErr.headers)) ctx.set(k, v);
      ctx.body = errorBody(appErr, ctx.state.requestId);
    }
  });

  app.use(async (ctx, next) => {
    if (ctx.path === '/v1/openapi.json' && ctx.method === 'GET') {
      ctx.body = deps.contract.document;
      return;
    }
    await next();
  });

  for (const router of routers) {
    app.use(router.routes());
    app.use(router.allowedMethods({ throw: false }));
  }

  return app;
}

/** Known errors keep their code; anything else becomes a 500 that echoes no internal text. */
function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const status = (err as { status?: number; expose?: boolean }).status;
  if (typeof status === 'number' && status >= 400 && status < 500 && (err as { expose?: boolean }).expose) {
    return new AppError(status === 404 ? 'not_found' : status === 413 ? 'payload_too_large' : 'bad_request', (err as Error).message, { status });
  }
  return new AppError('internal_error', 'Something went wrong on our side; the request id identifies it in the server log.');
}
