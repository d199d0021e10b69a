import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { withoutNul } from '../core/nul.js';
import { nonPublicReason, pinnedLookup, type ResolveHost } from './url-policy.js';

// One webhook POST over node:http, which never follows redirects (a 3xx is
// just a non-2xx answer here), with one deadline for the whole exchange and
// the connection pinned to the addresses the URL policy checked.

export const WEBHOOK_TIMEOUT_MS = 15_000;
/** How much of a response body is kept with the attempt, for the deliveries list. */
export const RESPONSE_EXCERPT_BYTES = 1024;

export interface PostOptions {
  allowPrivate: boolean;
  resolveHost: ResolveHost;
  timeoutMs?: number;
  /** Aborts the request (process shutdown). */
  signal?: AbortSignal;
}

export interface PostResult {
  /** HTTP status, or null when no response came. */
  status: number | null;
  durationMs: number;
  error: string | null;
  responseBody: string | null;
}

export function postJson(url: string, headers: Record<string, string>, body: string, options: PostOptions): Promise<PostResult> {
  const started = performance.now();
  const done = (r: Omit<PostResult, 'durationMs'>): PostResult => ({ ...r, durationMs: Math.round(performance.now() - started) });
  const u = new URL(url);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  // An IP literal never goes through `lookup`, so it is checked here.
  if (!options.allowPrivate && isIP(host)) {
    const why = nonPublicReason(host);
    if (why) return Promise.resolve(done({ status: null, error: `${host} ${why}; refused`, responseBody: null }));
  }
  const timeoutMs = options.timeoutMs ?? WEBHOOK_TIMEOUT_MS;

  return new Promise<PostResult>((resolve) => {
    let settled = false;
    const finish = (r: Omit<PostResult, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      resolve(done(r));
    };
    const send = u.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send({
      protocol: u.protocol,
      hostname: host,
      port: u.port || undefined,
      path: `${u.pathname}${u.search}`,
      method: 'POST',
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      lookup: pinnedLookup(options.resolveHost, options.allowPrivate),
      // A fresh connection per request: a pooled socket would skip the lookup.
      agent: false,
    });
    const timer = setTimeout(() => req.destroy(new Error(`no complete response within ${timeoutMs / 1000} s`)), timeoutMs);
    const onAbort = () => req.destroy(new Error('shutting down'));
    options.signal?.addEventListener('abort', onAbort, { once: true });

    req.on('error', (err) => finish({ status: null, error: err.message, responseBody: null }));
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const complete = () => {
        // Kept as text: a NUL as U+FFFD, or PostgreSQL could not record the attempt and it would be sent again.
        const excerpt = withoutNul(Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8'));
        finish({ status: res.statusCode ?? null, error: null, responseBody: excerpt === '' ? null : excerpt });
        res.destroy();
      };
      res.on('data', (chunk: Buffer) => {
        if (size < RESPONSE_EXCERPT_BYTES) chunks.push(chunk);
        size += chunk.length;
        // The rest of a large body is not needed: the status is the answer.
        if (size >= RESPONSE_EXCERPT_BYTES) complete();
      });
      res.on('end', complete);
      res.on('error', complete);
    });
    req.end(body);
  });
}
