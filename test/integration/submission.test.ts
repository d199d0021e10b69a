import nodemailer, { type SendMailOptions } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sinkMessagesFor } from '../../src/delivery/sink.js';
import { sendRaw, SmtpDialog, startSmtpTestApp, type SmtpTestApp } from '../helpers/smtp-app.js';
import { SENDING_ENV } from '../helpers/app.js';

// SMTP submission with an API key: a message sent by an ordinary SMTP client
// becomes an email exactly as POST /v1/emails would make it.

const DOMAIN = 'example.test';
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

function client(port: number, pass: string, extra: Record<string, unknown> = {}) {
  return nodemailer.createTransport({
    host: '127.0.0.1', port, secure: false, tls: { rejectUnauthorized: false }, auth: { user: 'apikey', pass }, ...extra,
  });
}

async function submit(port: number, pass: string, mail: SendMailOptions, extra: Record<string, unknown> = {}) {
  const transport = client(port, pass, extra);
  try {
    return await transport.sendMail(mail);
  } finally {
    transport.close();
  }
}

const queuedId = (response: string) => /queued as (em_\w+)/.exec(response)?.[1];

describe('SMTP submission', () => {
  let t: SmtpTestApp;

  beforeAll(async () => {
    t = await startSmtpTestApp({ env: { MAILROOM_PLANS: JSON.stringify({ tiny: { burst: 10, testBurst: 10, requestsPerSecond: 0.001 }, quota1: { dailySendQuota: 1 }, monthly1: { monthlySendQuota: 1 } }) } });
    await t.seed.activeDomain(DOMAIN);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('works with nodemailer\'s default options on loopback: no certificate to trust, AUTH without STARTTLS', async () => {
    const ehlo = await (async () => {
      const { dialog } = await SmtpDialog.open(t.submissionPort);
      try {
        return await dialog.command('EHLO client.test');
      } finally {
        dialog.close();
      }
    })();
    expect(ehlo).not.toMatch(/STARTTLS/);
    expect(ehlo).toMatch(/AUTH PLAIN LOGIN/);
    const transport = nodemailer.createTransport({ host: '127.0.0.1', port: t.submissionPort, auth: { user: 'apikey', pass: t.token } });
    try {
      const info = await transport.sendMail({ from: 'ann@example.test', to: 'reader@remote.test', subject: 'Defaults', text: 'Sent with the defaults.' });
      expect(info.response).toMatch(/^250 /);
    } finally {
      transport.close();
    }
  });

  it('takes a live key\'s mail from any domain in sink mode, as a mail catcher does, and keeps it', async () => {
    const transport = nodemailer.createTransport({ host: '127.0.0.1', port: t.submissionPort, auth: { user: 'apikey', pass: t.token } });
    try {
      const info = await transport.sendMail({ from: 'My App <app@never-added.test>', to: 'dev@localhost.test', subject: 'Caught', text: 'Kept, not sent.' });
      const id = queuedId(info.response)!;
      expect((await t.api.get(`/v1/emails/${id}`)).body).toMatchObject({ mode: 'live', domain_id: null, from: 'My App <app@never-added.test>' });
      await t.mailroom.delivery.drain();
      const raw = await fetch(`${t.url}/v1/emails/${id}/raw`, { headers: { Authorization: `Bearer ${t.token}` } });
      expect(await raw.text()).toContain('Subject: Caught');
    } finally {
      transport.close();
    }
  });

  it('keeps the client\'s own well-formed Message-ID, on the record and on the wire', async () => {
    const info = await submit(t.submissionPort, t.token, {
      from: 'ann@example.test', to: 'reader@remote.test', subject: 'Own id', text: 'x', messageId: '<order-1042.confirm@shop.example>',
    });
    const id = queuedId(info.response)!;
    expect((await t.api.get(`/v1/emails/${id}`)).body.message_id).toBe('<order-1042.confirm@shop.example>');
    await t.mailroom.delivery.drain();
    const [kept] = await sinkMessagesFor(t.mailroom.services.store.db, id);
    expect(kept.raw.toString()).toMatch(/^Message-ID: <order-1042\.confirm@shop\.example>\r$/m);
  });

  it('delivers to the envelope and leaves the To and Cc fields as the client wrote them, as an MTA does', async () => {
    const headerOf = (raw: Buffer) => raw.toString().split('\r\n\r\n')[0].replace(/\r\n[ \t]+/g, ' ');
    // An alias the client expanded: To names the alias, the envelope its members.
    const alias = await submit(t.submissionPort, t.token, {
      from: 'cron@example.test', to: 'Ops team <ops@example.test>', cc: 'Log <log@example.test>', subject: 'Disk 91% full', text: 'x',
      envelope: { from: 'cron@example.test', to: ['oncall@remote.test', 'log@example.test'] },
    });
    const aliasId = queuedId(alias.response)!;
    const record = (await t.api.get(`/v1/emails/${aliasId}`)).body;
    expect(record).toMatchObject({ to: ['oncall@remote.test'], cc: ['Log <log@example.test>'], bcc: [] });
    expect(record.recipients.map((r: { email: string; type: string }) => [r.email, r.type])).toEqual([['oncall@remote.test', 'to'], ['log@example.test', 'cc']]);

    // Only Bcc recipients: no recipient field in the message, so undisclosed-recipients stands in, and the Bcc stays hidden.
    const hidden = await submit(t.submissionPort, t.token, { from: 'news@example.test', bcc: ['r1@remote.test', 'r2@remote.test'], subject: 'Issue 7', text: 'x' });
    const hiddenId = queuedId(hidden.response)!;
    expect((await t.api.get(`/v1/emails/${hiddenId}`)).body).toMatchObject({ to: ['r1@remote.test', 'r2@remote.test'], bcc: [] });

    // One transaction of a list the client split: the message still names the whole list.
    const part = await submit(t.submissionPort, t.token, {
      from: 'ann@example.test', to: ['a@remote.test', 'b@remote.test', 'c@remote.test'], subject: 'Minutes', text: 'x',
      envelope: { from: 'ann@example.test', to: ['c@remote.test'] },
    });
    const partId = queuedId(part.response)!;

    await t.mailroom.delivery.drain();
    const [aliasSent] = await sinkMessagesFor(t.mailroom.services.store.db, aliasId);
    expect(headerOf(aliasSent.raw)).toMatch(/^To: Ops team <ops@example\.test>$/m);
    expect(headerOf(aliasSent.raw)).toMatch(/^Cc: Log <log@example\.test>$/m);
    expect(aliasSent.raw.toString()).not.toContain('oncall@remote.test');
    const [hiddenSent] = await sinkMessagesFor(t.mailroom.services.store.db, hiddenId);
    expect(headerOf(hiddenSent.raw)).toMatch(/^To: "undisclosed-recipients":;$/m);
    expect(hiddenSent.raw.toString()).not.toMatch(/r1@remote|r2@remote|^Bcc:/m);
    const [partSent] = await sinkMessagesFor(t.mailroom.services.store.db, partId);
    expect(headerOf(partSent.raw)).toMatch(/^To: a@remote\.test, b@remote\.test, c@remote\.test$/m);

    // A resend goes to the same recipients with the same fields.
    const resent = await t.api.post(`/v1/emails/${aliasId}/resend`, {});
    expect(resent.status).toBe(201);
    await t.mailroom.delivery.drain();
    const [resentSent] = await sinkMessagesFor(t.mailroom.services.store.db, resent.body.id);
    expect(headerOf(resentSent.raw)).toMatch(/^To: Ops team <ops@example\.test>$/m);
  });

  it('sends a message like the API does, with the key as the password', async () => {
    const info = await submit(t.submissionPort, t.token, {
      from: 'Ann Lee <ann@example.test>',
      to: 'Reader <reader@remote.test>',
      cc: 'copy@remote.test',
      bcc: 'hidden@remote.test',
      replyTo: 'support@example.test',
      subject: 'Your order',
      text: 'Thanks for your order.',
      html: '<p>Thanks for your <b>order</b>.</p><img src="cid:logo@example.test">',
      headers: { 'X-Order': '1234', 'List-Unsubscribe': '<https://example.test/u/1>' },
      attachments: [
        { filename: 'invoice.txt', content: 'Total: 42', contentType: 'text/plain' },
        { filename: 'logo.png', content: PNG, contentType: 'image/png', cid: 'logo@example.test' },
      ],
    });
    expect(info.response).toMatch(/^250 2\.0\.0 Ok: queued as em_/);
    const id = queuedId(info.response)!;

    const { status, body } = await t.api.get(`/v1/emails/${id}`);
    expect(status).toBe(200);
    expect(body).toMatchObject({
      from: 'Ann Lee <ann@example.test>',
      to: ['Reader <reader@remote.test>'],
      cc: ['copy@remote.test'],
      bcc: ['hidden@remote.test'],
      reply_to: ['support@example.test'],
      subject: 'Your order',
      text: 'Thanks for your order.',
      html: '<p>Thanks for your <b>order</b>.</p><img src="cid:logo@example.test">',
      mode: 'live',
      headers: { 'X-Order': '1234', 'List-Unsubscribe': '<https://example.test/u/1>' },
    });
    // In the order of the MIME tree: the inline image sits with the HTML, before the attachment.
    expect(body.attachments).toEqual([
      { filename: 'logo.png', content_type: 'image/png', size: PNG.length, content_id: 'logo@example.test' },
      { filename: 'invoice.txt', content_type: 'text/plain', size: 9, content_id: null },
    ]);
    expect(body.recipients.map((r: { email: string; type: string }) => [r.email, r.type]).sort()).toEqual([
      ['copy@remote.test', 'cc'], ['hidden@remote.test', 'bcc'], ['reader@remote.test', 'to'],
    ]);
    // Listed and with its events, like any email.
    expect((await t.api.get('/v1/emails?subject=Your%20order')).body.data.map((e: { id: string }) => e.id)).toEqual([id]);
    expect((await t.api.get(`/v1/emails/${id}/events`)).body.data.map((e: { type: string }) => e.type)).toContain('email.queued');
  });

  it('takes what an MTA takes, past the API\'s request limits: no Subject, a long one, many header fields and attachments', async () => {
    const raw = async (id: string) => {
      await t.mailroom.delivery.drain();
      return (await fetch(`${t.url}/v1/emails/${id}/raw`, { headers: { Authorization: `Bearer ${t.token}` } })).text();
    };

    const bare = await submit(t.submissionPort, t.token, { from: 'ann@example.test', to: 'r@remote.test', text: 'no subject' });
    const bareId = queuedId(bare.response)!;
    expect((await t.api.get(`/v1/emails/${bareId}`)).body.subject).toBe('');
    // As the client sent it: with no Subject field, rather than an empty one.
    expect(await raw(bareId)).not.toMatch(/^Subject:/im);

    const subject = Array.from({ length: 150 }, (_, i) => `word${i}`).join(' ');
    const headers = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`X-Trace-${i}`, `hop ${i}`]));
    const attachments = Array.from({ length: 25 }, (_, i) => ({ filename: `part-${i}.txt`, content: `part ${i}`, contentType: 'text/plain' }));
    const big = await submit(t.submissionPort, t.token, { from: 'ann@example.test', to: 'r@remote.test', subject, headers, attachments, text: 'many parts' });
    const bigId = queuedId(big.response)!;
    const { body } = await t.api.get(`/v1/emails/${bigId}`);
    expect(subject.length).toBeGreaterThan(998);
    expect(body.subject).toBe(subject);
    expect(Object.keys(body.headers).filter((name) => name.startsWith('X-Trace-'))).toHaveLength(60);
    expect(body.attachments).toHaveLength(25);
    const message = await raw(bigId);
    // The long Subject goes out folded, every line within RFC 5322's 998 characters.
    expect(message).toMatch(/^Subject: word0 word1 .*\r\n[ \t]/m);
    for (const line of message.split('\r\n')) expect(line.length).toBeLessThanOrEqual(998);
    expect(message).toContain('X-Trace-59: hop 59');
    expect(message.match(/filename="?part-\d+\.txt/g)).toHaveLength(25);

    // A reply deep in a thread: its References, thousands of characters once unfolded, is carried and folded again.
    const references = Array.from({ length: 120 }, (_, i) => `<reply-${i}.${'x'.repeat(30)}@mail.example.test>`);
    const reply = await submit(t.submissionPort, t.token, { from: 'ann@example.test', to: 'r@remote.test', subject: 'Re: thread', references, text: 'and so on' });
    const replyId = queuedId(reply.response)!;
    expect((await t.api.get(`/v1/emails/${replyId}`)).body.headers.References).toBe(references.join(' '));
    for (const line of (await raw(replyId)).split('\r\n')) expect(line.length).toBeLessThanOrEqual(998);

    // POST /v1/emails keeps its documented limits.
    const post = (extra: Record<string, unknown>) => t.api.post('/v1/emails', { from: 'ann@example.test', to: 'r@remote.test', subject: 'x', text: 'x', ...extra });
    expect((await post({ subject: '' })).body.error).toMatchObject({ param: 'subject' });
    expect((await post({ subject: 'x'.repeat(999) })).body.error).toMatchObject({ param: 'subject' });
    expect((await post({ headers })).body.error).toMatchObject({ param: 'headers' });
    expect((await post({ attachments: attachments.map((a) => ({ filename: a.filename, content: Buffer.from(a.content).toString('base64') })) })).body.error)
      .toMatchObject({ param: 'attachments' });
  });

  it('carries a quoted local part in RCPT TO and MAIL FROM; smtp-server reads no path with a space in it', async () => {
    const raw = 'From: ann@example.test\r\nTo: Ops <"bea,ops"@remote.test>\r\nSubject: quoted\r\n\r\nx\r\n';
    const reply = await sendRaw(t.submissionPort, { from: '"ann.lee"@example.test', to: ['"bea,ops"@remote.test'] }, raw, { user: 'apikey', pass: t.token });
    const { body } = await t.api.get(`/v1/emails/${queuedId(reply)}`);
    expect(body.to).toEqual(['Ops <"bea,ops"@remote.test>']);
    expect(body.recipients.map((r: { email: string }) => r.email)).toEqual(['"bea,ops"@remote.test']);

    const { dialog } = await SmtpDialog.open(t.submissionPort);
    try {
      await dialog.command('EHLO client.test');
      await dialog.command(`AUTH PLAIN ${Buffer.from(`\0apikey\0${t.token}`).toString('base64')}`);
      expect(await dialog.command('MAIL FROM:<ann@example.test>')).toMatch(/^250 /);
      expect(await dialog.command('RCPT TO:<"john doe"@remote.test>')).toMatch(/^501 /);
    } finally {
      dialog.close();
    }
  });

  it('takes AUTH LOGIN too, and answers a wrong key with 535', async () => {
    const mail = { from: 'ann@example.test', to: 'r@remote.test', subject: 'by LOGIN', text: 'x' };
    expect((await submit(t.submissionPort, t.token, mail, { authMethod: 'LOGIN' })).response).toMatch(/^250 /);
    for (const authMethod of ['PLAIN', 'LOGIN']) {
      const err = await submit(t.submissionPort, 'svc_live_not_a_key', mail, { authMethod })
        .then(() => undefined, (e: { responseCode?: number; response?: string }) => e);
      expect(err?.responseCode, authMethod).toBe(535);
      expect(err?.response, authMethod).toMatch(/^535 5\.7\.8 /);
    }
  });

  it('refuses mail from a session that has not authenticated', async () => {
    const { dialog } = await SmtpDialog.open(t.submissionPort);
    try {
      expect(await dialog.command('EHLO client.test')).toMatch(/^250[ -]AUTH PLAIN LOGIN$/m);
      expect(await dialog.command('MAIL FROM:<ann@example.test>')).toMatch(/^530 5\.7\.0 /);
      expect(await dialog.command('QUIT')).toMatch(/^221 /);
    } finally {
      dialog.close();
    }
  });

  it('takes as many recipients as an email may have, and answers 452 past them, so the client sends the rest in another transaction', async () => {
    const { dialog } = await SmtpDialog.open(t.submissionPort);
    try {
      await dialog.command('EHLO client.test');
      expect(await dialog.command(`AUTH PLAIN ${Buffer.from(`\0apikey\0${t.token}`).toString('base64')}`)).toMatch(/^235 /);
      expect(await dialog.command('MAIL FROM:<ann@example.test>')).toMatch(/^250 /);
      const to = Array.from({ length: 51 }, (_, i) => `r${i}@remote.test`);
      for (const address of to.slice(0, 50)) expect(await dialog.command(`RCPT TO:<${address}>`)).toMatch(/^250 /);
      expect(await dialog.command(`RCPT TO:<${to[50]}>`)).toMatch(/^452 /);
      expect(await dialog.command('DATA')).toMatch(/^354 /);
      dialog.write(`From: ann@example.test\r\nTo: ${to.join(', ')}\r\nSubject: Fifty\r\n\r\nx\r\n.\r\n`);
      expect(await dialog.reply()).toMatch(/^250 2\.0\.0 Ok: queued as em_/);
      // The one left over, in a transaction of its own.
      expect(await dialog.command('MAIL FROM:<ann@example.test>')).toMatch(/^250 /);
      expect(await dialog.command(`RCPT TO:<${to[50]}>`)).toMatch(/^250 /);
      expect(await dialog.command('DATA')).toMatch(/^354 /);
      dialog.write(`From: ann@example.test\r\nTo: ${to.join(', ')}\r\nSubject: Fifty\r\n\r\nx\r\n.\r\n`);
      expect(await dialog.reply()).toMatch(/^250 /);
    } finally {
      dialog.close();
    }
    const sent = (await t.api.get('/v1/emails?subject=Fifty&limit=10')).body.data as Array<{ to: string[] }>;
    expect(sent.map((e) => e.to.length).sort((a, b) => a - b)).toEqual([1, 50]);
  });

  it('refuses at RCPT TO an address the API would refuse, with 553, and sends the message to the others', async () => {
    const { dialog } = await SmtpDialog.open(t.submissionPort);
    try {
      await dialog.command('EHLO client.test');
      expect(await dialog.command(`AUTH PLAIN ${Buffer.from(`\0apikey\0${t.token}`).toString('base64')}`)).toMatch(/^235 /);
      expect(await dialog.command('MAIL FROM:<ann@example.test>')).toMatch(/^250 /);
      for (const address of ['r@remote', 'r@[127.0.0.1]', 'r@remote.123']) {
        expect(await dialog.command(`RCPT TO:<${address}>`), address).toMatch(/^553 5\.1\.3 /);
      }
      expect(await dialog.command('RCPT TO:<kept@remote.test>')).toMatch(/^250 /);
      expect(await dialog.command('DATA')).toMatch(/^354 /);
      dialog.write('From: ann@example.test\r\nTo: kept@remote.test, r@remote\r\nSubject: One bad recipient\r\n\r\nx\r\n.\r\n');
      const id = /queued as (em_\w+)/.exec(await dialog.reply())?.[1];
      expect((await t.api.get(`/v1/emails/${id}`)).body.to).toEqual(['kept@remote.test']);
    } finally {
      dialog.close();
    }
  });

  it('answers every transaction of a batch written at once, messages included, and the QUIT after them', async () => {
    const { dialog } = await SmtpDialog.open(t.submissionPort, 5_000);
    const transaction = (n: number) => 'MAIL FROM:<ann@example.test>\r\nRCPT TO:<r@remote.test>\r\nDATA\r\n'
      + `From: ann@example.test\r\nTo: r@remote.test\r\nSubject: Batch ${n}\r\n\r\nx\r\n.\r\n`;
    try {
      dialog.write(`EHLO client.test\r\nAUTH PLAIN ${Buffer.from(`\0apikey\0${t.token}`).toString('base64')}\r\n${[1, 2, 3].map(transaction).join('')}QUIT\r\n`);
      expect(await dialog.reply()).toMatch(/^250-/);
      expect(await dialog.reply()).toMatch(/^235 /);
      for (let n = 1; n <= 3; n++) {
        expect(await dialog.reply(), `MAIL FROM ${n}`).toMatch(/^250 /);
        expect(await dialog.reply(), `RCPT TO ${n}`).toMatch(/^250 /);
        expect(await dialog.reply(), `DATA ${n}`).toMatch(/^354 /);
        expect(await dialog.reply(), `message ${n}`).toMatch(/^250 2\.0\.0 Ok: queued as em_/);
      }
      expect(await dialog.reply()).toMatch(/^221 /);
    } finally {
      dialog.close();
    }
  });

  it('closes a session after its third failed AUTH, with 421', async () => {
    const { dialog } = await SmtpDialog.open(t.submissionPort);
    try {
      await dialog.command('EHLO client.test');
      const wrong = Buffer.from('\0apikey\0svc_live_not_a_key').toString('base64');
      expect(await dialog.command(`AUTH PLAIN ${wrong}`)).toMatch(/^535 5\.7\.8 /);
      expect(await dialog.command(`AUTH PLAIN ${wrong}`)).toMatch(/^535 5\.7\.8 /);
      expect(await dialog.command(`AUTH PLAIN ${wrong}`)).toMatch(/^421 4\.7\.0 Too many failed authentication attempts/);
      await expect(dialog.reply()).rejects.toThrow(/connection closed/);
    } finally {
      dialog.close();
    }
    // A new session starts afresh.
    expect((await submit(t.submissionPort, t.token, { from: 'ann@example.test', to: 'r@remote.test', subject: 'after', text: 'x' })).accepted).toHaveLength(1);
  });

  it('refuses the next message of a session whose key was revoked after AUTH', async () => {
    const key = await t.seed.key({ name: 'revoked mid-session' });
    const { dialog } = await SmtpDialog.open(t.submissionPort);
    const sendOne = async (subject: string) => {
      expect(await dialog.command('MAIL FROM:<ann@example.test>')).toMatch(/^250 /);
      expect(await dialog.command('RCPT TO:<reader@remote.test>')).toMatch(/^250 /);
      expect(await dialog.command('DATA')).toMatch(/^354 /);
      dialog.write(`From: ann@example.test\r\nTo: reader@remote.test\r\nSubject: ${subject}\r\n\r\nx\r\n.\r\n`);
      return dialog.reply();
    };
    try {
      await dialog.command('EHLO client.test');
      const plain = Buffer.from(`\0apikey\0${key.token}`).toString('base64');
      expect(await dialog.command(`AUTH PLAIN ${plain}`)).toMatch(/^235 /);
      expect(await sendOne('before')).toMatch(/^250 /);
      await t.api.delete(`/v1/api-keys/${key.id}`);
      // 535 answers AUTH alone: after the DATA the transaction fails (RFC 4954 section 6).
      expect(await sendOne('after')).toMatch(/^554 5\.7\.8 /);
    } finally {
      dialog.close();
    }
  });

  it('gives the API\'s refusals as SMTP replies', async () => {
    const reject = (pass: string, mail: SendMailOptions) => submit(t.submissionPort, pass, mail)
      .then(() => undefined, (e: { responseCode?: number; response?: string }) => e);

    const readOnly = await t.seed.key({ scopes: ['emails:read'] });
    const forbidden = await reject(readOnly.token, { from: 'ann@example.test', to: 'r@remote.test', subject: 'x', text: 'x' });
    expect(forbidden?.response).toMatch(/^550 5\.7\.1 This API key lacks the 'emails:send' scope/);


    // A NUL the API refuses is refused for good here too (not a 451 to retry forever).
    const nulText = await reject(t.token, { from: 'ann@example.test', to: 'r@remote.test', subject: 'x', text: 'a\u0000b' });
    expect(nulText?.response).toMatch(/^550 5\.6\.0 'text' must not contain a NUL character/);
    const nulHtml = await reject(t.token, { from: 'ann@example.test', to: 'r@remote.test', subject: 'x', html: '<p>a\u0000b</p>' });
    expect(nulHtml?.response).toMatch(/^550 5\.6\.0 'html' must not contain a NUL character/);

    // A line of the header that is no field at all is named whole, not read as a field name.
    const noColon = await sendRaw(t.submissionPort, { from: 'ann@example.test', to: ['r@remote.test'] },
      'From: ann@example.test\r\nTo: r@remote.test\r\nSubject: x\r\nhello there\r\n\r\nx\r\n', { user: 'apikey', pass: t.token })
      .then(() => undefined, (e: { response?: string }) => e);
    expect(noColon?.response).toMatch(/^550 5\.6\.0 The message's header has a line that is not a header field \(it has no colon\): 'hello there'/);

    // No sender at all: no From field, and the null reverse-path of a bounce.
    const noSender = await sendRaw(t.submissionPort, { from: '', to: ['r@remote.test'] },
      'To: r@remote.test\r\nSubject: x\r\n\r\nx\r\n', { user: 'apikey', pass: t.token })
      .then(() => undefined, (e: { response?: string }) => e);
    expect(noSender?.response).toBe('550 5.6.0 The message has no From header and its envelope sender is empty (MAIL FROM:<>): '
      + 'add a From header naming the sender, an address of a verified domain.');
  });

  it('holds a submitted Subject to the API\'s rule: a TAB is kept, another control character is refused for good', async () => {
    const tabbed = await submit(t.submissionPort, t.token, { from: 'ann@example.test', to: 'r@remote.test', subject: 'Order\t42', text: 'x' });
    expect((await t.api.get(`/v1/emails/${queuedId(tabbed.response)}`)).body.subject).toBe('Order\t42');
    // Written as encoded-words by the client; decoded, they are control characters the stored subject would carry.
    for (const control of ['\u0007', '\u007f', '\u0085']) {
      const refused = await submit(t.submissionPort, t.token, { from: 'ann@example.test', to: 'r@remote.test', subject: `Order${control}42`, text: 'x' })
        .then(() => undefined, (e: { response?: string }) => e);
      expect(refused?.response, JSON.stringify(control)).toMatch(/^550 5\.6\.0 'subject' must be one line of text, without control characters other than TAB/);
    }
    // The body is the client's own and kept as written, form feeds and all.
    const paged = await submit(t.submissionPort, t.token, { from: 'ann@example.test', to: 'r@remote.test', subject: 'Pages', text: 'one\fthree\u0085' });
    expect((await t.api.get(`/v1/emails/${queuedId(paged.response)}`)).body.text).toMatch(/^one\fthree\u0085/);
  });

  it('does not send to a suppressed address, as the API does not', async () => {
    expect((await t.api.post('/v1/suppressions', { email: 'blocked@remote.test' })).status).toBe(201);
    const info = await submit(t.submissionPort, t.token, { from: 'ann@example.test', to: 'blocked@remote.test', subject: 'x', text: 'x' });
    const { body } = await t.api.get(`/v1/emails/${queuedId(info.response)}`);
    expect(body.status).toBe('failed');
    expect(body.recipients).toEqual([expect.objectContaining({ email: 'blocked@remote.test', status: 'suppressed' })]);
  });

  it('counts against the workspace\'s request rate and send quota', async () => {
    // tiny: a burst of 10 (the least a plan may have: one full batch), then nothing; quota1: one email a day; monthly1: one a month.
    // Each is temporary, as the API's 429: the client keeps the message and tries again.
    for (const [plan, allowed, code, enhanced] of [['tiny', 10, 451, '4.7.0'], ['quota1', 1, 452, '4.3.1'], ['monthly1', 1, 452, '4.3.1']] as const) {
      const ws = await t.seed.workspace({ plan });
      await t.seed.activeDomain(`${plan}.test`, { workspaceId: ws.id });
      const key = await t.seed.key({ workspaceId: ws.id });
      const mail = { from: `ann@${plan}.test`, to: 'r@remote.test', subject: 'x', text: 'x' };
      for (let i = 0; i < allowed; i++) expect((await submit(t.submissionPort, key.token, mail)).response).toMatch(/^250 /);
      const err = await submit(t.submissionPort, key.token, mail).then(() => undefined, (e: { response?: string }) => e);
      expect(err?.response, plan).toMatch(new RegExp(`^${code} ${enhanced.replace(/\./g, '\\.')} `));
    }
  });
});

describe('SMTP submission where mail leaves', () => {
  it('refuses a live key a from domain the workspace has not verified, with the API\'s reason', async () => {
    await using t = await startSmtpTestApp({ env: SENDING_ENV });
    const err = await submit(t.submissionPort, t.token, { from: 'ann@unknown.test', to: 'r@remote.test', subject: 'x', text: 'x' })
      .then(() => undefined, (e: { response?: string }) => e);
    expect(err?.response).toMatch(/^550 5\.7\.1 The domain 'unknown\.test' of 'from' is not a domain of this workspace/);
  });
});

describe('SMTP submission with TLS required', () => {
  let t: SmtpTestApp;

  beforeAll(async () => {
    t = await startSmtpTestApp({ env: { MAILROOM_SUBMISSION_REQUIRE_TLS: 'true' } });
    await t.seed.activeDomain(DOMAIN);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('offers AUTH only after STARTTLS', async () => {
    const { dialog } = await SmtpDialog.open(t.submissionPort);
    try {
      const ehlo = await dialog.command('EHLO client.test');
      expect(ehlo).toMatch(/^250[ -]STARTTLS$/m);
      expect(ehlo).not.toMatch(/AUTH/);
      const plain = Buffer.from(`\0apikey\0${t.token}`).toString('base64');
      expect(await dialog.command(`AUTH PLAIN ${plain}`)).toMatch(/^5\d\d /);
      expect(await dialog.command('MAIL FROM:<ann@example.test>')).toMatch(/^530 5\.7\.0 /);
    } finally {
      dialog.close();
    }

    const refused = await submit(t.submissionPort, t.token, { from: 'ann@example.test', to: 'r@remote.test', subject: 'x', text: 'x' }, { ignoreTLS: true })
      .then(() => undefined, (e: Error) => e);
    // Without TLS the client finds no AUTH to use, and the mail is refused.
    expect(refused?.message).toMatch(/530 5\.7\.0 Authentication required/);

    const info = await submit(t.submissionPort, t.token, { from: 'ann@example.test', to: 'r@remote.test', subject: 'over TLS', text: 'x' }, { requireTLS: true });
    expect(info.response).toMatch(/^250 2\.0\.0 Ok: queued as em_/);
  });
});
