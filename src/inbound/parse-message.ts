import { simpleParser, type AddressObject, type EmailAddress, type ParsedMail, type SimpleParserOptions } from 'mailparser';
import { AUTH_OPTIONS, PARSER_OPTIONS, UnreadableMessage, type AuthRequest, type MessageReader, type ParsedParts } from './parse-pool.js';
import { authenticate, type DNSResolver } from 'mailauth';
import type { AuthResults, InboundAttachmentMeta, InboundHeader } from './inbound.repo.js';
import type { ReportInput } from './reports.js';
import { peerText, withoutNul } from '../core/nul.js';

// Turning a stored message into the fields the API shows: mailparser for the
// MIME structure, mailauth for SPF (RFC 7208), DKIM (RFC 6376) and DMARC
// (RFC 7489).

export interface MessageFields {
  from: string;
  fromAddresses: string[];
  to: string[];
  cc: string[];
  replyTo: string[];
  /** Bare addresses of To and Cc. */
  recipientAddresses: string[];
  subject: string;
  text: string | null;
  html: string | null;
  messageId: string | null;
  /** The Message-IDs the message answers: In-Reply-To's, then References' from the latest back. */
  answers: string[];
  headers: InboundHeader[];
  attachments: InboundAttachmentMeta[];
  report: ReportInput;
}

function parse(raw: Buffer): Promise<ParsedMail> {
  return simpleParser(raw, PARSER_OPTIONS as SimpleParserOptions);
}

/** The parts of a parsed message the fields are made of (the parsing threads send the same). */
export function partsOf(mail: ParsedMail): ParsedParts {
  return {
    headerLines: mail.headerLines,
    contentType: mail.headers.get('content-type') as ParsedParts['contentType'],
    from: mail.from, to: mail.to, cc: mail.cc, replyTo: mail.replyTo,
    subject: mail.subject, text: mail.text, html: mail.html, messageId: mail.messageId,
    attachments: mail.attachments.map((a) => ({
      filename: a.filename, contentType: a.contentType, size: a.size, cid: a.cid,
      contentDisposition: a.contentDisposition, content: a.content,
    })),
  };
}

/** Parses on the calling thread. */
const parseHere = async (raw: Buffer): Promise<ParsedParts> => partsOf(await parse(raw).catch((err: unknown) => {
  throw new UnreadableMessage(`the message could not be parsed: ${(err as Error).message ?? String(err)}`);
}));

// RFC 5322 §3.2.3 specials: a display name holding one of them must be quoted.
const SPECIALS = /[()<>[\]:;@\\,."]/;

function formatMailbox(a: EmailAddress): string | undefined {
  if (!a.address) return undefined;
  const name = a.name.trim();
  if (!name) return a.address;
  const shown = SPECIALS.test(name) ? `"${name.replace(/(["\\])/g, '\\$1')}"` : name;
  return `${shown} <${a.address}>`;
}

function mailboxes(field: AddressObject | AddressObject[] | undefined): EmailAddress[] {
  const objects = field === undefined ? [] : Array.isArray(field) ? field : [field];
  // Group members count as mailboxes of the field (RFC 5322 §3.4).
  return objects.flatMap((o) => o.value).flatMap((a) => (a.group ? a.group : [a]));
}

const formatted = (field: AddressObject | AddressObject[] | undefined): string[] =>
  mailboxes(field).map(formatMailbox).filter((s): s is string => s !== undefined);

const bare = (field: AddressObject | AddressObject[] | undefined): string[] =>
  mailboxes(field).map((a) => a.address).filter((s): s is string => Boolean(s));

/** Header fields in message order; values unfolded, as they appear (encoded words are left as they are). */
function headerList(mail: ParsedParts): InboundHeader[] {
  return mail.headerLines.map(({ line }) => {
    const colon = line.indexOf(':');
    // mailparser gives a line one byte a character; a value may be UTF-8 (RFC 6532).
    return { name: line.slice(0, colon).trim(), value: peerText(line.slice(colon + 1).replace(/\r?\n[ \t]+/g, ' ').trim()) };
  });
}

/** The msg-ids (RFC 5322 §3.6.4) of the In-Reply-To fields, then of References, nearest parent first. */
function answeredIds(headers: InboundHeader[]): string[] {
  const idsOf = (name: string) => headers.filter((h) => h.name.toLowerCase() === name)
    .flatMap((h) => h.value.match(/<[^<>\s]+>/g) ?? []);
  return [...new Set([...idsOf('in-reply-to'), ...idsOf('references').reverse()])];
}

/** The API fields of a parsed message. */
export function fieldsOf(mail: ParsedParts): MessageFields {
  const { report, ...shown } = fieldsAsParsed(mail);
  return { ...withoutNul(shown), report };
}

function fieldsAsParsed(mail: ParsedParts): MessageFields {
  const { contentType } = mail;
  const fromList = formatted(mail.from);
  const headers = headerList(mail);
  return {
    from: fromList[0] ?? '',
    fromAddresses: bare(mail.from),
    to: formatted(mail.to),
    cc: formatted(mail.cc),
    replyTo: formatted(mail.replyTo),
    recipientAddresses: [...bare(mail.to), ...bare(mail.cc)],
    subject: mail.subject ?? '',
    text: mail.text ?? null,
    html: typeof mail.html === 'string' ? mail.html : null,
    messageId: mail.messageId ?? null,
    answers: answeredIds(headers),
    headers,
    attachments: mail.attachments.map((a, index) => ({
      index,
      filename: a.filename ?? null,
      content_type: a.contentType,
      size: a.size,
      content_id: a.cid ?? null,
      disposition: a.contentDisposition === 'inline' ? 'inline' : 'attachment',
    })),
    report: {
      contentType: (contentType?.value ?? 'text/plain').toLowerCase(),
      ...(contentType?.params?.['report-type'] !== undefined && { reportType: contentType.params['report-type'] }),
      parts: mail.attachments.map((a) => ({ contentType: a.contentType.toLowerCase(), content: a.content })),
    },
  };
}

/** One attachment of a stored message, by its position in the parsed list. */
export async function attachmentContent(raw: Buffer, index: number): Promise<{ content: Buffer; contentType: string; filename: string | null } | undefined> {
  const a = (await parse(raw)).attachments[index];
  return a && { content: a.content, contentType: a.contentType, filename: a.filename ?? null };
}

export interface AuthInput {
  raw: Buffer;
  remoteIp: string;
  helo: string;
  /** MAIL FROM; '' for the null sender, whose SPF identity is the HELO name (RFC 7208 §2.4). */
  mailFrom: string;
}

// mailauth spells a temporary error 'temperr' in places; RFC 8601 §2.7 says 'temperror'.
const result = (r: string) => (r === 'temperr' ? 'temperror' : r);

type Authenticated = Awaited<ReturnType<typeof authenticate>>;

/** The results of mailauth's checks, as stored (the parsing threads hold a copy). */
export function authResultsOf(res: Pick<Authenticated, 'spf' | 'dkim' | 'dmarc' | 'headers'>): AuthResults {
  const authResults = /(?:^|\r?\n)Authentication-Results:\s*([\s\S]*?)(?=\r?\n(?![ \t])|$)/i.exec(res.headers)?.[1] ?? '';
  return {
    spf: res.spf ? { result: result(res.spf.status.result), domain: res.spf.domain ?? null } : { result: 'none', domain: null },
    dkim: res.dkim.results
      .filter((r) => Boolean(r.signingDomain))
      .map((r) => ({ result: result(r.status.result), domain: r.signingDomain, selector: r.selector ?? null, aligned: Boolean(r.status.aligned) })),
    dmarc: res.dmarc
      ? { result: result(res.dmarc.status.result), policy: res.dmarc.policy ?? null, domain: res.dmarc.domain ?? null }
      : { result: 'none', policy: null, domain: null },
    authentication_results: authResults.replace(/\r?\n[ \t]+/g, ' ').trim(),
  };
}

/** SPF (RFC 7208), DKIM (RFC 6376) and DMARC (RFC 7489) of a received message, on this thread. */
export async function checkAuthentication(input: AuthInput, deps: { resolver: DNSResolver; mta: string }): Promise<AuthResults> {
  return authResultsOf(await authenticate(input.raw, {
    ip: input.remoteIp,
    helo: input.helo,
    sender: input.mailFrom,
    mta: deps.mta,
    resolver: deps.resolver,
    ...AUTH_OPTIONS,
  }));
}

/** Parses and (given an AuthRequest) checks on the calling thread. */
export const readHere: MessageReader = async (raw, auth?: AuthRequest) => {
  const [parts, results] = await Promise.all([parseHere(raw), auth && checkAuthentication({ raw, ...auth }, auth)]);
  return { parts, ...(results && { auth: results }) };
};
