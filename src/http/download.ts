import type { Middleware } from 'koa';
import type { AppState } from './op.js';

/** A response that is a file rather than JSON (a message's source, an attachment). */
export class Download {
  constructor(readonly content: Buffer, readonly contentType: string, readonly filename: string) {}
}

/**
 * Sends a Download as the body with its own media type. It wraps op(), which
 * has put the handler's result in ctx.body by the time it returns.
 */
export const sendDownload: Middleware<AppState> = async (ctx, next) => {
  await next();
  if (!(ctx.body instanceof Download)) return;
  const d = ctx.body;
  ctx.body = d.content;
  ctx.type = d.contentType;
  // RFC 6266 §4.3: a plain ASCII name, plus filename* for anything else.
  const ascii = d.filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  ctx.set('Content-Disposition', `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(d.filename)}`);
  ctx.set('X-Content-Type-Options', 'nosniff');
};
