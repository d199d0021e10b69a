import Router from '@koa/router';
import { createHash, timingSafeEqual } from 'node:crypto';
import { AppError } from '../core/errors.js';
import { isLoopbackAddress } from '../core/loopback.js';
import { bearerToken, type AppState } from '../http/op.js';
import type { Metrics } from './metrics.js';

// GET /metrics in the Prometheus text format. With MAILROOM_METRICS_TOKEN it
// asks for that token as a bearer; without one it answers only the machine
// itself (loopback), so a server on a public address does not show its
// figures to the world by default. A request a reverse proxy on the same
// machine passed on comes from loopback too; the forwarding header a proxy
// adds tells it apart, so the metrics are not public behind one either.

const digest = (s: string) => createHash('sha256').update(s).digest();

/** The headers by which a proxy names the client it forwards for (RFC 7239, and the common ones before it). */
const FORWARDING_HEADERS = ['Forwarded', 'X-Forwarded-For', 'X-Real-IP'];

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
    } else {
      const forwarded = FORWARDING_HEADERS.find((name) => ctx.get(name) !== '');
      if (forwarded) {
        throw new AppError('forbidden', `Without MAILROOM_METRICS_TOKEN the metrics answer only this machine, and this request came through a proxy (its ${forwarded} header says so): set MAILROOM_METRICS_TOKEN to scrape through one.`);
      }
    }
    ctx.set('Cache-Control', 'no-store');
    ctx.type = metrics.registry.contentType;
    ctx.body = await metrics.registry.metrics();
  });
  return r;
}
