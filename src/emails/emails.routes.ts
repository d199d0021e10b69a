import Router from '@koa/router';
import { op, type AppState } from '../http/op.js';
import type { AuthContext } from '../api-keys/index.js';
import { BATCH_EMAILS_PER_REQUEST, MAX_BATCH_EMAILS } from '../config.js';
import { AppError } from '../core/errors.js';
import { Download, sendDownload } from '../http/download.js';
import type { EmailsService, Sender } from './emails.service.js';

// HTTP only: each handler is the operation of the same id in schema/.

/** Room for base64 of the largest email content (25 MiB decoded) and its JSON. */
const MAX_SEND_BODY_BYTES = 40 * 1024 * 1024;

/**
 * The items of a batch as sent, before validation (1 when the body holds no
 * list of them), counted up to a full batch: a longer list is refused with
 * 422, and charging for it more than a full batch costs could exceed the
 * plan's burst, a 429 that no wait would end.
 */
function batchSize(body: unknown): number {
  const emails = typeof body === 'object' && body !== null && 'emails' in body ? body.emails : undefined;
  return Array.isArray(emails) ? Math.min(emails.length, MAX_BATCH_EMAILS) : 1;
}

const sender = (auth: AuthContext): Sender => ({ workspaceId: auth.workspaceId, plan: auth.plan, mode: auth.mode });

export function emailsRoutes(emails: EmailsService): Router<AppState> {
  const r = new Router<AppState>({ prefix: '/v1/emails' });
  r.post('/', op('createEmail', { scope: 'emails:send', status: 201, idempotent: true, maxBodyBytes: MAX_SEND_BODY_BYTES },
    ({ auth, body }) => emails.create(sender(auth), body)));
  r.get('/', op('listEmails', { scope: 'emails:read' }, ({ auth, query, page }) => emails.list(auth.workspaceId, query, page)));
  r.post('/batch', op('createEmailBatch', {
    scope: 'emails:send', idempotent: true, maxBodyBytes: MAX_SEND_BODY_BYTES,
    cost: (body) => Math.max(1, Math.ceil(batchSize(body) / BATCH_EMAILS_PER_REQUEST)),
  }, ({ auth, body, header, check }) => {
    // Each item is checked on its own: a malformed one fails alone, unless the client asks for all or nothing.
    const mode = header('Mailroom-Batch-Validation').trim().toLowerCase() || 'partial';
    if (mode !== 'partial' && mode !== 'strict') {
      throw new AppError('validation_error', "Mailroom-Batch-Validation is 'partial' (the default) or 'strict'.", { status: 400, param: 'Mailroom-Batch-Validation' });
    }
    const items = body.emails.map((item) => {
      const checked = check('EmailCreate', item);
      if ('value' in checked) return checked.value;
      const { message, param } = checked.problem;
      return new AppError('validation_error', message, { ...(param !== undefined && { param }) });
    });
    return emails.batch(sender(auth), items, { strict: mode === 'strict' });
  }));
  r.post('/check', op('checkEmail', { scope: 'emails:send', maxBodyBytes: MAX_SEND_BODY_BYTES, changesNothing: true }, ({ auth, body }) =>
    emails.check(sender(auth), body)));
  r.get('/:email_id', op('getEmail', { scope: 'emails:read' }, ({ auth, params }) => emails.get(auth.workspaceId, params.email_id)));
  r.get('/:email_id/raw', sendDownload, op('getEmailRaw', { scope: 'emails:read' }, async ({ auth, params }) =>
    new Download(await emails.raw(auth.workspaceId, params.email_id), 'message/rfc822', `${params.email_id}.eml`)));
  r.get('/:email_id/attachments/:index', sendDownload, op('getEmailAttachment', { scope: 'emails:read' }, async ({ auth, params }) => {
    const a = await emails.attachment(auth.workspaceId, params.email_id, params.index);
    return new Download(a.content, a.contentType, a.filename);
  }));
  r.patch('/:email_id', op('updateEmail', { scope: 'emails:send' }, ({ auth, params, body }) =>
    emails.reschedule(auth.workspaceId, params.email_id, body.scheduled_at)));
  r.post('/:email_id/cancel', op('cancelEmail', { scope: 'emails:send' }, ({ auth, params }) =>
    emails.cancel(auth.workspaceId, params.email_id)));
  r.post('/:email_id/resend', op('resendEmail', { scope: 'emails:send', status: 201 }, ({ auth, params }) =>
    emails.resend(sender(auth), params.email_id)));
  r.get('/:email_id/events', op('listEmailEvents', { scope: 'emails:read' }, ({ auth, params, page }) =>
    emails.events(auth.workspaceId, params.email_id, page)));
  return r;
}
