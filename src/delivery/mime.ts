// Builds the RFC 5322 message that goes out, with nodemailer's MailComposer.
// The envelope (MAIL FROM, RCPT TO, Bcc) is not the composer's business: the
// caller hands recipients to the delivery functions, so Bcc never reaches a header.

import { randomUUID } from 'node:crypto';
import * as base64 from 'nodemailer/lib/base64';
import MailComposer from 'nodemailer/lib/mail-composer';
import * as mimeFuncs from 'nodemailer/lib/mime-funcs';
import type MimeNode from 'nodemailer/lib/mime-node';
import * as qp from 'nodemailer/lib/qp';
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
  /** The whole Message-ID when the email has its own (a client's, kept on submission); it wins over the parts. */
  messageId?: string;
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

/**
 * A word too long for a folded line of 76 characters (the composer folds at
 * whitespace only): as it is, "Subject: <998 letters>" would go out as a
 * line of 999 octets, over RFC 5322 §2.1.1's 998.
 */
const UNFOLDABLE_WORD = /\S{76,}/;

/**
 * The subject as the composer is to write it: with a word it cannot fold,
 * as RFC 2047 encoded words of at most 52 bytes each, which it folds between
 * (the composer leaves valid encoded words as they are); otherwise as given,
 * for the composer to encode where it holds non-ASCII text.
 */
function foldableSubject(subject: string): string {
  return UNFOLDABLE_WORD.test(subject) ? mimeFuncs.encodeWord(subject, 'Q', 52) : subject;
}

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

/** nodemailer's qp.Encoder takes its input in slices of this many bytes (ENCODE_SLICE_SIZE). */
const QP_SLICE_BYTES = 64 * 1024;

/**
 * Quoted-printable text as nodemailer's qp.Encoder writes content handed to it
 * in one chunk: the whitespace that ends the content is held back and encoded
 * after the rest, and each part is wrapped together with the line left open
 * before it. undefined for content the encoder would take in several slices.
 */
function quotedPrintable(content: string | Buffer): string | undefined {
  const bytes = typeof content === 'string' ? Buffer.from(content, 'utf-8') : content;
  let end = bytes.length;
  while (end > 0 && (bytes[end - 1] === 0x20 || bytes[end - 1] === 0x09)) end--;
  if (end > QP_SLICE_BYTES || bytes.length - end > QP_SLICE_BYTES) return undefined;
  let done = '';
  let open = '';
  for (const part of [bytes.subarray(0, end), bytes.subarray(end)]) {
    if (!part.length) continue;
    const wrapped = qp.wrap(open + qp.encode(part), 76);
    const lf = wrapped.lastIndexOf('\n');
    done += wrapped.slice(0, lf + 1);
    open = wrapped.slice(lf + 1);
  }
  return done + open;
}

/** What MimeNode.stream() also looks at; none of it is set by the composer for the input above. */
interface StreamHooks { _raw?: unknown; _transforms?: unknown[]; _processFuncs?: unknown[] }

/**
 * Writes the node tree the way MimeNode.stream() does, in one synchronous
 * pass: the same header blocks (buildHeaders), encodings (nodemailer's qp and
 * base64 functions, applied as its encoder streams apply them) and boundary
 * lines. build() goes through a pipeline of streams per node, with an
 * AbortSignal, a DOMException and several event-loop turns per message; that
 * costs more than the composing itself. Returns false for a tree it does not
 * cover (stream content, a raw node, transforms), which build() then writes.
 */
function serialize(node: MimeNode, out: Array<string | Buffer>): boolean {
  const hooks = node as unknown as StreamHooks;
  if (hooks._raw || hooks._transforms?.length || hooks._processFuncs?.length || node.newline) return false;
  out.push(`${node.buildHeaders()}\r\n\r\n`);
  const content = node.content;
  if (content) {
    if (typeof content !== 'string' && !Buffer.isBuffer(content)) return false;
    const encoding = node.getTransferEncoding();
    if (encoding === 'base64') {
      out.push(base64.wrap(base64.encode(content), 76));
    } else if (encoding === 'quoted-printable') {
      // Outside text/* nodemailer encodes a lone CR or LF, which qp.encode does not.
      const text = /^text\//i.test(node.contentType ?? '') ? quotedPrintable(content) : undefined;
      if (text === undefined) return false;
      out.push(text);
    } else {
      out.push(content);
    }
  }
  if (node.multipart) {
    for (const [i, child] of node.childNodes.entries()) {
      out.push(`${i > 0 ? '\r\n' : ''}--${node.boundary}\r\n`);
      if (!serialize(child, out)) return false;
    }
    out.push(`\r\n--${node.boundary}--\r\n`);
  }
  return true;
}

/** The message of a compiled tree; ends in CRLF, as build()'s last-newline stage makes it. */
export async function buildMessage(root: MimeNode): Promise<Buffer> {
  const out: Array<string | Buffer> = [];
  if (!serialize(root, out)) return root.build();
  const raw = Buffer.concat(out.map((part) => (typeof part === 'string' ? Buffer.from(part, 'utf-8') : part)));
  const last = raw.at(-1);
  if (last === 0x0a) return raw;
  return Buffer.concat([raw, Buffer.from(last === 0x0d ? '\n' : '\r\n', 'latin1')]);
}

/** Composes the message; throws AppError('validation_error') for input that cannot be sent as given. */
export async function composeMessage(input: ComposeInput): Promise<ComposedMessage> {
  const messageId = input.messageId ?? `<${input.messageIdLocal ?? randomUUID()}@${input.messageIdDomain}>`;
  const composer = new MailComposer({
    from: toNodemailerAddress(input.from),
    to: input.to.map(toNodemailerAddress),
    ...(input.cc?.length && { cc: input.cc.map(toNodemailerAddress) }),
    ...(input.replyTo?.length && { replyTo: input.replyTo.map(toNodemailerAddress) }),
    subject: foldableSubject(input.subject),
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
  return { raw: await buildMessage(composer.compile()), messageId };
}
