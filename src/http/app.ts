import { maxHeaderSize } from 'node:http';
import type { Duplex } from 'node:stream';
import Koa from 'koa';
import type Router from '@koa/router';
import type { Logger } from 'pino';
import { AppError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { isStoreFull, isStoreUnavailable } from '../store/db.js';
import { chargeUnrouted, errorBody, type AppState, type HttpDeps, type OpMiddleware } from './op.js';

// The Koa application: request id -> error shaper (which also turns an
// unanswered request into 404/405) -> the document's methods per path (405)
// -> routers. Everything operation-specific happens inside op().

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
  const storeRefusals = storeRefusalLog(deps.logger);
  app.context.mailroom = deps;
  app.silent = true;

  app.use(async (ctx, next) => {
    const started = process.hrtime.bigint();
    ctx.state.requestId = newId('req');
    ctx.set('X-Request-Id', ctx.state.requestId);
    try {
      await next();
    } finally {
      // Answered before its body was read whole (a refused key, a body too
      // large, a path that takes none): the connection closes after the
      // answer, or Node would read and drop the rest of the body, as long as
      // the client cared to send it.
      if (!ctx.req.complete && !ctx.headerSent) ctx.set('Connection', 'close');
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const operation = ctx.state.operationId ?? 'unrouted';
      deps.observe?.(operation, ctx.status, seconds);
      // One line per request: what was asked, what came of it, how long it took (built only when it is written).
      if (deps.logger.isLevelEnabled('info')) deps.logger.info({
        request_id: ctx.state.requestId, operation, method: ctx.method, path: ctx.path, status: ctx.status,
        ms: Math.round(seconds * 10_000) / 10, ...(ctx.state.auth && { key_id: ctx.state.auth.keyId, workspace_id: ctx.state.auth.workspaceId }),
      }, 'request');
    }
  });

  app.use(async (ctx, next) => {
    try {
      await next();
      // A method no router takes (PURGE) is 501 from allowedMethods(), with the path's methods in Allow when
      // a route has the path: that path does not allow it, as for any other method; no route has the other.
      if (ctx.status === 501 && ctx.body === undefined) {
        ctx.status = ctx.response.get('Allow') ? 405 : 404;
        if (ctx.status === 404) ctx.remove('Allow');
      }
      // Nothing answered: allowedMethods() has set 405 when the path exists.
      if ((ctx.status === 405 || (ctx.body === undefined && ctx.status === 404)) && API_PATH.test(ctx.path)) await chargeUnrouted(ctx, deps);
      if (ctx.status === 405) throw new AppError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}.`, { headers: { Allow: String(ctx.response.get('Allow')) } });
      if (ctx.body === undefined && ctx.status === 404) throw new AppError('not_found', `No route for ${ctx.method} ${ctx.path}.`);
    } catch (err) {
      const appErr = toAppError(err);
      if (appErr.code === 'storage_full' || appErr.code === 'store_unavailable') {
        storeRefusals.note(appErr.code, err, ctx.state.requestId);
      } else if (appErr.status >= 500) {
        deps.logger.error({ err, request_id: ctx.state.requestId, method: ctx.method, path: ctx.path }, 'request failed');
      }
      ctx.status = appErr.status;
      for (const [k, v] of Object.entries(appErr.headers)) ctx.set(k, v);
      ctx.body = errorBody(appErr, ctx.state.requestId);
    }
  });

  app.use(async (ctx, next) => {
    const isDocument = ctx.path === '/v1/openapi.json';
    const allowed = isDocument ? ['HEAD', 'GET'] : API_PATH.test(ctx.path) ? deps.contract.methodsAt(ctx.path.slice(3)) : undefined;
    // The document's methods for the path, rather than the routers': a router also offers
    // its routes' methods on /emails/{email_id} for /emails/batch, which is not an email's id.
    if (allowed && !allowed.includes(ctx.method)) {
      ctx.set('Allow', allowed.join(', '));
      if (ctx.method === 'OPTIONS') {
        ctx.status = 200;
        ctx.body = '';
      } else {
        ctx.status = 405;
      }
      return;
    }
    if (isDocument) {
      // No key is needed to read the document; one that is sent is counted, as on any request under /v1.
      await chargeUnrouted(ctx, deps);
      ctx.body = deps.contract.document;
      return;
    }
    await next();
  });

  for (const router of routers) app.use(mounted(router));

  return app;
}

/** A path under /v1, where the paths of the document are served (as case-blind as the routers). */
const API_PATH = /^\/v1\//i;

type RouterMiddleware = ReturnType<Router<AppState>['routes']>;

/**
 * A router's routes, then its 405s. A router with a fixed prefix runs only
 * for paths under it (as case-blind as its routes): the others could match
 * nothing there, and each would parse the Host header and try every route.
 */
function mounted(router: Router<AppState>): RouterMiddleware {
  const routes = router.routes();
  const allowed = router.allowedMethods({ throw: false });
  // The router's typings give its two middlewares two context types; Koa passes both the same one.
  const serve: RouterMiddleware = (ctx, next) => routes(ctx, () => allowed(ctx as Parameters<typeof allowed>[0], next));
  const prefix = router.opts.prefix;
  if (!prefix || !/^[\w/.-]+$/.test(prefix)) return serve;
  const under = new RegExp(`^${prefix.replace(/[.]/g, '\\.')}`, 'i');
  return (ctx, next) => (under.test(ctx.path) ? serve(ctx, next) : next());
}

/** How often requests refused for the store (full, or out of reach) are logged while they go on. */
const STORE_REFUSAL_LOG_MS = 60_000;

/**
 * A store that takes no writes refuses every request: the first refusal is
 * logged, then one line a minute with how many were refused since, where a
 * line a request would bury the log. The 503s are counted in the metrics.
 */
function storeRefusalLog(logger: Logger) {
  let last: { code: string; at: number } | undefined;
  let since = 0;
  return {
    note(code: string, err: unknown, requestId: string) {
      const now = Date.now();
      if (last?.code === code && now - last.at < STORE_REFUSAL_LOG_MS) {
        since++;
        return;
      }
      logger.warn({ err, code, request_id: requestId, refused_since_last: since }, 'requests refused: the store is full or out of reach');
      last = { code, at: now };
      since = 0;
    },
  };
}

/** How long a client is asked to wait when the store is full: long enough for an operator's alert to be seen. */
const STORAGE_FULL_RETRY_SECONDS = 30;

/** How long a client is asked to wait when the store cannot be reached: a database restart or a pooler's failover takes seconds. */
const STORE_UNAVAILABLE_RETRY_SECONDS = 5;

/** Known errors keep their code; a full or unreachable store is 503; anything else becomes a 500 that echoes no internal text. */
function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (isStoreFull(err)) {
    return new AppError('storage_full', 'The server\'s storage is full: nothing of this request was kept. Try again later.',
      { headers: { 'Retry-After': String(STORAGE_FULL_RETRY_SECONDS) } });
  }
  if (isStoreUnavailable(err)) {
    return new AppError('store_unavailable', 'The server\'s store cannot be reached right now: nothing of this request was kept. Try again in a few seconds.',
      { headers: { 'Retry-After': String(STORE_UNAVAILABLE_RETRY_SECONDS) } });
  }
  const status = (err as { status?: number; expose?: boolean }).status;
  if (typeof status === 'number' && status >= 400 && status < 500 && (err as { expose?: boolean }).expose) {
    return new AppError(status === 404 ? 'not_found' : status === 413 ? 'payload_too_large' : 'bad_request', (err as Error).message, { status });
  }
  return new AppError('internal_error', 'Something went wrong on our side; the request id identifies it in the server log.');
}

/**
 * What Node's HTTP parser refuses before any route runs (headers over its
 * limit, a Content-Length that is not one number, a request too slow to
 * arrive) gets the error object too, instead of a bare status line. For the
 * server's 'clientError' event; the connection is closed after the answer,
 * since the parser cannot tell where the next request would start.
 */
export function answerClientError(logger: Logger): (err: NodeJS.ErrnoException, socket: Duplex) => void {
  return (err, socket) => {
    const s = socket as Duplex & { bytesWritten?: number };
    if (err.code === 'ECONNRESET' || !s.writable || (s.bytesWritten ?? 0) > 0) {
      socket.destroy();
      return;
    }
    const appErr = clientErrorOf(err);
    const requestId = newId('req');
    logger.debug({ err, request_id: requestId }, 'refused a request the HTTP parser could not read');
    const body = JSON.stringify(errorBody(appErr, requestId));
    socket.end(`HTTP/1.1 ${appErr.status} ${STATUS_TEXT[appErr.status] ?? 'Bad Request'}\r\n`
      + 'Content-Type: application/json; charset=utf-8\r\n'
      + `Content-Length: ${Buffer.byteLength(body)}\r\n`
      + `X-Request-Id: ${requestId}\r\n`
      + 'Connection: close\r\n\r\n'
      + body);
  };
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

function clientErrorOf(err: NodeJS.ErrnoException): AppError {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new AppError('headers_too_large', `The request's header fields are too large: ${maxHeaderSize} bytes in all at most.`);
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppError('request_timeout', 'The request did not arrive in time.');
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return new AppError('bad_request', 'The Content-Length header is not valid: it must be one decimal number, and not sent with Transfer-Encoding.', { param: 'Content-Length' });
    default: {
      // llhttp's reason ("Invalid header value char") says what to fix; it holds nothing of the server's.
      const reason = (err as { reason?: unknown }).reason;
      return new AppError('bad_request', `The request is not valid HTTP/1.1${typeof reason === 'string' ? `: ${reason}` : ''}.`);
    }
  }
}
