// The SMTP client against smtp-server: the message text as it goes over the
// wire (dot-stuffing, line ends), the MAIL FROM parameters, each recipient's
// own reply, replies that arrive in pieces, and the session's setting up
// (AUTH, STARTTLS that fails).

import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SmtpSession, type SmtpTarget } from '../../../src/delivery/index.js';
import { startScriptedMx, type ScriptedMx, type ScriptedMxOptions } from '../../helpers/mx.js';

const TIMEOUTS = { connectMs: 2_000, greetingMs: 5_000, commandMs: 5_000, dataBlockMs: 5_000, endOfDataMs: 5_000 };
const OPTIONS = { heloName: 'out.sender.test', timeouts: TIMEOUTS };
const CRLF_MESSAGE = 'From: a@sender.test\r\nTo: b@mx.test\r\nSubject: dots\r\n\r\n';

const servers: ScriptedMx[] = [];
const sessions: SmtpSession[] = [];
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const session of sessions.splice(0)) session.close();
  await Promise.all(servers.splice(0).map((s) => s.stop()));
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

async function mx(options: ScriptedMxOptions = {}): Promise<ScriptedMx> {
  const server = await startScriptedMx({ host: '127.0.0.40', ...options });
  servers.push(server);
  return server;
}

async function open(port: number, target: Partial<SmtpTarget> = {}, address = '127.0.0.40'): Promise<SmtpSession> {
  const session = await SmtpSession.open({ address, port, hostname: 'mx.test', tls: 'none', ...target }, OPTIONS);
  sessions.push(session);
  return session;
}

/** The MAIL FROM lines the server read. */
const mailCommands = (server: ScriptedMx) => server.commands.map((c) => c.line).filter((l) => /^MAIL FROM/i.test(l));

describe('the message text', () => {
  it('doubles a dot that starts a line, the first line and a line of a lone dot included, and arrives as it was', async () => {
    const server = await mx();
    const session = await open(server.port);
    const body = '.starts the message\r\n..two dots\r\n.\r\nafter a lone dot\r\n.\r\n.\r\n. space\r\nend.\r\n';
    const raw = Buffer.from(`.${CRLF_MESSAGE}${body}`);

    const { results } = await session.send('a@sender.test', ['b@mx.test'], raw);

    expect(results.map((r) => r.code)).toEqual([250]);
    expect(server.received[0].raw.toString('latin1')).toBe(raw.toString('latin1'));
  });

  it('finds dots at the start of lines all through a large message, on either side of where the socket splits it', async () => {
    const server = await mx();
    const session = await open(server.port);
    // Lines of 78 octets and CRLF, with every 97th line a lone dot and every 89th starting with one:
    // over 400 KB, the writes and reads split it in many places.
    const lines = Array.from({ length: 5_200 }, (_, i) => (i % 97 === 0 ? '.' : i % 89 === 0 ? `.${'y'.repeat(77)}` : 'x'.repeat(78)));
    const raw = Buffer.from(`${CRLF_MESSAGE}${lines.join('\r\n')}\r\n`);

    const { results } = await session.send('a@sender.test', ['b@mx.test'], raw);

    expect(results.map((r) => r.code)).toEqual([250]);
    expect(server.received[0].raw.equals(raw)).toBe(true);
  });

  it('ends a message that does not end in CRLF with CRLF before the final dot', async () => {
    const server = await mx();
    const session = await open(server.port);

    const { results } = await session.send('a@sender.test', ['b@mx.test'], Buffer.from(`${CRLF_MESSAGE}no line end.`));

    expect(results.map((r) => r.code)).toEqual([250]);
    expect(server.received[0].raw.toString('latin1')).toBe(`${CRLF_MESSAGE}no line end.\r\n`);
  });

  it('sends a bare LF or a bare CR as CRLF, so no end of data can hide in the message', async () => {
    const server = await mx();
    const session = await open(server.port);
    const raw = Buffer.from(`${CRLF_MESSAGE}one\n.\ntwo\r.\rthree\n\nfour\r`);

    await session.send('a@sender.test', ['b@mx.test'], raw);
    await session.send('a@sender.test', ['c@mx.test'], Buffer.from(`${CRLF_MESSAGE}second\r\n`));

    expect(server.received.map((m) => m.raw.toString('latin1'))).toEqual([
      `${CRLF_MESSAGE}one\r\n.\r\ntwo\r\n.\r\nthree\r\n\r\nfour\r\n`,
      `${CRLF_MESSAGE}second\r\n`,
    ]);
    expect(server.received.map((m) => m.rcptTo)).toEqual([['b@mx.test'], ['c@mx.test']]);
  });
});

describe('MAIL FROM parameters', () => {
  it('says BODY=8BITMIME for a message that is not ASCII, and SIZE, when the server offers them', async () => {
    const server = await mx({ server: { size: 1_000_000 } });
    const session = await open(server.port);
    const utf8 = Buffer.from(`${CRLF_MESSAGE}Grüße\r\n`);
    const ascii = Buffer.from(`${CRLF_MESSAGE}Hello\r\n`);

    await session.send('a@sender.test', ['b@mx.test'], utf8);
    await session.send('a@sender.test', ['b@mx.test'], ascii);

    expect(mailCommands(server)).toEqual([
      `MAIL FROM:<a@sender.test> BODY=8BITMIME SIZE=${utf8.length}`,
      `MAIL FROM:<a@sender.test> SIZE=${ascii.length}`,
    ]);
    expect(server.received[0].raw.equals(utf8)).toBe(true);
  });

  it('says neither to a server that does not offer them', async () => {
    const server = await mx({ server: { hide8BITMIME: true, hideSize: true } });
    const session = await open(server.port);

    const { results } = await session.send('a@sender.test', ['b@mx.test'], Buffer.from(`${CRLF_MESSAGE}Grüße\r\n`));

    expect(results.map((r) => r.code)).toEqual([250]);
    expect(mailCommands(server)).toEqual(['MAIL FROM:<a@sender.test>']);
  });

  it('refuses a message over the announced SIZE without sending it, and the session stays usable', async () => {
    const server = await mx({ server: { size: 200 } });
    const session = await open(server.port);

    const big = await session.send('a@sender.test', ['b@mx.test'], Buffer.from(`${CRLF_MESSAGE}${'x'.repeat(300)}\r\n`));
    const smallRaw = Buffer.from(`${CRLF_MESSAGE}x\r\n`);
    const small = await session.send('a@sender.test', ['b@mx.test'], smallRaw);

    expect(big).toEqual({ results: [{ recipient: 'b@mx.test', code: 552, reply: '552 5.3.4 Message size larger than allowed 200' }], retryElsewhere: [] });
    expect(small.results.map((r) => r.code)).toEqual([250]);
    expect(await session.ready()).toBe(true);
    expect(server.commands.map((c) => c.line).filter((l) => !/^EHLO/i.test(l))).toEqual([`MAIL FROM:<a@sender.test> SIZE=${smallRaw.length}`, 'RCPT TO:<b@mx.test>', 'DATA']);
  });

  it('trims the addresses it puts in commands, and names each recipient as it was given', async () => {
    const server = await mx();
    const session = await open(server.port);

    const { results } = await session.send(' a@sender.test', [' b@mx.test '], Buffer.from(CRLF_MESSAGE));

    expect(results.map((r) => [r.recipient, r.code])).toEqual([[' b@mx.test ', 250]]);
    expect(server.received.map((m) => [m.mailFrom, m.rcptTo])).toEqual([['a@sender.test', ['b@mx.test']]]);
  });

  it('refuses an address that cannot go in a command, as a 553 5.1.3 reply, sending nothing', async () => {
    const server = await mx();
    const session = await open(server.port);

    const badRecipient = await session.send('a@sender.test', ['ok@mx.test', 'x>@mx.test'], Buffer.from(CRLF_MESSAGE));
    const badSender = await session.send('a@sender.test\r\nRSET', ['ok@mx.test'], Buffer.from(CRLF_MESSAGE));

    expect(badRecipient.results).toEqual([
      { recipient: 'ok@mx.test', code: 553, reply: '553 5.1.3 Invalid recipient "x>@mx.test"' },
      { recipient: 'x>@mx.test', code: 553, reply: '553 5.1.3 Invalid recipient "x>@mx.test"' },
    ]);
    expect(badSender.results).toEqual([{ recipient: 'ok@mx.test', code: 553, reply: '553 5.1.3 Invalid sender "a@sender.test\\r\\nRSET"' }]);
    expect(session.usable).toBe(true);
    expect(server.commands.map((c) => c.line).filter((l) => !/^EHLO/i.test(l))).toEqual([]);
  });
});

describe('replies', () => {
  it('gives a recipient refused at RCPT its own reply when the message is then refused', async () => {
    const server = await mx({
      reply: (stage, ctx) => (stage === 'rcpt' && ctx.address === 'gone@mx.test' ? '550 5.1.1 User unknown'
        : stage === 'data' ? '554 5.7.1 Message rejected as spam' : undefined),
    });
    const session = await open(server.port);

    const { results } = await session.send('a@sender.test', ['one@mx.test', 'gone@mx.test', 'two@mx.test'], Buffer.from(CRLF_MESSAGE));

    expect(results).toEqual([
      { recipient: 'one@mx.test', code: 554, reply: '554 5.7.1 Message rejected as spam' },
      { recipient: 'gone@mx.test', code: 550, reply: '550 5.1.1 User unknown' },
      { recipient: 'two@mx.test', code: 554, reply: '554 5.7.1 Message rejected as spam' },
    ]);
    // The transaction ended with the reply to the end of data: no RSET is due.
    expect(await session.ready()).toBe(true);
  });

  it('reads replies that arrive a few bytes at a time, a multi-line EHLO and the pipelined replies included', async () => {
    const server = await mx({
      server: { size: 1_000_000 },
      reply: (stage, ctx) => (stage === 'rcpt' && ctx.address === 'gone@mx.test' ? '550 5.1.1 User unknown' : undefined),
    });
    const proxy = await tricklingProxy(server.host, server.port);
    const session = await open(proxy.port, {}, '127.0.0.1');

    const first = await session.send('a@sender.test', ['one@mx.test', 'gone@mx.test', 'two@mx.test'], Buffer.from(`${CRLF_MESSAGE}Grüße\r\n`));
    const second = await session.send('a@sender.test', ['three@mx.test'], Buffer.from(CRLF_MESSAGE));

    expect(first.results.map((r) => [r.recipient, r.code])).toEqual([['one@mx.test', 250], ['gone@mx.test', 550], ['two@mx.test', 250]]);
    expect(second.results.map((r) => [r.recipient, r.code])).toEqual([['three@mx.test', 250]]);
    // The EHLO reply was read whole: PIPELINING, 8BITMIME and SIZE were all seen.
    expect(mailCommands(server)[0]).toMatch(/^MAIL FROM:<a@sender.test> BODY=8BITMIME SIZE=\d+$/);
    expect(new Set(server.commands.filter((c) => !/^EHLO/i.test(c.line)).slice(0, 5).map((c) => c.read)).size).toBe(1);
    expect(proxy.serverWrites()).toBeGreaterThan(20);
  });
});

describe('a session between transactions', () => {
  it('is no longer usable once the server said 421 and closed it while it sat idle', async () => {
    // smtp-server says "421 Timeout - closing connection" after its socket timeout.
    const server = await mx({ server: { socketTimeout: 200 } });
    const session = await open(server.port);
    await session.send('a@sender.test', ['b@mx.test'], Buffer.from(CRLF_MESSAGE));

    for (const deadline = Date.now() + 3_000; session.usable && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 20));

    expect(session.usable).toBe(false);
    expect(await session.ready()).toBe(false);
  });

  it('sends nothing for a transaction without recipients', async () => {
    const server = await mx();
    const session = await open(server.port);

    expect(await session.send('a@sender.test', [], Buffer.from(CRLF_MESSAGE))).toEqual({ results: [], retryElsewhere: [] });
    expect(await session.ready()).toBe(true);
    expect(mailCommands(server)).toEqual([]);
  });
});

describe('a message withdrawn as it is about to go', () => {
  it('is asked after the 354, sends nothing of the message and closes the session, so the server keeps no message', async () => {
    const server = await mx();
    const session = await open(server.port);
    let seenWhenAsked: string[] = [];

    const result = await session.send('a@sender.test', ['b@mx.test'], Buffer.from(`${CRLF_MESSAGE}hello\r\n`), () => {
      seenWhenAsked = server.commands.map((c) => c.line.split(' ')[0].toUpperCase());
      return false;
    });

    expect(result).toEqual({ results: [], retryElsewhere: [], withdrawn: true });
    expect(seenWhenAsked).toEqual(['EHLO', 'MAIL', 'RCPT', 'DATA']);
    expect(session.usable).toBe(false);
    // The server saw the connection end inside DATA: it keeps nothing.
    await expect(server.waitFor(1, 500)).rejects.toThrow();
    expect(server.received).toEqual([]);
  });

  it('goes as usual when the question is answered yes', async () => {
    const server = await mx();
    const session = await open(server.port);
    let asked = 0;

    const { results } = await session.send('a@sender.test', ['b@mx.test'], Buffer.from(CRLF_MESSAGE), () => {
      asked++;
      return true;
    });

    expect(asked).toBe(1);
    expect(results.map((r) => r.code)).toEqual([250]);
    expect(server.received).toHaveLength(1);
    expect(await session.ready()).toBe(true);
  });
});

describe('setting up a session', () => {
  it('logs in with AUTH PLAIN over STARTTLS, or with LOGIN when only that is offered', async () => {
    const logins: Array<[string, string, string]> = [];
    const server = await mx({
      tls: true,
      server: {
        authMethods: ['LOGIN'],
        onAuth: (auth, _session, callback) => {
          logins.push([auth.method, auth.username ?? '', auth.password ?? '']);
          callback(null, { user: auth.username });
        },
      },
    });
    const plainServer = await mx({ host: '127.0.0.41', tls: true, server: { onAuth: (auth, _s, cb) => (logins.push([auth.method, auth.username ?? '', auth.password ?? '']), cb(null, { user: 1 })) } });

    const login = await open(server.port, { tls: 'opportunistic', auth: { user: 'me', pass: 'pässword' } });
    const plain = await open(plainServer.port, { tls: 'opportunistic', auth: { user: 'you', pass: 'secret' } }, '127.0.0.41');
    const sent = await login.send('a@sender.test', ['b@mx.test'], Buffer.from(CRLF_MESSAGE));
    await plain.send('a@sender.test', ['b@mx.test'], Buffer.from(CRLF_MESSAGE));

    expect(logins).toEqual([['LOGIN', 'me', 'pässword'], ['PLAIN', 'you', 'secret']]);
    expect(sent.results.map((r) => r.code)).toEqual([250]);
    expect([...server.received, ...plainServer.received].map((m) => m.secure)).toEqual([true, true]);
  });

  it('says why a refused login failed', async () => {
    const server = await mx({ tls: true, server: { onAuth: (_auth, _s, callback) => callback(Object.assign(new Error('Bad credentials'), { responseCode: 535 })) } });

    const failed = await open(server.port, { tls: 'opportunistic', auth: { user: 'me', pass: 'wrong' } }).catch((err: unknown) => err);

    expect(failed).toMatchObject({ name: 'SmtpSessionError', code: 'EAUTH', reply: '535 Bad credentials' });
  });

  it('delivers in plaintext on a new connection when the STARTTLS handshake fails', async () => {
    // The server speaks only TLS 1.0, which the client refuses.
    const server = await mx({ tls: true, server: { minVersion: 'TLSv1', maxVersion: 'TLSv1' } });

    const session = await open(server.port, { tls: 'opportunistic' });
    const { results } = await session.send('a@sender.test', ['b@mx.test'], Buffer.from(CRLF_MESSAGE));

    expect(results.map((r) => r.code)).toEqual([250]);
    expect(server.connections).toBe(2);
    expect(server.received.map((m) => m.secure)).toEqual([false]);
  });

  it('gives up on a greeting dripped a line at a time once the greeting timeout has passed', async () => {
    const dripping = new Set<NodeJS.Timeout>();
    const tarpit = net.createServer((socket) => {
      socket.on('error', () => undefined);
      const drip = setInterval(() => socket.write('220-still here\r\n'), 50);
      dripping.add(drip);
      socket.on('close', () => clearInterval(drip));
    });
    await new Promise<void>((resolve) => tarpit.listen(0, '127.0.0.40', resolve));
    cleanups.push(async () => {
      for (const drip of dripping) clearInterval(drip);
      tarpit.close();
    });
    const { port } = tarpit.address() as net.AddressInfo;

    const started = Date.now();
    const opening = SmtpSession.open({ address: '127.0.0.40', port, hostname: 'tarpit.test', tls: 'none' },
      { ...OPTIONS, timeouts: { ...TIMEOUTS, greetingMs: 300 } });

    await expect(opening).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    // Bounded by the deadline, not by how long the server keeps dripping (it never stops here).
    expect(Date.now() - started).toBeLessThan(TIMEOUTS.commandMs);
  });

  it('falls back to HELO when EHLO is refused, and then sends one command at a time', async () => {
    const server = await mx({ server: { disabledCommands: ['EHLO', 'STARTTLS'] } });
    const session = await open(server.port, { tls: 'opportunistic' });

    const { results } = await session.send('a@sender.test', ['b@mx.test', 'c@mx.test'], Buffer.from(`${CRLF_MESSAGE}Grüße\r\n`));

    expect(results.map((r) => r.code)).toEqual([250, 250]);
    const lines = server.commands.map((c) => c.line);
    expect(lines.slice(0, 2)).toEqual(['EHLO out.sender.test', 'HELO out.sender.test']);
    expect(mailCommands(server)).toEqual(['MAIL FROM:<a@sender.test>']);
    const transaction = server.commands.slice(2, 6);
    expect(new Set(transaction.map((c) => c.read)).size).toBe(4);
  });
});

/**
 * A TCP proxy in front of `host:port` that passes the server's bytes on three
 * at a time, a millisecond apart, so that replies arrive cut anywhere.
 */
async function tricklingProxy(host: string, port: number): Promise<{ port: number; serverWrites: () => number }> {
  let writes = 0;
  const sockets = new Set<net.Socket>();
  const proxy = net.createServer((client) => {
    const upstream = net.connect({ host, port });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.setNoDelay(true);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream);
    let queue = Promise.resolve();
    upstream.on('data', (chunk: Buffer) => {
      queue = queue.then(async () => {
        for (let i = 0; i < chunk.length; i += 3) {
          if (client.destroyed) return;
          client.write(chunk.subarray(i, i + 3));
          writes += 1;
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
      });
    });
    upstream.on('close', () => void queue.then(() => client.end()));
    client.on('close', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => proxy.close(resolve));
  });
  return { port: (proxy.address() as net.AddressInfo).port, serverWrites: () => writes };
}
