import { describe, expect, it } from 'vitest';
import { chunkBody, dataBlock } from '../../../src/delivery/smtp-client.js';

const block = (text: string) => dataBlock(Buffer.from(text, 'latin1')).toString('latin1');

describe('dataBlock', () => {
  it('leaves a CRLF message without leading dots as it is, with the end of data after it', () => {
    expect(block('Subject: x\r\n\r\nbody\r\n')).toBe('Subject: x\r\n\r\nbody\r\n.\r\n');
  });

  it('doubles the dot that starts the first line, and every line', () => {
    expect(block('.one\r\n..two\r\n.\r\nthree.\r\n.')).toBe('..one\r\n...two\r\n..\r\nthree.\r\n..\r\n.\r\n');
  });

  it('makes bare LF and bare CR into CRLF, and doubles a dot after either', () => {
    expect(block('a\n.b\r.c\r\n\n\rd')).toBe('a\r\n..b\r\n..c\r\n\r\n\r\nd\r\n.\r\n');
  });

  it('completes a message that ends without CRLF, or with a bare CR, before the final dot', () => {
    expect(block('a')).toBe('a\r\n.\r\n');
    expect(block('a\r')).toBe('a\r\n.\r\n');
    expect(block('a\n')).toBe('a\r\n.\r\n');
    expect(block('')).toBe('\r\n.\r\n');
  });
});

describe('chunkBody', () => {
  const chunk = (text: string) => chunkBody(Buffer.from(text, 'latin1')).toString('latin1');

  it('is the message itself, not a copy, when its lines end in CRLF; dots stay as they are', () => {
    const raw = Buffer.from('.one\r\n.\r\ntwo\r\n', 'latin1');
    expect(chunkBody(raw)).toBe(raw);
  });

  it('makes bare LF and bare CR into CRLF, and ends the last line', () => {
    expect(chunk('a\n.b\r.c\r\n\n\rd')).toBe('a\r\n.b\r\n.c\r\n\r\n\r\nd\r\n');
    expect(chunk('a')).toBe('a\r\n');
    expect(chunk('a\r')).toBe('a\r\n');
    expect(chunk('')).toBe('\r\n');
  });
});
