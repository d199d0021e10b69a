import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { DOMAIN_CACHE_MS } from '../../src/inbound/inbound.service.js';
import { POSTMASTER_MAX_MESSAGES } from '../../src/inbound/postmaster-maildir.js';
import { eventually, inboundDomain, sendRaw, SmtpDialog, startSmtpTestApp, type SmtpTestApp } from '../helpers/smtp-app.js';

// What the listeners say: every reply in US-ASCII (RFC 5321 §4.2), and mail
// to "postmaster" without a domain or at the server's name (RFC 5321 §4.5.1) always taken: for the
// server's own domain, or into the server's Maildir while there is none. The
// test server is named mx.mailroom.test.

const ASCII_REPLY = /^\d{3}(?:[ -][\x20-\x7e]*)?$/;

/** Every line of every reply, and the session closed. */
async function dialogue(port: number, steps: Array<string | { data: string }>): Promise<string[]> {
  const { dialog, greeting } = await SmtpDialog.open(port);
  const replies = [greeting];
  try {
    for (const step of steps) {
      if (typeof step === 'string') replies.push(await dialog.command(step));
      else {
        dialog.write(step.data);
        replies.push(await dialog.reply());
      }
    }
  } finally {
    dialog.close();
  }
  return replies.flatMap((r) => r.split(/\r?\n/));
}

describe('SMTP replies', () => {
  const clock = new ManualClock();
  let t: SmtpTestApp;

  beforeAll(async () => {
    t = await startSmtpTestApp({ clock });
    await inboundDomain(t, 'inbound.test');
    await t.seed.activeDomain('acme.test');
  });

  afterAll(async () => {
    await t?.close();
  });

  it('are ASCII on the MX port, a refusal that cites the RFC included', async () => {
    const lines = await dialogue(t.mxPort, [
      'EHLO client.test', 'MAIL FROM:<someone@outside.test>', 'RCPT TO:<desk@inbound.test>', 'DATA',
      // A smuggling look-alike is refused with a reply that cites RFC 5321's sections.
      { data: 'Subject: x\r\n\r\nhello\n.\r\nmore\r\n.\r\n' }, 'RCPT TO:<victim@elsewhere.test>', 'QUIT',
    ]);
    expect(lines.find((l) => l.startsWith('554 '))).toBe('554 5.6.0 Message refused: a line holding only "." is next to a bare CR or LF (RFC 5321 section 2.3.8, section 4.1.1.4)');
    for (const line of lines) expect(line).toMatch(ASCII_REPLY);
  });

  it('are ASCII on the submission port, where a service\'s message is passed on', async () => {
    const raw = `From: ann@acme.test\r\nTo: bea@remote.test\r\nSubject: x\r\nX-Token: ${'t'.repeat(998)}\r\n\r\nx\r\n`;
    const err = await sendRaw(t.submissionPort, { from: 'ann@acme.test', to: ['bea@remote.test'] }, raw, { user: 'apikey', pass: t.token })
      .then(() => undefined, (e: { response?: string }) => e);
    // The emails service says "RFC 5322 §2.1.1"; the reply spells the section out.
    expect(err?.response).toMatch(/^550 5\.6\.0 The value of X-Token holds a word over 997 characters, .* \(RFC 5322 section 2\.1\.1\)\.$/);
    expect(err?.response).toMatch(ASCII_REPLY);
    const lines = await dialogue(t.submissionPort, ['EHLO client.test', 'MAIL FROM:<ann@acme.test>', 'RCPT TO:<bea@remote.test>', 'QUIT']);
    expect(lines).toContain('530 5.7.0 Authentication required: AUTH with an API key as the password');
    for (const line of lines) expect(line).toMatch(ASCII_REPLY);
  });

  it('answer 555 to MAIL FROM and RCPT TO parameters of no extension the listener advertises, on both ports (RFC 5321 section 4.1.1.11)', async () => {
    const plain = Buffer.from(`\0apikey\0${t.token}`).toString('base64');
    for (const [port, from, login] of [[t.mxPort, 'someone@outside.test', []], [t.submissionPort, 'ann@acme.test', [`AUTH PLAIN ${plain}`]]] as const) {
      const lines = await dialogue(port, [
        'EHLO client.test', ...login,
        `MAIL FROM:<${from}> FOO=bar`,
        // DSN is not advertised, so its parameters are as unknown as any other.
        `MAIL FROM:<${from}> RET=FULL ENVID=x1`,
        `MAIL FROM:<${from}> SIZE=100 BODY=8BITMIME SMTPUTF8`,
        'RCPT TO:<desk@inbound.test> NOTIFY=SUCCESS,FAILURE',
        'RCPT TO:<desk@inbound.test> XYZ',
        'RCPT TO:<desk@inbound.test>',
        'QUIT',
      ]);
      const replies = lines.filter((l) => /^\d{3} /.test(l)).slice(port === t.mxPort ? 2 : 3);
      expect(lines, String(port)).not.toContain('250-DSN');
      expect(replies, String(port)).toEqual([
        '555 5.5.4 MAIL FROM parameters not recognized or not implemented: FOO',
        '555 5.5.4 MAIL FROM parameters not recognized or not implemented: RET ENVID',
        '250 Accepted',
        '555 5.5.4 RCPT TO parameters not recognized or not implemented: NOTIFY',
        '555 5.5.4 RCPT TO parameters not recognized or not implemented: XYZ',
        '250 Accepted',
        expect.stringMatching(/^221 /),
      ]);
    }
    // A submitting client may name the submitter (RFC 4954 section 5), as AUTH is advertised there.
    const submitted = await dialogue(t.submissionPort, ['EHLO client.test', `AUTH PLAIN ${plain}`, 'MAIL FROM:<ann@acme.test> AUTH=<>', 'QUIT']);
    expect(submitted).toContain('250 Accepted');
  });

  it('take postmaster without a domain while no domain of the server\'s name receives mail, into the server\'s Maildir', async () => {
    const reply = await sendRaw(t.mxPort, { from: 'someone@outside.test', to: ['postmaster'] },
      'From: someone@outside.test\r\nTo: postmaster\r\nSubject: your relay\r\n\r\nplease look\r\n');
    const file = /queued as (\S+)$/.exec(reply.trim())![1];
    const kept = readFileSync(join(t.dataDir, 'postmaster', 'new', file), 'latin1');
    expect(kept).toMatch(/^Delivered-To: postmaster\r\nReturn-Path: <someone@outside\.test>\r\nReceived: from /);
    expect(kept).toContain('Subject: your relay\r\n\r\nplease look\r\n');
    expect(statSync(join(t.dataDir, 'postmaster', 'new', file)).mode & 0o777).toBe(0o600);
    // It belongs to no workspace: nothing is listed through the API.
    expect((await t.api.get('/v1/inbound?to=postmaster')).body.data).toEqual([]);

    // Postmaster at the server's own name is the same mailbox; another local part there is still a relay.
    const named = await sendRaw(t.mxPort, { from: 'someone@outside.test', to: ['PostMaster@MX.mailroom.test'] },
      'From: someone@outside.test\r\nTo: postmaster@mx.mailroom.test\r\nSubject: by name\r\n\r\nplease look\r\n');
    const namedFile = /queued as (\S+)$/.exec(named.trim())![1];
    expect(readFileSync(join(t.dataDir, 'postmaster', 'new', namedFile), 'latin1')).toMatch(/^Delivered-To: postmaster\r\n[^]*for <PostMaster@mx\.mailroom\.test>;[^]*Subject: by name\r\n/);
    const other = await dialogue(t.mxPort, ['EHLO client.test', 'MAIL FROM:<someone@outside.test>', 'RCPT TO:<abuse@mx.mailroom.test>', 'QUIT']);
    expect(other.some((l) => /^55\d /.test(l))).toBe(true);
  });

  it('answer 452 for postmaster while the server\'s Maildir is full, and take it again once there is room', async () => {
    const mailbox = join(t.dataDir, 'postmaster', 'new');
    const before = readdirSync(mailbox).length;
    for (let i = before; i < POSTMASTER_MAX_MESSAGES; i++) writeFileSync(join(mailbox, `filler.${i}`), 'Subject: filler\r\n\r\n');
    const full = await dialogue(t.mxPort, ['EHLO client.test', 'MAIL FROM:<someone@outside.test>', 'RCPT TO:<postmaster>', 'QUIT']);
    expect(full).toContain('452 4.2.2 The postmaster mailbox is full, try again later');
    for (const name of readdirSync(mailbox).filter((n) => n.startsWith('filler.'))) rmSync(join(mailbox, name));
    const room = await dialogue(t.mxPort, ['EHLO client.test', 'MAIL FROM:<someone@outside.test>', 'RCPT TO:<postmaster>', 'QUIT']);
    expect(room.some((l) => l.startsWith('250 ') && l.includes('Accepted'))).toBe(true);
  });

  it('take postmaster without a domain for the nearest domain of the server\'s name, and deliver it there', async () => {
    const { id: domainId } = await inboundDomain(t, 'mailroom.test');
    clock.advance(DOMAIN_CACHE_MS + 1);
    const { dialog } = await SmtpDialog.open(t.mxPort);
    try {
      await dialog.command('EHLO client.test');
      await dialog.command('MAIL FROM:<someone@outside.test>');
      // Case-insensitive, as RFC 5321 §4.5.1 has it.
      expect(await dialog.command('RCPT TO:<postmaster>')).toMatch(/^250 /);
      expect(await dialog.command('RCPT TO:<PostMaster>')).toMatch(/^250 /);
      expect(await dialog.command('QUIT')).toMatch(/^221 /);
    } finally {
      dialog.close();
    }

    const reply = await sendRaw(t.mxPort, { from: 'someone@outside.test', to: ['postmaster'] },
      'From: someone@outside.test\r\nTo: postmaster\r\nSubject: your server\r\n\r\nplease look\r\n');
    const id = /queued as (in_\w+)/.exec(reply)![1];
    const message = await eventually(async () => {
      const r = await t.api.get(`/v1/inbound/${id}`);
      return r.body.status === 'processed' ? r.body : undefined;
    }, 10_000, 'the postmaster message to be processed');
    expect(message).toMatchObject({ domain_id: domainId, subject: 'your server', envelope: { mail_from: 'someone@outside.test', rcpt_to: ['postmaster'] } });
  });
});
