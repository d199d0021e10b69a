import { AppError } from '../core/errors.js';
import type { Schema } from '../contract/operations.js';
import { fitsTextFormat } from '../contract/contract.js';
import { checkContentType, checkFilename, decodeBase64, defaultContentType } from '../attachments/index.js';
import { addressKey, mailDomain, parseMailbox, type Mailbox } from './addresses.js';
import { parseScheduleTime } from './schedule-time.js';

// The email creation payload after the schema has checked its shape: the
// rules a schema cannot say (addresses, structural headers, sizes, times),
// applied once here for single sends, batch items and the spam check alike.
// Errors name the field inside the payload (`to.2`, `headers.Subject`).

export const MAX_RECIPIENTS = 50;
/** Decoded bytes of html, text and attachments together; the size large receivers accept. */
export const MAX_CONTENT_BYTES = 25 * 1024 * 1024;
/** How far ahead an email can be scheduled. */
export const MAX_SCHEDULE_AHEAD_MS = 30 * 86_400_000;
/** A scheduled_at this close behind the server's clock is taken as "now" (client clock skew). */
export const SCHEDULE_SKEW_MS = 60_000;

/** An attachment of the payload: inline content, or an uploaded attachment's id. */
export type AttachmentBody = Schema<'EmailAttachmentInput'>;

/** The payload as the schema lets it through: `from` and `subject` may come from a template instead. */
export type EmailCreateBody = Schema<'EmailCreate'>;

/** A payload with its content in place: given as is, or rendered from its template. */
export type ContentBody = Omit<EmailCreateBody, 'template'> & { from: string; subject: string };

export type RecipientKind = 'to' | 'cc' | 'bcc';

export interface DraftRecipient {
  email: string;
  kind: RecipientKind;
  /** ASCII domain, lower-cased. */
  domain: string;
}

/** An attachment before its bytes are fetched: inline content is decoded already. */
export type DraftAttachment =
  | { kind: 'inline'; content: Buffer; filename: string; contentType: string; contentId: string | null }
  | { kind: 'upload'; attachmentId: string; filename?: string; contentType?: string; contentId: string | null; param: string };

/**
 * The To and Cc fields as a message shows them when they are not its
 * recipients: a submitted message's own, kept as an MTA keeps them (its
 * envelope says who receives it). Mailboxes and groups ("Team: a@x.test;"),
 * as the address fields of the API take them.
 */
export interface ShownRecipients {
  to: string[];
  cc: string[];
}

export interface EmailDraft {
  from: Mailbox;
  /** As given, trimmed. */
  fromText: string;
  fromDomain: string;
  to: string[];
  cc: string[];
  bcc: string[];
  replyTo: string[];
  /** Unique envelope recipients (by address, case-insensitive), first occurrence wins. */
  recipients: DraftRecipient[];
  subject: string;
  html: string | null;
  text: string | null;
  headers: Record<string, string>;
  /** The recipient Mailroom's own unsubscribe link is for (`unsubscribe: true`). */
  unsubscribeFor?: string;
  /** The Message-ID a submitting client gave its message, kept when well-formed; otherwise Mailroom makes one. */
  messageId?: string;
  /** The To and Cc fields a submitting client wrote, shown instead of the recipients. */
  shownRecipients?: ShownRecipients;
  tags: string[];
  attachments: DraftAttachment[];
  /** Epoch ms when the email is for later; undefined to send now. */
  scheduledAt?: number;
  /** Decoded bytes of html, text and inline attachments (uploads are added when fetched). */
  contentBytes: number;
  /** The template version the content was rendered from. */
  template?: { id: string; version: number };
}

// Structural fields the message builder writes itself; a custom header may not
// replace or double them (RFC 5322 §3.6 allows one From, one Subject, ...).
const RESERVED_HEADERS = new Set([
  'from', 'sender', 'to', 'cc', 'bcc', 'reply-to', 'subject', 'date', 'message-id',
  'mime-version', 'content-type', 'content-transfer-encoding', 'content-disposition', 'content-id',
  'dkim-signature', 'return-path', 'received',
]);
// RFC 5322 §2.2: a field name is printable US-ASCII except the colon.
const FIELD_NAME = /^[\x21-\x39\x3b-\x7e]{1,76}$/;
const LINE_BREAK = /[\r\n]/;
// RFC 5322 §2.1.1: at most 998 characters per line. A longer value is folded
// at its white space (the References of a long thread is thousands); the
// field's whole length is bounded only as a limit on what is stored.
const MAX_HEADER_LINE = 998;
const MAX_HEADER_VALUE = 16_384;
// Folded at whitespace, a line of a header is at least one word and the space before it.
const MAX_HEADER_WORD = MAX_HEADER_LINE - 1;
const UNFOLDABLE_WORD = new RegExp(`\\S{${MAX_HEADER_WORD + 1}}`);
const CONTENT_ID = /^[\x21-\x3b\x3d\x3f-\x7e]{1,250}$/; // printable, no space, no angle brackets
const CONTROL = /[\u0000-\u001f\u007f]/;
const UNSUBSCRIBE_URI = /^(?:https?|mailto):[^\s<>,"]+$/i;

const invalid = (param: string, message: string) => new AppError('validation_error', message, { param });

const asList = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

function mailboxes(field: string, value: string | string[] | undefined): { raw: string[]; boxes: Mailbox[] } {
  const raw = asList(value).map((s) => s.trim());
  const boxes = raw.map((entry, i) => {
    const parsed = parseMailbox(entry);
    const param = Array.isArray(value) ? `${field}.${i}` : field;
    if (!parsed.ok) throw invalid(param, `'${param}' ${parsed.reason}.`);
    return parsed.mailbox;
  });
  return { raw, boxes };
}

export interface ListUnsubscribe {
  url?: string;
  mailto?: string;
  oneClick: boolean;
}

/**
 * The List-Unsubscribe of custom headers (RFC 2369: a list of <uri>), with
 * RFC 8058 one-click when List-Unsubscribe-Post says so; undefined when not set.
 */
export function listUnsubscribeOf(headers: Record<string, string>): ListUnsubscribe | undefined {
  const find = (name: string) => Object.entries(headers).find(([k]) => k.toLowerCase() === name);
  const list = find('list-unsubscribe');
  const post = find('list-unsubscribe-post');
  if (!list) {
    if (post) throw invalid(`headers.${post[0]}`, 'List-Unsubscribe-Post needs a List-Unsubscribe header (RFC 8058).');
    return undefined;
  }
  const param = `headers.${list[0]}`;
  const uris = list[1].split(',').map((s) => s.trim()).filter(Boolean).map((s) => {
    const m = /^<([^>]*)>$/.exec(s);
    if (!m || !UNSUBSCRIBE_URI.test(m[1])) throw invalid(param, 'List-Unsubscribe is a comma list of <https://…> and <mailto:…> URIs (RFC 2369).');
    return m[1];
  });
  const url = uris.filter((u) => /^https?:/i.test(u));
  const mailto = uris.filter((u) => /^mailto:/i.test(u));
  if (uris.length === 0 || url.length > 1 || mailto.length > 1) {
    throw invalid(param, 'List-Unsubscribe takes at most one http(s) URI and one mailto URI.');
  }
  let oneClick = false;
  if (post) {
    if (post[1].trim() !== 'List-Unsubscribe=One-Click') {
      throw invalid(`headers.${post[0]}`, 'List-Unsubscribe-Post must be "List-Unsubscribe=One-Click" (RFC 8058).');
    }
    if (!url[0] || !/^https:/i.test(url[0])) throw invalid(param, 'One-click unsubscribe needs an https URI in List-Unsubscribe (RFC 8058 §3.1).');
    oneClick = true;
  }
  return { ...(url[0] && { url: url[0] }), ...(mailto[0] && { mailto: mailto[0] }), oneClick };
}

function checkHeaders(headers: Record<string, string>): void {
  const seen = new Set<string>();
  for (const [name, value] of Object.entries(headers)) {
    const param = `headers.${name}`;
    const lower = name.toLowerCase();
    if (!FIELD_NAME.test(name)) throw invalid(param, `'${name}' is not a valid header field name (RFC 5322 §2.2).`);
    if (RESERVED_HEADERS.has(lower)) throw invalid(param, `The ${name} header is set from the email's own fields and cannot be given in headers.`);
    if (seen.has(lower)) throw invalid(param, `The ${name} header is given twice.`);
    seen.add(lower);
    if (LINE_BREAK.test(value)) throw invalid(param, `The value of ${name} contains a line break.`);
    if (!fitsTextFormat('header-value', value)) throw invalid(param, `The value of ${name} contains a control character.`);
    if (value.length > MAX_HEADER_VALUE) throw invalid(param, `The value of ${name} is over ${MAX_HEADER_VALUE} characters.`);
    if (UNFOLDABLE_WORD.test(value)) {
      throw invalid(param, `The value of ${name} holds a word over ${MAX_HEADER_WORD} characters, which no folding fits in a line of ${MAX_HEADER_LINE} (RFC 5322 §2.1.1).`);
    }
  }
  listUnsubscribeOf(headers);
}

function attachmentsOf(list: AttachmentBody[]): DraftAttachment[] {
  return list.map((a, i) => {
    const param = `attachments.${i}`;
    const contentId = a.content_id === undefined ? null : a.content_id.trim();
    if (contentId !== null && !CONTENT_ID.test(contentId)) {
      throw invalid(`${param}.content_id`, `'${param}.content_id' must be printable ASCII without spaces or angle brackets.`);
    }
    if ((a.content === undefined) === (a.attachment_id === undefined)) {
      throw invalid(param, `'${param}' needs exactly one of content (base64) and attachment_id.`);
    }
    if (a.attachment_id !== undefined) {
      return {
        kind: 'upload', attachmentId: a.attachment_id, contentId, param: `${param}.attachment_id`,
        ...(a.filename !== undefined && { filename: checkFilename(a.filename, `${param}.filename`) }),
        ...(a.content_type !== undefined && { contentType: checkContentType(a.content_type, `${param}.content_type`) }),
      };
    }
    if (a.filename === undefined) throw invalid(`${param}.filename`, `'${param}.filename' is required with inline content.`);
    const filename = checkFilename(a.filename, `${param}.filename`);
    const content = decodeBase64(a.content!);
    if (!content) throw invalid(`${param}.content`, `'${param}.content' is not valid base64.`);
    const contentType = a.content_type !== undefined ? checkContentType(a.content_type, `${param}.content_type`) : defaultContentType(filename);
    return { kind: 'inline', content, filename, contentType, contentId };
  });
}

/**
 * Characters a subject may have, as the schema says of a given one: one header
 * line (RFC 5322 §2.1.1). A subject is kept with the email and each of its
 * events, so a long one costs far more than the same characters of html.
 * Rendered subjects (templates, broadcasts) are held to it by their paths; a
 * message submitted over SMTP is not, as an MTA takes it (the builder folds it).
 */
export const MAX_SUBJECT_CHARS = 998;

/** Checks and normalises a creation payload; throws 422 naming the field at fault. */
export function normaliseEmail(body: ContentBody, now: number): EmailDraft {
  const fromParsed = parseMailbox(body.from);
  if (!fromParsed.ok) throw invalid('from', `'from' ${fromParsed.reason}.`);
  const fromDomain = mailDomain(fromParsed.mailbox.email)!;

  const to = mailboxes('to', body.to);
  if (to.raw.length === 0) throw invalid('to', "'to' needs at least one address.");
  const cc = mailboxes('cc', body.cc);
  const bcc = mailboxes('bcc', body.bcc);
  const replyTo = mailboxes('reply_to', body.reply_to);

  const recipients: DraftRecipient[] = [];
  const seen = new Set<string>();
  for (const [kind, list] of [['to', to.boxes], ['cc', cc.boxes], ['bcc', bcc.boxes]] as const) {
    for (const box of list) {
      const key = addressKey(box.email);
      if (seen.has(key)) continue;
      seen.add(key);
      recipients.push({ email: box.email, kind, domain: mailDomain(box.email)! });
    }
  }
  if (recipients.length > MAX_RECIPIENTS) {
    throw invalid('to', `An email has at most ${MAX_RECIPIENTS} recipients in to, cc and bcc together; this one has ${recipients.length}.`);
  }

  if (body.html === undefined && body.text === undefined) throw invalid('html', 'Give html, text or both.');
  // The subject of a template or a broadcast is checked here, once rendered; the payload's own, by the schema as well.
  if (!fitsTextFormat('header-value', body.subject)) throw invalid('subject', "'subject' contains a line break or control character.");

  const headers = body.headers ?? {};
  checkHeaders(headers);
  if (body.unsubscribe === true) {
    // The link names the address it unsubscribes, so the message can only have one reader.
    if (recipients.length !== 1) {
      throw invalid('unsubscribe', "'unsubscribe' needs exactly one recipient: the link names the address it unsubscribes (send one email per recipient; a batch does that in one request).");
    }
    if (listUnsubscribeOf(headers)) throw invalid('unsubscribe', "Give either 'unsubscribe': true or your own List-Unsubscribe header, not both.");
  }

  // Resend's SDKs send tags as {name, value}: kept as the string name:value.
  const tags = [...new Set((body.tags ?? []).map((t) => (typeof t === 'string' ? t : `${t.name}:${t.value}`).trim()))];
  tags.forEach((t, i) => {
    if (t.length === 0 || CONTROL.test(t)) throw invalid(`tags.${i}`, `'tags.${i}' must be non-empty printable text.`);
  });

  const attachments = attachmentsOf(body.attachments ?? []);
  const contentBytes = Buffer.byteLength(body.html ?? '') + Buffer.byteLength(body.text ?? '')
    + attachments.reduce((n, a) => n + (a.kind === 'inline' ? a.content.length : 0), 0);
  if (contentBytes > MAX_CONTENT_BYTES) {
    throw invalid('attachments', `The email's content is over ${MAX_CONTENT_BYTES / 1024 / 1024} MiB (html, text and attachments, decoded).`);
  }

  let scheduledAt: number | undefined;
  if (body.scheduled_at !== undefined) scheduledAt = checkScheduleTime(body.scheduled_at, now);

  return {
    from: fromParsed.mailbox, fromText: body.from.trim(), fromDomain,
    to: to.raw, cc: cc.raw, bcc: bcc.raw, replyTo: replyTo.raw, recipients,
    subject: body.subject, html: body.html ?? null, text: body.text ?? null, headers, tags, attachments,
    ...(body.unsubscribe === true && { unsubscribeFor: recipients[0].email }),
    ...(scheduledAt !== undefined && { scheduledAt }), contentBytes,
  };
}

/**
 * A scheduled_at as epoch ms; undefined when it is due already (within the
 * skew allowance). Too far back or ahead, or unreadable: 422.
 */
export function checkScheduleTime(input: string, now: number): number | undefined {
  const at = parseScheduleTime(input, now);
  if (at === undefined) {
    throw invalid('scheduled_at', "'scheduled_at' must be an ISO 8601 date-time with an offset (2026-11-21T09:30:00Z) or a form like \"in 30 minutes\".");
  }
  if (at < now - SCHEDULE_SKEW_MS) throw invalid('scheduled_at', "'scheduled_at' is in the past.");
  if (at > now + MAX_SCHEDULE_AHEAD_MS) throw invalid('scheduled_at', `'scheduled_at' is more than ${MAX_SCHEDULE_AHEAD_MS / 86_400_000} days ahead.`);
  return at <= now ? undefined : at;
}

/** Mailboxes of stored address lists (already checked when the email was made). */
export function storedMailboxes(list: string[]): Mailbox[] {
  return list.map((entry) => {
    const parsed = parseMailbox(entry);
    return parsed.ok ? parsed.mailbox : { email: entry };
  });
}
