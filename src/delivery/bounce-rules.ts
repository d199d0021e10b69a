// What an SMTP reply means for the recipient. The rules are data, read top to
// bottom, first match wins; every rule is exercised by a line of
// test/fixtures/bounces.txt.
//
// The split follows what a sender should do next, not the reply class alone:
// "hard" means the address itself is bad and further mail to it hurts the
// sender's reputation (suppress it); "soft" means the address may be fine and
// the cause lies with the message, the sender or a passing condition, even when
// the reply was a 5xx (as Amazon SES files MailboxFull, MessageTooLarge and
// ContentRejected under Transient); "undetermined" means the reply says too
// little to tell.

export type BounceType = 'hard' | 'soft' | 'undetermined';

export type BounceSubtype =
  | 'no_mailbox'
  | 'no_domain'
  | 'mailbox_full'
  | 'mailbox_disabled'
  | 'message_too_large'
  | 'content_rejected'
  | 'policy_rejected'
  | 'general';

export type RecommendedAction =
  | 'suppress_recipient' // stop mailing the address
  | 'retry_later' // the condition passes on its own
  | 'reduce_message_size'
  | 'review_content'
  | 'check_sender_reputation' // blocklists, spam filters, rate limits
  | 'fix_authentication' // SPF, DKIM, DMARC, reverse DNS
  | 'review_bounce'; // read the reply, nothing can be inferred

export interface BounceClassification {
  bounce_type: BounceType;
  bounce_subtype: BounceSubtype;
  recommended_action: RecommendedAction;
}

/** An SMTP reply split into its parts (RFC 5321 §4.2, RFC 3463). */
export interface SmtpReply {
  /** Basic reply code, e.g. 550; absent when the failure produced no reply (DNS, TLS). */
  code?: number;
  /** Enhanced status code, e.g. "5.1.1". */
  enhanced?: string;
  /** The whole reply text as received, codes included. */
  text: string;
}

export interface BounceRule extends BounceClassification {
  /** Stable name, reported by the fixture test when a rule is never exercised. */
  name: string;
  /** Class the reply must have: 4 transient, 5 permanent (RFC 3463 §3.1). */
  class?: 4 | 5;
  /**
   * The rule applies when the enhanced code's "subject.detail" is listed here
   * OR the text matches `text` (either is enough; the class must hold).
   */
  status?: readonly string[];
  text?: RegExp;
}

// RFC 7372 §3: 7.20-7.27 are authentication failures (SPF, DKIM, reverse DNS,
// null MX of the sender), 7.28 a mail flood; RFC 8617 adds 7.29 for ARC.
// Microsoft reports DMARC rejections as 5.7.509.
const AUTH_STATUS = ['7.20', '7.21', '7.22', '7.23', '7.24', '7.25', '7.27', '7.29'];
const DMARC_STATUS = ['7.26', '7.509'];

/** A case-insensitive pattern matching any of the phrases (each a regex source). */
const anyOf = (...phrases: string[]) => new RegExp(phrases.join('|'), 'i');

const DMARC = /\bdmarc\b/i;
const AUTH = anyOf('\\b(spf|dkim)\\b', 'unauthenticated', 'not authenticated', 'authentication (check )?failed', 'reverse dns', '\\bptr\\b', 'rdns');
const BLOCKLIST = anyOf(
  'block ?list', 'black ?list', 'deny ?list', '(?<!not )\\blisted (at|on|in|by)\\b', '\\b(rbl|dnsbl)\\b', 'blocked using',
  'spamhaus', 'spamcop', 'barracuda', 'sorbs', '\\buceprotect', '(poor|bad|ip|sender) reputation',
);
const SPAM = anyOf('\\bspam\\b', 'unsolicited', '\\bjunk\\b', 'bulk mail');
const RATE = anyOf('rate limit', 'too many (messages|connections)', 'temporarily deferred', 'throttl', 'unusual rate', 'sending rate');
const CONTENT = anyOf(
  '\\bvirus\\b', 'malware', 'infected', 'phishing', 'attachment', 'content (rejected|refused|policy)', 'message content', 'prohibited',
);
const QUOTA = anyOf(
  'quota', 'mailbox (is )?full', 'full mailbox', 'insufficient (storage|space)', 'exceeded storage', 'storage (space|allocation)', 'mailbox size',
);
const TOO_LARGE = anyOf(
  'message (size )?(is )?too (large|big)', 'too large', 'size limit', 'exceeds? (the )?(maximum|max|size|message size)',
  'message (length|size) exceeds',
);
const DISABLED = anyOf(
  'disabled', 'deactivated', 'inactive', 'suspended', 'account (has been )?(closed|terminated|locked)', 'no longer (active|in use|valid)',
  'mailbox (is )?(blocked|frozen)',
);
const NO_DOMAIN = anyOf(
  'domain (not found|does not exist|doesn\'?t exist|is not valid)', 'no such domain', 'host (not found|unknown)', 'unknown host',
  'unroute?able domain', 'null mx', 'does not accept mail', 'no mx', 'nxdomain', 'domain has no',
);
const NO_MAILBOX = anyOf(
  'user unknown', 'unknown user', 'no such (user|mailbox|recipient|address)', 'not exist', 'doesn\'?t exist',
  'invalid (recipient|mailbox|address|user)', 'recipient (address )?(rejected|unknown|not found|invalid)', 'mailbox (unavailable|not found)',
  'address (rejected|unknown|not found)', 'unknown (recipient|mailbox|address)', 'not a valid (mailbox|recipient)', 'no mailbox',
  'user not found', 'undeliverable address', 'unrouteable address', 'doesn\'?t have an? [\\w.-]+ account',
);
const RELAY = anyOf('relay(ing)? (access )?(denied|not permitted|prohibited)', 'unable to relay', 'not permitted to relay', 'we do not relay');

export const BOUNCE_RULES: readonly BounceRule[] = Object.freeze([
  // Transient replies (4xx): the message is retried; the subtype only explains the delay.
  { name: 'transient-mailbox-full', class: 4, status: ['2.2'], text: QUOTA,
    bounce_type: 'soft', bounce_subtype: 'mailbox_full', recommended_action: 'retry_later' },
  { name: 'transient-authentication', class: 4, status: [...DMARC_STATUS, ...AUTH_STATUS], text: DMARC,
    bounce_type: 'soft', bounce_subtype: 'policy_rejected', recommended_action: 'fix_authentication' },
  { name: 'transient-blocklist', class: 4, text: BLOCKLIST,
    bounce_type: 'soft', bounce_subtype: 'policy_rejected', recommended_action: 'check_sender_reputation' },
  { name: 'transient-rate-limit', class: 4, status: ['7.28'], text: RATE,
    bounce_type: 'soft', bounce_subtype: 'policy_rejected', recommended_action: 'retry_later' },
  { name: 'transient-other', class: 4,
    bounce_type: 'soft', bounce_subtype: 'general', recommended_action: 'retry_later' },

  // Permanent replies (5xx). Sender-side causes come first: a blocklist or DMARC
  // rejection often says "recipient rejected" too, and must not suppress a good address.
  { name: 'dmarc', class: 5, status: DMARC_STATUS, text: DMARC,
    bounce_type: 'soft', bounce_subtype: 'policy_rejected', recommended_action: 'fix_authentication' },
  { name: 'sender-authentication', class: 5, status: AUTH_STATUS, text: AUTH,
    bounce_type: 'soft', bounce_subtype: 'policy_rejected', recommended_action: 'fix_authentication' },
  { name: 'blocklist', class: 5, text: BLOCKLIST,
    bounce_type: 'soft', bounce_subtype: 'policy_rejected', recommended_action: 'check_sender_reputation' },
  { name: 'spam', class: 5, text: SPAM,
    bounce_type: 'soft', bounce_subtype: 'policy_rejected', recommended_action: 'check_sender_reputation' },
  { name: 'rate-limit', class: 5, status: ['7.28'], text: RATE,
    bounce_type: 'soft', bounce_subtype: 'policy_rejected', recommended_action: 'check_sender_reputation' },
  { name: 'content', class: 5, status: ['6.0', '6.1', '7.0'], text: CONTENT,
    bounce_type: 'soft', bounce_subtype: 'content_rejected', recommended_action: 'review_content' },
  { name: 'mailbox-full', class: 5, status: ['2.2'], text: QUOTA,
    bounce_type: 'soft', bounce_subtype: 'mailbox_full', recommended_action: 'retry_later' },
  { name: 'message-too-large', class: 5, status: ['2.3', '3.4'], text: TOO_LARGE,
    bounce_type: 'soft', bounce_subtype: 'message_too_large', recommended_action: 'reduce_message_size' },
  { name: 'mailbox-disabled', class: 5, status: ['2.1'], text: DISABLED,
    bounce_type: 'hard', bounce_subtype: 'mailbox_disabled', recommended_action: 'suppress_recipient' },
  // 1.10 is "recipient address has null MX" (RFC 7505 §4.2).
  { name: 'no-domain', class: 5, status: ['1.2', '1.10', '4.4'], text: NO_DOMAIN,
    bounce_type: 'hard', bounce_subtype: 'no_domain', recommended_action: 'suppress_recipient' },
  { name: 'no-mailbox', class: 5, status: ['1.1', '1.0', '1.3', '1.6'], text: NO_MAILBOX,
    bounce_type: 'hard', bounce_subtype: 'no_mailbox', recommended_action: 'suppress_recipient' },
  // The host named by the MX does not take mail for the domain: a broken domain, not a passing state.
  { name: 'relay-denied', class: 5, text: RELAY,
    bounce_type: 'hard', bounce_subtype: 'no_domain', recommended_action: 'suppress_recipient' },
  { name: 'policy-other', class: 5, status: ['7.1'],
    bounce_type: 'soft', bounce_subtype: 'policy_rejected', recommended_action: 'review_bounce' },
  { name: 'permanent-other', class: 5,
    bounce_type: 'hard', bounce_subtype: 'general', recommended_action: 'suppress_recipient' },

  // No usable class at all (no reply, or a code outside 4xx/5xx).
  { name: 'unknown',
    bounce_type: 'undetermined', bounce_subtype: 'general', recommended_action: 'review_bounce' },
] satisfies BounceRule[]);

// RFC 3463 §2: class "." subject "." detail, subject and detail of one to three
// digits. RFC 2034 puts it right after the reply code; some servers put it
// later, in brackets or after '#' (old Exchange), so both places are looked at.
const ENHANCED_AT_START = /^\s*(?:[245]\d\d[ -])?\s*([245]\.\d{1,3}\.\d{1,3})(?=$|[\s.,;:)\]])/;
const ENHANCED_ANYWHERE = /(?:^|[\s(#[])([245]\.\d{1,3}\.\d{1,3})(?=$|[\s,;:)\]]|\.(?:\s|$))/;
const BASIC_CODE = /^\s*([2-5]\d\d)(?=[ -]|$)/;

/** The enhanced status code of a reply text (RFC 3463), e.g. "5.1.1", or undefined. */
export function extractEnhancedStatus(text: string): string | undefined {
  return (ENHANCED_AT_START.exec(text) ?? ENHANCED_ANYWHERE.exec(text))?.[1];
}

/** Splits a reply text ("550-5.1.1 ...\n550 5.1.1 ...") into code, enhanced code and text. */
export function parseReply(text: string): SmtpReply {
  const code = BASIC_CODE.exec(text)?.[1];
  const enhanced = extractEnhancedStatus(text);
  return { ...(code && { code: Number(code) }), ...(enhanced && { enhanced }), text };
}

function replyClass(reply: SmtpReply): 4 | 5 | undefined {
  // The enhanced code is the more specific of the two (RFC 3463 §1).
  const digit = Number((reply.enhanced ?? String(reply.code ?? ''))[0]);
  return digit === 4 || digit === 5 ? digit : undefined;
}

/** The first rule that applies to the reply (the last rule applies to anything). */
export function matchBounceRule(input: SmtpReply | string): BounceRule {
  const reply = typeof input === 'string' ? parseReply(input) : input;
  const cls = replyClass(reply);
  const subjectDetail = reply.enhanced?.slice(2);
  const found = BOUNCE_RULES.find((rule) => {
    if (rule.class !== undefined && rule.class !== cls) return false;
    if (!rule.status && !rule.text) return true;
    return (subjectDetail !== undefined && rule.status?.includes(subjectDetail) === true) || rule.text?.test(reply.text) === true;
  });
  return found ?? BOUNCE_RULES[BOUNCE_RULES.length - 1];
}

/** Type, subtype and advice for a failed delivery's reply. */
export function classifyBounce(input: SmtpReply | string): BounceClassification {
  const { bounce_type, bounce_subtype, recommended_action } = matchBounceRule(input);
  return { bounce_type, bounce_subtype, recommended_action };
}
