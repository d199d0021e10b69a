import { classifyBounce, extractEnhancedStatus, parseReply, providerForMx, type BounceClassification } from '../delivery/index.js';
import { withoutNul } from '../core/nul.js';

// Machine-readable reports that come back to a return path: delivery status
// notifications (RFC 3464, inside a multipart/report of RFC 6522) and abuse
// feedback reports (ARF, RFC 5965). Pure functions over the parts of an
// already parsed message.

/** A part of the parsed message: its media type and decoded content. */
export interface ReportPart {
  contentType: string;
  content: Buffer;
}

export interface ReportInput {
  /** The message's top-level Content-Type, lower-cased, and its parameters. */
  contentType: string;
  reportType?: string;
  parts: ReportPart[];
}

/** One per-recipient block of a DSN (RFC 3464 §2.3). */
export interface DsnRecipient {
  finalRecipient?: string;
  originalRecipient?: string;
  /** failed, delayed, delivered, relayed or expanded (RFC 3464 §2.3.3). */
  action: string;
  /** The enhanced status code, e.g. "5.1.1" (RFC 3464 §2.3.4). */
  status?: string;
  /** The remote server's reply, without the "smtp;" type. */
  diagnostic?: string;
  /** Host name of the server that gave the diagnostic. */
  remoteMta?: string;
}

export interface DeliveryStatusReport {
  kind: 'dsn';
  reportingMta?: string;
  recipients: DsnRecipient[];
}

export interface FeedbackReport {
  kind: 'arf';
  /** abuse, fraud, virus, other or not-spam (RFC 5965 §7.3, RFC 6430). */
  feedbackType: string;
  /** The reporter's software (RFC 5965 §3.1), for the record of what came of the report. */
  userAgent?: string;
  originalRcptTo: string[];
}

export type Report = DeliveryStatusReport | FeedbackReport;

/** The fields the delivery engine writes on an `email.bounced` event, read from a DSN block instead of an SMTP reply. */
export interface BounceDetails extends BounceClassification {
  smtp_code: number | null;
  enhanced_status_code: string;
  /** The mailbox provider behind the reporting server, 'unknown' when it is not a known one (as the delivery engine writes it). */
  provider: string;
  original_error: string;
}

// message/global-delivery-status is the SMTPUTF8 form (RFC 6533 §6).
const DSN_TYPES = new Set(['message/delivery-status', 'message/global-delivery-status']);
const ARF_TYPE = 'message/feedback-report';

type Fields = Map<string, string[]>;

/**
 * Header-style field groups separated by blank lines (RFC 3464 §2.1, RFC 5965
 * §3.1 use the RFC 5322 field syntax): names folded to lower case, folded
 * lines joined, repeated fields kept in order.
 */
export function parseFieldGroups(text: string): Fields[] {
  const groups: Fields[] = [];
  let current: Fields | undefined;
  let last: { name: string; index: number } | undefined;
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') {
      current = undefined;
      last = undefined;
      continue;
    }
    if (/^[ \t]/.test(line) && last && current) {
      const values = current.get(last.name)!;
      values[last.index] = `${values[last.index]} ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    if (!current) {
      current = new Map();
      groups.push(current);
    }
    const name = line.slice(0, colon).trim().toLowerCase();
    const values = current.get(name) ?? [];
    values.push(line.slice(colon + 1).trim());
    current.set(name, values);
    last = { name, index: values.length - 1 };
  }
  return groups;
}

const first = (fields: Fields, name: string): string | undefined => fields.get(name)?.[0];

/** "rfc822; <a@b.test>" -> "a@b.test"; "dns; mx.b.test" -> "mx.b.test" (the type before ";" is dropped). */
function typedValue(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const semi = value.indexOf(';');
  const bare = (semi >= 0 ? value.slice(semi + 1) : value).trim().replace(/^<(.*)>$/, '$1').trim();
  return bare === '' ? undefined : bare;
}

/** "dns; mx.b.test. (192.0.2.1, the server for b.test.)" -> "mx.b.test." (comments dropped). */
function mtaName(value: string | undefined): string | undefined {
  return typedValue(value)?.split(/[\s(]/)[0] || undefined;
}

/** "<a@b.test>" or "a@b.test" -> "a@b.test". */
function angleAddress(value: string): string {
  return value.trim().replace(/^<(.*)>$/, '$1').trim();
}

export function parseDeliveryStatus(text: string): DeliveryStatusReport {
  const [perMessage, ...blocks] = parseFieldGroups(text);
  const recipients: DsnRecipient[] = [];
  for (const block of blocks) {
    const action = first(block, 'action')?.toLowerCase().split(/[\s(]/)[0];
    if (!action) continue;
    const status = /^([245]\.\d{1,3}\.\d{1,3})/.exec(first(block, 'status') ?? '')?.[1];
    const finalRecipient = typedValue(first(block, 'final-recipient'));
    const originalRecipient = typedValue(first(block, 'original-recipient'));
    const diagnostic = typedValue(first(block, 'diagnostic-code'));
    const remoteMta = mtaName(first(block, 'remote-mta'));
    recipients.push({
      action,
      ...(finalRecipient !== undefined && { finalRecipient }),
      ...(originalRecipient !== undefined && { originalRecipient }),
      ...(status !== undefined && { status }),
      ...(diagnostic !== undefined && { diagnostic }),
      ...(remoteMta !== undefined && { remoteMta }),
    });
  }
  const reportingMta = perMessage ? mtaName(first(perMessage, 'reporting-mta')) : undefined;
  return { kind: 'dsn', ...(reportingMta !== undefined && { reportingMta }), recipients };
}

export function parseFeedbackReport(text: string): FeedbackReport | undefined {
  // The report is one group; some reporters leave a blank line inside it.
  const fields: Fields = new Map();
  for (const group of parseFieldGroups(text)) {
    for (const [name, values] of group) fields.set(name, [...(fields.get(name) ?? []), ...values]);
  }
  const feedbackType = first(fields, 'feedback-type')?.toLowerCase();
  if (!feedbackType) return undefined;
  const userAgent = first(fields, 'user-agent');
  return {
    kind: 'arf',
    feedbackType,
    ...(userAgent !== undefined && { userAgent }),
    originalRcptTo: (fields.get('original-rcpt-to') ?? []).map(angleAddress).filter((a) => a.includes('@')),
  };
}

/** The report a message carries, or undefined when it is not a DSN or an ARF report. */
export function readReport(message: ReportInput): Report | undefined {
  if (message.contentType !== 'multipart/report') return undefined;
  const reportType = message.reportType?.toLowerCase();
  if (reportType === 'delivery-status' || reportType === 'global-delivery-status') {
    const part = message.parts.find((p) => DSN_TYPES.has(p.contentType));
    return part ? parseDeliveryStatus(withoutNul(part.content.toString('utf8'))) : undefined;
  }
  if (reportType === 'feedback-report') {
    const part = message.parts.find((p) => p.contentType === ARF_TYPE);
    return part ? parseFeedbackReport(withoutNul(part.content.toString('utf8'))) : undefined;
  }
  return undefined;
}

/**
 * A failed DSN block in the shape of the delivery engine's bounce: the
 * remote server's reply is classified by the same rules as a reply the
 * engine received itself.
 */
export function bounceDetails(rcpt: DsnRecipient, reportingMta: string | undefined): BounceDetails {
  const reply = rcpt.diagnostic ?? rcpt.status ?? '';
  const parsed = parseReply(reply);
  // The Status field is required in a DSN block and is the sender's own
  // reading of the failure; the code inside the diagnostic text comes second.
  const enhanced = rcpt.status ?? extractEnhancedStatus(reply);
  const classification = classifyBounce({ ...(parsed.code !== undefined && { code: parsed.code }), ...(enhanced !== undefined && { enhanced }), text: reply });
  const provider = (rcpt.remoteMta && providerForMx(rcpt.remoteMta)) || (reportingMta && providerForMx(reportingMta)) || 'unknown';
  return {
    ...classification,
    smtp_code: parsed.code ?? null,
    // "failed" is a permanent failure (RFC 3464 §2.3.3): without a code of
    // its own, the block is X.0.0, "other or undefined" (RFC 3463 §3.1).
    enhanced_status_code: enhanced ?? `${parsed.code !== undefined ? String(parsed.code)[0] : '5'}.0.0`,
    provider,
    original_error: reply,
  };
}

/**
 * Who sent a feedback report: the organisation of the report's From domain
 * (feedback loops send from their own domain), else of the sending host's
 * HELO name; a label for reading complaints per mailbox provider.
 */
export function feedbackProvider(fromAddress: string | undefined, helo: string): string {
  const fromDomain = fromAddress?.split('@').pop();
  return (fromDomain && providerForMx(fromDomain)) || (helo && providerForMx(helo)) || 'unknown';
}
