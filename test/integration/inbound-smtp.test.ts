import { execFile } from 'node:child_process';
import { createServer, Socket, type Server } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { startSmtpListeners } from '../../src/smtp/index.js';
import { startTestApp } from '../helpers/app.js';
import { eventually, inboundDomain, sendRaw, SmtpDialog, startSmtpTestApp, type SmtpTestApp } from '../helpers/smtp-app.js';

// The MX listener at the protocol level: who it takes mail for (never an
// open relay), the size limit, SMTP smuggling, and starting without its port.

const run = promisify(execFile);
const SWAKS = '/usr/bin/swaks';
const MAX_BYTES = 65_536;

/** swaks against the listener; resolves with its exit code and transcript (it exits non-zero on a refusal). */
async function swaks(port: number, args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(SWAKS, ['--server', `127.0.0.1:${port}`, '--helo', 'client.test', ...args], { timeout: 20_000 });
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    if (typeof e.code !== 'number') throw err;
    return { code: e.code, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

describe('MX listener', () => {
  let t: SmtpTestApp;

  beforeAll(async () => {
    t = await startSmtpTestApp({ env: { MAILROOM_SMTP_MAX_MESSAGE_BYTES: String(MAX_BYTES) } });
    await inboundDomain(t, 'inbound.test');
    // A domain of ours that is active but takes no inbound mail, and one not verified.
    await t.seed.activeDomain('quiet.test');
    await t.api.post('/v1/domains', { name: 'pending.test', inbound_enabled: true });
  });

  afterAll(async () => {
    await t?.close();
  });

  const stored = async () => (await t.mailroom.services.store.db.selectFrom('inbound_messages').select('id').execute()).length;

  it('takes mail for an inbound domain from swaks', async () => {
    const before = await stored();
    const { code, output } = await swaks(t.mxPort, ['--from', 'someone@outside.test', '--to', 'desk@inbound.test', '--header', 'Subject: via swaks', '--body', 'hello from swaks']);
    expect(code).toBe(0);
    expect(output).toMatch(/<- {2}250 2\.0\.0 Ok: queued as in_/);
    expect(await stored()).toBe(before + 1);
    const listed = await eventually(async () => (await t.api.get('/v1/inbound?to=desk@inbound.test')).body.data.find((m: { subject: string }) => m.subject === 'via swaks'));
    expect(listed.envelope).toEqual({ mail_from: 'someone@outside.test', rcpt_to: ['desk@inbound.test'] });
  });

  it('takes mail for an internationalised domain, named in its ASCII form, which the SMTP server hands over in Unicode', async () => {
    await inboundDomain(t, 'bücher.test');
    const { code, output } = await swaks(t.mxPort, ['--from', 'someone@outside.test', '--to', 'desk@xn--bcher-kva.test', '--header', 'Subject: to an IDN']);
    expect(code, output).toBe(0);
    expect(output).toMatch(/<- {2}250 2\.0\.0 Ok: queued as in_/);
    await eventually(async () => (await t.api.get('/v1/inbound?limit=100')).body.data.find((m: { subject: string }) => m.subject === 'to an IDN'));
  });

  it('takes a quoted local part at an inbound domain and keeps it as written; smtp-server reads no path with a space in it', async () => {
    const reply = await sendRaw(t.mxPort, { from: '"night,owl"@outside.test', to: ['"desk,ops"@inbound.test'] },
      'From: "night,owl"@outside.test\r\nTo: "desk,ops"@inbound.test\r\nSubject: to a quoted local part\r\n\r\nhello\r\n');
    const id = /queued as (in_\w+)/.exec(reply)![1];
    const message = await eventually(async () => {
      const r = await t.api.get(`/v1/inbound/${id}`);
      return r.body.status === 'processed' ? r.body : undefined;
    }, 10_000, 'the message to be processed');
    expect(message.envelope).toMatchObject({ mail_from: '"night,owl"@outside.test', rcpt_to: ['"desk,ops"@inbound.test'] });

    const { dialog } = await SmtpDialog.open(t.mxPort);
    try {
      await dialog.command('EHLO client.test');
      expect(await dialog.command('MAIL FROM:<someone@outside.test>')).toMatch(/^250 /);
      expect(await dialog.command('RCPT TO:<"desk ops"@inbound.test>')).toMatch(/^501 /);
    } finally {
      dialog.close();
    }
  });

  it('stores every message of concurrent sessions, each under its own id, before its 250', async () => {
    const before = await stored();
    const sessions = 12;
    const replies = await Promise.all(Array.from({ length: sessions }, (_, i) => sendRaw(t.mxPort,
      { from: 'someone@outside.test', to: [`desk${i}@inbound.test`] },
      `From: someone@outside.test\r\nTo: desk${i}@inbound.test\r\nSubject: concurrent ${i}\r\n\r\nmessage ${i}\r\n`)));
    const ids = replies.map((r) => /^250 2\.0\.0 Ok: queued as (in_\S+)$/.exec(r)?.[1]);
    expect(ids.every((id) => id !== undefined)).toBe(true);
    expect(new Set(ids).size).toBe(sessions);
    // Each 250 came after its own row was committed.
    const rows = await t.mailroom.services.store.db.selectFrom('inbound_messages').select(['id', 'rcpt_to'])
      .where('id', 'in', ids as string[]).execute();
    expect(rows.map((r) => [r.id, JSON.parse(r.rcpt_to)]).sort()).toEqual(ids.map((id, i) => [id, [`desk${i}@inbound.test`]]).sort());
    expect(await stored()).toBe(before + sessions);
    const listed = await eventually(async () => {
      const { body } = await t.api.get('/v1/inbound?limit=100');
      const subjects = body.data.map((m: { subject: string }) => m.subject).filter((s: string) => s.startsWith('concurrent '));
      return subjects.length === sessions ? subjects : undefined;
    });
    expect(listed.sort()).toEqual(Array.from({ length: sessions }, (_, i) => `concurrent ${i}`).sort());
  });

  it('refuses to relay to a domain that is not ours', async () => {
    const before = await stored();
    const { code, output } = await swaks(t.mxPort, ['--from', 'someone@outside.test', '--to', 'victim@elsewhere.test']);
    expect(code).toBe(24); // swaks: no recipient accepted
    expect(output).toMatch(/<\*\* 550 5\.7\.1 Relay access denied/);
    expect(await stored()).toBe(before);
  });

  it('refuses our domains that take no mail here, and unknown bounce addresses', async () => {
    const { dialog } = await SmtpDialog.open(t.mxPort);
    try {
      expect(await dialog.command('EHLO client.test')).toMatch(/^250-/);
      expect(await dialog.command('MAIL FROM:<someone@outside.test>')).toMatch(/^250/);
      expect(await dialog.command('RCPT TO:<desk@quiet.test>')).toMatch(/^550 5\.1\.2 /);
      expect(await dialog.command('RCPT TO:<desk@pending.test>')).toMatch(/^550 5\.1\.2 /);
      // The return path domain of a sending domain takes only the addresses we hand out.
      expect(await dialog.command('RCPT TO:<postmaster@bounces.inbound.test>')).toMatch(/^550 5\.1\.1 /);
      // A well-formed bounce address of an unverified domain is refused like any host not ours
      // (bounces.test.ts has it taken for a sending domain).
      expect(await dialog.command(`RCPT TO:<b-${'0'.repeat(26)}@bounces.pending.test>`)).toMatch(/^550 5\.7\.1 /);
      expect(await dialog.command('RCPT TO:<victim@elsewhere.test>')).toMatch(/^550 5\.7\.1 /);
      // Source routes and an address literal do not get around the check.
      expect(await dialog.command('RCPT TO:<victim@[192.0.2.1]>')).toMatch(/^5\d\d /);
      expect(await dialog.command('DATA')).toMatch(/^503 /);
      expect(await dialog.command('QUIT')).toMatch(/^221 /);
    } finally {
      dialog.close();
    }
  });

  it('advertises its size limit and refuses larger messages', async () => {
    const before = await stored();
    const { dialog } = await SmtpDialog.open(t.mxPort);
    try {
      expect(await dialog.command('EHLO client.test')).toMatch(new RegExp(`^250[ -]SIZE ${MAX_BYTES}$`, 'm'));
      // Declared too large (RFC 1870): refused before any data is sent.
      expect(await dialog.command(`MAIL FROM:<someone@outside.test> SIZE=${MAX_BYTES + 1}`)).toMatch(/^552 /);
      // Not declared: refused at the end of the data.
      expect(await dialog.command('MAIL FROM:<someone@outside.test>')).toMatch(/^250/);
      expect(await dialog.command('RCPT TO:<desk@inbound.test>')).toMatch(/^250/);
      expect(await dialog.command('DATA')).toMatch(/^354/);
      dialog.write(`Subject: big\r\n\r\n${'x'.repeat(998)}\r\n`.repeat(Math.ceil(MAX_BYTES / 1000) + 1));
      expect(await dialog.command('.')).toMatch(/^552 /);
      expect(await dialog.command('QUIT')).toMatch(/^221 /);
    } finally {
      dialog.close();
    }
    await expect(sendRaw(t.mxPort, { from: 'someone@outside.test', to: ['desk@inbound.test'] }, `Subject: big\r\n\r\n${'y'.repeat(MAX_BYTES)}\r\n`))
      .rejects.toThrow(/552/);
    expect(await stored()).toBe(before);
  });

  it('keeps a bare-LF end-of-data look-alike from splitting a message, and refuses it', async () => {
    const before = await stored();
    const { dialog } = await SmtpDialog.open(t.mxPort);
    try {
      await dialog.command('EHLO client.test');
      expect(await dialog.command('MAIL FROM:<someone@outside.test>')).toMatch(/^250/);
      expect(await dialog.command('RCPT TO:<desk@inbound.test>')).toMatch(/^250/);
      expect(await dialog.command('DATA')).toMatch(/^354/);
      // The smuggling payload (CVE-2023-51766 and kin): "<LF>.<CR><LF>" ends the
      // data for a lenient server, which would then run the commands after it.
      dialog.write([
        'From: someone@outside.test', 'Subject: first', '', 'hello', '\n.\r\n',
        'MAIL FROM:<admin@inbound.test>', 'RCPT TO:<desk@inbound.test>', 'DATA', 'From: admin@inbound.test', 'Subject: smuggled', '', 'owned',
      ].join('\r\n'));
      // Only this terminator ends the data; the whole payload gets one reply.
      expect(await dialog.command('\r\n.')).toMatch(/^554 5\.6\.0 /);
      // The next reply is QUIT's: no smuggled command was run in between.
      expect(await dialog.command('QUIT')).toMatch(/^221 /);
    } finally {
      dialog.close();
    }
    expect(await stored()).toBe(before);
  });

  it('stores bare CR and LF line endings as CRLF, and records an SMTPUTF8 transaction as such', async () => {
    const { dialog } = await SmtpDialog.open(t.mxPort);
    let id: string;
    try {
      await dialog.command('EHLO client.test');
      // SMTPUTF8 (RFC 6531) is recorded in the Received field as UTF8SMTP, not ESMTP.
      await dialog.command('MAIL FROM:<someone@outside.test> SMTPUTF8');
      await dialog.command('RCPT TO:<desk@inbound.test>');
      await dialog.command('DATA');
      dialog.write('Subject: line endings\nFrom: someone@outside.test\n\nfirst\nsecond\rthird\r\n');
      const reply = await dialog.command('.');
      expect(reply).toMatch(/^250 /);
      id = /queued as (in_\w+)/.exec(reply)![1];
      await dialog.command('QUIT');
    } finally {
      dialog.close();
    }
    // Listed from the 250 on; the parsed fields follow once it is processed.
    await eventually(async () => ((await t.api.get(`/v1/inbound/${id}`)).body?.status === 'processed' ? true : undefined));
    const raw = await (await fetch(`${t.url}/v1/inbound/${id}/raw`, { headers: { Authorization: `Bearer ${t.token}` } })).text();
    expect(raw).toMatch(/\r\nSubject: line endings\r\nFrom: someone@outside\.test\r\n\r\nfirst\r\nsecond\r\nthird\r\n$/);
    expect(raw).toMatch(/^Received: from .*\r\n\tby mx\.mailroom\.test with UTF8SMTP id /m);
    expect((await t.api.get(`/v1/inbound/${id}`)).body).toMatchObject({ subject: 'line endings', text: 'first\nsecond\nthird\n' });
  });

  it('refuses a NUL in EHLO, MAIL FROM or RCPT TO, and takes and processes 8-bit envelope and header bytes', async () => {
    // Bytes as they come: a peer need not send UTF-8, nor leave out a NUL.
    const { dialog } = await SmtpDialog.open(t.mxPort);
    const say = (line: string) => {
      dialog.write(Buffer.from(`${line}\r\n`, 'latin1'));
      return dialog.reply();
    };
    let queued: string;
    try {
      expect(await say('EHLO cli\0ent.test')).toMatch(/^501 /);
      expect(await say('EHLO cl\xffient.test')).toMatch(/^250[ -]/);
      expect(await say('MAIL FROM:<a\0b@outside.test>')).toMatch(/^501 /);
      expect(await say('MAIL FROM:<s\xe9nder@outside.test>')).toMatch(/^250 /);
      expect(await say('RCPT TO:<desk\0@inbound.test>')).toMatch(/^501 /);
      expect(await say('RCPT TO:<desk@inbound.test>')).toMatch(/^250 /);
      expect(await say('DATA')).toMatch(/^354 /);
      dialog.write(Buffer.from('From: J\xf6rg <j@outside.test>\r\nTo: desk@inbound.test\r\nSubject: caf\xe9 \xff\r\n\r\nbody\r\n.\r\n', 'latin1'));
      queued = await dialog.reply();
    } finally {
      dialog.close();
    }
    const id = /queued as (in_\w+)/.exec(queued)![1];
    const message = await eventually(async () => {
      const body = (await t.api.get(`/v1/inbound/${id}`)).body;
      return body.status === 'processed' ? body : undefined;
    }, 10_000, 'the message to be processed');
    expect(message).toMatchObject({
      envelope: { mail_from: 's\uFFFDnder@outside.test', rcpt_to: ['desk@inbound.test'] }, from: 'J\uFFFDrg <j@outside.test>', subject: 'caf\uFFFD \uFFFD',
    });
  });

  it('drops a client that talks before the greeting', async () => {
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = new Socket();
      s.once('error', reject);
      s.connect(t.mxPort, '127.0.0.1', () => resolve(s));
    });
    socket.write('EHLO early.test\r\n');
    const answer = await new Promise<string>((resolve) => {
      let text = '';
      socket.setEncoding('latin1');
      socket.on('data', (c: string) => (text += c));
      socket.on('close', () => resolve(text));
    });
    expect(answer).toMatch(/^421 .*talk too soon/m);
  });
});

describe('SMTP listeners and a client that leaves mid-message', () => {
  it('log it as the client\'s doing, not as an error of theirs, on both ports', async () => {
    const logged: Array<{ level: number; msg: string }> = [];
    const logger = pino({ level: 'info' }, new Writable({ write(chunk, _enc, done) { logged.push(JSON.parse(String(chunk))); done(); } }));
    await using t = await startSmtpTestApp({ logger });
    await inboundDomain(t, 'inbound.test');
    const leave = async (port: number, steps: string[]) => {
      const { dialog } = await SmtpDialog.open(port);
      for (const step of steps) expect(await dialog.command(step), step).toMatch(/^(?:2|354)/);
      dialog.write('Subject: cut short\r\n\r\nhalf a mess');
      dialog.close();
    };
    await leave(t.mxPort, ['EHLO client.test', 'MAIL FROM:<someone@outside.test>', 'RCPT TO:<desk@inbound.test>', 'DATA']);
    await leave(t.submissionPort, ['EHLO client.test', `AUTH PLAIN ${Buffer.from(`\0apikey\0${t.token}`).toString('base64')}`,
      'MAIL FROM:<ann@outside.test>', 'RCPT TO:<bea@remote.test>', 'DATA']);
    await eventually(async () => (logged.filter((r) => /client left before the end of its message/.test(r.msg)).length === 2 ? true : undefined));
    expect(logged.filter((r) => r.level >= 50)).toEqual([]);
  });
});

describe('SMTP listeners without their port', () => {
  let squatter: Server;
  let port: number;

  beforeAll(async () => {
    squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    port = (squatter.address() as { port: number }).port;
  });

  afterAll(async () => {
    await new Promise((resolve) => squatter.close(resolve));
  });

  it('refuse to start, saying why, and leave nothing listening', async () => {
    const refuseAll = {
      checkRecipient: async () => 'relay_denied' as const,
      accept: async () => [],
      authenticate: async () => undefined,
      send: async () => ({ id: 'em_unused' }),
      maxRecipients: 50,
    };
    const free = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const start = startSmtpListeners({
      smtpPort: port, submissionPort: free, smtpHost: '127.0.0.1', smtpMaxMessageBytes: MAX_BYTES, submissionRequireTls: false,
      tlsCertFile: null, tlsKeyFile: null, dataDir: '/nonexistent/mailroom-test', hostname: 'mx.mailroom.test', unprivilegedSmtpPort: null, unprivilegedSubmissionPort: null,
    }, { mx: refuseAll, submission: refuseAll }, { clock: systemClock, logger: pino({ level: 'silent' }) });
    await expect(start).rejects.toThrow(new RegExp(`SMTP MX listener cannot listen on 127\\.0\\.0\\.1:${port} \\(EADDRINUSE\\): .*set MAILROOM_SMTP_PORT=0`));
  });

  it('stop the whole start when the MX port is taken, and start with the listener turned off', async () => {
    await expect(startTestApp({ env: { MAILROOM_SMTP_HOST: '127.0.0.1', MAILROOM_SMTP_PORT: String(port) } })).rejects.toThrow(/EADDRINUSE/);
    await using t = await startTestApp({ env: { MAILROOM_SMTP_PORT: '0' } });
    expect(t.mailroom.smtp.mxPort).toBeUndefined();
    expect((await t.api.get('/v1/inbound')).status).toBe(200);
  });

  it('stop the start when the certificate given cannot be read', async () => {
    await expect(startTestApp({ env: {
      MAILROOM_SMTP_HOST: '127.0.0.1', MAILROOM_SMTP_PORT: String(await new Promise<number>((resolve) => {
        const s = createServer().listen(0, '127.0.0.1', () => {
          const p = (s.address() as { port: number }).port;
          s.close(() => resolve(p));
        });
      })),
      MAILROOM_TLS_CERT: '/nonexistent/cert.pem', MAILROOM_TLS_KEY: '/nonexistent/key.pem',
    } })).rejects.toThrow(/STARTTLS certificate or key cannot be used \(MAILROOM_TLS_CERT \/nonexistent\/cert\.pem/);
  });
});
