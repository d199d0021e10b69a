// The spam check: a message scored against rules kept as data, in the manner
// of SpamAssassin (each rule that fires adds its points; 5 or more reads as
// spam), with the fix for each rule that fired. Rules look only at what the
// sender controls: content, links, attachments, headers, and whether the
// sending domain is verified (receivers check its SPF and DKIM).

export const SPAM_THRESHOLD = 5;

export interface CheckedMessage {
  subject: string;
  html: string | null;
  text: string | null;
  headers: Record<string, string>;
  attachmentNames: string[];
  /** Whether the from domain is an active domain of the workspace (signed and aligned). */
  domainVerified: boolean;
}

interface Link { href: string; text: string }

/** What the rules read, worked out once per message. */
interface Features {
  message: CheckedMessage;
  /** The text a reader sees: the text part, else the HTML without tags. */
  visibleText: string;
  links: Link[];
  images: number;
}

export interface SpamRule {
  name: string;
  description: string;
  suggestion: string;
  /** Points when the rule fires; `fires` may return a count to multiply them (capped by `maxScore`). */
  score: number;
  maxScore?: number;
  fires(f: Features): boolean | number;
}

// Phrases that content filters weigh heavily, from the usual public lists.
const SPAM_PHRASES = [
  'act now', 'apply now', 'buy now', 'cash bonus', 'click here', 'double your', 'earn money', 'extra income', 'free gift',
  'free money', 'guaranteed', 'increase sales', 'limited time', 'lowest price', 'make money', 'million dollars', 'no credit check',
  'no obligation', 'once in a lifetime', 'risk-free', 'risk free', 'special promotion', 'urgent', 'winner', 'you have been selected',
  '100% free', '$$$',
];
const SHORTENERS = ['bit.ly', 'tinyurl.com', 'goo.gl', 't.co', 'ow.ly', 'is.gd', 'buff.ly', 'rebrand.ly', 'cutt.ly', 'shorturl.at', 'tiny.cc'];
// Types mail filters block outright or quarantine (Gmail's blocked list, Outlook's Level 1 list).
const RISKY_EXTENSIONS = ['exe', 'scr', 'bat', 'cmd', 'com', 'pif', 'vbs', 'vbe', 'js', 'jse', 'jar', 'msi', 'ps1', 'hta', 'cpl', 'reg', 'lnk', 'iso'];
/** Gmail clips messages whose HTML is over 102 KB. */
const GMAIL_CLIP_BYTES = 102 * 1024;
const MAX_LINKS = 25;

const hostOf = (url: string): string | undefined => {
  try {
    return new URL(url).hostname.toLowerCase().replace(/^www\./, '');
  } catch {
    return undefined;
  }
};

const upperShare = (text: string): { letters: number; share: number } => {
  const letters = text.replace(/[^\p{L}]/gu, '');
  const upper = letters.replace(/[^\p{Lu}]/gu, '').length;
  return { letters: letters.length, share: letters.length ? upper / letters.length : 0 };
};

const decodeEntities = (s: string) => s.replace(/&nbsp;/g, ' ').replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"');

export const SPAM_RULES: readonly SpamRule[] = Object.freeze([
  {
    name: 'domain_not_verified', score: 2.5,
    description: 'The from domain is not a verified domain of the workspace, so the message cannot carry an aligned DKIM signature.',
    suggestion: 'Send from a domain you have verified (POST /domains, then verify its DNS records).',
    fires: (f) => !f.message.domainVerified,
  },
  {
    name: 'html_without_text', score: 0.7,
    description: 'The message has HTML but no plain-text part.',
    suggestion: 'Add a text version of the content; filters and some readers look for one.',
    fires: (f) => f.message.html !== null && f.message.text === null,
  },
  {
    name: 'images_with_little_text', score: 1.5,
    description: 'The message is mostly images with little text.',
    suggestion: 'Put the message in text and keep images as a complement (aim for at least a few sentences per image).',
    fires: (f) => f.images > 0 && f.visibleText.length < 200 * f.images,
  },
  {
    name: 'subject_all_caps', score: 1.2,
    description: 'The subject is written in capital letters.',
    suggestion: 'Write the subject in sentence case.',
    fires: (f) => {
      const { letters, share } = upperShare(f.message.subject);
      return letters >= 10 && share >= 0.8;
    },
  },
  {
    name: 'subject_exclamations', score: 0.8,
    description: 'The subject has several exclamation marks.',
    suggestion: 'Use at most one exclamation mark in the subject.',
    fires: (f) => (f.message.subject.match(/!/g) ?? []).length >= 2,
  },
  {
    name: 'spam_phrases', score: 1, maxScore: 3,
    description: 'The subject or body uses phrases common in spam.',
    suggestion: 'Reword promotional phrases such as "act now", "click here" or "100% free".',
    fires: (f) => {
      const haystack = `${f.message.subject}\n${f.visibleText}`.toLowerCase();
      return SPAM_PHRASES.filter((p) => haystack.includes(p)).length;
    },
  },
  {
    name: 'body_all_caps', score: 1,
    description: 'Much of the body is written in capital letters.',
    suggestion: 'Write the body in normal case.',
    fires: (f) => {
      const { letters, share } = upperShare(f.visibleText);
      return letters >= 100 && share >= 0.5;
    },
  },
  {
    name: 'link_shortener', score: 1.5,
    description: 'A link goes through a URL shortener, which hides where it leads.',
    suggestion: 'Link to the destination directly, on a domain you own.',
    fires: (f) => f.links.some((l) => {
      const host = hostOf(l.href);
      return host !== undefined && SHORTENERS.includes(host);
    }),
  },
  {
    name: 'link_text_mismatch', score: 2,
    description: 'A link shows one address and leads to another, as phishing does.',
    suggestion: 'Make link text that looks like an address match where the link goes.',
    fires: (f) => f.links.some((l) => {
      const shown = /^(?:https?:\/\/)?([a-z0-9-]+(?:\.[a-z0-9-]+)+)(?:[/?#]\S*)?$/i.exec(l.text.trim())?.[1]?.toLowerCase().replace(/^www\./, '');
      const host = hostOf(l.href);
      return shown !== undefined && host !== undefined && shown !== host && !shown.endsWith(`.${host}`) && !host.endsWith(`.${shown}`);
    }),
  },
  {
    name: 'ip_address_link', score: 2,
    description: 'A link points at a bare IP address.',
    suggestion: 'Link to a domain name instead of an IP address.',
    fires: (f) => f.links.some((l) => /^\d{1,3}(\.\d{1,3}){3}$|^\[[0-9a-f:]+\]$/i.test(hostOf(l.href) ?? '')),
  },
  {
    name: 'too_many_links', score: 0.8,
    description: `The message has more than ${MAX_LINKS} links.`,
    suggestion: 'Keep the links to the ones the reader needs.',
    fires: (f) => f.links.length > MAX_LINKS,
  },
  {
    name: 'risky_attachment', score: 3,
    description: 'An attachment has a type that mail filters block (programs and scripts).',
    suggestion: 'Do not attach programs or scripts; link to a download page instead.',
    fires: (f) => f.message.attachmentNames.some((n) => RISKY_EXTENSIONS.includes(n.split('.').pop()!.toLowerCase())),
  },
  {
    name: 'html_too_large', score: 0.5,
    description: 'The HTML is over 102 KB; Gmail clips it and hides the rest.',
    suggestion: 'Trim the HTML (inline styles and comments are the usual bulk).',
    fires: (f) => Buffer.byteLength(f.message.html ?? '') > GMAIL_CLIP_BYTES,
  },
  {
    name: 'no_list_unsubscribe', score: 0.3,
    description: 'The message has no List-Unsubscribe header.',
    suggestion: 'For marketing and bulk mail, add List-Unsubscribe with one-click unsubscribe (RFC 8058); Gmail and Yahoo require it of bulk senders.',
    fires: (f) => !Object.keys(f.message.headers).some((k) => k.toLowerCase() === 'list-unsubscribe'),
  },
] satisfies SpamRule[]);

function features(message: CheckedMessage): Features {
  const html = message.html ?? '';
  const links = [...html.matchAll(/<a\b[^>]*?\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))[^>]*>([\s\S]*?)<\/a\s*>/gi)].map((m) => ({
    href: decodeEntities((m[1] ?? m[2] ?? m[3] ?? '').trim()),
    text: decodeEntities(m[4].replace(/<[^>]*>/g, '')),
  }));
  const textLinks = [...(message.text ?? '').matchAll(/https?:\/\/[^\s<>"']+/gi)].map((m) => ({ href: m[0], text: '' }));
  const htmlText = decodeEntities(html.replace(/<(style|script)\b[\s\S]*?<\/\1\s*>/gi, ' ').replace(/<[^>]*>/g, ' ')).replace(/\s+/g, ' ').trim();
  return {
    message,
    visibleText: message.text ?? htmlText,
    links: [...links, ...textLinks],
    images: (html.match(/<img\b/gi) ?? []).length,
  };
}

export interface SpamCheckResult {
  object: 'spam_check';
  score: number;
  threshold: number;
  spam: boolean;
  rules: Array<{ rule: string; score: number; description: string }>;
  suggestions: string[];
}

export function checkSpam(message: CheckedMessage): SpamCheckResult {
  const f = features(message);
  const fired = SPAM_RULES.flatMap((rule) => {
    const hit = rule.fires(f);
    const times = typeof hit === 'number' ? hit : hit ? 1 : 0;
    if (times === 0) return [];
    const score = Math.min(rule.score * times, rule.maxScore ?? Infinity);
    return [{ rule, score: Math.round(score * 10) / 10 }];
  });
  const score = Math.round(fired.reduce((n, r) => n + r.score, 0) * 10) / 10;
  return {
    object: 'spam_check',
    score,
    threshold: SPAM_THRESHOLD,
    spam: score >= SPAM_THRESHOLD,
    rules: fired.map(({ rule, score: s }) => ({ rule: rule.name, score: s, description: rule.description })),
    suggestions: fired.map(({ rule }) => rule.suggestion),
  };
}
