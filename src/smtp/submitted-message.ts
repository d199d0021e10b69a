import { simpleParser, type AddressObject, type EmailAddress } from 'mailparser';
import { AppError } from '../core/errors.js';
import { peerText } from '../core/nul.js';

// A message submitted over SMTP (RFC 6409), turned into the body POST
// /v1/emails takes, so it is checked and sent by the very same code. The
// envelope decides who receives it: To and Cc mailboxes that are envelope
// recipients keep their field, envelope recipients named in neither are Bcc,
// and header addresses that are not envelope recipients are left out (a
// client that leaves a header address out of RCPT TO does not want it to
// receive the message).

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
  return `${SPECIALS.test(name) ? `"${name.replace(/(["\\])/g, '\\$1')}"` : name} <${a.address}>`;
}

function mailboxes(field: AddressObject | AddressObject[] | undefined): EmailAddress[] {
  const objects = field === undefined ? [] : Array.isArray(field) ? field : [field];
  return objects.flatMap((o) => o.value).flatMap((a) => (a.group ? a.group : [a])).filter((a) => Boolean(a.address));
}

const key = (address: string) => address.trim().toLowerCase();

/** The POST /v1/emails body the message amounts to, and its own Message-ID when it has a well-formed one. */
export async function emailFromSubmission(raw: Buffer, envelope: Envelope): Promise<{ email: SubmittedEmail; messageId?: string }> {
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
  const to = pick(mail.to);
  const cc = pick(mail.cc);
  const bcc = envelope.rcptTo.filter((r) => !placed.has(key(r)));
  if (to.length === 0) {
    // The API needs a To recipient, and putting a Bcc address there would show it to everyone.
    throw new AppError('validation_error', 'The To field names none of the RCPT TO recipients; at least one must be in To.', { param: 'to' });
  }
  const from = mailboxes(mail.from)[0];
  const replyTo = mailboxes(mail.replyTo).map(mailbox);

  const headers: Record<string, string> = {};
  for (const { key: name, line } of mail.headerLines) {
    if (NOT_CUSTOM.has(name)) continue;
    const colon = line.indexOf(':');
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
        filename: a.filename ?? `attachment-${i + 1}`,
        content_type: a.contentType,
        // An image in multipart/related is inline without saying so: a Content-Disposition is optional there (RFC 2387).
        ...(a.cid !== undefined && a.contentDisposition !== 'attachment' && { content_id: a.cid }),
      })),
    }),
  };
  const messageId = mail.messageId?.trim();
  return { email, ...(messageId !== undefined && MESSAGE_ID.test(messageId) && { messageId }) };
}
