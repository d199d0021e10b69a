import { describe, expect, it } from 'vitest';
import { hasSmugglingMarker, normaliseLineEndings } from '../../../src/smtp/message-data.js';

const b = (s: string) => Buffer.from(s, 'latin1');

describe('DATA line endings', () => {
  it('spots an end-of-data look-alike next to a bare CR or LF', () => {
    for (const payload of ['a\n.\nb', 'a\n.\r\nb', 'a\r\n.\nb', 'a\r.\rb', 'a\r\n.\rb', '.\nrest', 'text\n.\r\n']) {
      expect(hasSmugglingMarker(b(payload)), JSON.stringify(payload)).toBe(true);
    }
  });

  it('leaves alone a dot line between CRLFs and dots that are content', () => {
    // "\r\n.\r\n" inside the data can only come from a dot-stuffed "..": a line of one dot.
    for (const payload of ['a\r\n.\r\nb', 'a\n..\nb', 'a\n.b\n', 'a.\nb', '.\r\nrest', 'one\ntwo\rthree\r\n', '']) {
      expect(hasSmugglingMarker(b(payload)), JSON.stringify(payload)).toBe(false);
    }
  });

  it('turns bare CR and LF into CRLF and keeps CRLF', () => {
    expect(normaliseLineEndings(b('a\nb\rc\r\nd\n\re')).toString('latin1')).toBe('a\r\nb\r\nc\r\nd\r\n\r\ne');
    expect(normaliseLineEndings(b('\r')).toString('latin1')).toBe('\r\n');
    const clean = b('a\r\nb\r\n');
    expect(normaliseLineEndings(clean)).toBe(clean);
  });
});
