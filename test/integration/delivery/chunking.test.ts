// The SMTP client with a server that offers CHUNKING (RFC 3030): the message
// goes after BDAT, with its length, in the same write as the envelope. Against
// a scripted server that offers it (each reply and the connection's end
// scripted), and against Postfix's smtpd, which offers it by default.

import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SmtpSession } from '../../../src/delivery/index.js';
import type { SessionOptions } from '../../../src/delivery/smtp-client.js';
import { startScriptedMx, type ScriptedMx } from '../../helpers/mx.js';
import { until } from '../../helpers/child-server.js';
import { startPostfix, type PostfixInstance } from '../../helpers/postfix.js';

const TIMEOUTS = { connectMs: 2_000, greetingMs: 5_000, commandMs: 5_000, dataBlockMs: 5_000, endOfDataMs: 5_000 };
const OPTIONS = { heloName: 'out.sender.test', timeouts: TIMEOUTS };
const HEADERS = 'From: a@sender.test\r\nTo: b@relay.test\r\nSubject: chunks\r\nDate: Fri, 27 Nov 2026 10:00:00 +0000\r\n'
  + 'Message-ID: <chunk@sender.test>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n';
/** Lines that DATA would dot-stuff, a lone dot among them, and 8-bit text. */
const BODY = '.a line starting with a dot\r\n.\r\n..two dots\r\nGrüße aus Köln\r\nthe end.\r\n';

const sessions: SmtpSession[] = [];
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const session of sessions.splice(0)) session.close();
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

async function open(port: number, options: Partial<SessionOptions> = {}): Promise<SmtpSession> {
  const session = await SmtpSession.open({ address: '127.0.0.1', port, hostname: 'mx.test', tls: 'none' }, { ...OPTIONS, ...options });
  sessions.push(session);
  return session;
}

type Stage = 'mail' | 'rcpt' | 'bdat';

interface ChunkingMx {
  port: number;
  /** Command lines, each with the number of socket reads its connection had had when it was parsed. */
  commands: Array<{ line: string; read: number }>;
  /** The chunks of the messages it accepted. */
  messages: Buffer[];
}

/**
 * A server offering CHUNKING (and PIPELINING unless told not to) that reads
 * BDAT chunks by their length, answers each stage as `reply` scripts it (250
 * otherwise), and with `dropAfterChunk` closes the connection once it has read
 * a chunk, before replying to anything.
 */
async function chunkingMx(o: { pipelining?: boolean; reply?: (stage: Stage, argument: string) => string | undefined; dropAfterChunk?: boolean } = {}): Promise<ChunkingMx> {
  const commands: ChunkingMx['commands'] = [];
  const messages: Buffer[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let reads = 0;
    let buffered = Buffer.alloc(0);
    let chunkLeft = -1;
    let chunk: Buffer[] = [];
    let mail = false;
    let recipients = 0;
    const answer = (line: string) => socket.write(`${line}\r\n`);
    const command = (line: string) => {
      commands.push({ line, read: reads });
      const verb = line.split(' ')[0].toUpperCase();
      if (verb === 'EHLO') {
        answer(`250-mx.test\r\n${o.pipelining === false ? '' : '250-PIPELINING\r\n'}250-8BITMIME\r\n250-SIZE 10000000\r\n250 CHUNKING`);
      } else if (verb === 'MAIL') {
        const reply = o.reply?.('mail', line) ?? '250 2.1.0 Ok';
        mail = reply.startsWith('2');
        answer(reply);
      } else if (verb === 'RCPT') {
        const reply = o.reply?.('rcpt', line) ?? '250 2.1.5 Ok';
        if (reply.startsWith('2')) recipients++;
        answer(reply);
      } else if (verb === 'BDAT') {
        chunkLeft = Number(line.split(' ')[1]);
        chunk = [];
      } else if (verb === 'RSET') {
        mail = false;
        recipients = 0;
        answer('250 2.0.0 Ok');
      } else if (verb === 'QUIT') {
        answer('221 2.0.0 Bye');
        socket.end();
      } else {
        answer('502 5.5.2 Error: command not recognized');
      }
    };
    const chunkRead = () => {
      if (o.dropAfterChunk) return socket.destroy();
      const scripted = o.reply?.('bdat', '');
      const reply = scripted ?? (mail && recipients > 0 ? '250 2.0.0 Ok: queued' : '554 5.5.1 Error: no valid recipients');
      if (reply.startsWith('2')) messages.push(Buffer.concat(chunk));
      // RFC 3030: the reply to the last chunk ends the transaction, whatever it says.
      mail = false;
      recipients = 0;
      answer(reply);
    };
    socket.on('data', (data: Buffer) => {
      reads++;
      buffered = Buffer.concat([buffered, data]);
      while (buffered.length > 0) {
        if (chunkLeft >= 0) {
          const taken = buffered.subarray(0, chunkLeft);
          chunk.push(taken);
          chunkLeft -= taken.length;
          buffered = buffered.subarray(taken.length);
          if (chunkLeft > 0) return;
          chunkLeft = -1;
          chunkRead();
          continue;
        }
        const lf = buffered.indexOf('\r\n');
        if (lf === -1) return;
        const line = buffered.subarray(0, lf).toString('utf8');
        buffered = buffered.subarray(lf + 2);
        command(line);
      }
    });
    socket.on('error', () => undefined);
    answer('220 mx.test ESMTP');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => {
    server.close(() => resolve());
    for (const socket of sockets) socket.destroy();
  }));
  const { port } = server.address() as net.AddressInfo;
  return { port, commands, messages };
}

const linesAfterEhlo = (server: ChunkingMx) => server.commands.filter((c) => !/^EHLO/.test(c.line));

describe('BDAT to a server that offers CHUNKING', () => {
  it('sends MAIL, every RCPT and BDAT with the message in one write, the message as it is, dots not doubled', async () => {
    const server = await chunkingMx();
    const session = await open(server.port);
    const raw = Buffer.from(HEADERS + BODY);

    const { results, retryElsewhere } = await session.send('a@sender.test', ['b@mx.test', 'c@mx.test'], raw);

    expect(results.map((r) => [r.recipient, r.code, r.reply])).toEqual([
      ['b@mx.test', 250, '250 2.0.0 Ok: queued'], ['c@mx.test', 250, '250 2.0.0 Ok: queued'],
    ]);
    expect(retryElsewhere).toEqual([]);
    expect(linesAfterEhlo(server).map((c) => c.line)).toEqual([
      `MAIL FROM:<a@sender.test> BODY=8BITMIME SIZE=${raw.length}`, 'RCPT TO:<b@mx.test>', 'RCPT TO:<c@mx.test>', `BDAT ${raw.length} LAST`,
    ]);
    expect(new Set(linesAfterEhlo(server).map((c) => c.read)).size).toBe(1);
    expect(server.messages[0].equals(raw)).toBe(true);
    // The reply to the chunk ended the transaction: the next one needs no RSET.
    await session.send('a@sender.test', ['d@mx.test'], raw);
    expect(linesAfterEhlo(server).map((c) => c.line.split(/[: ]/)[0])).toEqual(['MAIL', 'RCPT', 'RCPT', 'BDAT', 'MAIL', 'RCPT', 'BDAT']);
  });

  it('ends a bare LF, a bare CR and the last line with CRLF, and counts the chunk as sent', async () => {
    const server = await chunkingMx();
    const session = await open(server.port);

    await session.send('a@sender.test', ['b@mx.test'], Buffer.from('Subject: x\n\none\rtwo\nthree'));

    expect(server.messages[0].toString('latin1')).toBe('Subject: x\r\n\r\none\r\ntwo\r\nthree\r\n');
    expect(linesAfterEhlo(server).at(-1)?.line).toBe(`BDAT ${'Subject: x\r\n\r\none\r\ntwo\r\nthree\r\n'.length} LAST`);
  });

  it('gives a recipient refused at RCPT its own reply, and the others the reply to the chunk', async () => {
    const server = await chunkingMx({
      reply: (stage, argument) => (stage === 'rcpt' && argument.includes('gone@') ? '550 5.1.1 User unknown'
        : stage === 'bdat' ? '554 5.7.1 Message rejected as spam' : undefined),
    });
    const session = await open(server.port);

    const { results } = await session.send('a@sender.test', ['one@mx.test', 'gone@mx.test'], Buffer.from(HEADERS + BODY));

    expect(results).toEqual([
      { recipient: 'one@mx.test', code: 554, reply: '554 5.7.1 Message rejected as spam' },
      { recipient: 'gone@mx.test', code: 550, reply: '550 5.1.1 User unknown' },
    ]);
    // A refused chunk: the next transaction begins with RSET.
    expect(await session.ready()).toBe(true);
    expect(linesAfterEhlo(server).at(-1)?.line).toBe('RSET');
  });

  it('gives every recipient its RCPT reply when none was accepted, or the MAIL reply when that was refused; the session goes on', async () => {
    let refuseMail = false;
    const server = await chunkingMx({
      reply: (stage) => (stage === 'rcpt' ? '550 5.1.1 User unknown' : stage === 'mail' && refuseMail ? '553 5.7.1 Sender refused' : undefined),
    });
    const session = await open(server.port);

    const none = await session.send('a@sender.test', ['one@mx.test', 'two@mx.test'], Buffer.from(HEADERS + BODY));
    refuseMail = true;
    await session.ready();
    const refused = await session.send('a@sender.test', ['one@mx.test'], Buffer.from(HEADERS + BODY));

    expect(none.results.map((r) => r.reply)).toEqual(['550 5.1.1 User unknown', '550 5.1.1 User unknown']);
    expect(refused.results.map((r) => r.reply)).toEqual(['553 5.7.1 Sender refused']);
    expect(server.messages).toEqual([]);
    expect(session.usable).toBe(true);
    expect(await session.ready()).toBe(true);
  });

  it('without PIPELINING sends one command at a time, and no chunk once every recipient is refused', async () => {
    const server = await chunkingMx({ pipelining: false, reply: (stage, argument) => (stage === 'rcpt' && argument.includes('gone@') ? '550 5.1.1 User unknown' : undefined) });
    const session = await open(server.port);
    const raw = Buffer.from(HEADERS + BODY);

    const taken = await session.send('a@sender.test', ['one@mx.test', 'gone@mx.test'], raw);
    await session.ready();
    const refused = await session.send('a@sender.test', ['gone@mx.test'], raw);

    expect(taken.results.map((r) => r.code)).toEqual([250, 550]);
    expect(refused.results.map((r) => r.code)).toEqual([550]);
    const lines = linesAfterEhlo(server);
    expect(lines.map((c) => c.line)).toEqual([
      `MAIL FROM:<a@sender.test> BODY=8BITMIME SIZE=${raw.length}`, 'RCPT TO:<one@mx.test>', 'RCPT TO:<gone@mx.test>', `BDAT ${raw.length} LAST`,
      `MAIL FROM:<a@sender.test> BODY=8BITMIME SIZE=${raw.length}`, 'RCPT TO:<gone@mx.test>',
    ]);
    expect(new Set(lines.slice(0, 4).map((c) => c.read)).size).toBe(4);
    expect(server.messages).toHaveLength(1);
  });

  it('defers every recipient, none to another host, when the connection ends after the chunk went out and before any reply', async () => {
    const server = await chunkingMx({ dropAfterChunk: true });
    const session = await open(server.port);

    const { results, retryElsewhere } = await session.send('a@sender.test', ['one@mx.test', 'two@mx.test'], Buffer.from(HEADERS + BODY));

    // The server may have taken it: sending it to another host at once could deliver it twice (RFC 5321 §6.1).
    expect(retryElsewhere).toEqual([]);
    expect(results.map((r) => r.code)).toEqual([undefined, undefined]);
    for (const r of results) expect(r.reply).toMatch(/^connection lost after end of data/);
    expect(session.usable).toBe(false);
  });
});

describe('a message withdrawn as it is about to go', () => {
  it('with PIPELINING, is asked before the envelope goes, with the message: the server reads nothing of the transaction', async () => {
    const server = await chunkingMx();
    const session = await open(server.port);
    let linesWhenAsked = -1;

    const result = await session.send('a@sender.test', ['b@mx.test'], Buffer.from(HEADERS + BODY), () => {
      linesWhenAsked = linesAfterEhlo(server).length;
      return false;
    });

    expect(result).toEqual({ results: [], retryElsewhere: [], withdrawn: true });
    expect(linesWhenAsked).toBe(0);
    expect(session.usable).toBe(false);
    await new Promise((r) => setTimeout(r, 100));
    expect(linesAfterEhlo(server)).toEqual([]);
    expect(server.messages).toEqual([]);
  });

  it('without PIPELINING, is asked once the recipients are accepted: no BDAT follows them', async () => {
    const server = await chunkingMx({ pipelining: false });
    const session = await open(server.port);
    let linesWhenAsked: string[] = [];

    const result = await session.send('a@sender.test', ['b@mx.test'], Buffer.from(HEADERS + BODY), () => {
      linesWhenAsked = linesAfterEhlo(server).map((c) => c.line.split(/[: ]/)[0]);
      return false;
    });

    expect(result.withdrawn).toBe(true);
    expect(linesWhenAsked).toEqual(['MAIL', 'RCPT']);
    await new Promise((r) => setTimeout(r, 100));
    expect(linesAfterEhlo(server).map((c) => c.line.split(/[: ]/)[0])).toEqual(['MAIL', 'RCPT']);
    expect(server.messages).toEqual([]);
  });
});

describe('BDAT to Postfix', () => {
  let relayed: ScriptedMx;
  let postfix: PostfixInstance;

  async function startRelay(): Promise<void> {
    relayed = await startScriptedMx({ host: '127.0.0.1' });
    cleanups.push(() => relayed.stop());
    postfix = await startPostfix({
      domains: [],
      relayTo: relayed.port,
      // A recipient Postfix refuses at RCPT, by an access table written inline.
      mainCf: 'smtpd_recipient_restrictions = check_recipient_access inline:{{refused@relay.test = 550 5.1.1 no such user}}, permit_mynetworks, reject_unauth_destination\n',
    });
    cleanups.push(() => postfix.stop());
  }

  /**
   * The messages the relay received for `to`, once there are `count`: Postfix
   * also relays the message its start-up probe sent (smtp-source's).
   */
  const relayedTo = (to: (address: string) => boolean, count: number) => until(`${count} messages relayed`, () => {
    const ours = relayed.received.filter((m) => m.rcptTo.every(to));
    return ours.length >= count ? ours : undefined;
  }, 20_000);

  /** smtpd's line for the session that sent `mails` MAIL commands, logged as it ends, with its count of each command. */
  const disconnectLine = (mails: number) => until('smtpd\'s disconnect line', () => postfix.logText().split('\n')
    .find((l) => / disconnect from /.test(l) && l.includes(` mail=${mails} `)), 5_000);

  it('delivers through smtpd with BDAT, byte for byte, and keeps the session in step when a chunk is refused', async () => {
    await startRelay();
    const session = await open(postfix.port);
    const raw = Buffer.from(HEADERS + BODY);

    const first = await session.send('a@sender.test', ['b@relay.test', 'refused@relay.test'], raw);
    // Every recipient refused: Postfix reads the chunk and refuses it.
    const none = await session.send('a@sender.test', ['refused@relay.test'], raw);
    await session.ready();
    const last = await session.send('a@sender.test', ['c@relay.test'], raw);
    session.close();
    const ours = await relayedTo((r) => r.endsWith('@relay.test'), 2);

    expect(first.results.map((r) => [r.recipient, r.code])).toEqual([['b@relay.test', 250], ['refused@relay.test', 550]]);
    expect(first.results[1].reply).toContain('no such user');
    expect(none.results.map((r) => r.code)).toEqual([550]);
    expect(last.results.map((r) => [r.recipient, r.code])).toEqual([['c@relay.test', 250]]);
    expect(ours.map((m) => m.rcptTo).sort()).toEqual([['b@relay.test'], ['c@relay.test']]);
    for (const message of ours) {
      // Postfix puts its Received field first; the rest is the message as it was sent.
      const text = message.raw.toString('latin1');
      expect(text.startsWith('Received: ')).toBe(true);
      expect(message.raw.subarray(message.raw.length - raw.length).equals(raw)).toBe(true);
    }
    // smtpd counts each command of the session when it ends: three chunks, no DATA.
    const disconnect = await disconnectLine(3);
    expect(disconnect).toMatch(/ rcpt=2\/4 /);
    expect(disconnect).toMatch(/ bdat=2\/3 /);
    expect(disconnect).not.toMatch(/ data=/);
  }, 60_000);

  it('sends DATA instead when told not to use CHUNKING (MAILROOM_SMTP_CHUNKING=false)', async () => {
    await startRelay();
    const session = await open(postfix.port, { chunking: false });
    const raw = Buffer.from(HEADERS + BODY);

    const { results } = await session.send('a@sender.test', ['b@relay.test'], raw);
    session.close();
    const [message] = await relayedTo((r) => r === 'b@relay.test', 1);

    expect(results.map((r) => r.code)).toEqual([250]);
    expect(message.raw.subarray(message.raw.length - raw.length).equals(raw)).toBe(true);
    const disconnect = await disconnectLine(1);
    expect(disconnect).toMatch(/ data=1 /);
    expect(disconnect).not.toMatch(/ bdat=/);
  }, 60_000);
});
