import { simpleParser, type AddressObject, type EmailAddress } from 'mailparser';
import { detectExtension } from 'nodemailer/lib/mime-funcs';
import { AppError } from '../core/errors.js';
import { peerText } from '../core/nul.js';

// A message submitted over SMTP (RFC 6409), turned into the body POST
// /v1/emails takes, so it is checked and sent by the very same code. As an
// MTA does, the envelope decides who receives it and the header is left as
// written: the To and Cc fields go out as the client wrote them, whoever they
// name (an alias the client expanded, the whole list of which this
// transaction carries a part, "undisclosed-recipients:;"). On the email's
// record, envelope recipients the To field names are its to, the Cc field's
// its cc, and the others its bcc; when To names none of them, they are its to
// (the API needs one, and the message shows the client's fields, not these).

/** The body of POST /v1/emails, as far as a submitted message fills it. */
export interface SubmittedEmail {
  from: string;
  to: string[];
  cc?: string[];
  bcc?: string[];
  reply_to?: string[];
  subject: string;
  html?: string;
  text?: string;
  headers?: Record<string, string>;
  attachments?: Array<{ content: string; filename: string; content_type: string; content_id?: string }>;
}

/** What the message keeps of its own header: a well-formed Message-ID, and its To and Cc fields. */
export interface AsWritten {
  messageId?: string;
  shownRecipients: { to: string[]; cc: string[] };
}

/** A msg-id as RFC 5322 §3.6.4 writes it, short enough for any header line. */
const MESSAGE_ID = /^<[^<>@\s"]{1,200}@[^<>@\s"[\]]{1,200}>$/;

export interface Envelope {
  mailFrom: string;
  rcptTo: string[];
}

// Header fields the emails pipeline writes itself (it refuses them as custom
// headers), and the trace and transport fields a submission server drops.
const NOT_CUSTOM = new Set([
  'from', 'sender', 'to', 'cc', 'bcc', 'reply-to', 'subject', 'date', 'message-id', 'mime-version',
  'content-type', 'content-transfer-encoding', 'content-disposition', 'content-id', 'content-description',
  'dkim-signature', 'return-path', 'received', 'delivered-to', 'x-original-to', 'authentication-results',
  'arc-seal', 'arc-message-signature', 'arc-authentication-results',
]);

// RFC 5322 §3.2.3 specials: a display name holding one of them must be quoted.
const SPECIALS = /[()<>[\]:;@\\,."]/;

function mailbox(a: EmailAddress): string {
  const name = a.name.trim();
  if (!name) return a.address!;
  return `${SPECIALS.test(name) ? quoted(name) : name} <${a.address}>`;
}

const quoted = (name: string) => `"${name.replace(/(["\\])/g, '\\$1')}"`;

/** An address field as written: its mailboxes, and its groups with their members ("Team: a@x.test, b@y.test;"). */
function asWritten(field: AddressObject | AddressObject[] | undefined): string[] {
  const objects = field === undefined ? [] : Array.isArray(field) ? field : [field];
  return objects.flatMap((o) => o.value).flatMap((a) => {
    if (a.group) {
      const members = a.group.filter((m) => Boolean(m.address)).map(mailbox);
      const name = a.name.trim();
      if (!name) return members;
      return [`${SPECIALS.test(name) ? quoted(name) : name}:${members.length ? ` ${members.join(', ')}` : ''};`];
    }
    return a.address ? [mailbox(a)] : [];
  });
}

/** No recipient field at all: what Postfix and sendmail write in its place. */
const UNDISCLOSED = 'undisclosed-recipients:;';

function mailboxes(field: AddressObject | AddressObject[] | undefined): EmailAddress[] {
  const objects = field === undefined ? [] : Array.isArray(field) ? field : [field];
  return objects.flatMap((o) => o.value).flatMap((a) => (a.group ? a.group : [a])).filter((a) => Boolean(a.address));
}

const key = (address: string) => address.trim().toLowerCase();

/**
 * A name for a part its client gave none: a text/calendar alternative (an
 * invitation) or a forwarded message/rfc822, say. The extension its type
 * has lets the reader's client open it for what it is (attachment-1.ics).
 */
function unnamedPart(contentType: string, index: number): string {
  const extension = detectExtension(contentType);
  return `attachment-${index + 1}${/^[a-z0-9]+$/.test(extension) && extension !== 'bin' ? `.${extension}` : ''}`;
}

/** The POST /v1/emails body the message amounts to, and what it keeps of its own header. */
export async function emailFromSubmission(raw: Buffer, envelope: Envelope): Promise<{ email: SubmittedEmail; asWritten: AsWritten }> {
  // The listener has checked the structure already; a message the parser still refuses is the client's to fix, not to retry.
  const mail = await simpleParser(raw, { skipHtmlToText: true, skipTextToHtml: true, skipImageLinks: true }).catch((err: unknown) => {
    throw new AppError('validation_error', `The message could not be parsed: ${(err as Error).message ?? String(err)}`);
  });
  const envelopeKeys = new Set(envelope.rcptTo.map(key));
  const placed = new Set<string>();
  const pick = (field: AddressObject | AddressObject[] | undefined) => mailboxes(field).filter((a) => {
    const k = key(a.address!);
    if (!envelopeKeys.has(k) || placed.has(k)) return false;
    placed.add(k);
    return true;
  }).map(mailbox);
  let to = pick(mail.to);
  let cc = pick(mail.cc);
  let bcc = envelope.rcptTo.filter((r) => !placed.has(key(r)));
  if (to.length === 0 && bcc.length > 0) [to, bcc] = [bcc, []];
  else if (to.length === 0) [to, cc] = [cc, []];
  const shownTo = asWritten(mail.to);
  const shownCc = asWritten(mail.cc);
  const shownRecipients = shownTo.length + shownCc.length > 0 ? { to: shownTo, cc: shownCc } : { to: [UNDISCLOSED], cc: [] };
  const from = mailboxes(mail.from)[0];
  // A null reverse-path (MAIL FROM:<>) names no sender to put in its place.
  if (!from && envelope.mailFrom === '') {
    throw new AppError('validation_error', 'The message has no From header and its envelope sender is empty (MAIL FROM:<>): add a From header naming the sender, an address of a verified domain.');
  }
  const replyTo = mailboxes(mail.replyTo).map(mailbox);

  const headers: Record<string, string> = {};
  for (const { key: name, line } of mail.headerLines) {
    if (NOT_CUSTOM.has(name)) continue;
    const colon = line.indexOf(':');
    if (colon < 0) {
      throw new AppError('validation_error', `The message's header has a line that is not a header field (it has no colon): '${peerText(line).slice(0, 80)}'. A message starts with its header fields, then an empty line, then its body.`);
    }
    const field = line.slice(0, colon).trim();
    // One value per field name, as the API takes them: the first one wins.
    if (Object.keys(headers).some((k) => k.toLowerCase() === name)) continue;
    // mailparser gives a line one byte a character; a value may be UTF-8 (RFC 6532).
    headers[field] = peerText(line.slice(colon + 1).replace(/\r?\n[ \t]+/g, ' ').trim());
  }

  const html = typeof mail.html === 'string' ? mail.html : undefined;
  const email: SubmittedEmail = {
    from: from ? mailbox(from) : envelope.mailFrom,
    to,
    ...(cc.length > 0 && { cc }),
    ...(bcc.length > 0 && { bcc }),
    ...(replyTo.length > 0 && { reply_to: replyTo }),
    subject: mail.subject ?? '',
    ...(html !== undefined && { html }),
    // A message with neither part (an attachment alone) has an empty text.
    ...(mail.text !== undefined || html === undefined ? { text: mail.text ?? '' } : {}),
    ...(Object.keys(headers).length > 0 && { headers }),
    ...(mail.attachments.length > 0 && {
      attachments: mail.attachments.map((a, i) => ({
        content: a.content.toString('base64'),
        filename: a.filename ?? unnamedPart(a.contentType, i),
        content_type: a.contentType,
        // An image in multipart/related is inline without saying so: a Content-Disposition is optional there (RFC 2387).
        ...(a.cid !== undefined && a.contentDisposition !== 'attachment' && { content_id: a.cid }),
      })),
    }),
  };
  const messageId = mail.messageId?.trim();
  return { email, asWritten: { shownRecipients, ...(messageId !== undefined && MESSAGE_ID.test(messageId) && { messageId }) } };
}
