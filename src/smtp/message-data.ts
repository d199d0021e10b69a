// Line endings of a message received with DATA. RFC 5321 §2.3.8 allows only
// CRLF to end a line, and only CRLF "." CRLF to end DATA (§4.1.1.4). Servers
// that also take a bare LF or CR as a line ending disagree with us about where
// a message ends, which is what SMTP smuggling exploits (CVE-2023-51764/51765/
// 51766): a payload holding "<LF>.<LF>" or "<LF>.<CRLF>" reads as one message
// here and as two (the second one forged) at the next hop. So:
//   - a line holding only "." next to a bare CR or LF is refused outright;
//   - any other bare CR or LF is turned into CRLF before the message is stored,
//     so it is never relayed in a form another server could split differently.

const CR = 0x0d;
const LF = 0x0a;
const DOT = 0x2e;
const CRLF = Buffer.from('\r\n');

type Break = 'crlf' | 'bare';

/**
 * Whether the data holds a line of a single "." that a bare CR or LF begins or
 * ends: the shape of an end-of-data marker that only a lenient server honours.
 */
export function hasSmugglingMarker(data: Buffer): boolean {
  // DATA starts right after the CRLF of the DATA command.
  let before: Break = 'crlf';
  let lineStart = 0;
  for (let i = 0; i < data.length; i++) {
    const b = data[i];
    if (b !== CR && b !== LF) continue;
    const after: Break = b === CR && data[i + 1] === LF ? 'crlf' : 'bare';
    if (i - lineStart === 1 && data[lineStart] === DOT && (before === 'bare' || after === 'bare')) return true;
    if (after === 'crlf') i++;
    before = after;
    lineStart = i + 1;
  }
  return false;
}

/** The data with every bare CR and bare LF replaced by CRLF; the same buffer when there is none. */
export function normaliseLineEndings(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  let copied = 0;
  for (let i = 0; i < data.length; i++) {
    const b = data[i];
    if (b === CR && data[i + 1] === LF) {
      i++;
      continue;
    }
    if (b !== CR && b !== LF) continue;
    parts.push(data.subarray(copied, i), CRLF);
    copied = i + 1;
  }
  if (parts.length === 0) return data;
  parts.push(data.subarray(copied));
  return Buffer.concat(parts);
}
