import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { parseHere, parseMessage } from '../../../src/inbound/parse-message.js';
import { ParsePool } from '../../../src/inbound/parse-pool.js';

const fixture = (name: string) => readFileSync(new URL(`../../fixtures/${name}`, import.meta.url));

const withAttachment = Buffer.from([
  'From: "Doe, Jane" <jane@sender.test>', 'To: desk@inbound.test, Group: a@x.test, b@x.test;', 'Cc: cc@inbound.test',
  'Subject: =?UTF-8?Q?caf=C3=A9?=', 'Message-ID: <m1@sender.test>', 'MIME-Version: 1.0',
  'Content-Type: multipart/mixed; boundary="b1"', '',
  '--b1', 'Content-Type: text/plain; charset=utf-8', '', 'Hello', '',
  '--b1', 'Content-Type: text/html', '', '<p>Hello</p>', '',
  '--b1', 'Content-Type: application/octet-stream', 'Content-Disposition: attachment; filename="data.bin"', 'Content-Transfer-Encoding: base64', '',
  Buffer.from([0, 1, 2, 250, 251, 252]).toString('base64'), '--b1--', '',
].join('\r\n'));

describe('MIME parsing on worker threads', () => {
  const pool = new ParsePool(2);
  afterAll(() => pool.close());

  it('gives the same fields as parsing on this thread, attachments as Buffers', async () => {
    const messages = [withAttachment, ...['dsn-postfix-user-unknown.eml', 'dsn-gmail-no-such-user.eml', 'arf-abuse.eml'].map(fixture)];
    for (const raw of messages) {
      const [there, here] = await Promise.all([parseMessage(raw, pool.parse), parseMessage(raw, parseHere)]);
      expect(there).toEqual(here);
      for (const part of there.report.parts) expect(Buffer.isBuffer(part.content)).toBe(true);
    }
    const fields = await parseMessage(withAttachment, pool.parse);
    expect(fields.from).toBe('"Doe, Jane" <jane@sender.test>');
    expect(fields.subject).toBe('café');
    expect(fields.html).toContain('<p>Hello</p>');
    expect(fields.recipientAddresses).toEqual(['desk@inbound.test', 'a@x.test', 'b@x.test', 'cc@inbound.test']);
    expect(fields.attachments).toEqual([{ index: 0, filename: 'data.bin', content_type: 'application/octet-stream', size: 6, content_id: null, disposition: 'attachment' }]);
    expect([...fields.report.parts[0].content]).toEqual([0, 1, 2, 250, 251, 252]);
  });

  it('parses many messages at once across its threads', async () => {
    const raws = Array.from({ length: 40 }, (_, i) => Buffer.from(`From: s${i}@sender.test\r\nSubject: n${i}\r\n\r\nbody ${i}\r\n`));
    const subjects = (await Promise.all(raws.map((raw) => parseMessage(raw, pool.parse)))).map((f) => f.subject);
    expect(subjects).toEqual(raws.map((_, i) => `n${i}`));
  });

  it('refuses work once closed', async () => {
    const closing = new ParsePool(1);
    await parseMessage(withAttachment, closing.parse);
    await closing.close();
    await expect(closing.parse(withAttachment)).rejects.toThrow('the parsing pool is closed');
  });
});
