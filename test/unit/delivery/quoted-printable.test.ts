import { Encoder } from 'nodemailer/lib/qp';
import { describe, expect, it } from 'vitest';
import { encoderOutput } from '../../../src/delivery/quoted-printable.js';
import { seededRandom } from '../../helpers/random.js';

/** What nodemailer's encoder stream writes for `content` handed to it in one chunk. */
function nodemailerOutput(content: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const encoder = new Encoder();
    let out = '';
    encoder.on('data', (chunk: Buffer) => (out += chunk.toString('latin1')));
    encoder.on('end', () => resolve(out));
    encoder.on('error', reject);
    encoder.end(content);
  });
}

describe('quoted-printable as nodemailer writes it', () => {
  it.each<[string, string | Buffer]>([
    ['empty', ''],
    ['a short line', 'Hello.'],
    ['one long word', 'x'.repeat(2048)],
    ['long html on one line', `<p>${'Lorem ipsum dolor sit amet, <a href="https://shop.example/p">consectetur</a>. '.repeat(375)}</p>`],
    ['short lines', 'one\r\ntwo\r\n\r\nthree\r\n'],
    ['whitespace before line breaks and at the end', 'a \r\nb\t\r\nc  \t'],
    ['only whitespace', ' \t  '],
    ['8-bit text', `Grüße ${'é'.repeat(90)} ☃ 日本語 😀\r\n`.repeat(5)],
    ['equals signs and escapes at every column', `${'=a'.repeat(60)}\r\n${'x='.repeat(60)}`],
    ['UTF-8 sequences across the wrap column', Array.from({ length: 12 }, (_, i) => `${'a'.repeat(60 + i)}${'€😀é'.repeat(4)}`).join('\r\n')],
    ['lone CR and LF', `${'a'.repeat(70)}\nbb\r${'c'.repeat(100)}\n\r\n`],
    ['punctuation to break after', `${'word, word. word! word? '.repeat(20)}`],
    ['invalid UTF-8', Buffer.from(Array.from({ length: 400 }, (_, i) => (i % 7 === 0 ? 0x61 : 0x80 + (i % 64))))],
  ])('%s', async (_, content) => {
    const bytes = Buffer.isBuffer(content) ? content : Buffer.from(content, 'utf-8');
    expect(encoderOutput(bytes).toString('latin1')).toBe(await nodemailerOutput(bytes));
  });

  it('matches on random text made of the pieces that decide where lines break', async () => {
    const pieces = ['a', 'word ', 'x'.repeat(70), ' ', '\t', '.', ',', '!', '?', '=', '=3D', 'A9', 'é', '日本', '😀', '\r\n', '\n', '\r', '\u0001', '\u007f'];
    const next = seededRandom(2045);
    for (let i = 0; i < 500; i++) {
      const text = Array.from({ length: Math.floor(next() * 200) }, () => pieces[Math.floor(next() * pieces.length)]).join('');
      const bytes = Buffer.from(text, 'utf-8');
      expect(encoderOutput(bytes).toString('latin1'), JSON.stringify(text)).toBe(await nodemailerOutput(bytes));
    }
  });
});
