// The spam check: a message scored against rules kept as data, in the manner
// of SpamAssassin (each rule that fires adds its points; 5 or more reads as
// spam). Rules look only at what the sender controls: content in every part
// (subject, text and HTML), links, attachments, headers, the sending domain's
// authentication, and what Gmail's and Yahoo's bulk-sender rules ask of mail
// that looks like bulk. Each rule that fires says what it found and where,
// and its suggestion quotes it.

import { URL_SHORTENERS } from './url-shorteners.js';

export const SPAM_THRESHOLD = 5;
/** Mail to this many recipients or more reads as bulk (as do List-Id and Precedence: bulk or list). */
export const BULK_RECIPIENTS = 10;

export interface CheckedMessage {
  subject: string;
  html: string | null;
  text: string | null;
  headers: Record<string, string>;
  attachmentNames: string[];
  /** The From display name, if any, and the address's domain. */
  fromName?: string | null;
  fromDomain?: string;
  /** Every recipient, to, cc and bcc. */
  recipientCount?: number;
  /** Sent by a broadcast: bulk whatever the recipient count. */
  broadcast?: boolean;
  /** Whether the from domain is an active domain of the workspace (signed and aligned). */
  domainVerified: boolean;
  /** Whether the domain's last DNS check found a DMARC record; unknown when it was never checked. */
  dmarc?: 'published' | 'missing' | 'unknown';
}

type Part = 'subject' | 'text' | 'html';
interface Link { href: string; text: string; part: 'text' | 'html' }
/** What a rule found: a sentence naming the thing and where it is, to show and to quote. */
type Finding = string;

/** What the rules read, worked out once per message. */
interface Features {
  message: CheckedMessage;
  /** The words a reader sees in each part (the HTML without tags and hidden elements). */
  parts: Array<{ part: Part; text: string }>;
  /** Text the HTML hides from the reader. */
  hiddenText: string;
  links: Link[];
  images: number;
  words: number;
  bulk: boolean;
  header(name: string): string | undefined;
}

export interface SpamRule {
  name: string;
  description: string;
  /** Points for each finding, up to `maxScore` (default: the points of one). */
  score: number;
  maxScore?: number;
  /** What fired, one sentence each; none when the rule does not fire. */
  findings(f: Features): Finding[];
  /** The fix, quoting what was found. */
  suggestion(found: Finding[]): string;
}

// Phrases that content filters weigh heavily, from the usual public lists.
const SPAM_PHRASES = [
  'act now', 'apply now', 'buy now', 'cash bonus', 'click here', 'double your', 'earn money', 'extra income', 'free gift',
  'free money', 'guaranteed', 'increase sales', 'limited time', 'lowest price', 'make money', 'million dollars', 'no credit check',
  'no obligation', 'once in a lifetime', 'risk-free', 'risk free', 'special promotion', 'urgent', 'winner', 'you have been selected',
  '100% free', '$$$',
];
/**
 * Brands phishing imitates most: link text naming one must lead to its own
 * site. The name is matched as a word; the link's host must contain it.
 */
const IMPERSONATED_BRANDS = [
  'paypal', 'apple', 'icloud', 'microsoft', 'office365', 'outlook', 'google', 'gmail', 'amazon', 'netflix', 'facebook', 'instagram',
  'linkedin', 'dropbox', 'docusign', 'adobe', 'dhl', 'fedex', 'ups', 'usps', 'chase', 'wellsfargo', 'citibank', 'hsbc', 'coinbase',
];
// Types mail filters block outright or quarantine (Gmail's blocked list, Outlook's Level 1 list).
const RISKY_EXTENSIONS = ['exe', 'scr', 'bat', 'cmd', 'com', 'pif', 'vbs', 'vbe', 'js', 'jse', 'jar', 'msi', 'ps1', 'hta', 'cpl', 'reg', 'lnk', 'iso'];
/** Gmail clips messages whose HTML is over 102 KB. */
const GMAIL_CLIP_BYTES = 102 * 1024;
const MAX_LINKS = 25;
/** Hidden text beyond a preheader's length reads as an attempt to fool filters. */
const HIDDEN_TEXT_CHARS = 150;
const WHERE: Record<Part, string> = { subject: 'the subject', text: 'the text', html: 'the HTML' };

const hostOf = (url: string): string | undefined => {
  try {
    return new URL(url).hostname.toLowerCase().replace(/^www\./, '');
  } catch {
    return undefined;
  }
};

const shortenerHosts = new Set(URL_SHORTENERS.filter((h) => !h.startsWith('.')));
const shortenerSuffixes = URL_SHORTENERS.filter((h) => h.startsWith('.'));
const isShortener = (host: string) => shortenerHosts.has(host) || shortenerSuffixes.some((s) => host.endsWith(s));

const upperShare = (text: string): { letters: number; share: number } => {
  const letters = text.replace(/[^\p{L}]/gu, '');
  const upper = letters.replace(/[^\p{Lu}]/gu, '').length;
  return { letters: letters.length, share: letters.length ? upper / letters.length : 0 };
};

const decodeEntities = (s: string) => s.replace(/&nbsp;/g, ' ').replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"');
const squash = (s: string) => s.replace(/\s+/g, ' ').trim();
const quote = (s: string, max = 60) => `'${s.length > max ? `${s.slice(0, max - 1)}…` : s}'`;
/** "'a' in the subject", "'b' in the HTML": the findings named in a suggestion. */
const listed = (found: Finding[]) => found.slice(0, 3).join('; ') + (found.length > 3 ? `; and ${found.length - 3} more` : '');

// An element hidden from the reader: display:none, visibility:hidden, a zero
// font size or opacity, or white text (on the usual white background).
const HIDDEN_STYLE = /display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?:px|pt|em|rem|%)?\s*(?:;|$)|opacity\s*:\s*0(?:\.0+)?\s*(?:;|$)|(?:^|;|\s)color\s*:\s*(?:#fff(?:fff)?|white|rgb\(\s*255\s*,\s*255\s*,\s*255\s*\))/i;

/** The HTML's visible words and hidden ones: elements with a hiding style and what they contain. */
function htmlText(html: string): { visible: string; hidden: string } {
  const cleaned = html.replace(/<!--[\s\S]*?-->/g, ' ').replace(/<(style|script|head)\b[\s\S]*?<\/\1\s*>/gi, ' ');
  let hidden = '';
  const visible = cleaned.replace(/<([a-z][a-z0-9]*)\b([^>]*)>([\s\S]*?)<\/\1\s*>/gi, (whole, _tag: string, attrs: string, inner: string) => {
    const style = /\bstyle\s*=\s*(?:"([^"]*)"|'([^']*)')/i.exec(attrs);
    if (style && HIDDEN_STYLE.test(style[1] ?? style[2] ?? '')) {
      hidden += ` ${inner.replace(/<[^>]*>/g, ' ')}`;
      return ' ';
    }
    return whole;
  });
  return { visible: squash(decodeEntities(visible.replace(/<[^>]*>/g, ' '))), hidden: squash(decodeEntities(hidden)) };
}

export const SPAM_RULES: readonly SpamRule[] = Object.freeze([
  {
    name: 'domain_not_verified', score: 2.5,
    description: 'The from domain is not a verified domain of the workspace, so the message cannot carry an aligned DKIM signature.',
    findings: (f) => (f.message.domainVerified ? [] : [`the from domain${f.message.fromDomain ? ` ${f.message.fromDomain}` : ''} is not verified`]),
    suggestion: (found) => `Send from a domain you have verified (${found[0]}): POST /domains, then verify its DNS records.`,
  },
  {
    name: 'no_dmarc', score: 0.8,
    description: 'The from domain publishes no DMARC policy; Gmail and Yahoo require one of bulk senders.',
    findings: (f) => (f.message.dmarc === 'missing' ? [`no DMARC record at _dmarc.${f.message.fromDomain ?? 'the from domain'}`] : []),
    suggestion: (found) => `Publish a DMARC record (${found[0]}); v=DMARC1; p=none; is a start. The domain's DNS records list it.`,
  },
  {
    name: 'html_without_text', score: 0.7,
    description: 'The message has HTML but no plain-text part.',
    findings: (f) => (f.message.html !== null && f.message.text === null ? ['HTML without a text part'] : []),
    suggestion: () => 'Add a text version of the content; filters and some readers look for one.',
  },
  {
    name: 'images_with_little_text', score: 1.5,
    description: 'The message is mostly images with little text.',
    findings: (f) => (f.images > 0 && f.words < 30 * f.images ? [`${f.images} image${f.images > 1 ? 's' : ''} against ${f.words} words`] : []),
    suggestion: (found) => `Put the message in text and keep images as a complement (${found[0]}; aim for 30 words or more per image).`,
  },
  {
    name: 'subject_all_caps', score: 1.2,
    description: 'The subject is written in capital letters.',
    findings: (f) => {
      const { letters, share } = upperShare(f.message.subject);
      return letters >= 6 && share >= 0.8 ? [`${quote(f.message.subject)} in the subject`] : [];
    },
    suggestion: (found) => `Write the subject in sentence case: reword ${found[0]}.`,
  },
  {
    name: 'subject_exclamations', score: 0.8,
    description: 'The subject has several exclamation marks.',
    findings: (f) => ((f.message.subject.match(/!/g) ?? []).length >= 2 ? [`${quote(f.message.subject)} in the subject`] : []),
    suggestion: (found) => `Use at most one exclamation mark in the subject (${found[0]}).`,
  },
  {
    name: 'body_exclamations', score: 0.6,
    description: 'The body has runs of exclamation marks.',
    findings: (f) => f.parts.filter((p) => p.part !== 'subject').flatMap((p) => {
      const runs: string[] = p.text.match(/[^\s!]{0,20}!{3,}/g) ?? [];
      return runs.length ? [`${quote(runs[0])} in ${WHERE[p.part]}`] : [];
    }),
    suggestion: (found) => `Use single exclamation marks: ${listed(found)}.`,
  },
  {
    name: 'spam_phrases', score: 1, maxScore: 3,
    description: 'The subject or body uses phrases common in spam.',
    findings: (f) => f.parts.flatMap((p) => {
      const haystack = p.text.toLowerCase();
      return SPAM_PHRASES.filter((phrase) => haystack.includes(phrase)).map((phrase) => {
        const at = haystack.indexOf(phrase);
        return `${quote(p.text.slice(at, at + phrase.length))} in ${WHERE[p.part]}`;
      });
    }),
    suggestion: (found) => `Reword ${listed(found)}.`,
  },
  {
    name: 'body_all_caps', score: 1,
    description: 'Much of the body is written in capital letters.',
    findings: (f) => f.parts.filter((p) => p.part !== 'subject').flatMap((p) => {
      const { letters, share } = upperShare(p.text);
      return letters >= 100 && share >= 0.5 ? [`${Math.round(share * 100)}% capitals in ${WHERE[p.part]}`] : [];
    }),
    suggestion: (found) => `Write the body in normal case (${listed(found)}).`,
  },
  {
    name: 'hidden_text', score: 1.5,
    description: 'The HTML hides text from the reader (display:none, zero size or opacity, white text), as filter-evasion does.',
    findings: (f) => (f.hiddenText.length > HIDDEN_TEXT_CHARS ? [`${f.hiddenText.length} hidden characters in the HTML, starting ${quote(f.hiddenText, 40)}`] : []),
    suggestion: (found) => `Remove the hidden text (${found[0]}); a short hidden preheader is fine.`,
  },
  {
    name: 'link_shortener', score: 1.5,
    description: 'A link goes through a URL shortener, which hides where it leads.',
    findings: (f) => f.links.flatMap((l) => {
      const host = hostOf(l.href);
      return host !== undefined && isShortener(host) ? [`the ${host} link ${quote(l.href)} in ${WHERE[l.part]}`] : [];
    }),
    suggestion: (found) => `Link to the destination directly, on a domain you own: ${listed(found)}.`,
  },
  {
    name: 'link_text_mismatch', score: 2,
    description: 'A link shows one address and leads to another, as phishing does.',
    findings: (f) => f.links.flatMap((l) => {
      const shown = /^(?:https?:\/\/)?([a-z0-9-]+(?:\.[a-z0-9-]+)+)(?:[/?#]\S*)?$/i.exec(l.text.trim())?.[1]?.toLowerCase().replace(/^www\./, '');
      const host = hostOf(l.href);
      const mismatch = shown !== undefined && host !== undefined && shown !== host && !shown.endsWith(`.${host}`) && !host.endsWith(`.${shown}`);
      return mismatch ? [`a link showing ${shown} that goes to ${host}`] : [];
    }),
    suggestion: (found) => `Make each link lead where its text says: ${listed(found)}.`,
  },
  {
    name: 'brand_link_mismatch', score: 2,
    description: 'Link text names a well-known brand while the link leads elsewhere.',
    findings: (f) => f.links.flatMap((l) => {
      const host = hostOf(l.href);
      if (host === undefined || l.part !== 'html') return [];
      const words: string[] = l.text.toLowerCase().match(/[a-z0-9]+/g) ?? [];
      const brand = IMPERSONATED_BRANDS.find((b) => words.includes(b) && !host.replace(/[^a-z0-9.]/g, '').includes(b));
      return brand ? [`link text ${quote(squash(l.text))} goes to ${host}`] : [];
    }),
    suggestion: (found) => `Name a brand only in links to its own site: ${listed(found)}.`,
  },
  {
    name: 'ip_address_link', score: 2,
    description: 'A link points at a bare IP address.',
    findings: (f) => f.links.filter((l) => /^\d{1,3}(\.\d{1,3}){3}$|^\[[0-9a-f:]+\]$/i.test(hostOf(l.href) ?? ''))
      .map((l) => `${quote(l.href)} in ${WHERE[l.part]}`),
    suggestion: (found) => `Link to a domain name instead of an IP address: ${listed(found)}.`,
  },
  {
    name: 'too_many_links', score: 0.8,
    description: `The message has more than ${MAX_LINKS} links.`,
    findings: (f) => (f.links.length > MAX_LINKS ? [`${f.links.length} links`] : []),
    suggestion: (found) => `Keep the links to the ones the reader needs (${found[0]}, ${MAX_LINKS} at most).`,
  },
  {
    name: 'risky_attachment', score: 3,
    description: 'An attachment has a type that mail filters block (programs and scripts).',
    findings: (f) => f.message.attachmentNames.filter((n) => RISKY_EXTENSIONS.includes(n.split('.').pop()!.toLowerCase()))
      .map((n) => `the attachment ${quote(n)}`),
    suggestion: (found) => `Do not attach programs or scripts (${listed(found)}); link to a download page instead.`,
  },
  {
    name: 'html_too_large', score: 0.5,
    description: 'The HTML is over 102 KB; Gmail clips it and hides the rest.',
    findings: (f) => {
      const bytes = Buffer.byteLength(f.message.html ?? '');
      return bytes > GMAIL_CLIP_BYTES ? [`${Math.round(bytes / 1024)} KB of HTML`] : [];
    },
    suggestion: (found) => `Trim the HTML to under 102 KB (${found[0]}; inline styles and comments are the usual bulk).`,
  },
  {
    name: 'display_name_domain', score: 2,
    description: 'The From display name names a domain other than the sender\'s, as impersonation does.',
    findings: (f) => {
      const named = /([a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,})/i.exec(f.message.fromName ?? '')?.[1]?.toLowerCase();
      const own = f.message.fromDomain?.toLowerCase();
      if (!named || !own || named === own || own.endsWith(`.${named}`) || named.endsWith(`.${own}`)) return [];
      return [`the display name ${quote(f.message.fromName!)} on mail from ${own}`];
    },
    suggestion: (found) => `Let the display name be a name, not another domain (${found[0]}).`,
  },
  {
    name: 'no_list_unsubscribe', score: 0.3,
    description: 'The message has no List-Unsubscribe header; bulk mail must have one.',
    findings: (f) => (f.header('list-unsubscribe') === undefined ? [f.bulk ? 'no List-Unsubscribe on bulk mail' : 'no List-Unsubscribe header'] : []),
    suggestion: (found) => `Add List-Unsubscribe with one-click unsubscribe (RFC 8058), or send with unsubscribe: true (${found[0]}); Gmail and Yahoo require it of bulk senders.`,
  },
  {
    name: 'bad_list_unsubscribe', score: 1,
    description: 'The List-Unsubscribe header is not a list of <https:…> or <mailto:…> addresses (RFC 2369).',
    findings: (f) => {
      const value = f.header('list-unsubscribe');
      if (value === undefined) return [];
      const entries = value.split(',').map((e) => e.trim());
      const ok = entries.length > 0 && entries.every((e) => /^<(?:https?:\/\/[^\s<>]+|mailto:[^\s<>]+)>$/i.test(e));
      return ok ? [] : [`List-Unsubscribe: ${quote(value)}`];
    },
    suggestion: (found) => `Write List-Unsubscribe as <https://…> and/or <mailto:…> entries separated by commas (${found[0]}).`,
  },
  {
    name: 'no_one_click_unsubscribe', score: 1,
    description: 'Bulk mail without RFC 8058 one-click unsubscribe (an https List-Unsubscribe and List-Unsubscribe-Post).',
    findings: (f) => {
      if (!f.bulk || f.header('list-unsubscribe') === undefined) return [];
      const https = /<https:\/\//i.test(f.header('list-unsubscribe')!);
      const post = /^\s*List-Unsubscribe=One-Click\s*$/i.test(f.header('list-unsubscribe-post') ?? '');
      return https && post ? [] : [https ? 'no List-Unsubscribe-Post: List-Unsubscribe=One-Click' : 'no https address in List-Unsubscribe'];
    },
    suggestion: (found) => `Offer one-click unsubscribe (RFC 8058): ${found[0]}. Sending with unsubscribe: true adds both headers.`,
  },
  {
    name: 'no_visible_unsubscribe', score: 1,
    description: 'Bulk mail without a visible unsubscribe link in its content.',
    findings: (f) => {
      if (!f.bulk) return [];
      const mentions = f.parts.some((p) => p.part !== 'subject' && /unsubscribe|opt[ -]?out|abmelden|désinscri/i.test(p.text))
        || f.links.some((l) => /unsubscribe|opt-?out/i.test(l.href));
      return mentions ? [] : ['no unsubscribe link in the text or the HTML'];
    },
    suggestion: () => 'Put a visible unsubscribe link in the content (Liquid templates have {{ unsubscribe_url }}).',
  },
] satisfies SpamRule[]);

function features(message: CheckedMessage): Features {
  const html = message.html ?? '';
  const links: Link[] = [
    ...[...html.matchAll(/<a\b[^>]*?\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))[^>]*>([\s\S]*?)<\/a\s*>/gi)].map((m) => ({
      href: decodeEntities((m[1] ?? m[2] ?? m[3] ?? '').trim()), text: decodeEntities(m[4].replace(/<[^>]*>/g, '')), part: 'html' as const,
    })),
    ...[...(message.text ?? '').matchAll(/https?:\/\/[^\s<>"']+/gi)].map((m) => ({ href: m[0], text: '', part: 'text' as const })),
  ];
  const { visible, hidden } = htmlText(html);
  const parts: Features['parts'] = [{ part: 'subject', text: message.subject }];
  if (message.text !== null) parts.push({ part: 'text', text: message.text });
  if (message.html !== null) parts.push({ part: 'html', text: visible });
  const headers = new Map(Object.entries(message.headers).map(([k, v]) => [k.toLowerCase(), v]));
  const readerText = message.text ?? visible;
  return {
    message,
    parts,
    hiddenText: hidden,
    links,
    images: (html.match(/<img\b/gi) ?? []).length,
    words: (readerText.match(/\p{L}[\p{L}'’-]*/gu) ?? []).length,
    bulk: message.broadcast === true || (message.recipientCount ?? 0) >= BULK_RECIPIENTS
      || headers.has('list-id') || /^\s*(bulk|list)\s*$/i.test(headers.get('precedence') ?? ''),
    header: (name) => headers.get(name),
  };
}

export interface SpamCheckResult {
  object: 'spam_check';
  score: number;
  threshold: number;
  spam: boolean;
  rules: Array<{ rule: string; score: number; description: string; found: string[] }>;
  suggestions: string[];
}

export function checkSpam(message: CheckedMessage): SpamCheckResult {
  const f = features(message);
  const fired = SPAM_RULES.flatMap((rule) => {
    const found = rule.findings(f);
    if (found.length === 0) return [];
    const score = Math.min(rule.score * found.length, rule.maxScore ?? rule.score);
    return [{ rule, found, score: Math.round(score * 10) / 10 }];
  });
  const score = Math.round(fired.reduce((n, r) => n + r.score, 0) * 10) / 10;
  return {
    object: 'spam_check',
    score,
    threshold: SPAM_THRESHOLD,
    spam: score >= SPAM_THRESHOLD,
    rules: fired.map(({ rule, score: s, found }) => ({ rule: rule.name, score: s, description: rule.description, found })),
    suggestions: fired.map(({ rule, found }) => rule.suggestion(found)),
  };
}
