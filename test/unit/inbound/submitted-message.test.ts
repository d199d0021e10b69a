import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/core/errors.js';
import { emailFromSubmission } from '../../../src/smtp/submitted-message.js';

const message = (headers: string, body = 'Hello\r\n') => Buffer.from(`${headers.trim().split('\n').join('\r\n')}\r\n\r\n${body}`);

describe('a submitted message as an API email', () => {
  it('lets the envelope decide the recipients', async () => {
    const { email } = await emailFromSubmission(message(`
From: "Lee, Ann" <ann@example.test>
To: Reader <reader@remote.test>, not-sent@remote.test
Cc: copy@remote.test
Subject: Hi`), { mailFrom: 'bounce@example.test', rcptTo: ['READER@remote.test', 'copy@remote.test', 'hidden@remote.test'] });
    expect(email).toEqual({
      from: '"Lee, Ann" <ann@example.test>',
      to: ['Reader <reader@remote.test>'],
      cc: ['copy@remote.test'],
      bcc: ['hidden@remote.test'],
      subject: 'Hi',
      text: 'Hello\n',
    });
  });

  it('keeps custom header fields once each, and drops the ones the pipeline writes', async () => {
    const { email } = await emailFromSubmission(message(`
Received: from x by y
From: ann@example.test
To: r@remote.test
Subject: Hi
Message-ID: <abc@client.test>
X-Tag: one
X-Tag: two
In-Reply-To: <prev@remote.test>
X-Long: folded
 value`), { mailFrom: 'ann@example.test', rcptTo: ['r@remote.test'] });
    expect(email.headers).toEqual({ 'X-Tag': 'one', 'In-Reply-To': '<prev@remote.test>', 'X-Long': 'folded value' });
  });

  it('reads a custom field\'s raw UTF-8 as UTF-8 (RFC 6532)', async () => {
    const { email } = await emailFromSubmission(message('From: ann@example.test\nTo: r@remote.test\nSubject: Hi\nX-Campaign: \u00e9t\u00e9 \u2014 \u{1F431}'),
      { mailFrom: 'ann@example.test', rcptTo: ['r@remote.test'] });
    expect(email.headers).toEqual({ 'X-Campaign': '\u00e9t\u00e9 \u2014 \u{1F431}' });
  });

  it('keeps the Content-ID of an image in multipart/related that has no Content-Disposition, as its html names it', async () => {
    const pixel = Buffer.from('GIF89a').toString('base64');
    const { email } = await emailFromSubmission(message(`
From: ann@example.test
To: r@remote.test
Subject: Logo
MIME-Version: 1.0
Content-Type: multipart/related; boundary="rel"`, [
      '--rel', 'Content-Type: text/html; charset=utf-8', '', '<img src="cid:logo@acme">', '',
      '--rel', 'Content-Type: image/gif; name="logo.gif"', 'Content-Transfer-Encoding: base64', 'Content-ID: <logo@acme>', '', pixel, '',
      '--rel', 'Content-Type: image/gif', 'Content-Disposition: attachment; filename="kept.gif"', 'Content-Transfer-Encoding: base64',
      'Content-ID: <kept@acme>', '', pixel, '',
      '--rel--', '',
    ].join('\r\n')), { mailFrom: 'ann@example.test', rcptTo: ['r@remote.test'] });
    expect(email.attachments?.map((a) => [a.filename, a.content_id])).toEqual([['logo.gif', 'logo@acme'], ['kept.gif', undefined]]);
  });

  it('keeps the client\'s Message-ID when it is well-formed, and only then', async () => {
    const envelope = { mailFrom: 'ann@example.test', rcptTo: ['r@remote.test'] };
    const id = (header: string) => emailFromSubmission(message(`From: ann@example.test\nTo: r@remote.test\nSubject: Hi${header}`), envelope)
      .then((r) => r.messageId);
    expect(await id('\nMessage-ID: <20261124.abc@client.example>')).toBe('<20261124.abc@client.example>');
    expect(await id('\nMessage-ID: not-an-id')).toBeUndefined();
    expect(await id('\nMessage-ID: <two@ats@client.example>')).toBeUndefined();
    expect(await id('')).toBeUndefined();
  });

  it('falls back to the envelope sender and gives a body-less message an empty text', async () => {
    const { email } = await emailFromSubmission(message('To: r@remote.test\nSubject: Hi', ''), { mailFrom: 'ann@example.test', rcptTo: ['r@remote.test'] });
    expect(email).toMatchObject({ from: 'ann@example.test', text: '' });
  });

  it('refuses a message whose To names no envelope recipient', async () => {
    const err = await emailFromSubmission(message('From: a@example.test\nTo: undisclosed-recipients:;\nSubject: Hi'),
      { mailFrom: 'a@example.test', rcptTo: ['r@remote.test'] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'validation_error', param: 'to' });
  });
});
