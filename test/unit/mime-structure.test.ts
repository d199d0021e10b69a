import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { describe, expect, it } from 'vitest';
import { boundaryOf, MIME_LIMITS, MimeStructureScan, scanMimeStructure, type MimeLimits } from '../../src/core/mime-structure.js';
import { headerLines, hugeHeader, nestedMultiparts, siblingParts } from '../helpers/mime-bombs.js';

const FIXTURES = join(import.meta.dirname, '../fixtures');

/** Scans `raw` written in pieces of `size` bytes. */
function scanInPieces(raw: Buffer, size: number, limits: MimeLimits = MIME_LIMITS) {
  const scan = new MimeStructureScan(limits);
  for (let i = 0; i < raw.length; i += size) scan.write(raw.subarray(i, i + size));
  return scan.end();
}

async function ordinaryMessage(): Promise<Buffer> {
  const inner = await new MailComposer({ from: 'x@inner.test', to: 'y@inner.test', subject: 'forwarded', text: 'inner' }).compile().build();
  return new MailComposer({
    from: 'Ann <ann@sender.test>', to: 'desk@inbound.test', subject: 'Report ✓',
    text: 'plain', html: '<p>html <img src="cid:logo"></p>',
    attachments: [
      { filename: 'a.csv', content: 'q,r\n1,2\n', contentType: 'text/csv' },
      { filename: 'logo.png', content: Buffer.alloc(2_000, 7), cid: 'logo' },
      { filename: 'fwd.eml', content: inner, contentType: 'message/rfc822', contentDisposition: 'inline' },
    ],
  }).compile().build();
}

const small: MimeLimits = { ...MIME_LIMITS, maxParts: 5, maxDepth: 3, maxHeaderLines: 20, maxHeaderSectionBytes: 300 };

describe('the MIME structure scan', () => {
  it('passes ordinary mail and every fixture, whole or a byte at a time', async () => {
    const messages = [await ordinaryMessage(), ...readdirSync(FIXTURES).filter((f) => f.endsWith('.eml')).map((f) => readFileSync(join(FIXTURES, f)))];
    for (const raw of messages) {
      expect(scanMimeStructure(raw)).toBeUndefined();
      expect(scanInPieces(raw, 1)).toBeUndefined();
    }
  });

  it('names the limit each kind of bomb passes', () => {
    expect(scanMimeStructure(headerLines())?.limit).toBe('header_lines');
    expect(scanMimeStructure(hugeHeader())?.limit).toBe('header_section_bytes');
    expect(scanMimeStructure(nestedMultiparts())?.limit).toBe('depth');
    expect(scanMimeStructure(siblingParts())?.limit).toBe('parts');
    // Many header lines that stay under the count but not under the size.
    expect(scanMimeStructure(Buffer.from(`Subject: x\r\n${`X-Long: ${'l'.repeat(90)}\r\n`.repeat(3_000)}\r\nbody`))).toEqual({
      limit: 'header_section_bytes', message: 'a header section is over 262144 bytes',
    });
  });

  it('finds a violation as the data arrives, before the end of the message', () => {
    const scan = new MimeStructureScan();
    const raw = headerLines();
    scan.write(raw.subarray(0, 200_000));
    expect(scan.violation).toEqual({ limit: 'header_lines', message: 'the message has over 10000 header lines in all' });
    const huge = new MimeStructureScan();
    huge.write(hugeHeader().subarray(0, 300 * 1024));
    expect(huge.violation?.limit).toBe('header_section_bytes');
  });

  it('counts parts and depth up to the limit and refuses one more', () => {
    const parts = (n: number) => Buffer.from(`Content-Type: multipart/mixed; boundary=b\r\n\r\n${'--b\r\nContent-Type: text/plain\r\n\r\nx\r\n'.repeat(n)}--b--\r\n`);
    // The message itself is a part: four more make five.
    expect(scanMimeStructure(parts(4), small)).toBeUndefined();
    expect(scanMimeStructure(parts(5), small)?.limit).toBe('parts');
    const nested = (n: number) => {
      let text = '';
      for (let i = 0; i < n; i++) text += `Content-Type: multipart/mixed; boundary="d${i}"\r\n\r\n--d${i}\r\n`;
      return Buffer.from(`${text}\r\nx\r\n`);
    };
    expect(scanMimeStructure(nested(3), small)).toBeUndefined();
    expect(scanMimeStructure(nested(4), small)?.limit).toBe('depth');
    const lines = (n: number) => Buffer.from(`${'A: b\r\n'.repeat(n)}\r\nbody`);
    expect(scanMimeStructure(lines(20), small)).toBeUndefined();
    expect(scanMimeStructure(lines(21), small)?.limit).toBe('header_lines');
  });

  it('closes inner multiparts at a delimiter of an outer one, as the parser does', () => {
    // The inner multipart is never closed; the outer delimiter ends it, so three parts follow at the outer level.
    const raw = Buffer.from([
      'Content-Type: multipart/mixed; boundary=outer', '',
      '--outer', 'Content-Type: multipart/alternative; boundary=inner', '',
      '--inner', '', 'a',
      '--outer', '', 'b',
      '--outer', '', 'c',
      '--outer--', '',
    ].join('\r\n'));
    // message, outer parts 1-3, inner part 1: five in all.
    expect(scanMimeStructure(raw, small)).toBeUndefined();
    expect(scanMimeStructure(raw, { ...small, maxParts: 4 })?.limit).toBe('parts');
  });

  it('reads the header of an embedded message as a header, with its depth', () => {
    let raw = '';
    for (let i = 0; i < 4; i++) raw += `Subject: level ${i}\r\nContent-Type: message/rfc822\r\n\r\n`;
    expect(scanMimeStructure(Buffer.from(`${raw}Subject: core\r\n\r\nx`), small)?.limit).toBe('depth');
    // Encoded in base64, it is content: the parser does not open it either.
    expect(scanMimeStructure(Buffer.from(`Content-Type: message/rfc822\r\nContent-Transfer-Encoding: base64\r\n\r\n${'QQ==\r\n'.repeat(50)}`), small))
      .toBeUndefined();
  });

  it('reads boundaries plain, quoted, folded and in RFC 2231 sections', () => {
    expect(boundaryOf('multipart/mixed; boundary=plain')).toBe('plain');
    expect(boundaryOf('multipart/mixed; charset=x;\r\n boundary="a b;c"')).toBe('a b;c');
    expect(boundaryOf('multipart/mixed; boundary*0="ab"; boundary*1="cd"')).toBe('abcd');
    expect(boundaryOf("multipart/mixed; boundary*=utf-8'en'a%20b")).toBe('a b');
    expect(boundaryOf('multipart/mixed')).toBeUndefined();
    const sections = Buffer.from(`Content-Type: multipart/mixed;\r\n boundary*0="se"; boundary*1="ct"\r\n\r\n${'--sect\r\n\r\nx\r\n'.repeat(600)}--sect--\r\n`);
    expect(scanMimeStructure(sections)?.limit).toBe('parts');
  });

  it('refuses a Content-Type or boundary too long to follow', () => {
    const longType = Buffer.from(`Content-Type: multipart/mixed; ${'x=y; '.repeat(2_000)}boundary=b\r\n\r\n--b\r\n\r\nx\r\n--b--\r\n`);
    expect(scanMimeStructure(longType)?.limit).toBe('content_type');
    const longBoundary = 'b'.repeat(3_000);
    expect(scanMimeStructure(Buffer.from(`Content-Type: multipart/mixed; boundary="${longBoundary}"\r\n\r\n--${longBoundary}\r\n\r\nx\r\n`))?.limit)
      .toBe('content_type');
  });

  it('refuses well short of the parser\'s own limit, and passes what the parser takes', async () => {
    // The parser's splitter stops at 1,000 nodes; the scan at 500 parts.
    await expect(simpleParser(siblingParts(1_000))).rejects.toThrow(/child nodes/);
    expect(scanMimeStructure(siblingParts(1_000))?.limit).toBe('parts');
    const within = siblingParts(MIME_LIMITS.maxParts - 2);
    expect(scanMimeStructure(within)).toBeUndefined();
    expect((await simpleParser(within)).attachments.length + 1).toBeLessThanOrEqual(MIME_LIMITS.maxParts);
  });

  it('takes a bare CR or LF for a line break, as the message is stored', async () => {
    const ordinary = (await ordinaryMessage()).toString('latin1');
    const bomb = siblingParts(600).toString('latin1');
    for (const lineBreak of ['\r', '\n']) {
      const as = (text: string) => Buffer.from(text.replace(/\r\n/g, lineBreak), 'latin1');
      expect(scanMimeStructure(as(ordinary))).toBeUndefined();
      expect(scanInPieces(as(ordinary), 1)).toBeUndefined();
      expect(scanMimeStructure(as(bomb))?.limit).toBe('parts');
      expect(scanInPieces(as(bomb), 3)?.limit).toBe('parts');
    }
  });

  it('gives the same answer whatever the pieces the data comes in', () => {
    for (const raw of [headerLines(20_000), nestedMultiparts(200), siblingParts(1_000), hugeHeader(400_000)]) {
      const whole = scanMimeStructure(raw);
      expect(whole).toBeDefined();
      for (const size of [1, 7, 1_000, 65_536]) expect(scanInPieces(raw, size)).toEqual(whole);
    }
  });
});
