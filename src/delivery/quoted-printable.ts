// Quoted-printable (RFC 2045 §6.7) exactly as nodemailer's qp module writes
// it (encode, then wrap at 76 characters), in one pass over bytes: nodemailer
// works on strings, with a handful of regular expressions for every line,
// which made encoding and wrapping a third of the CPU of building a 29 KB
// html message. Differential tests hold the output to nodemailer's.

const SP = 0x20;
const HT = 0x09;
const CR = 0x0d;
const LF = 0x0a;
const EQUALS = 0x3d;
const HEX_DIGITS = Buffer.from('0123456789ABCDEF', 'latin1');

/** How each byte is written: as it is, as it is unless it ends a line or the input (whitespace), or as =XX. */
const AS_IS = 0;
const WHITESPACE = 1;
const ESCAPED = 2;
const ENCODING = new Uint8Array(256).fill(ESCAPED);
// RFC 2045 §6.7: TAB, LF, CR and printable ASCII except '=' may stand for themselves.
for (let c = 0x20; c <= 0x7e; c++) if (c !== EQUALS) ENCODING[c] = AS_IS;
ENCODING[LF] = AS_IS;
ENCODING[CR] = AS_IS;
ENCODING[SP] = WHITESPACE;
ENCODING[HT] = WHITESPACE;

/** Where wrap() may break a line, after the character (nodemailer's /[ \t.,!?]/). */
const BREAK_AFTER = new Uint8Array(256);
for (const c of ' \t.,!?') BREAK_AFTER[c.charCodeAt(0)] = 1;

/** [\da-f] with the i flag. */
const HEX = new Uint8Array(256);
for (const c of '0123456789abcdefABCDEF') HEX[c.charCodeAt(0)] = 1;

/** Scratch space for the encoded text, kept between calls (everything here runs synchronously). */
let scratch = Buffer.allocUnsafe(64 * 1024);

function scratchOf(bytes: number): Buffer {
  if (scratch.length < bytes) {
    const bigger = Buffer.allocUnsafe(Math.max(scratch.length * 2, bytes));
    scratch.copy(bigger);
    scratch = bigger;
  }
  return scratch;
}

/** nodemailer's encodeBytes() of a whole input, written to scratch from `at`; returns where it ends. */
function encodeInto(bytes: Uint8Array, at: number): number {
  const buf = scratchOf(at + bytes.length * 3);
  let n = at;
  const length = bytes.length;
  for (let i = 0; i < length; i++) {
    const c = bytes[i];
    const how = ENCODING[c];
    if (how === AS_IS) {
      buf[n++] = c;
      continue;
    }
    // Whitespace that ends a line or the input is encoded.
    if (how === WHITESPACE && i + 1 < length && bytes[i + 1] !== LF && bytes[i + 1] !== CR) {
      buf[n++] = c;
      continue;
    }
    buf[n++] = EQUALS;
    buf[n++] = HEX_DIGITS[c >> 4];
    buf[n++] = HEX_DIGITS[c & 15];
  }
  return n;
}

/** s[end-3..end) is "=XX" and starts at or after `pos`. */
function endsWithEscape(s: Uint8Array, pos: number, end: number): boolean {
  return end - pos >= 3 && s[end - 3] === EQUALS && HEX[s[end - 2]] === 1 && HEX[s[end - 1]] === 1;
}

/** /^(?:=[\da-f]{2}){1,4}$/i over s[pos..end). */
function isOneToFourEscapes(s: Uint8Array, pos: number, end: number): boolean {
  const length = end - pos;
  if (length % 3 !== 0 || length < 3 || length > 12) return false;
  for (let i = pos; i < end; i += 3) if (s[i] !== EQUALS || HEX[s[i + 1]] !== 1 || HEX[s[i + 2]] !== 1) return false;
  return true;
}

function hexValue(c: number): number {
  return c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x61 + 10;
}

/**
 * Where nodemailer's qp.wrap(s[start..stop), lineLength) puts its soft line
 * breaks ("=" CRLF, before the positions pushed to `cuts`); it changes
 * nothing else. It keeps lines to lineLength, preferring to break after
 * whitespace or punctuation near the end of a line, never inside an =XX
 * escape and, where it can, not inside a UTF-8 sequence. Each step below is
 * the regular expression of the same step there.
 */
function softBreaks(s: Buffer, start: number, stop: number, lineLength: number, cuts: number[]): void {
  if (stop - start <= lineLength) return;
  const margin = Math.floor(lineLength / 3);
  // The first CR and LF at or after pos (stop when there is none): the steps for line breaks only look when a line holds one.
  let nextCr = start - 1;
  let nextLf = start - 1;
  let pos = start;
  while (pos < stop) {
    const lineEnd = Math.min(pos + lineLength, stop);
    if (nextCr < pos) nextCr = indexIn(s, CR, pos, stop);
    if (nextLf < pos) nextLf = indexIn(s, LF, pos, stop);
    const tailStart = Math.max(pos, lineEnd - margin);
    let hard = -1;
    if (Math.min(nextCr, nextLf) < lineEnd) {
      // /\r\n/: a hard break inside the line ends it.
      for (let i = nextCr; i + 1 < lineEnd; i++) {
        if (s[i] === CR && s[i + 1] === LF) {
          hard = i + 2;
          break;
        }
      }
      if (hard === -1 && s[lineEnd - 1] === LF) hard = lineEnd;
      // /\n.*?$/ in the last `margin` characters: a LF with no CR or LF after it.
      for (let i = lineEnd - 1; hard === -1 && i >= tailStart; i--) {
        if (s[i] === LF) hard = i + 1;
        else if (s[i] === CR) break;
      }
    }
    if (hard !== -1) {
      pos = hard;
      continue;
    }
    let end = lineEnd;
    let breakAt = -1;
    if (lineEnd - pos > lineLength - margin) {
      for (let i = lineEnd - 1; i >= tailStart; i--) {
        if (BREAK_AFTER[s[i]] === 1) {
          breakAt = i + 1;
          break;
        }
      }
    }
    if (breakAt !== -1) {
      end = breakAt;
    } else if (
      s[end - 1] === EQUALS ||
      (end - 2 >= pos && s[end - 2] === EQUALS && HEX[s[end - 1]] === 1) ||
      endsWithEscape(s, pos, end)
    ) {
      // An escape cut short moves to the next line whole.
      if (s[end - 1] === EQUALS) end -= 1;
      else if (end - 2 >= pos && s[end - 2] === EQUALS && HEX[s[end - 1]] === 1) end -= 2;
      // So do the escapes of a UTF-8 sequence the line would split: continuation bytes, then the lead byte.
      while (end - pos > 3 && end - pos < stop - pos && !isOneToFourEscapes(s, pos, end) && endsWithEscape(s, pos, end)) {
        const code = hexValue(s[end - 2]) * 16 + hexValue(s[end - 1]);
        if (code < 128) break;
        end -= 3;
        if (code >= 0xc0) break;
      }
    }
    if (end === pos) end = lineEnd;
    if (end < stop && s[end - 1] !== LF) {
      if (end - pos === lineLength) end -= endsWithEscape(s, pos, end) ? 3 : 1;
      cuts.push(end);
    }
    pos = end;
  }
}

/** The first `byte` in s[from..stop), or stop. */
function indexIn(s: Buffer, byte: number, from: number, stop: number): number {
  const i = s.indexOf(byte, from);
  return i === -1 || i > stop ? stop : i;
}

/**
 * Quoted-printable text as nodemailer's qp.Encoder writes content handed to
 * it in one chunk of at most one encoder slice (64 KiB, its
 * ENCODE_SLICE_SIZE), wrapped at 76: the whitespace that ends the content is
 * held back and encoded after the rest, and each of the two parts is wrapped
 * together with the line the part before left open.
 */
export function encoderOutput(content: Uint8Array): Buffer {
  let whitespace = content.length;
  while (whitespace > 0 && (content[whitespace - 1] === SP || content[whitespace - 1] === HT)) whitespace--;
  // The encoding of each part does not depend on the other: the first ends in a byte that is not whitespace.
  const split = encodeInto(content.subarray(0, whitespace), 0);
  const end = encodeInto(content.subarray(whitespace), split);
  const s = scratch;
  const cuts: number[] = [];
  softBreaks(s, 0, split, 76, cuts);
  if (split < end) {
    // The line left open by the first part, after its last LF or soft break, is wrapped again with the rest.
    const lastLf = s.lastIndexOf(LF, split - 1);
    const open = Math.max(cuts.at(-1) ?? 0, lastLf === -1 || split === 0 ? 0 : lastLf + 1);
    softBreaks(s, open, end, 76, cuts);
  }
  // Each soft break goes in where it belongs, the text after it moving up: from the last one, so nothing is overwritten.
  const length = end + 3 * cuts.length;
  const buf = scratchOf(length);
  for (let k = cuts.length - 1; k >= 0; k--) {
    const from = cuts[k];
    const to = from + 3 * (k + 1);
    buf.copyWithin(to, from, k + 1 < cuts.length ? cuts[k + 1] : end);
    buf[to - 3] = EQUALS;
    buf[to - 2] = CR;
    buf[to - 1] = LF;
  }
  return Buffer.from(buf.subarray(0, length));
}
