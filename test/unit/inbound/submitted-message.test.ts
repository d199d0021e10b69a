import { describe, expect, it } from 'vitest';
import { composeMessage, composeThroughNodemailer } from '../../../src/delivery/mime.js';
import { emailFromSubmission } from '../../../src/smtp/submitted-message.js';

const message = (headers: string, body = 'Hello\r\n') => Buffer.from(`${headers.trim().split('\n').join('\r\n')}\r\n\r\n${body}`);

describe('a submitted message as an API email', () => {
  it('lets the envelope decide the recipients, and keeps the To and Cc fields as written', async () => {
    const { email, asWritten } = await emailFromSubmission(message(`
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
    // The message shows what its client wrote, not-sent@ included; hidden@ stays hidden.
    expect(asWritten.shownRecipients).toEqual({ to: ['Reader <reader@remote.test>', 'not-sent@remote.test'], cc: ['copy@remote.test'] });
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

  it('names a part its client left unnamed by its type: an invitation opens as a calendar, a forwarded message as one', async () => {
    const ics = 'BEGIN:VCALENDAR\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\nUID:1\r\nEND:VEVENT\r\nEND:VCALENDAR';
    const { email } = await emailFromSubmission(message(`
From: ann@example.test
To: r@remote.test
Subject: Sync
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="m"`, [
      '--m', 'Content-Type: multipart/alternative; boundary="alt"', '',
      '--alt', 'Content-Type: text/plain', '', 'Join us', '',
      '--alt', 'Content-Type: text/calendar; charset=utf-8; method=REQUEST', '', ics, '',
      '--alt--', '',
      '--m', 'Content-Type: message/rfc822', '', 'From: x@y.test\r\nSubject: inner\r\n\r\nbody', '',
      '--m', 'Content-Type: application/x-unheard-of', '', 'data', '',
      '--m', 'Content-Type: text/calendar', 'Content-Disposition: attachment; filename="own.ics"', '', ics, '',
      '--m--', '',
    ].join('\r\n')), { mailFrom: 'ann@example.test', rcptTo: ['r@remote.test'] });
    expect(email.attachments?.map((a) => [a.filename, a.content_type])).toEqual([
      ['attachment-1.ics', 'text/calendar'], ['attachment-2.eml', 'message/rfc822'], ['attachment-3', 'application/x-unheard-of'], ['own.ics', 'text/calendar'],
    ]);
    expect(Buffer.from(email.attachments![0].content, 'base64').toString()).toContain('METHOD:REQUEST');
  });

  it('keeps the client\'s Message-ID when it is well-formed, and only then', async () => {
    const envelope = { mailFrom: 'ann@example.test', rcptTo: ['r@remote.test'] };
    const id = (header: string) => emailFromSubmission(message(`From: ann@example.test\nTo: r@remote.test\nSubject: Hi${header}`), envelope)
      .then((r) => r.asWritten.messageId);
    expect(await id('\nMessage-ID: <20261124.abc@client.example>')).toBe('<20261124.abc@client.example>');
    expect(await id('\nMessage-ID: not-an-id')).toBeUndefined();
    expect(await id('\nMessage-ID: <two@ats@client.example>')).toBeUndefined();
    expect(await id('')).toBeUndefined();
  });

  it('falls back to the envelope sender and gives a body-less message an empty text', async () => {
    const { email } = await emailFromSubmission(message('To: r@remote.test\nSubject: Hi', ''), { mailFrom: 'ann@example.test', rcptTo: ['r@remote.test'] });
    expect(email).toMatchObject({ from: 'ann@example.test', text: '' });
  });

  it('takes a message whose To names no envelope recipient: they are its to, and its fields stay as written', async () => {
    const undisclosed = await emailFromSubmission(message('From: a@example.test\nTo: undisclosed-recipients:;\nSubject: Hi'),
      { mailFrom: 'a@example.test', rcptTo: ['r@remote.test', 's@remote.test'] });
    expect(undisclosed.email).toMatchObject({ to: ['r@remote.test', 's@remote.test'] });
    expect(undisclosed.email.bcc).toBeUndefined();
    expect(undisclosed.asWritten.shownRecipients).toEqual({ to: ['undisclosed-recipients:;'], cc: [] });

    // An alias the client expanded: To names the alias, the envelope its member.
    const alias = await emailFromSubmission(message('From: cron@example.test\nTo: "Ops: team": root@example.test;\nCc: "Lee, Ann" <ann@remote.test>\nSubject: Hi'),
      { mailFrom: 'cron@example.test', rcptTo: ['oncall@remote.test'] });
    expect(alias.email).toMatchObject({ to: ['oncall@remote.test'] });
    expect(alias.asWritten.shownRecipients).toEqual({ to: ['"Ops: team": root@example.test;'], cc: ['"Lee, Ann" <ann@remote.test>'] });

    // Every recipient in Cc: they are its to on the record, the fields as written.
    const onlyCc = await emailFromSubmission(message('From: a@example.test\nTo: list@example.test\nCc: c@remote.test\nSubject: Hi'),
      { mailFrom: 'a@example.test', rcptTo: ['c@remote.test'] });
    expect(onlyCc.email).toMatchObject({ to: ['c@remote.test'] });
    expect(onlyCc.email.cc).toBeUndefined();
    expect(onlyCc.asWritten.shownRecipients).toEqual({ to: ['list@example.test'], cc: ['c@remote.test'] });
  });

  it('keeps a line break decoded from a name in the To field from starting a field of its own when the message is built', async () => {
    const { asWritten } = await emailFromSubmission(message(
      'From: a@example.test\nTo: =?utf-8?q?x=0D=0ABcc=3A_spy=40evil=2Etest?= <r@remote.test>, "T=?utf-8?q?=0D=0AX-Injected=3A_1?=": m@remote.test;\nSubject: Hi'),
    { mailFrom: 'a@example.test', rcptTo: ['r@remote.test'] });
    for (const build of [composeMessage, composeThroughNodemailer]) {
      const { raw } = await build({ from: 'a@example.test', to: asWritten.shownRecipients.to, subject: 'Hi', text: 'x', messageIdDomain: 'example.test' });
      const header = raw.toString().split('\r\n\r\n')[0].replace(/\r\n[ \t]/g, ' ');
      expect(header).not.toMatch(/^(Bcc|X-Injected):/im);
      expect(header.split('\r\n')).toContain('To: "x Bcc: spy@evil.test" <r@remote.test>, "T X-Injected: 1":m@remote.test;');
    }
  });

  it('writes undisclosed-recipients in place of a message with neither To nor Cc, as Postfix does', async () => {
    const { email, asWritten } = await emailFromSubmission(message('From: a@example.test\nSubject: Hi'),
      { mailFrom: 'a@example.test', rcptTo: ['r@remote.test'] });
    expect(email.to).toEqual(['r@remote.test']);
    expect(asWritten.shownRecipients).toEqual({ to: ['undisclosed-recipients:;'], cc: [] });
  });
});
