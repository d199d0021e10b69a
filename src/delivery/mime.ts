// Builds the RFC 5322 message that goes out, with nodemailer's MailComposer.
// The envelope (MAIL FROM, RCPT TO, Bcc) is not the composer's business: the
// caller hands recipients to the delivery functions, so Bcc never reaches a header.

import { randomUUID } from 'node:crypto';
import MailComposer from 'nodemailer/lib/mail-composer';
import { AppError } from '../core/errors.js';

export type Address = string | { email: string; name?: string };

export interface Attachment {
  filename: string;
  /** Base64 text or the bytes themselves. */
  content: string | Buffer;
  contentType?: string;
  /** Content-ID for an inline part, referenced from the HTML as cid:<contentId>. */
  contentId?: string;
}

export interface ComposeInput {
  from: Address;
  to: Address[];
  cc?: Address[];
  replyTo?: Address[];
  subject: string;
  text?: string;
  html?: string;
  /** Extra header fields; the ones the composer owns (From, Content-Type, ...) are refused. */
  headers?: Record<string, string>;
  attachments?: Attachment[];
  /** RFC 2369 List-Unsubscribe; `oneClick` adds RFC 8058 List-Unsubscribe-Post (needs an https url). */
  listUnsubscribe?: { url?: string; mailto?: string; oneClick?: boolean };
  /** Domain of the Message-ID: the sending domain, so replies and complaints trace back to it. */
  messageIdDomain: string;
  /** Local part of the Message-ID (the email's id, say); random when absent. */
  messageIdLocal?: string;
  date?: Date;
}

export interface ComposedMessage {
  raw: Buffer;
  /** With angle brackets, as in the header. */
  messageId: string;
}

// Fields the composer writes itself; a custom header must not replace or double them.
const RESERVED_HEADERS = new Set([
  'from', 'sender', 'to', 'cc', 'bcc', 'reply-to', 'subject', 'date', 'message-id',
  'mime-version', 'content-type', 'content-transfer-encoding', 'content-disposition', 'content-id',
  'dkim-signature', 'list-unsubscribe', 'list-unsubscribe-post', 'return-path', 'received',
]);

// RFC 5322 §2.2: a field name is printable US-ASCII except the colon.
const FIELD_NAME = /^[\x21-\x39\x3b-\x7e]+$/;
const BASE64 = /^[A-Za-z0-9+/\s]*={0,2}\s*$/;
const UNSUBSCRIBE_URI = /^(?:https?|mailto):[^\s<>,"]+$/i;

/** RFC 5322 §2.3: CR and LF only occur together; a lone one in the body becomes CRLF. */
function crlf(text: string): string {
  return text.replace(/\r\n|\r|\n/g, '\r\n');
}

function toNodemailerAddress(a: Address) {
  return typeof a === 'string' ? a : { address: a.email, name: a.name ?? '' };
}

function listUnsubscribeHeaders(opt: NonNullable<ComposeInput['listUnsubscribe']>) {
  const uris = [opt.url, opt.mailto && (/^mailto:/i.test(opt.mailto) ? opt.mailto : `mailto:${opt.mailto}`)].filter(
    (u): u is string => !!u,
  );
  for (const uri of uris) {
    if (!UNSUBSCRIBE_URI.test(uri)) throw new AppError('validation_error', `Invalid List-Unsubscribe URI ${JSON.stringify(uri)}.`, { param: 'list_unsubscribe' });
  }
  if (!uris.length) return [];
  // Prepared values skip nodemailer's encoding, which would mangle the <uri> list; the
  // URIs were checked above to carry no whitespace, so no line can be smuggled in.
  const headers = [{ key: 'List-Unsubscribe', value: { prepared: true, foldLines: true, value: uris.map((u) => `<${u}>`).join(', ') } }];
  if (opt.oneClick) {
    // RFC 8058 §3.1: one-click needs an HTTPS URI to POST to.
    if (!opt.url || !/^https:/i.test(opt.url)) {
      throw new AppError('validation_error', 'One-click unsubscribe needs an https URL.', { param: 'list_unsubscribe' });
    }
    headers.push({ key: 'List-Unsubscribe-Post', value: { prepared: true, foldLines: false, value: 'List-Unsubscribe=One-Click' } });
  }
  return headers;
}

function customHeaders(headers: Record<string, string>) {
  return Object.entries(headers).map(([key, value]) => {
    if (!FIELD_NAME.test(key) || RESERVED_HEADERS.has(key.toLowerCase())) {
      throw new AppError('validation_error', `Header ${JSON.stringify(key)} cannot be set.`, { param: `headers.${key}` });
    }
    // nodemailer turns line breaks in a value into spaces, so a value cannot start a new field.
    return { key, value };
  });
}

function attachmentContent(a: Attachment, i: number): Buffer {
  if (Buffer.isBuffer(a.content)) return a.content;
  if (!BASE64.test(a.content)) {
    throw new AppError('validation_error', 'Attachment content is not valid base64.', { param: `attachments.${i}.content` });
  }
  return Buffer.from(a.content, 'base64');
}

/** Composes the message; throws AppError('validation_error') for input that cannot be sent as given. */
export async function composeMessage(input: ComposeInput): Promise<ComposedMessage> {
  const messageId = `<${input.messageIdLocal ?? randomUUID()}@${input.messageIdDomain}>`;
  const composer = new MailComposer({
    from: toNodemailerAddress(input.from),
    to: input.to.map(toNodemailerAddress),
    ...(input.cc?.length && { cc: input.cc.map(toNodemailerAddress) }),
    ...(input.replyTo?.length && { replyTo: input.replyTo.map(toNodemailerAddress) }),
    subject: input.subject,
    ...(input.text !== undefined && { text: crlf(input.text) }),
    ...(input.html !== undefined && { html: crlf(input.html) }),
    attachments: (input.attachments ?? []).map((a, i) => ({
      filename: a.filename,
      content: attachmentContent(a, i),
      ...(a.contentType && { contentType: a.contentType }),
      ...(a.contentId && { cid: a.contentId, contentDisposition: 'inline' }),
    })),
    headers: [...customHeaders(input.headers ?? {}), ...listUnsubscribeHeaders(input.listUnsubscribe ?? {})],
    messageId,
    date: input.date ?? new Date(),
    // Content that names a file or a URL would make the composer read it: input comes from API users.
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  return { raw: await composer.compile().build(), messageId };
}
