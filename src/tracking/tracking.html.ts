// Rewrites an HTML body for open and click tracking without breaking it:
// only absolute http(s) links in <a href> are rewritten; mailto:, tel:,
// in-page anchors, unsubscribe links and links marked data-mailroom-track="off"
// are left alone; the pixel goes just before </body> (or at the end).

export interface InstrumentOptions {
  /** The open pixel's URL; absent = no open tracking. */
  pixelUrl?: string;
  /** Returns the tracked URL for an original link; absent = no click tracking. */
  linkFor?: (url: string) => string;
  /** URLs starting with one of these are never rewritten (our own unsubscribe pages). */
  keepPrefixes?: string[];
}

const ANCHOR_RE = /<a\b[^>]*>/gi;
const HREF_RE = /(\bhref\s*=\s*)(?:"([^"]*)"|'([^']*)'|([^\s>"']+))/i;

// HTML reads a reference to no character (past U+10FFFF, a surrogate, NUL) as
// U+FFFD; String.fromCodePoint would throw instead, failing the build of the
// message and of every message claimed with it.
const character = (code: number) =>
  code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff) ? '\ufffd' : String.fromCodePoint(code);
const decodeEntities = (s: string) =>
  s.replace(/&amp;/gi, '&').replace(/&#x([0-9a-f]+);/gi, (_, h) => character(parseInt(h, 16)))
    .replace(/&#(\d+);/g, (_, d) => character(Number(d)));
const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;');

function isTrackable(url: string, keep: string[]): boolean {
  if (!/^https?:\/\//i.test(url) || !URL.canParse(url)) return false;
  if (keep.some((p) => url.startsWith(p))) return false;
  // Links that say they unsubscribe must reach the sender's page untouched
  // (a tracked hop would also count as a click on an unsubscribe).
  return !/unsubscribe|opt[-_]?out/i.test(url);
}

export function instrumentHtml(html: string, o: InstrumentOptions): string {
  let out = html;
  if (o.linkFor) {
    const linkFor = o.linkFor;
    out = out.replace(ANCHOR_RE, (tag) => {
      if (/\bdata-mailroom-track\s*=\s*["']?off/i.test(tag)) return tag;
      const m = HREF_RE.exec(tag);
      if (!m) return tag;
      const raw = m[2] ?? m[3] ?? m[4] ?? '';
      const url = decodeEntities(raw.trim());
      if (!isTrackable(url, o.keepPrefixes ?? [])) return tag;
      return tag.replace(HREF_RE, `$1"${escapeAttr(linkFor(url))}"`);
    });
  }
  if (o.pixelUrl) {
    const pixel = `<img src="${escapeAttr(o.pixelUrl)}" width="1" height="1" alt="" style="display:none;border:0;width:1px;height:1px" />`;
    const close = out.search(/<\/body\s*>/i);
    out = close === -1 ? out + pixel : out.slice(0, close) + pixel + out.slice(close);
  }
  return out;
}
