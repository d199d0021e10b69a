import Router from '@koa/router';
import { createHash, timingSafeEqual } from 'node:crypto';
import { AppError } from '../core/errors.js';
import { isLoopbackAddress } from '../core/loopback.js';
import { bearerToken, type AppState } from '../http/op.js';
import type { Metrics } from './metrics.js';

// GET /metrics in the Prometheus text format. With MAILROOM_METRICS_TOKEN it
// asks for that token as a bearer; without one it answers only the machine
// itself (loopback), so a server on a public address does not show its
// figures to the world by default.

const digest = (s: string) => createHash('sha256').update(s).digest();

export function metricsRoutes(metrics: Metrics, token: string | null): Router<AppState> {
  const r = new Router<AppState>();
  const expected = token === null ? undefined : digest(token);
  r.get('/metrics', async (ctx) => {
    if (expected) {
      const given = bearerToken(ctx);
      // Compared as digests, in constant time whatever the lengths.
      if (given === undefined || !timingSafeEqual(digest(given), expected)) {
        ctx.set('WWW-Authenticate', 'Bearer');
        throw new AppError('unauthorized', 'The metrics need the MAILROOM_METRICS_TOKEN as a bearer token.');
      }
    } else if (!isLoopbackAddress(ctx.request.socket.remoteAddress ?? '')) {
      throw new AppError('forbidden', 'Without MAILROOM_METRICS_TOKEN the metrics answer only this machine (loopback).');
    }
    ctx.set('Cache-Control', 'no-store');
    ctx.type = metrics.registry.contentType;
    ctx.body = await metrics.registry.metrics();
  });
  return r;
}
