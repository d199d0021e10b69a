// Mailroom's SMTP client, over node:net and node:tls: one session with the
// RFC 5321 timeouts, EHLO (HELO when refused), opportunistic STARTTLS or
// implicit TLS, AUTH PLAIN/LOGIN for a relay, and transactions with each
// recipient's own reply; and the pool that keeps sessions open between
// messages to the same host. It is the MTA's core path, so it is ours rather
// than nodemailer's SMTPConnection: a transaction is one write of MAIL FROM,
// every RCPT TO and DATA when the server offers PIPELINING (RFC 2920), then
// one write of the whole message, dot-stuffed by native indexOf scans instead
// of a JavaScript loop over every byte, and replies matched in order. When
// the server also offers CHUNKING (RFC 3030), the message goes in that same
// write after BDAT, not dot-stuffed: one round trip a message instead of two.

import { isAscii } from 'node:buffer';
import net from 'node:net';
import tls from 'node:tls';
import { isLoopbackAddress } from '../core/loopback.js';
import { peerText } from '../core/nul.js';

/** RFC 5321 §4.5.3.2 client timeouts, plus the TCP connect the RFC leaves open. */
export interface SmtpTimeouts {
  connectMs: number;
  /** Waiting for the 220 greeting, and for a STARTTLS upgrade (§4.5.3.2.1). */
  greetingMs: number;
  /** Waiting for the reply to MAIL, RCPT, DATA, RSET (§4.5.3.2.2-4). */
  commandMs: number;
  /** Between writes of the message text (§4.5.3.2.5). */
  dataBlockMs: number;
  /** Waiting for the reply to the final "." (§4.5.3.2.6): long, or the message is sent twice. */
  endOfDataMs: number;
}

export const RFC5321_TIMEOUTS: Readonly<SmtpTimeouts> = Object.freeze({
  connectMs: 30_000,
  greetingMs: 300_000,
  commandMs: 300_000,
  dataBlockMs: 180_000,
  endOfDataMs: 600_000,
});

/** Where a session goes and how. */
export interface SmtpTarget {
  /** IP address to connect to: resolved and vetted by the caller, never looked up again here. */
  address: string;
  port: number;
  /** Host name, for SNI and messages. */
  hostname: string;
  /**
   * opportunistic: STARTTLS when offered, any certificate, plaintext when TLS fails (RFC 3207 §4.1,
   * Postfix's "may" level); implicit: TLS from the first byte (RFC 8314, smtps); none: never.
   */
  tls: 'opportunistic' | 'implicit' | 'none';
  /** Check the certificate against `hostname`; only meaningful for a known relay. */
  verifyCertificate?: boolean;
  auth?: { user: string; pass: string };
}

export interface SessionOptions {
  heloName: string;
  timeouts: SmtpTimeouts;
  localAddress?: string;
  /** BDAT to a server that offers CHUNKING (default true); false sends DATA whatever the server offers. */
  chunking?: boolean;
}

/** A session could not be set up: connect, greeting, STARTTLS or AUTH failed. */
export class SmtpSessionError extends Error {
  constructor(
    message: string,
    /** The server's reply, when the failure was one (a 421 or 554 greeting, a refused AUTH). */
    readonly reply?: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'SmtpSessionError';
  }
}

/**
 * The message was withdrawn at the last moment: whoever sent it said no
 * when it was about to go (see SmtpSession.send), and none of it reached
 * the server.
 */
export class MessageWithdrawn extends Error {
  constructor() {
    super('the message was withdrawn before it was handed over');
    this.name = 'MessageWithdrawn';
  }
}

/** What became of one recipient in one transaction. */
export interface RcptResult {
  recipient: string;
  /** Basic reply code; absent when the session ended without a verdict for this recipient. */
  code?: number;
  reply: string;
}

export interface TransactionResult {
  /** Recipients with a verdict (a reply, or a connection lost after the message was sent). */
  results: RcptResult[];
  /**
   * Recipients without one, the session having ended before the message was
   * sent (421, connection lost): another host may take them.
   */
  retryElsewhere: string[];
  /** Why the session ended early, for the record when no other host works either. */
  failure?: string;
  /**
   * A reused session broke before the message went out (the server had dropped it
   * while it sat idle): a fresh session to the same address may take the recipients.
   */
  staleSession?: boolean;
  /** `mayHandOver` said no: nothing of the message went out, and the session is closed. */
  withdrawn?: boolean;
}

/** For a sender that never withdraws its message. */
const handOverAlways = () => true;

/** How long the reply to QUIT is waited for. */
const QUIT_TIMEOUT_MS = 5_000;
/** A reply longer than this ends the session: no server sends one, a hostile one could fill memory. */
const MAX_REPLY_CHARS = 1024 * 1024;

/** One reply (RFC 5321 §4.2): its code, 0 when it has none, and its lines joined with '\n'. */
interface Reply {
  code: number;
  text: string;
}

/** What the server's EHLO reply offers (RFC 5321 §4.1.1.1); nothing after HELO. */
interface Extensions {
  pipelining: boolean;
  eightBitMime: boolean;
  smtpUtf8: boolean;
  startTls: boolean;
  /** SIZE is offered (RFC 1870); `maxSize` is 0 when it names no limit. */
  size: boolean;
  maxSize: number;
  /** The SASL mechanisms offered, upper case. */
  auth: string[];
  /** BDAT (RFC 3030): the message sent with its length instead of an end-of-data line. */
  chunking: boolean;
}

const NO_EXTENSIONS: Extensions = Object.freeze({
  pipelining: false, eightBitMime: false, smtpUtf8: false, startTls: false, size: false, maxSize: 0, auth: [], chunking: false,
});

function parseEhlo(text: string): Extensions {
  const ext = { ...NO_EXTENSIONS, auth: [] as string[] };
  // The first line is the server's name; each other line is a keyword and its parameters.
  for (const line of text.split('\n').slice(1)) {
    const [keyword = '', ...params] = line.slice(4).trim().split(/[\s=]+/);
    switch (keyword.toUpperCase()) {
      case 'PIPELINING': ext.pipelining = true; break;
      case '8BITMIME': ext.eightBitMime = true; break;
      case 'SMTPUTF8': ext.smtpUtf8 = true; break;
      case 'STARTTLS': ext.startTls = true; break;
      case 'SIZE': ext.size = true; ext.maxSize = Number(params[0]) || 0; break;
      case 'AUTH': ext.auth.push(...params.map((m) => m.toUpperCase())); break;
      case 'CHUNKING': ext.chunking = true; break;
    }
  }
  return ext;
}

const CR = 0x0d;
const LF = 0x0a;
const DOT = 0x2e;
const CR_BYTE = Buffer.from('\r');
const LF_BYTE = Buffer.from('\n');
const DOT_BYTE = Buffer.from('.');
const CRLF_BYTES = Buffer.from('\r\n');
const END_OF_DATA = Buffer.from('.\r\n');

/**
 * The message with every line ended by CRLF, a bare CR or a bare LF made one
 * (a receiver that took either for a line end could see an end of data
 * inside the message: SMTP smuggling), the last line too; with `stuffDots`,
 * a dot doubled at the start of every line as well (RFC 5321 §4.5.2). Line
 * ends are found with indexOf, which scans in native code; the pieces are
 * views of `raw` between what is inserted, a single one when nothing is.
 */
function wireLines(raw: Buffer, stuffDots: boolean): Buffer[] {
  const pieces: Buffer[] = [];
  let copied = 0;
  const insert = (at: number, bytes: Buffer) => {
    pieces.push(raw.subarray(copied, at), bytes);
    copied = at;
  };
  if (stuffDots && raw[0] === DOT) insert(0, DOT_BYTE);
  let cr = raw.indexOf(CR);
  for (let lf = raw.indexOf(LF); lf !== -1 || cr !== -1;) {
    let lineStart: number;
    if (cr !== -1 && (lf === -1 || cr < lf - 1)) {
      // A CR not followed by LF (the LF found is further on): a bare CR.
      if (cr === raw.length - 1) break; // the last line's end below completes it
      insert(cr + 1, LF_BYTE);
      lineStart = cr + 1;
      cr = raw.indexOf(CR, lineStart);
    } else {
      if (lf === 0 || raw[lf - 1] !== CR) insert(lf, CR_BYTE);
      lineStart = lf + 1;
      if (cr !== -1 && cr < lineStart) cr = raw.indexOf(CR, lineStart);
      lf = raw.indexOf(LF, lineStart);
    }
    if (stuffDots && raw[lineStart] === DOT) insert(lineStart, DOT_BYTE);
  }
  pieces.push(raw.subarray(copied));
  const last = raw.length ? raw[raw.length - 1] : -1;
  if (last !== LF) pieces.push(last === CR ? LF_BYTE : CRLF_BYTES);
  return pieces;
}

/** The message as the DATA command sends it: wireLines with dots doubled, then "." CRLF. */
export function dataBlock(raw: Buffer): Buffer {
  return Buffer.concat([...wireLines(raw, true), END_OF_DATA]);
}

/** The message as one BDAT LAST chunk sends it: wireLines, nothing doubled; `raw` itself when its lines end in CRLF. */
export function chunkBody(raw: Buffer): Buffer {
  const pieces = wireLines(raw, false);
  return pieces.length === 1 ? raw : Buffer.concat(pieces);
}

function replyCode(reply: string | undefined): number | undefined {
  const m = reply && /^([2-5]\d\d)/.exec(reply);
  return m ? Number(m[1]) : undefined;
}

function verdict(recipient: string, reply: string): RcptResult {
  return { recipient, reply, code: replyCode(reply) };
}

function connectTcp(target: SmtpTarget, options: SessionOptions): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: target.address, port: target.port, localAddress: options.localAddress });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new SmtpSessionError(`connection to ${target.hostname} [${target.address}] timed out`, undefined, 'ETIMEDOUT'));
    }, options.timeouts.connectMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeAllListeners('error');
      resolve(socket);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      const where = `${target.hostname} [${target.address}]`;
      reject(new SmtpSessionError(`cannot connect to ${where}: ${err.code ?? err.message}`, undefined, err.code));
    });
  });
}

interface ReplyWaiter {
  count: number;
  replies: Reply[];
  resolve: (replies: Reply[]) => void;
  reject: (err: SmtpSessionError) => void;
}

const is2xx = (reply: Reply | undefined) => reply !== undefined && reply.code >= 200 && reply.code < 300;
/** The command that sends `chunk` as the whole message (RFC 3030). */
const bdat = (chunk: Buffer) => `BDAT ${chunk.length} LAST\r\n`;
const isMailbox = (address: string) => address !== '' && !/[\r\n<>]/.test(address);

/** What the server said to one transaction's commands; `data` is absent when DATA was not sent. */
interface EnvelopeReplies {
  mail: Reply;
  rcpt: Reply[];
  data?: Reply;
}

export class SmtpSession {
  /** Messages sent over this session so far. */
  messages = 0;
  private lost = false;
  /**
   * No transaction is open: none was begun yet, or the last one ended with the
   * reply to its end of data. RFC 5321 §4.1.1.5: RSET is for aborting a
   * transaction, so after a completed one the next MAIL FROM goes out directly.
   */
  private clean = true;
  /** The current transaction's message has been written. */
  private messageSent = false;
  /** Asked just before the current transaction's message is written. */
  private mayHandOver: () => boolean = handOverAlways;
  private secure: boolean;
  private extensions: Extensions = NO_EXTENSIONS;
  /** Why the connection ended, once it has. */
  private failure?: SmtpSessionError;
  /** The received text of a line not yet ended, and the lines of a reply not yet complete. */
  private partial = '';
  private lines: string[] = [];
  private linesLength = 0;
  private readonly waiting: ReplyWaiter[] = [];
  private readonly onData = (chunk: Buffer) => this.read(chunk);
  private readonly onTimeout = () => this.fail(new SmtpSessionError('timed out waiting for the server', undefined, 'ETIMEDOUT'));
  private readonly onError = (err: NodeJS.ErrnoException) => this.fail(new SmtpSessionError(err.message, undefined, err.code ?? 'ESOCKET'));
  private readonly onEnd = () => (this.lost = true);
  private readonly onClose = () => {
    // A server that closes with a failure reply it did not end with CRLF has still said why.
    const reply = /^[45]\d\d[ -]/.test(this.partial) ? peerText(this.partial.trim()) : undefined;
    this.fail(new SmtpSessionError('connection closed unexpectedly', reply, 'ECONNECTION'));
  };

  private constructor(
    private socket: net.Socket,
    readonly target: SmtpTarget,
    private readonly timeouts: SmtpTimeouts,
    private readonly chunking: boolean,
  ) {
    this.secure = socket instanceof tls.TLSSocket;
    this.listen(socket);
  }

  /** Connects, reads the greeting, says EHLO, upgrades with STARTTLS and logs in as the target asks. */
  static async open(target: SmtpTarget, options: SessionOptions): Promise<SmtpSession> {
    try {
      return await SmtpSession.openOnce(target, options);
    } catch (err) {
      // A server that offers STARTTLS and then fails the handshake still takes mail in plaintext.
      if (target.tls === 'opportunistic' && (err as SmtpSessionError).code === 'ETLS') {
        return SmtpSession.openOnce({ ...target, tls: 'none' }, options);
      }
      throw err;
    }
  }

  private static async openOnce(target: SmtpTarget, options: SessionOptions): Promise<SmtpSession> {
    const where = `${target.hostname} [${target.address}]`;
    let socket = await connectTcp(target, options);
    // Commands go out in the batches they belong to: Nagle would only hold one back for an ACK.
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 30_000);
    try {
      if (target.tls === 'implicit') socket = await startTls(socket, target, options.timeouts.greetingMs);
    } catch (err) {
      socket.destroy();
      throw new SmtpSessionError(`${where}: ${(err as Error).message}`, undefined, (err as SmtpSessionError).code);
    }
    const session = new SmtpSession(socket, target, options.timeouts, options.chunking !== false);
    try {
      await session.setUp(options.heloName);
    } catch (err) {
      session.lost = true;
      session.socket.destroy();
      const e = err as SmtpSessionError;
      throw new SmtpSessionError(`${where}: ${e.message}`, e.reply, e.code);
    }
    return session;
  }

  /** Greeting, EHLO (HELO when refused), STARTTLS and EHLO again, AUTH. */
  private async setUp(heloName: string): Promise<void> {
    this.socket.setTimeout(this.timeouts.greetingMs);
    // A deadline for the whole greeting, not only for silence: a tarpit that
    // drips a line of it now and then must not hold the connection for hours.
    const deadline = setTimeout(this.onTimeout, this.timeouts.greetingMs);
    const greeting = await this.reply().finally(() => clearTimeout(deadline));
    if (greeting.code !== 220) throw new SmtpSessionError('greeting refused', greeting.text, 'EPROTOCOL');
    await this.hello(heloName);
    if (this.target.tls === 'opportunistic' && !this.secure && this.extensions.startTls) {
      this.socket.write('STARTTLS\r\n');
      const reply = await this.reply();
      if (is2xx(reply)) {
        await this.upgrade();
        // RFC 3207 §4.2: what the server said before TLS is forgotten, EHLO again.
        await this.hello(heloName);
      } else {
        // The session goes on in plaintext with what EHLO offered, but never with credentials.
        this.extensions = { ...this.extensions, auth: [] };
      }
    }
    this.socket.setTimeout(this.timeouts.commandMs);
    if (this.target.auth) await this.login(this.target.auth);
  }

  private async hello(heloName: string): Promise<void> {
    this.socket.write(`EHLO ${heloName}\r\n`);
    const ehlo = await this.reply();
    if (is2xx(ehlo)) {
      this.extensions = parseEhlo(ehlo.text);
      return;
    }
    if (ehlo.code === 421) throw new SmtpSessionError('EHLO refused', ehlo.text, 'ECONNECTION');
    // RFC 5321 §4.1.4: a server that does not know EHLO still knows HELO; it offers no extensions.
    this.socket.write(`HELO ${heloName}\r\n`);
    const helo = await this.reply();
    if (!is2xx(helo)) throw new SmtpSessionError('HELO refused', helo.text, 'EPROTOCOL');
    this.extensions = NO_EXTENSIONS;
  }

  /** STARTTLS accepted: the TLS handshake over the same connection (RFC 3207). */
  private async upgrade(): Promise<void> {
    const plain = this.socket;
    this.unlisten(plain);
    // Anything the server sent in plaintext after its reply is discarded (RFC 3207 §6: injection).
    this.partial = '';
    this.lines = [];
    this.linesLength = 0;
    plain.setTimeout(0);
    try {
      this.socket = await startTls(plain, this.target, this.timeouts.greetingMs);
    } catch (err) {
      plain.destroy();
      throw err;
    }
    this.secure = true;
    this.listen(this.socket);
    this.socket.setTimeout(this.timeouts.greetingMs);
  }

  /** AUTH PLAIN, or LOGIN when only that is offered (RFC 4954, RFC 4616). */
  private async login(auth: { user: string; pass: string }): Promise<void> {
    // Credentials go only over TLS, or to a relay on this machine.
    if (!this.secure && !isLoopbackAddress(this.target.address)) {
      throw new SmtpSessionError('refusing to send credentials without TLS', undefined, 'ENOTLS');
    }
    const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
    const offered = this.extensions.auth;
    let reply: Reply;
    if (!offered.includes('PLAIN') && offered.includes('LOGIN')) {
      this.socket.write('AUTH LOGIN\r\n');
      for (const answer of [auth.user, auth.pass]) {
        reply = await this.reply();
        if (reply.code !== 334) throw new SmtpSessionError('AUTH LOGIN refused', reply.text, 'EAUTH');
        this.socket.write(`${base64(answer)}\r\n`);
      }
    } else {
      // No authorization identity: some servers refuse one.
      this.socket.write(`AUTH PLAIN ${base64(`\0${auth.user}\0${auth.pass}`)}\r\n`);
    }
    reply = await this.reply();
    if (!is2xx(reply)) throw new SmtpSessionError('authentication failed', reply.text, 'EAUTH');
  }

  private listen(socket: net.Socket): void {
    socket.on('data', this.onData);
    socket.on('timeout', this.onTimeout);
    socket.on('error', this.onError);
    socket.on('end', this.onEnd);
    socket.on('close', this.onClose);
  }

  private unlisten(socket: net.Socket): void {
    socket.off('data', this.onData);
    socket.off('timeout', this.onTimeout);
    socket.off('error', this.onError);
    socket.off('end', this.onEnd);
    socket.off('close', this.onClose);
  }

  /** Splits what the server sent into lines, and lines into replies (RFC 5321 §4.2.1: "250-" continues one). */
  private read(chunk: Buffer): void {
    let text = chunk.toString('latin1');
    if (this.partial) {
      text = this.partial + text;
      this.partial = '';
    }
    let start = 0;
    for (let lf = text.indexOf('\n'); lf !== -1; lf = text.indexOf('\n', start)) {
      const line = text.slice(start, lf !== start && text.charCodeAt(lf - 1) === CR ? lf - 1 : lf);
      start = lf + 1;
      this.lines.push(line);
      this.linesLength += line.length;
      if (this.linesLength > MAX_REPLY_CHARS) return this.fail(new SmtpSessionError('server reply too long', undefined, 'EPROTOCOL'));
      if (/^\d\d\d-/.test(line)) continue;
      const replyText = this.lines.length === 1 ? line : this.lines.join('\n');
      this.lines = [];
      this.linesLength = 0;
      // Reply text has no charset (RFC 5321 §4.2.1): UTF-8 when it is valid UTF-8.
      this.received({ code: /^[2-5]\d\d/.test(replyText) ? Number(replyText.slice(0, 3)) : 0, text: peerText(replyText) });
      if (this.failure) return;
    }
    if (start < text.length) {
      this.partial = text.slice(start);
      if (this.partial.length > MAX_REPLY_CHARS) this.fail(new SmtpSessionError('server reply too long', undefined, 'EPROTOCOL'));
    }
  }

  private received(reply: Reply): void {
    const waiter = this.waiting[0];
    if (!waiter) {
      // RFC 5321 §3.8: a server may say 421 at any time and close; anything else unasked for is a protocol error.
      this.fail(new SmtpSessionError('unexpected reply', reply.text, reply.code === 421 ? 'ECONNECTION' : 'EPROTOCOL'));
      return;
    }
    waiter.replies.push(reply);
    if (reply.code === 421) {
      // The server is closing: the replies to the commands sent along with this one will not come.
      this.waiting.shift();
      waiter.resolve(waiter.replies);
      this.fail(new SmtpSessionError('server closing', reply.text, 'ECONNECTION'));
    } else if (waiter.replies.length === waiter.count) {
      this.waiting.shift();
      waiter.resolve(waiter.replies);
    }
  }

  /** Ends the connection; whatever waits for a reply learns why. */
  private fail(err: SmtpSessionError): void {
    this.lost = true;
    this.failure ??= err;
    this.socket.destroy();
    for (const waiter of this.waiting.splice(0)) waiter.reject(this.failure);
  }

  /** The next `count` replies, in order; fewer when a 421 comes first. */
  private replies(count: number): Promise<Reply[]> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => this.waiting.push({ count, replies: [], resolve, reject }));
  }

  private async reply(): Promise<Reply> {
    return (await this.replies(1))[0];
  }

  /** Whether the session is still open and idle-safe to reuse. */
  get usable(): boolean {
    return !this.lost && !this.socket.destroyed;
  }

  /** A refusal of the transaction before anything is sent, written as the reply a server would give. */
  private refusal(mailFrom: string, recipients: string[], size: number): string | undefined {
    // RFC 1870: a message over the SIZE the server announced would only be refused after it was sent.
    const max = this.extensions.maxSize;
    if (max && size > max) return `552 5.3.4 Message size larger than allowed ${max}`;
    // An address that cannot go in a command without changing it (RFC 5321 §4.1.2).
    if (mailFrom && /[\r\n<>]/.test(mailFrom)) return `553 5.1.3 Invalid sender ${JSON.stringify(mailFrom)}`;
    const bad = recipients.find((r) => !isMailbox(r));
    if (bad !== undefined) return `553 5.1.3 Invalid recipient ${JSON.stringify(bad)}`;
    return undefined;
  }

  /**
   * One transaction: MAIL FROM, RCPT TO for every recipient, DATA. Never
   * rejects. `mayHandOver` is asked just before the message itself would be
   * written (with the envelope, after it, or after the 354): when it says
   * no, the transaction is abandoned with nothing of the message sent, and
   * the session closed, since after a 354 only a closed connection ends the
   * transaction without one.
   */
  async send(mailFrom: string, recipients: string[], raw: Buffer, mayHandOver = handOverAlways): Promise<TransactionResult> {
    const reused = this.messages > 0;
    this.messages += 1;
    // The commands carry the addresses trimmed; the results name the recipients as given.
    mailFrom = mailFrom.trim();
    const addresses = recipients.map((r) => r.trim());
    if (!this.usable) return this.connectionLost(recipients, undefined, this.failure?.message ?? 'connection closed', reused, 'ECONNECTION');
    if (!recipients.length) return { results: [], retryElsewhere: [] };
    const refused = this.refusal(mailFrom, addresses, raw.length);
    // Refused here, nothing was sent: the session is as it was.
    if (refused) return { results: recipients.map((r) => verdict(r, refused)), retryElsewhere: [] };
    this.clean = false;
    this.messageSent = false;
    this.mayHandOver = mayHandOver;
    const chunk = this.chunking && this.extensions.chunking ? chunkBody(raw) : undefined;
    let envelope: EnvelopeReplies | undefined;
    try {
      envelope = await this.envelope(mailFrom, addresses, raw, chunk);
      return await this.finish(recipients, envelope, raw, chunk !== undefined);
    } catch (err) {
      if (err instanceof MessageWithdrawn) {
        this.lost = true;
        this.socket.destroy();
        return { results: [], retryElsewhere: [], withdrawn: true };
      }
      const e = err as SmtpSessionError;
      // A chunk pipelined with the envelope went out before any reply came.
      const sent = this.messageSent ? envelope ?? 'unanswered' : undefined;
      return this.connectionLost(recipients, sent, e.reply ?? e.message, reused, e.code);
    } finally {
      if (!this.socket.destroyed) this.socket.setTimeout(this.timeouts.commandMs);
    }
  }

  /**
   * MAIL FROM, RCPT TO, then DATA, or with `chunk` (CHUNKING) BDAT and the
   * message: in one write with PIPELINING (RFC 2920), else one at a time.
   */
  private async envelope(mailFrom: string, recipients: string[], raw: Buffer, chunk?: Buffer): Promise<EnvelopeReplies> {
    const ext = this.extensions;
    const params: string[] = [];
    // RFC 6531, RFC 6152, RFC 1870.
    if (ext.smtpUtf8 && [mailFrom, ...recipients].some((a) => /[^\x00-\x7f]/.test(a))) params.push('SMTPUTF8');
    if (ext.eightBitMime && !isAscii(raw)) params.push('BODY=8BITMIME');
    if (ext.size && raw.length) params.push(`SIZE=${raw.length}`);
    const mail = `MAIL FROM:<${mailFrom}>${params.length ? ` ${params.join(' ')}` : ''}\r\n`;
    if (ext.pipelining) {
      let commands = mail;
      for (const r of recipients) commands += `RCPT TO:<${r}>\r\n`;
      // RFC 3030 §4.2: BDAT may be pipelined; a server that refuses it still reads the chunk.
      if (chunk) this.writeMessage(Buffer.concat([Buffer.from(`${commands}${bdat(chunk)}`), chunk]));
      else this.socket.write(`${commands}DATA\r\n`);
      const [mailReply, ...rest] = await this.replies(recipients.length + 2);
      return { mail: mailReply, rcpt: rest.slice(0, recipients.length), data: rest[recipients.length] };
    }
    this.socket.write(mail);
    const envelope: EnvelopeReplies = { mail: await this.reply(), rcpt: [] };
    if (!is2xx(envelope.mail)) return envelope;
    for (const r of recipients) {
      this.socket.write(`RCPT TO:<${r}>\r\n`);
      const reply = await this.reply();
      envelope.rcpt.push(reply);
      if (reply.code === 421) return envelope;
    }
    if (!envelope.rcpt.some(is2xx)) return envelope;
    if (chunk) this.writeMessage(Buffer.concat([Buffer.from(bdat(chunk)), chunk]));
    else this.socket.write('DATA\r\n');
    envelope.data = await this.reply();
    return envelope;
  }

  /**
   * Sends the message when the envelope allows it, and turns the replies into
   * each recipient's verdict. `chunked`: the message went with the envelope
   * (BDAT), whose last reply is the one to the whole message.
   */
  private async finish(recipients: string[], envelope: EnvelopeReplies, raw: Buffer, chunked: boolean): Promise<TransactionResult> {
    const { mail, rcpt, data } = envelope;
    // RFC 5321 §3.8: 421 at any step, the server is closing; another host may take them all.
    const closing = [mail, ...rcpt, data].find((r) => r?.code === 421);
    if (closing) return this.closing(recipients, closing);
    const invalid = [mail, ...rcpt, data].find((r) => r !== undefined && r.code === 0);
    if (invalid) throw new SmtpSessionError('reply without a code', invalid.text, 'EPROTOCOL');
    const accepted = rcpt.map(is2xx);
    const goAhead = data !== undefined && data.code >= 200 && data.code < 400;
    const each = (reply: Reply) => ({ results: recipients.map((r, i) => verdict(r, accepted[i] ? reply.text : rcpt[i].text)), retryElsewhere: [] });
    if (chunked) return this.chunkAnswered(recipients, envelope, each);
    if (!is2xx(mail)) {
      // No transaction began. A server that took DATA anyway cannot be trusted with the session.
      if (goAhead) this.fail(new SmtpSessionError('DATA accepted without a sender', data.text, 'EPROTOCOL'));
      return { results: recipients.map((r) => verdict(r, mail.text)), retryElsewhere: [] };
    }
    if (!accepted.includes(true)) {
      if (goAhead) {
        // RFC 2920 §3.1 says refuse DATA with no recipient; this server took it. An empty message ends it.
        this.socket.write('.\r\n');
        await this.reply();
        this.clean = true;
      }
      return { results: recipients.map((r, i) => verdict(r, rcpt[i].text)), retryElsewhere: [] };
    }
    // DATA refused: the recipients refused at RCPT keep their own reply.
    if (!goAhead) return each(data!);
    this.writeMessage(dataBlock(raw));
    const [final] = await this.replies(1);
    // The reply to the end of data, whatever it says, ends the transaction (RFC 5321 §4.1.1.4).
    this.clean = true;
    if (final.code === 421) return this.closing(recipients, final);
    if (final.code === 0) throw new SmtpSessionError('reply without a code', final.text, 'EPROTOCOL');
    return each(final);
  }

  /**
   * The verdicts of a transaction whose message went with BDAT: the reply to
   * the chunk is the one to the message (RFC 3030 §2). A refused chunk leaves
   * the transaction for RSET to end before the next one.
   */
  private chunkAnswered(recipients: string[], { mail, rcpt, data }: EnvelopeReplies, each: (reply: Reply) => TransactionResult): TransactionResult {
    const taken = is2xx(data);
    if (!is2xx(mail) || !rcpt.some(is2xx)) {
      // A server that took the message with no sender or no recipient cannot be trusted with the session.
      if (taken) this.fail(new SmtpSessionError('message accepted without a transaction', data!.text, 'EPROTOCOL'));
      return { results: recipients.map((r, i) => verdict(r, is2xx(mail) ? rcpt[i].text : mail.text)), retryElsewhere: [] };
    }
    this.clean = taken;
    return each(data!);
  }

  /**
   * Bytes that end the message in one write, unless the sender withdraws it
   * now; the data-block timeout while they go out, then the long end-of-data
   * wait.
   */
  private writeMessage(bytes: Buffer): void {
    if (!this.mayHandOver()) throw new MessageWithdrawn();
    const socket = this.socket;
    this.messageSent = true;
    socket.setTimeout(this.timeouts.dataBlockMs);
    const endOfData = () => socket.setTimeout(this.timeouts.endOfDataMs);
    if (socket.write(bytes)) endOfData();
    else socket.once('drain', endOfData);
  }

  private closing(recipients: string[], reply: Reply): TransactionResult {
    this.lost = true;
    return { results: [], retryElsewhere: [...recipients], failure: reply.text };
  }

  /**
   * The connection ended without a reply. `sent` is given when the message
   * had gone out: the envelope's replies, or 'unanswered' when it went with
   * the envelope before any came.
   */
  private connectionLost(recipients: string[], sent: EnvelopeReplies | 'unanswered' | undefined, failure: string, reused: boolean,
    code?: string): TransactionResult {
    this.lost = true;
    this.socket.destroy();
    if (!sent) {
      // A pooled session found closed (not timed out) only now, when the server had long
      // dropped it: nothing was sent, so a new connection is no second attempt.
      const staleSession = reused && code !== 'ETIMEDOUT';
      return { results: [], retryElsewhere: [...recipients], failure, ...(staleSession && { staleSession }) };
    }
    // Lost after the final dot: the server may have taken it, another host would duplicate it
    // (RFC 5321 §4.5.3.2.6, §6.1). No reply code, so it is deferred and retried later.
    const lost = `connection lost after end of data: ${failure}`;
    return { results: recipients.map((r, i) => verdict(r, sent === 'unanswered' || is2xx(sent.rcpt[i]) ? lost : sent.rcpt[i].text)), retryElsewhere: [] };
  }

  /**
   * Readies a reused session for the next transaction: nothing to do after a
   * completed one, RSET after one that was abandoned part way (a refused DATA,
   * every RCPT refused) so its sender and recipients are forgotten.
   */
  async ready(): Promise<boolean> {
    if (!this.usable) return false;
    if (this.clean) return true;
    this.socket.write('RSET\r\n');
    try {
      this.clean = is2xx(await this.reply());
    } catch {
      return false;
    }
    return this.clean;
  }

  /** Ends the session politely (QUIT) when it is still open. */
  close(): void {
    const socket = this.socket;
    if (this.usable) {
      this.lost = true;
      // A server that never answers QUIT must not hold the socket, and the process, for long.
      socket.setTimeout(QUIT_TIMEOUT_MS);
      socket.write('QUIT\r\n');
      const end = () => {
        socket.end();
        setTimeout(() => socket.destroy(), QUIT_TIMEOUT_MS).unref();
      };
      this.reply().then(end, end);
    } else {
      this.lost = true;
      socket.destroy();
    }
  }
}

/** The TLS handshake over a connected socket, within `timeoutMs`; a failed one is 'ETLS'. */
function startTls(socket: net.Socket, target: SmtpTarget, timeoutMs: number): Promise<tls.TLSSocket> {
  const servername = net.isIP(target.hostname) ? undefined : target.hostname;
  return new Promise((resolve, reject) => {
    const secured = tls.connect({
      socket,
      host: target.hostname,
      ...(servername && { servername }),
      // Opportunistic TLS takes any certificate: refusing it would only push the mail to plaintext.
      rejectUnauthorized: target.verifyCertificate ?? false,
    });
    const timer = setTimeout(() => {
      secured.destroy();
      reject(new SmtpSessionError('TLS handshake timed out', undefined, 'ETIMEDOUT'));
    }, timeoutMs);
    const failed = (err?: Error) => {
      clearTimeout(timer);
      secured.destroy();
      reject(new SmtpSessionError(`TLS handshake failed: ${err?.message ?? 'connection closed'}`, undefined, 'ETLS'));
    };
    const closed = () => failed();
    secured.once('error', failed);
    secured.once('close', closed);
    secured.once('secureConnect', () => {
      clearTimeout(timer);
      secured.off('error', failed);
      secured.off('close', closed);
      resolve(secured);
    });
  });
}

// ---------------------------------------------------------------------------

export interface SmtpPoolOptions {
  /** An unused session is closed after this long; default 10 s. */
  idleMs?: number;
  /** Sessions are retired after this many messages; default 100. */
  maxMessagesPerSession?: number;
}

interface IdleSession { session: SmtpSession; timer: NodeJS.Timeout }

/**
 * Open sessions kept between messages, keyed by address, port, TLS mode, user
 * and HELO name. How many deliveries go to one destination at once is the
 * delivery worker's to decide (see destinations.ts).
 */
export class SmtpPool {
  private readonly idle = new Map<string, IdleSession[]>();
  private readonly idleMs: number;
  private readonly maxMessages: number;
  private closed = false;

  constructor(options: SmtpPoolOptions = {}) {
    this.idleMs = options.idleMs ?? 10_000;
    this.maxMessages = options.maxMessagesPerSession ?? 100;
  }

  private static key(target: SmtpTarget, options: SessionOptions): string {
    return [target.address, target.port, target.tls, target.auth?.user ?? '', options.heloName, options.chunking !== false].join('|');
  }

  /** An open session to the target: a pooled one ready for a transaction, or (always when `fresh`) a new one. */
  async acquire(target: SmtpTarget, options: SessionOptions, fresh = false): Promise<SmtpSession> {
    if (this.closed) throw new SmtpSessionError('SMTP pool is closed', undefined, 'ECLOSED');
    const key = SmtpPool.key(target, options);
    const list = fresh ? undefined : this.idle.get(key);
    while (list?.length) {
      const entry = list.pop()!;
      if (!list.length) this.idle.delete(key);
      clearTimeout(entry.timer);
      if (await entry.session.ready()) return entry.session;
      entry.session.close();
    }
    return SmtpSession.open(target, options);
  }

  /** Hands a session back after a transaction; it is kept for reuse while healthy. */
  release(session: SmtpSession, options: SessionOptions): void {
    if (this.closed || !session.usable || session.messages >= this.maxMessages) {
      session.close();
      return;
    }
    const key = SmtpPool.key(session.target, options);
    const list = this.idle.get(key) ?? [];
    const entry: IdleSession = {
      session,
      timer: setTimeout(() => {
        const index = list.indexOf(entry);
        if (index >= 0) list.splice(index, 1);
        if (!list.length) this.idle.delete(key);
        session.close();
      }, this.idleMs),
    };
    // An idle timer must not keep the process alive on its own.
    entry.timer.unref();
    list.push(entry);
    this.idle.set(key, list);
  }

  /** Closes the idle sessions; sessions in use close when released. */
  close(): void {
    this.closed = true;
    for (const list of this.idle.values()) {
      for (const { session, timer } of list) {
        clearTimeout(timer);
        session.close();
      }
    }
    this.idle.clear();
  }
}
