// Structural limits of a MIME message (RFC 2045, RFC 2046), checked by a
// streaming scan that keeps about 8 KB of it and passes over content lines
// with native searches, before anything parses the message whole. A full
// parse builds objects for every header line and part: a message made of
// 200,000 header lines, 10,000 nested multiparts or 100,000 sibling parts
// costs a parser (and the DKIM check, which reads the header itself)
// hundreds of megabytes and, past the parser's own limits, fails anyway. The
// listeners refuse such a message at DATA and the inbound processor fails it
// without parsing it.
//
// The scan follows the splitter mailparser uses (@zone-eu/mailsplit) on the
// message as it is stored: lines end at CRLF, or at a bare CR or LF (which
// the listeners store as CRLF); a header section ends at an empty line; a
// delimiter line of any open multipart may come anywhere and closes the
// parts inside it; a message/rfc822 part in 7bit, 8bit or binary is a
// message with a header of its own. It counts a little more than the splitter does (every such
// message/rfc822 part is opened, inline or not), never less, so what passes
// here stays within the splitter's limits (1,000 parts, 1 MiB a header).
// Those limits stay in force behind this scan: a message the parser refuses
// all the same is failed by the processor at once, not tried again.

export interface MimeLimits {
  /** Parts of every level, the message itself and each embedded message included. */
  maxParts: number;
  /** Multiparts and embedded messages inside one another. */
  maxDepth: number;
  /** Header lines of the whole message, folded lines counted one by one, every part's header included. */
  maxHeaderLines: number;
  /** Bytes of one header section. */
  maxHeaderSectionBytes: number;
  /** Bytes of a Content-Type field, whose parameters the scan has to read whole. */
  maxContentTypeBytes: number;
  /** Characters of a multipart boundary. */
  maxBoundaryChars: number;
}

export const MIME_LIMITS: Readonly<MimeLimits> = Object.freeze({
  maxParts: 500,
  // Postfix's mime_nesting_limit.
  maxDepth: 100,
  maxHeaderLines: 10_000,
  // Exchange Online's limit of a message header.
  maxHeaderSectionBytes: 256 * 1024,
  maxContentTypeBytes: 8 * 1024,
  // The delimiter line must fit in a line (RFC 5322 §2.1.1); RFC 2046 §5.1.1 asks for 70 at most.
  maxBoundaryChars: 990,
});

export type MimeLimit = 'parts' | 'depth' | 'header_lines' | 'header_section_bytes' | 'content_type';

export interface MimeViolation {
  limit: MimeLimit;
  /** What is over the limit, as a clause ("a header section is over 262144 bytes"), ASCII, for an SMTP reply and the API. */
  message: string;
}

const LF = 0x0a;
const CR = 0x0d;
const DASH = 0x2d;
/** Characters kept of a Content-Transfer-Encoding value. */
const ENCODING_KEPT_CHARS = 256;

const CR_DASH = Buffer.from('\r-');
const LF_DASH = Buffer.from('\n-');

const indexOrEnd = (chunk: Buffer, what: number | Buffer, from: number) => {
  const i = chunk.indexOf(what, from);
  return i === -1 ? chunk.length : i;
};

interface Container {
  /** The delimiter of a multipart ("--" + boundary); undefined for an embedded message, which ends with its container. */
  delimiter?: string;
}

/**
 * Feed it the message as it arrives; `violation` is set at the first limit
 * passed, and from then on the rest is skipped.
 */
export class MimeStructureScan {
  violation: MimeViolation | undefined;
  /** The start of the current line: enough for any Content-Type line and delimiter line within the limits. */
  private readonly line: Buffer;
  /** Bytes of the current line seen so far (only the first line.length are kept). */
  private lineBytes = 0;
  private inHeader = true;
  private sectionBytes = 0;
  private headerLines = 0;
  private parts = 1;
  /** The chunk before ended with a CR: an LF starting the next one is the rest of that line break. */
  private afterCr = false;
  /** The current line is content that does not start with "--", passed over up to its line break. */
  private inContent = false;
  private readonly open: Container[] = [];
  /** The field being read in the current header section, when it is one the structure depends on. */
  private field: 'content-type' | 'content-transfer-encoding' | undefined;
  private contentType = '';
  private contentTypeBytes = 0;
  private encoding = '';
  private seenContentType = false;
  private seenEncoding = false;

  constructor(private readonly limits: Readonly<MimeLimits> = MIME_LIMITS) {
    this.line = Buffer.alloc(Math.max(limits.maxContentTypeBytes, limits.maxBoundaryChars + 4));
  }

  write(chunk: Buffer): void {
    if (chunk.length === 0) return;
    // The LF of a CRLF whose CR ended the previous chunk.
    let start = this.afterCr && chunk[0] === LF ? 1 : 0;
    this.afterCr = false;
    // Where the next line breaks (and line breaks before a dash) are, the
    // chunk's length when there is none: each is looked for again only once
    // passed, since looking for all of them at every line would read a
    // chunk without CRs, say, once per line.
    const next = { cr: -1, lf: -1, crDash: -1, lfDash: -1 };
    const find = (key: keyof typeof next, what: number | Buffer) => {
      if (next[key] < start) next[key] = indexOrEnd(chunk, what, start);
      return next[key];
    };
    while (!this.violation && !this.settled() && start < chunk.length) {
      if (!this.inHeader && !this.inContent && this.lineBytes === 0 && chunk[start] !== DASH) {
        // In content only a line that starts with "--" can matter: go to the
        // next line that starts with a dash, past any number of others at once.
        const dashLine = Math.min(find('crDash', CR_DASH), find('lfDash', LF_DASH)) + 1;
        if (dashLine > chunk.length) {
          // None in this chunk: the line the chunk ends in is content too, unless a line break ends the chunk.
          const last = chunk[chunk.length - 1];
          if (last === CR) this.afterCr = true;
          else if (last !== LF) this.inContent = true;
          return;
        }
        start = dashLine;
      }
      const end = Math.min(find('cr', CR), find('lf', LF));
      if (this.inContent) {
        if (end === chunk.length) return;
        this.inContent = false;
      } else {
        this.append(chunk, start, end);
        if (end === chunk.length) return;
        this.endLine();
      }
      start = end + 1;
      if (chunk[end] === CR) {
        if (start === chunk.length) this.afterCr = true;
        else if (chunk[start] === LF) start++;
      }
    }
  }

  /** The violation, once the whole message has been written. */
  end(): MimeViolation | undefined {
    if (!this.violation && !this.settled() && this.lineBytes > 0) this.endLine();
    return this.violation;
  }

  /** In content, with no multipart open, nothing that follows can change the structure (a single-part body, say). */
  private settled(): boolean {
    return !this.inHeader && this.open.length === 0;
  }

  private append(chunk: Buffer, start: number, end: number): void {
    const room = this.line.length - this.lineBytes;
    if (room > 0) chunk.copy(this.line, this.lineBytes, start, Math.min(end, start + room));
    this.lineBytes += end - start;
    // A header line is counted as it grows, so one line of megabytes is refused at its first 256 KB.
    if (this.inHeader && this.sectionBytes + this.lineBytes > this.limits.maxHeaderSectionBytes) {
      this.fail('header_section_bytes', `a header section is over ${this.limits.maxHeaderSectionBytes} bytes`);
    }
  }

  /** A line has ended (at its line break, not kept, or at the end of the message). */
  private endLine(): void {
    const bytes = this.lineBytes;
    const len = Math.min(bytes, this.line.length);
    this.lineBytes = 0;
    if (len >= 2 && this.line[0] === DASH && this.line[1] === DASH && this.delimiter(this.line.toString('latin1', 0, len))) return;
    if (!this.inHeader) return;
    if (len === 0) {
      this.endHeader();
      return;
    }
    // Counted with the CRLF the line is stored with.
    this.sectionBytes += bytes + 2;
    if (++this.headerLines > this.limits.maxHeaderLines) {
      this.fail('header_lines', `the message has over ${this.limits.maxHeaderLines} header lines in all`);
      return;
    }
    this.readField(this.line.toString('latin1', 0, len), bytes);
  }

  /** Handles a line of a delimiter of an open multipart; false when it is no such line. */
  private delimiter(text: string): boolean {
    const trimmed = text.replace(/[ \t]+$/, '');
    for (let i = this.open.length - 1; i >= 0; i--) {
      const { delimiter } = this.open[i];
      if (delimiter === undefined) continue;
      if (trimmed === delimiter) {
        this.open.length = i + 1;
        this.startPart();
        return true;
      }
      if (trimmed === `${delimiter}--`) {
        this.open.length = i;
        this.inHeader = false;
        return true;
      }
    }
    return false;
  }

  /** A header line, as far as it is kept (`bytes` is its whole length). */
  private readField(text: string, bytes: number): void {
    if (text[0] === ' ' || text[0] === '\t') {
      if (this.field === 'content-type') this.addContentType(text, bytes);
      else if (this.field === 'content-transfer-encoding' && this.encoding.length < ENCODING_KEPT_CHARS) this.encoding += text;
      return;
    }
    const colon = text.indexOf(':');
    const name = colon > 0 ? text.slice(0, colon).trim().toLowerCase() : '';
    // The first field of a name counts, as for the parser.
    this.field = undefined;
    if (name === 'content-type' && !this.seenContentType) {
      this.field = name;
      this.seenContentType = true;
      this.addContentType(text.slice(colon + 1), bytes - colon - 1);
    } else if (name === 'content-transfer-encoding' && !this.seenEncoding) {
      this.field = name;
      this.seenEncoding = true;
      this.encoding = text.slice(colon + 1, colon + 1 + ENCODING_KEPT_CHARS);
    }
  }

  private addContentType(text: string, bytes: number): void {
    this.contentTypeBytes += bytes;
    if (this.contentTypeBytes > this.limits.maxContentTypeBytes) {
      this.fail('content_type', `a Content-Type field is over ${this.limits.maxContentTypeBytes} bytes`);
      return;
    }
    this.contentType += text;
  }

  /** The end of a header section: what follows is a multipart's body, an embedded message, or content. */
  private endHeader(): void {
    const type = /^\s*([^\s;]+)/.exec(this.contentType)?.[1]?.toLowerCase() ?? '';
    const encoding = this.encoding.trim().toLowerCase();
    const boundary = boundaryOf(this.contentType);
    this.resetFields();
    if (type.startsWith('multipart/') && boundary) {
      if (boundary.length > this.limits.maxBoundaryChars) {
        this.fail('content_type', `a multipart boundary is over ${this.limits.maxBoundaryChars} characters`);
        return;
      }
      if (this.nest({ delimiter: `--${boundary}` })) this.inHeader = false;
      return;
    }
    if (type === 'message/rfc822' && ['', '7bit', '8bit', 'binary'].includes(encoding)) {
      if (this.nest({}) && this.countPart()) this.sectionBytes = 0;
      return;
    }
    this.inHeader = false;
  }

  private nest(container: Container): boolean {
    this.open.push(container);
    if (this.open.length > this.limits.maxDepth) {
      this.fail('depth', `multiparts or embedded messages are nested over ${this.limits.maxDepth} deep`);
      return false;
    }
    return true;
  }

  private startPart(): void {
    if (!this.countPart()) return;
    this.inHeader = true;
    this.sectionBytes = 0;
    this.resetFields();
  }

  private resetFields(): void {
    this.field = undefined;
    this.contentType = '';
    this.contentTypeBytes = 0;
    this.encoding = '';
    this.seenContentType = false;
    this.seenEncoding = false;
  }

  private countPart(): boolean {
    if (++this.parts > this.limits.maxParts) {
      this.fail('parts', `the message has over ${this.limits.maxParts} MIME parts`);
      return false;
    }
    return true;
  }

  private fail(limit: MimeLimit, what: string): void {
    this.violation ??= { limit, message: what };
  }
}

/**
 * The boundary parameter of a Content-Type value: plain, quoted, or in
 * RFC 2231 sections (`boundary*0="ab"; boundary*1="cd"`, `boundary*=utf-8''ab%20cd`).
 */
export function boundaryOf(contentType: string): string | undefined {
  const sections: Array<{ index: number; text: string }> = [];
  let plain: string | undefined;
  for (const m of contentType.matchAll(/;\s*boundary(?:\*(\d+))?(\*)?\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;]*))/gi)) {
    let text = m[3] !== undefined ? m[3].replace(/\\(.)/g, '$1') : m[4];
    if (m[2]) {
      // An extended value: the first section starts with charset'language'; the rest is percent-encoded.
      if (m[1] === undefined || m[1] === '0') text = text.replace(/^[^']*'[^']*'/, '');
      try {
        text = decodeURIComponent(text);
      } catch {
        // Not valid percent-encoding: taken as it is.
      }
    }
    if (m[1] === undefined) plain ??= text;
    else sections.push({ index: Number(m[1]), text });
  }
  if (sections.length > 0) return sections.sort((a, b) => a.index - b.index).map((s) => s.text).join('') || undefined;
  return plain || undefined;
}

/** Scans a whole message. */
export function scanMimeStructure(raw: Buffer, limits: Readonly<MimeLimits> = MIME_LIMITS): MimeViolation | undefined {
  const scan = new MimeStructureScan(limits);
  scan.write(raw);
  return scan.end();
}
