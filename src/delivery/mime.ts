// Builds the RFC 5322 message that goes out, as nodemailer's MailComposer
// writes it: the common shapes written here directly, any other by the composer.
// The envelope (MAIL FROM, RCPT TO, Bcc) is not the composer's business: the
// caller hands recipients to the delivery functions, so Bcc never reaches a header.

import { randomBytes, randomUUID } from 'node:crypto';
import * as base64 from 'nodemailer/lib/base64';
import MailComposer from 'nodemailer/lib/mail-composer';
import * as mimeFuncs from 'nodemailer/lib/mime-funcs';
import MimeNode from 'nodemailer/lib/mime-node';
import { AppError } from '../core/errors.js';
import { memoize } from '../core/memo.js';
import { encoderOutput } from './quoted-printable.js';

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
  // A body on one line (minified html, say) is found so by two native searches, not the expression's walk.
  if (!text.includes('\n') && !text.includes('\r')) return text;
  return text.replace(/\r\n|\r|\n/g, '\r\n');
}

type TextTransferEncoding = '7bit' | 'quoted-printable' | 'base64';

/** nodemailer's mime-funcs hasLongerLines() reads no further than this and counts the text as having long lines. */
const LONG_LINES_SCAN_CHARS = 128 * 1024;

/** What a byte of UTF-8 text counts as, for the choice of a transfer encoding. */
const OTHER = 0;
const LATIN_LETTER = 1;
/** A control character, or the first byte of a character that is one UTF-16 unit past ASCII. */
const NON_LATIN = 2;
/** The first byte of a character beyond the BMP: two UTF-16 units. */
const NON_LATIN_PAIR = 3;
const LINE_BREAK = 4;
const BYTE_KINDS = new Uint8Array(256);
for (let c = 0; c < 0x20; c++) BYTE_KINDS[c] = NON_LATIN;
BYTE_KINDS[0x09] = OTHER;
BYTE_KINDS[0x0a] = LINE_BREAK;
BYTE_KINDS[0x0d] = LINE_BREAK;
for (let c = 0x41; c <= 0x5a; c++) BYTE_KINDS[c] = BYTE_KINDS[c + 0x20] = LATIN_LETTER;
for (let c = 0xc0; c <= 0xef; c++) BYTE_KINDS[c] = NON_LATIN;
for (let c = 0xf0; c <= 0xf7; c++) BYTE_KINDS[c] = NON_LATIN_PAIR;

/** What nodemailer's isPlainText() refuses in ASCII, and its hasLongerLines(…, 76). */
const ASCII_CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f]/;
const LONG_LINE = /^.{77}/m;
const LATIN_LETTER_ANYWHERE = /[A-Za-z]/;

/**
 * The Content-Transfer-Encoding MimeNode chooses for a text part, in one pass
 * over its UTF-8 where it makes three over the text (isPlainText,
 * hasLongerLines, _getTextEncoding): 7bit for printable ASCII in lines of 76
 * characters at most; otherwise quoted-printable when the text holds more
 * Latin letters than 8-bit or control characters (counted in UTF-16 units),
 * else base64. Line lengths only count for ASCII text, where bytes are
 * characters.
 */
function textTransferEncoding(text: string, utf8: Buffer): TextTransferEncoding {
  // ASCII without controls, the usual case, is settled by a few searches that stop early.
  if (utf8.length === text.length && !ASCII_CONTROL.test(text)) {
    if (text.length <= LONG_LINES_SCAN_CHARS && !LONG_LINE.test(text)) return '7bit';
    return LATIN_LETTER_ANYWHERE.test(text) ? 'quoted-printable' : 'base64';
  }
  let latin = 0;
  let nonLatin = 0;
  let lineLength = 0;
  let longLines = false;
  for (let i = 0; i < utf8.length; i++) {
    const kind = BYTE_KINDS[utf8[i]];
    if (kind === LINE_BREAK) {
      lineLength = 0;
      continue;
    }
    if (++lineLength > 76) longLines = true;
    if (kind === LATIN_LETTER) latin++;
    else if (kind === NON_LATIN) nonLatin++;
    else if (kind === NON_LATIN_PAIR) nonLatin += 2;
  }
  if (nonLatin === 0 && !longLines && utf8.length <= LONG_LINES_SCAN_CHARS) return '7bit';
  return nonLatin < latin ? 'quoted-printable' : 'base64';
}

interface BodyPart {
  content: string | Buffer;
  /** Named for the composer when the body needs encoding; it goes to the composer as bytes then. */
  transferEncoding?: Exclude<TextTransferEncoding, '7bit'>;
}

/**
 * A text or html body for the composer. MimeNode scans text content to choose
 * its encoding, and bytes again unless the encoding is named, so a body that
 * needs encoding goes as bytes, with the encoding found above named on its
 * node once the tree is compiled (namedTransferEncodings). A 7bit body goes as
 * text: MimeNode only chooses 7bit for text it has scanned itself.
 */
function bodyPart(text: string): BodyPart {
  const utf8 = Buffer.from(text, 'utf-8');
  const encoding = textTransferEncoding(text, utf8);
  return encoding === '7bit' ? { content: text } : { content: utf8, transferEncoding: encoding };
}

/**
 * Sets Content-Transfer-Encoding on the nodes holding `parts` as buildHeaders()
 * would have, and where: after the fields compile() set, so the header block
 * is the same, field for field and in the same order.
 */
function namedTransferEncodings(node: MimeNode, parts: BodyPart[]): void {
  const part = parts.find((p) => p.content === node.content);
  if (part?.transferEncoding) node.setHeader('Content-Transfer-Encoding', part.transferEncoding);
  for (const child of node.childNodes) namedTransferEncodings(child, parts);
}

/** MimeNode with the private method that gives a header name its normal form. */
type WithNormaliser = { _normalizeHeaderKey(key: unknown): string };

/**
 * MimeNode puts a header name into its normal form (three regular
 * expressions) at every lookup, and building one message looks names up
 * dozens of times: a tenth of the build. The form depends on the name alone,
 * so it is remembered here, the first answer of each name being nodemailer's
 * own. Names come from API input, so the memory is bounded.
 */
function rememberNormalHeaderNames(): void {
  const prototype = MimeNode.prototype as unknown as WithNormaliser;
  const normalise = prototype._normalizeHeaderKey;
  const normalName = memoize((key: string) => normalise.call(prototype, key), 1000);
  prototype._normalizeHeaderKey = function (this: WithNormaliser, key: unknown): string {
    return typeof key === 'string' ? normalName(key) : normalise.call(this, key);
  };
}
rememberNormalHeaderNames();

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

/** Quoted-printable as the composer's encoder writes `content`; undefined for content it would take in several slices. */
function quotedPrintable(content: string | Buffer): Buffer | undefined {
  const bytes = typeof content === 'string' ? Buffer.from(content, 'utf-8') : content;
  let end = bytes.length;
  while (end > 0 && (bytes[end - 1] === 0x20 || bytes[end - 1] === 0x09)) end--;
  if (end > QP_SLICE_BYTES || bytes.length - end > QP_SLICE_BYTES) return undefined;
  return encoderOutput(bytes);
}

/**
 * A body as the composer's encoder streams write it in `encoding`; undefined
 * where this module does not write it the same (quoted-printable outside
 * text/*, or over one slice of the encoder).
 */
function encodedBody(content: string | Buffer, encoding: string | false, isText: boolean): string | Buffer | undefined {
  if (encoding === 'base64') return base64.wrap(base64.encode(content), 76);
  if (encoding === 'quoted-printable') return isText ? quotedPrintable(content) : undefined;
  return content;
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
    // Outside text/* nodemailer's quoted-printable encodes a lone CR or LF, which qp.encode does not.
    const body = encodedBody(content, node.getTransferEncoding(), /^text\//i.test(node.contentType ?? ''));
    if (body === undefined) return false;
    out.push(body);
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

/** The parts as one message, ending in CRLF as build()'s last-newline stage makes it. */
function messageOf(out: Array<string | Buffer>): Buffer {
  const raw = Buffer.concat(out.map((part) => (typeof part === 'string' ? Buffer.from(part, 'utf-8') : part)));
  const last = raw.at(-1);
  if (last === 0x0a) return raw;
  return Buffer.concat([raw, Buffer.from(last === 0x0d ? '\n' : '\r\n', 'latin1')]);
}

/** The message of a compiled tree. */
export async function buildMessage(root: MimeNode): Promise<Buffer> {
  const out: Array<string | Buffer> = [];
  return serialize(root, out) ? messageOf(out) : root.build();
}

/** Encodes header values as the composer's nodes do, through its public encodeHeaderValue; it holds no message. */
const headerEncoder = new MimeNode();
const normalHeaderName = (name: string) => (headerEncoder as unknown as WithNormaliser)._normalizeHeaderKey(name);

/** A header field as buildHeaders() writes it: the value encoded, folded at 76; none for a value that encodes to blank. */
function headerField(name: string, value: Parameters<MimeNode['encodeHeaderValue']>[1]): string | undefined {
  const encoded = headerEncoder.encodeHeaderValue(name, value);
  return encoded.trim() ? mimeFuncs.foldLines(`${name}: ${encoded}`, 76) : undefined;
}

interface TextBody { contentType: string; part: BodyPart }

const encodingName = (part: BodyPart): TextTransferEncoding => part.transferEncoding ?? '7bit';

/**
 * The message written directly, for the shapes nearly all mail has: a text
 * part, an html part or both as multipart/alternative, and no attachments.
 * The bytes are the composer's (the same fields in the same order, the same
 * encodings and boundary lines: mime.test.ts compares the two on random
 * input), without its tree of nodes, whose header lookups and stream stages
 * cost most of a message's build. Undefined for any other shape, which the
 * composer then writes.
 */
function composeCommonShape(input: ComposeInput, messageId: string, bodies: TextBody[]): Buffer | undefined {
  if (input.attachments?.length || bodies.length === 0) return undefined;
  const encoded: Array<string | Buffer> = [];
  for (const { part } of bodies) {
    const body = encodedBody(part.content, encodingName(part), true);
    if (body === undefined) return undefined;
    encoded.push(body);
  }
  const subject = foldableSubject(input.subject);
  const fields = [
    ...customHeaders(input.headers ?? {}).map(({ key, value }) => headerField(normalHeaderName(key), value)),
    ...listUnsubscribeHeaders(input.listUnsubscribe ?? {}).map(({ key, value }) => (value.foldLines ? mimeFuncs.foldLines(`${key}: ${value.value}`) : `${key}: ${value.value}`)),
    headerField('From', toNodemailerAddress(input.from)),
    headerField('To', input.to.map(toNodemailerAddress)),
    input.cc?.length ? headerField('Cc', input.cc.map(toNodemailerAddress)) : undefined,
    input.replyTo?.length ? headerField('Reply-To', input.replyTo.map(toNodemailerAddress)) : undefined,
    subject ? headerField('Subject', subject) : undefined,
    headerField('Message-ID', messageId),
    headerField('Date', input.date ?? new Date()),
  ];
  // MimeNode's boundary: its prefix, eight random bytes shared by the tree, the node's number (the root is 1).
  const boundary = bodies.length > 1 ? `--_NmP-${randomBytes(8).toString('hex')}-Part_1` : undefined;
  if (boundary === undefined) {
    fields.push(`Content-Transfer-Encoding: ${encodingName(bodies[0].part)}`, 'MIME-Version: 1.0', `Content-Type: ${bodies[0].contentType}`);
  } else {
    fields.push('MIME-Version: 1.0', `Content-Type: multipart/alternative;\r\n boundary="${boundary}"`);
  }
  const out: Array<string | Buffer> = [`${fields.filter((f) => f !== undefined).join('\r\n')}\r\n\r\n`];
  if (boundary === undefined) return messageOf([...out, encoded[0]]);
  bodies.forEach(({ contentType, part }, i) => out.push(
    `${i > 0 ? '\r\n' : ''}--${boundary}\r\nContent-Type: ${contentType}\r\nContent-Transfer-Encoding: ${encodingName(part)}\r\n\r\n`,
    encoded[i],
  ));
  out.push(`\r\n--${boundary}--\r\n`);
  return messageOf(out);
}

/** Composes the message; throws AppError('validation_error') for input that cannot be sent as given. */
export function composeMessage(input: ComposeInput): Promise<ComposedMessage> {
  return compose(input, true);
}

/** composeMessage through nodemailer's tree of nodes whatever the shape: the bytes the direct writer must match. */
export function composeThroughNodemailer(input: ComposeInput): Promise<ComposedMessage> {
  return compose(input, false);
}

async function compose(input: ComposeInput, writeDirectly: boolean): Promise<ComposedMessage> {
  const messageId = input.messageId ?? `<${input.messageIdLocal ?? randomUUID()}@${input.messageIdDomain}>`;
  // The composer leaves out an empty body, as it is left out here.
  const text = input.text ? bodyPart(crlf(input.text)) : undefined;
  const html = input.html ? bodyPart(crlf(input.html)) : undefined;
  const bodies = [
    ...(text ? [{ contentType: 'text/plain; charset=utf-8', part: text }] : []),
    ...(html ? [{ contentType: 'text/html; charset=utf-8', part: html }] : []),
  ];
  const raw = writeDirectly ? composeCommonShape(input, messageId, bodies) : undefined;
  return { raw: raw ?? await buildThroughComposer(input, messageId, text, html), messageId };
}

async function buildThroughComposer(input: ComposeInput, messageId: string, text: BodyPart | undefined, html: BodyPart | undefined): Promise<Buffer> {
  const composer = new MailComposer({
    from: toNodemailerAddress(input.from),
    to: input.to.map(toNodemailerAddress),
    ...(input.cc?.length && { cc: input.cc.map(toNodemailerAddress) }),
    ...(input.replyTo?.length && { replyTo: input.replyTo.map(toNodemailerAddress) }),
    subject: foldableSubject(input.subject),
    ...(text && { text: text.content }),
    ...(html && { html: html.content }),
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
  const root = composer.compile();
  namedTransferEncodings(root, [text, html].filter((p): p is BodyPart => p !== undefined));
  return buildMessage(root);
}
