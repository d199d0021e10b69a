import { simpleParser } from 'mailparser';
import MailComposer from 'nodemailer/lib/mail-composer';
import { PassThrough } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { buildMessage, composeMessage, composeThroughNodemailer, type Address, type ComposeInput } from '../../../src/delivery/mime.js';
import { seededRandom } from '../../helpers/random.js';

const base: ComposeInput = {
  from: { email: 'news@sender.test', name: 'Sender Ünïcode' },
  to: ['ann@example.org', { email: 'bob@example.org', name: 'Bob' }],
  subject: 'Hello',
  text: 'plain',
  messageIdDomain: 'sender.test',
};

const LONE_CR_OR_LF = /\r(?!\n)|(?<!\r)\n/;

/** A message with its boundaries, random per message, made the same. */
const sameBoundaries = (raw: Buffer) => raw.toString('latin1').replace(/_NmP-[0-9a-f]{16}-Part_/g, '_NmP-boundary-Part_');

describe('composeMessage', () => {
  it('writes header names in the form nodemailer gives them, however many different names it has seen', async () => {
    const forms = { 'x-entity-ref-id': 'X-Entity-Ref-ID', 'x-smtpapi': 'X-SMTPAPI', 'x-report-md5': 'X-Report-MD5', 'X-mailer': 'X-Mailer' };
    for (let i = 0; i < 1_200; i++) {
      const { raw } = await composeMessage({ ...base, headers: { ...Object.fromEntries(Object.keys(forms).map((k) => [k, 'v'])), [`x-custom-${i}-id`]: 'v' } });
      const fields = raw.toString('latin1').split('\r\n\r\n')[0].split('\r\n');
      expect(fields).toEqual(expect.arrayContaining([...Object.values(forms), `X-Custom-${i}-ID`].map((name) => `${name}: v`)));
    }
  });

  it('builds the headers, the bodies and the attachments', async () => {
    const { raw, messageId } = await composeMessage({
      ...base,
      cc: ['carol@example.org'],
      replyTo: ['help@sender.test'],
      html: '<p>Hi <img src="cid:logo@sender"></p>',
      headers: { 'X-Campaign': 'spring' },
      attachments: [
        { filename: 'notes.txt', content: Buffer.from('some notes') },
        { filename: 'report.csv', content: Buffer.from('a,b\n1,2\n').toString('base64'), contentType: 'text/csv' },
        { filename: 'logo.png', content: 'iVBORw0KGgo=', contentType: 'image/png', contentId: 'logo@sender' },
      ],
      messageIdLocal: 'em_123',
      date: new Date('2026-01-02T03:04:05Z'),
    });

    expect(messageId).toBe('<em_123@sender.test>');
    const mail = await simpleParser(raw, { skipImageLinks: true });
    expect(mail.from?.value).toEqual([{ address: 'news@sender.test', name: 'Sender Ünïcode' }]);
    expect(mail.to && !Array.isArray(mail.to) && mail.to.value.map((a) => a.address)).toEqual(['ann@example.org', 'bob@example.org']);
    expect(mail.cc && !Array.isArray(mail.cc) && mail.cc.text).toBe('carol@example.org');
    expect(mail.replyTo?.text).toBe('help@sender.test');
    expect(mail.messageId).toBe('<em_123@sender.test>');
    expect(mail.date?.toISOString()).toBe('2026-01-02T03:04:05.000Z');
    expect(mail.headers.get('x-campaign')).toBe('spring');
    expect(mail.text?.trim()).toBe('plain');
    expect(mail.html).toContain('cid:logo@sender');
    expect(mail.attachments.map((a) => [a.filename, a.contentType, a.contentDisposition, a.content.toString('base64')])).toEqual([
      ['logo.png', 'image/png', 'inline', 'iVBORw0KGgo='],
      ['notes.txt', 'text/plain', 'attachment', Buffer.from('some notes').toString('base64')],
      ['report.csv', 'text/csv', 'attachment', Buffer.from('a,b\n1,2\n').toString('base64')],
    ]);
    expect(mail.attachments[0].cid).toBe('logo@sender');
    expect(raw.toString()).not.toMatch(/^bcc:/im);
  });

  it('adds List-Unsubscribe and List-Unsubscribe-Post (RFC 2369, RFC 8058)', async () => {
    const { raw } = await composeMessage({ ...base, listUnsubscribe: { url: 'https://sender.test/u/abc', mailto: 'unsub@sender.test', oneClick: true } });
    const text = raw.toString();
    expect(text).toContain('List-Unsubscribe: <https://sender.test/u/abc>, <mailto:unsub@sender.test>\r\n');
    expect(text).toContain('List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n');
  });

  it('puts a random Message-ID on the sending domain and the current date when none is given', async () => {
    const a = await composeMessage(base);
    const b = await composeMessage(base);
    expect(a.messageId).toMatch(/^<[0-9a-f-]{36}@sender\.test>$/);
    expect(a.messageId).not.toBe(b.messageId);
    const { date } = await simpleParser(a.raw);
    expect(Math.abs(date!.getTime() - Date.now())).toBeLessThan(60_000);
  });

  it('turns every lone CR or LF into CRLF', async () => {
    const { raw } = await composeMessage({ ...base, text: 'one\ntwo\rthree\r\nfour\n\rfive', html: '<p>a</p>\n<p>b</p>\r<p>c</p>' });
    expect(raw.toString('latin1')).not.toMatch(LONE_CR_OR_LF);
    const mail = await simpleParser(raw);
    expect(mail.text?.split(/\r?\n/).slice(0, 6)).toEqual(['one', 'two', 'three', 'four', '', 'five']);
  });

  it('keeps a header value on one line', async () => {
    const { raw } = await composeMessage({ ...base, subject: 'a\r\nBcc: x@evil.test', headers: { 'X-Note': 'b\nTo: y@evil.test' } });
    const header = raw.toString().split('\r\n\r\n')[0];
    expect(header).not.toMatch(/^(bcc|to): .*evil/im);
  });

  it.each<[string, Partial<ComposeInput>]>([
    ['a header name with a colon', { headers: { 'X-Bad:Name': 'v' } }],
    ['a header the composer owns', { headers: { 'Content-Type': 'text/html' } }],
    ['a Bcc header', { headers: { Bcc: 'hidden@example.org' } }],
    ['attachment content that is not base64', { attachments: [{ filename: 'a.bin', content: 'not base64!' }] }],
    ['an unsubscribe URI with a space', { listUnsubscribe: { url: 'https://sender.test/u/a b' } }],
    ['one-click unsubscribe without https', { listUnsubscribe: { mailto: 'u@sender.test', oneClick: true } }],
  ])('refuses %s', async (_, extra) => {
    await expect(composeMessage({ ...base, ...extra })).rejects.toMatchObject({ code: 'validation_error' });
  });
});

describe('composeMessage against nodemailer', () => {
  const date = new Date('2026-01-02T03:04:05Z');
  const crlf = (text: string) => text.replace(/\r\n|\r|\n/g, '\r\n');
  const html = `<p>${'Lorem ipsum dolor sit amet, <a href="https://shop.example/p">consectetur</a>. '.repeat(375)}</p>`;

  it.each<[string, Partial<ComposeInput>]>([
    ['2 KB of text on one line', { text: 'x'.repeat(2048) }],
    ['29 KB of html on one line', { text: undefined, html }],
    ['text and html', { text: 'Hello,\n\nyour receipt.\n', html: '<p>Hello,</p>\n<p>your receipt.</p>' }],
    ['short 7-bit lines', { text: 'one\ntwo\r\nthree' }],
    ['long lines with trailing blanks', { text: `${'word '.repeat(40)}\nline with blanks  \n${'x'.repeat(100)} \t` }],
    ['8-bit text and html', { text: `Grüße ${'é'.repeat(90)} ☃\n`.repeat(4), html: `<p>${'ü'.repeat(300)}</p>` }],
    ['mostly non-Latin text (base64)', { text: '日本語のテキスト'.repeat(40) }],
    ['ASCII with control characters', { text: `bell\u0007 and tab\t${'a'.repeat(80)}` }],
    ['long ASCII without letters', { text: '1234567890 '.repeat(20) }],
    ['non-ASCII subject and names, an IDN domain', {
      subject: 'Grüße — ☃ Ünïcode subject', from: { email: 'news@sender.test', name: 'Sender Ünïcode' },
      to: [{ email: 'ann@exämple.org', name: 'Ann "the" Reader' }, 'bob@example.org'], cc: [{ email: 'carol@example.org', name: 'Çarol' }],
    }],
    ['custom headers and List-Unsubscribe', {
      headers: { 'X-Campaign': 'spring ☃', 'X-Long': 'v '.repeat(60) },
      listUnsubscribe: { url: 'https://sender.test/u/abc', mailto: 'unsub@sender.test', oneClick: true },
    }],
  ])('writes what nodemailer writes for %s', async (_, extra) => {
    const input: ComposeInput = { ...base, messageIdLocal: 'em_1', date, ...extra };
    const { raw } = await composeMessage(input);
    const address = (a: string | { email: string; name?: string }) => (typeof a === 'string' ? a : { address: a.email, name: a.name ?? '' });
    const unsubscribe = input.listUnsubscribe
      ? [
        { key: 'List-Unsubscribe', value: { prepared: true, foldLines: true, value: '<https://sender.test/u/abc>, <mailto:unsub@sender.test>' } },
        { key: 'List-Unsubscribe-Post', value: { prepared: true, foldLines: false, value: 'List-Unsubscribe=One-Click' } },
      ]
      : [];
    const reference = await new MailComposer({
      from: address(input.from), to: input.to.map(address), ...(input.cc && { cc: input.cc.map(address) }), subject: input.subject,
      ...(input.text !== undefined && { text: crlf(input.text) }), ...(input.html !== undefined && { html: crlf(input.html) }),
      headers: [...Object.entries(input.headers ?? {}).map(([key, value]) => ({ key, value })), ...unsubscribe],
      messageId: '<em_1@sender.test>', date,
    }).compile().build();
    expect(sameBoundaries(raw)).toBe(sameBoundaries(reference));
  });
});

describe('composeMessage written directly', () => {
  /** The message, or the error it was refused with. */
  const outcome = (compose: typeof composeMessage, input: ComposeInput) =>
    compose(input).then(({ raw }) => sameBoundaries(raw), (err: Error) => `refused: ${err.message}`);

  /** Random input of every shape composeMessage takes, from pieces that change how headers and bodies are encoded. */
  function randomInput(next: () => number): ComposeInput {
    const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)];
    const some = <T>(max: number, make: () => T): T[] => Array.from({ length: Math.floor(next() * (max + 1)) }, make);
    const locals = ['ann', 'bob.smith', 'x+tag', "o'neil", 'UPPER', '"quoted local"', 'üser', 'a..b', '-dash'];
    const domains = ['example.org', 'Example.ORG', 'exämple.org', 'xn--bcher-kva.example', 'sub.domain-x.test', '[192.0.2.1]', 'localhost'];
    const names = [undefined, '', 'Ann', 'Ann Lee', 'Lee, Ann', 'A "q" B', 'Dr. Who', 'Çarol', '日本の名前', 'x'.repeat(80), 'tab\tname', 'back\\slash', 'emoji 😀'];
    const address = (): Address => {
      const email = `${pick(locals)}@${pick(domains)}`;
      const name = pick(names);
      if (next() < 0.15) return name ? `${name} <${email}>` : email;
      return name === undefined ? { email } : { email, name };
    };
    const words = ['Hello', 'your', 'receipt', 'Grüße', '☃', '日本語', 'x'.repeat(90), '=?utf-8?q?x?=', 'a\u0007b', 'line\r\nBcc: x@evil.test', '', ' ', '\t'];
    const subject = pick(['', ' ', 'Receipt', 'Your order 12345 has shipped and will arrive within three to five business days from now']) + some(4, () => ` ${pick(words)}`).join('');
    const lines = ['Hello,', '', 'a'.repeat(76), 'b'.repeat(77), `${'word '.repeat(30)}`, 'trailing blanks  \t', '.leading dot', '=3D equals', 'Grüße ☃', '日本語のテキスト'.repeat(10), 'bell\u0007', '😀 emoji', '<p>html & "quotes"</p>'];
    const body = () => next() < 0.2 ? pick([undefined, '']) : some(20, () => pick(lines)).join(pick(['\n', '\r\n', '\r']));
    const headerNames = ['X-Campaign', 'x-entity-ref-id', 'x-smtpapi', 'In-Reply-To', 'References', 'Keywords', 'X-Priority', 'x-report-md5', 'otp-token'];
    const headerValues = ['', 'v', 'v '.repeat(60), 'spring ☃', '<a@b.test> <c@d.test>', 'id@x.test', 'a\u0001b', 'one\ntwo', 'x'.repeat(100)];
    return {
      from: address(), to: some(4, address), cc: some(2, address), replyTo: some(2, address), subject,
      text: body(), html: body(),
      headers: Object.fromEntries(some(3, () => [pick(headerNames), pick(headerValues)])),
      ...(next() < 0.3 && { listUnsubscribe: pick([{ url: 'https://sender.test/u/abc' }, { mailto: 'unsub@sender.test' }, { url: 'https://sender.test/u/a', mailto: 'mailto:u@sender.test', oneClick: true }, { url: 'http://sender.test/u', oneClick: true }, { url: 'javascript:x' },
        { url: `https://sender.test/unsubscribe/${'a'.repeat(60)}`, mailto: 'unsubscribe@sender.test' }]) }),
      ...(next() < 0.1 && { attachments: [{ filename: 'a.txt', content: Buffer.from('attached') }] }),
      messageIdDomain: 'sender.test', messageIdLocal: `em_${Math.floor(next() * 1e6)}`,
      ...(next() < 0.2 && { messageId: pick(['<client@host.test>', 'no-brackets@host.test', '<odd id@host.test>']) }),
      date: new Date(Date.UTC(2020, 0, 1) + Math.floor(next() * 1e11)),
    };
  }

  it('writes what the composer writes, or refuses what it refuses, on 3,000 random inputs', async () => {
    const seed = 5321;
    const next = seededRandom(seed);
    const compile = vi.spyOn(MailComposer.prototype, 'compile');
    let throughComposer = 0;
    try {
      for (let i = 0; i < 3_000; i++) {
        const input = randomInput(next);
        compile.mockClear();
        const direct = await outcome(composeMessage, input);
        throughComposer += compile.mock.calls.length;
        expect(direct, `seed ${seed}, input ${i}: ${JSON.stringify(input)}`).toBe(await outcome(composeThroughNodemailer, input));
      }
    } finally {
      compile.mockRestore();
    }
    // The inputs with an attachment or no body at all (about one in six) are the composer's to write.
    expect(throughComposer).toBeGreaterThan(200);
    expect(throughComposer).toBeLessThan(800);
  });

  it('leaves an attachment, no body, and quoted-printable past one encoder slice to the composer', async () => {
    const compile = vi.spyOn(MailComposer.prototype, 'compile');
    const input: ComposeInput = { ...base, html: '<p>plain</p>', date: new Date(0), messageIdLocal: 'em_1' };
    try {
      for (const [shape, throughComposer] of [
        [{}, false],
        [{ attachments: [{ filename: 'a.txt', content: Buffer.from('attached') }] }, true],
        [{ text: '', html: undefined }, true],
        [{ text: `${'ab é '.repeat(15_000)}\r\nend` }, true],
      ] satisfies Array<[Partial<ComposeInput>, boolean]>) {
        compile.mockClear();
        const { raw } = await composeMessage({ ...input, ...shape });
        expect(compile.mock.calls.length, JSON.stringify(shape).slice(0, 80)).toBe(throughComposer ? 1 : 0);
        expect(sameBoundaries(raw)).toBe(sameBoundaries((await composeThroughNodemailer({ ...input, ...shape })).raw));
      }
    } finally {
      compile.mockRestore();
    }
  });
});

describe('buildMessage', () => {
  const date = new Date('2026-01-02T03:04:05Z');
  const cases: Array<[string, ConstructorParameters<typeof MailComposer>[0]]> = [
    ['plain 7-bit text', { from: 'a@sender.test', to: 'b@example.org', subject: 'Hi', text: 'Hello.\r\n' }],
    ['text without a final line break', { from: 'a@sender.test', to: 'b@example.org', subject: 'Hi', text: 'no break' }],
    ['an empty text', { from: 'a@sender.test', to: 'b@example.org', subject: 'Hi', text: '' }],
    ['quoted-printable: long lines, trailing blanks, 8-bit', {
      from: 'Ünï <a@sender.test>', to: 'b@example.org', subject: 'Grüße — ☃',
      text: `${'x'.repeat(200)}\r\nline with trailing blanks  \r\nÄöü ${'é'.repeat(90)} \t`,
      html: `<p>${'ü'.repeat(300)}</p>\r\n`,
    }],
    ['quoted-printable ending in blanks on a full line', {
      from: 'a@sender.test', to: 'b@example.org', subject: 'Hi', text: `${'é'.repeat(60)} \t`,
    }],
    ['quoted-printable over one encoder slice', {
      from: 'a@sender.test', to: 'b@example.org', subject: 'Hi', text: `${'ab é '.repeat(15_000)}\r\nend`,
    }],
    ['base64 text (mostly non-ASCII)', { from: 'a@sender.test', to: 'b@example.org', subject: 'Hi', text: '日本語のテキスト'.repeat(40) }],
    ['alternative with inline image and attachments', {
      from: 'a@sender.test', to: ['b@example.org', 'c@example.org'], cc: 'd@example.org', subject: 'Report',
      text: 'See attached.\r\n', html: '<p>See <img src="cid:logo@x"></p>',
      attachments: [
        { filename: 'notes.txt', content: Buffer.from('some notes\nmore') },
        { filename: 'data.bin', content: Buffer.alloc(1000, 7) },
        { filename: 'logo.png', content: Buffer.from('iVBORw0KGgo=', 'base64'), contentType: 'image/png', cid: 'logo@x', contentDisposition: 'inline' },
      ],
    }],
  ];

  it.each(cases)('writes the same bytes as MimeNode.build() for %s', async (_, mail) => {
    const node = new MailComposer({ ...mail, date, messageId: '<fixed@sender.test>' }).compile();
    // The tree is built once: boundaries are random per tree, so both writers must see the same one.
    expect((await buildMessage(node)).toString('latin1')).toBe((await node.build()).toString('latin1'));
  });

  it('leaves a tree with stream content to build()', async () => {
    const stream = new PassThrough();
    stream.end('streamed body\r\n');
    const node = new MailComposer({ from: 'a@sender.test', to: 'b@example.org', subject: 'Hi', text: stream, date }).compile();
    const raw = await buildMessage(node);
    expect(raw.toString()).toMatch(/\r\n\r\nstreamed body\r\n$/);
  });
});
