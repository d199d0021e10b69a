import { characterCount } from '../core/characters.js';
import { AppError } from '../core/errors.js';
import { parseMailbox } from './addresses.js';
import { MAX_SUBJECT_CHARS, type ContentBody, type EmailCreateBody } from './email-input.js';
import type { TemplateSend, TemplatesPort } from './ports.js';

// Sending by template: a payload names a template (`template: {id, version?,
// variables}`) instead of giving html and text. Its content is rendered once,
// when the email is created, and stored as if it had been given: what was
// sent never changes when the template does. The payload's own subject, from
// and reply_to win over the version's.

/** A payload with its content in place, and the template version it came from. */
export interface Expanded {
  body: ContentBody;
  template?: { id: string; version: number };
}

const asList = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** The address of the one `to` recipient, when there is exactly one and it reads as an address. */
function soleTo(body: EmailCreateBody): string | undefined {
  const to = asList(body.to);
  if (to.length !== 1) return undefined;
  const parsed = parseMailbox(to[0]);
  return parsed.ok ? parsed.mailbox.email : undefined;
}

/**
 * The content of each payload, in order: as given, or rendered from its
 * template; for a payload that cannot be rendered, the error it gets. Without
 * a template in any payload this does nothing and asks nothing of the store.
 * `contact` is filled when there is exactly one `to` recipient with a
 * contact; `unsubscribe_url` when the email has exactly one recipient (the
 * link names that address, as `unsubscribe: true` does).
 */
export async function expandTemplates(templates: TemplatesPort, workspaceId: string, bodies: EmailCreateBody[],
  unsubscribeUrl: (address: string) => string): Promise<Array<Expanded | AppError>> {
  const out: Array<Expanded | AppError> = bodies.map((body) => ({ body: body as ContentBody }));
  const sends: TemplateSend[] = [];
  const at: number[] = [];
  bodies.forEach((body, i) => {
    if (body.template === undefined) return;
    if (body.html !== undefined || body.text !== undefined) {
      out[i] = new AppError('validation_error', "Give either 'template' or 'html'/'text', not both.", { param: 'template' });
      return;
    }
    const to = soleTo(body);
    const alone = to !== undefined && asList(body.cc).length === 0 && asList(body.bcc).length === 0;
    sends.push({ template: body.template, ...(to !== undefined && { to }), ...(alone && { unsubscribeUrl: unsubscribeUrl(to) }) });
    at.push(i);
  });
  if (sends.length === 0) return out;
  const rendered = await templates.renderForSends(workspaceId, sends);
  rendered.forEach((r, k) => {
    const i = at[k];
    if (r instanceof AppError) {
      out[i] = r;
      return;
    }
    const { template: _named, ...body } = bodies[i];
    const from = body.from ?? r.from;
    if (from === null) {
      out[i] = new AppError('validation_error', "'from' is required: the template version has no default from.", { param: 'from' });
      return;
    }
    const subjectChars = body.subject === undefined ? characterCount(r.subject) : 0;
    // Said as the render's failure, before the email's own check would name 'subject', which the request did not give.
    if (subjectChars > MAX_SUBJECT_CHARS) {
      const message = `The subject rendered from the template is ${subjectChars.toLocaleString('en-US')} characters; a subject is at most ${MAX_SUBJECT_CHARS}.`;
      // Named and listed as any other render that fails.
      out[i] = new AppError('template_render_failed', message, { param: 'template', details: { problems: [{ param: 'template', message }] } });
      return;
    }
    const replyTo = body.reply_to ?? r.replyTo ?? undefined;
    out[i] = {
      body: {
        ...body, from, subject: body.subject ?? r.subject, ...(replyTo !== undefined && { reply_to: replyTo }),
        ...(r.html !== null && { html: r.html }), text: r.text,
      },
      template: { id: r.templateId, version: r.version },
    };
  });
  return out;
}
