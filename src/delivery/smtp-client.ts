// One SMTP client session over nodemailer's SMTPConnection, with the RFC 5321
// timeouts, opportunistic STARTTLS and per-recipient results; and the pool that
// keeps sessions open between messages to the same host.

import { isAscii } from 'node:buffer';
import net from 'node:net';
import { Readable } from 'node:stream';
import SMTPConnection, { type SMTPConnectionOptions } from 'nodemailer/lib/smtp-connection';
import type { NodemailerError } from 'nodemailer/lib/errors';
import { isLoopbackAddress } from '../core/loopback.js';

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
}

/** How long the reply to QUIT is waited for. */
const QUIT_TIMEOUT_MS = 5_000;

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

  private constructor(
    private readonly conn: SMTPConnection,
    readonly target: SmtpTarget,
    private readonly timeouts: SmtpTimeouts,
  ) {
    // SMTPConnection reports failures as 'error' events as well as to the pending callback;
    // without a listener an idle session dropped by the server would throw.
    conn.on('error', () => (this.lost = true));
    conn.on('end', () => (this.lost = true));
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
    const socket = await connectTcp(target, options);
    const servername = net.isIP(target.hostname) ? undefined : target.hostname;
    const connOptions: SMTPConnectionOptions = {
      connection: socket,
      secure: target.tls === 'implicit',
      ignoreTLS: target.tls === 'none',
      opportunisticTLS: target.tls === 'opportunistic',
      name: options.heloName,
      ...(servername && { servername }),
      // The socket is already connected, so this bounds the greeting and the STARTTLS upgrade.
      connectionTimeout: options.timeouts.greetingMs,
      greetingTimeout: options.timeouts.greetingMs,
      socketTimeout: options.timeouts.commandMs,
      // Opportunistic TLS takes any certificate: refusing it would only push the mail to plaintext.
      tls: { rejectUnauthorized: target.verifyCertificate ?? false, ...(servername && { servername }) },
      logger: false,
    };
    const conn = new SMTPConnection(connOptions);
    const session = new SmtpSession(conn, target, options.timeouts);
    const where = `${target.hostname} [${target.address}]`;
    try {
      await new Promise<void>((resolve, reject) => {
        conn.once('error', reject);
        conn.once('end', () => reject(new Error('connection closed')));
        conn.connect((err) => (err ? reject(err) : resolve()));
      });
      if (target.auth) {
        // Credentials go only over TLS, or to a relay on this machine.
        if (!conn.secure && !isLoopbackAddress(target.address)) {
          throw Object.assign(new Error('refusing to send credentials without TLS'), { code: 'ENOTLS' });
        }
        await new Promise<void>((resolve, reject) => {
          conn.login({ user: target.auth!.user, pass: target.auth!.pass }, (err) => (err ? reject(err) : resolve()));
        });
      }
    } catch (err) {
      conn.close();
      const e = err as NodemailerError;
      throw new SmtpSessionError(`${where}: ${e.message}`, e.response, e.code);
    }
    return session;
  }

  /** Whether the session is still open and idle-safe to reuse. */
  get usable(): boolean {
    return !this.lost && !this.conn.destroyed;
  }

  private setSocketTimeout(ms: number): void {
    const socket = this.conn._socket;
    if (socket && !socket.destroyed) socket.setTimeout(ms);
  }

  /** One transaction: MAIL FROM, RCPT TO for every recipient, DATA. Never rejects. */
  send(mailFrom: string, recipients: string[], raw: Buffer): Promise<TransactionResult> {
    let dataSent = false;
    let started = false;
    const timeouts = this.timeouts;
    const setTimeoutMs = (ms: number) => this.setSocketTimeout(ms);
    // The message goes in as a stream so the socket timeout can follow the phase:
    // the data-block timeout while it is written, then the long end-of-data wait.
    const source = new Readable({
      read() {
        if (started) return;
        started = true;
        setTimeoutMs(timeouts.dataBlockMs);
        this.push(raw);
        this.push(null);
      },
    });
    source.once('end', () => {
      dataSent = true;
      setTimeoutMs(timeouts.endOfDataMs);
    });
    const reused = this.messages > 0;
    const wasClean = this.clean;
    this.clean = false;
    this.messages += 1;
    return new Promise((resolve) => {
      this.conn.send(
        {
          from: mailFrom,
          to: recipients,
          size: raw.length,
          // RFC 6152: say so when the message is not 7-bit clean.
          use8BitMime: !isAscii(raw),
        },
        source,
        (err, info) => {
          this.setSocketTimeout(timeouts.commandMs);
          if (!err || (err.code === 'EMESSAGE' && err.command === 'DATA' && err.response)) {
            // The reply to the end of data, whatever it says, ends the transaction (RFC 5321 §4.1.1.4).
            this.clean = true;
          } else if (!err.response && (err.code === 'EENVELOPE' || err.code === 'EMESSAGE')) {
            // Refused before a command was written: the session is as it was.
            this.clean = wasClean;
          }
          resolve(err ? this.failed(recipients, err, dataSent, reused) : this.succeeded(recipients, info));
        },
      );
    });
  }

  private succeeded(recipients: string[], info: SMTPConnection.SentMessageInfo): TransactionResult {
    const refused = new Map((info.rejectedErrors ?? []).map((e) => [e.recipient, e.response]));
    return { results: recipients.map((r) => verdict(r, refused.get(r) ?? info.response)), retryElsewhere: [] };
  }

  private failed(recipients: string[], err: NodemailerError, dataSent: boolean, reused: boolean): TransactionResult {
    const everyone = (reply: string) => ({ results: recipients.map((r) => verdict(r, reply)), retryElsewhere: [] });
    if (!err.response && (err.code === 'EENVELOPE' || err.code === 'EMESSAGE')) {
      // Refused by nodemailer before anything was sent: an address it cannot put in a command,
      // or a message over the SIZE the server announced (RFC 1870). Written as the reply a
      // server would give, so it is classified like one; the session stays usable.
      return everyone(err.code === 'EENVELOPE' ? `553 5.1.3 ${err.message}` : `552 5.3.4 ${err.message}`);
    }
    const code = replyCode(err.response);
    if (code === 421 || code === undefined) {
      this.lost = true;
      const failure = err.response ?? err.message;
      // 421: the server is closing (RFC 5321 §3.8). Before the message went out, another host may do.
      if (code === 421 || !dataSent) {
        // A pooled session found closed (not timed out) only now, when the server had long
        // dropped it: nothing was sent, so a new connection is no second attempt.
        const staleSession = reused && code === undefined && err.code !== 'ETIMEDOUT';
        return { results: [], retryElsewhere: [...recipients], failure, ...(staleSession && { staleSession }) };
      }
      // Lost after the final dot: the server may have taken it, another host would duplicate it
      // (RFC 5321 §4.5.3.2.6, §6.1). No reply code, so it is deferred and retried later.
      return everyone(`connection lost after end of data: ${failure}`);
    }
    if (err.rejectedErrors?.length) {
      // Every RCPT was refused; each has its own reply.
      const refused = new Map(err.rejectedErrors.map((e) => [e.recipient, e.response]));
      return { results: recipients.map((r) => verdict(r, refused.get(r) ?? err.response!)), retryElsewhere: [] };
    }
    // MAIL FROM, DATA or the message itself refused: the reply is every recipient's. (nodemailer
    // does not hand over the earlier RCPT replies here, so a recipient refused at RCPT gets it too.)
    return everyone(err.response!);
  }

  /**
   * Readies a reused session for the next transaction: nothing to do after a
   * completed one, RSET after one that was abandoned part way (a refused DATA,
   * every RCPT refused) so its sender and recipients are forgotten.
   */
  ready(): Promise<boolean> {
    if (!this.usable) return Promise.resolve(false);
    if (this.clean) return Promise.resolve(true);
    return new Promise((resolve) => this.conn.reset((err) => {
      if (!err) this.clean = true;
      resolve(!err);
    }));
  }

  /** Ends the session politely (QUIT) when it is still open. */
  close(): void {
    if (this.usable) {
      // A server that never answers QUIT must not hold the socket, and the process, for long.
      this.setSocketTimeout(QUIT_TIMEOUT_MS);
      this.conn.quit();
    } else {
      this.conn.close();
    }
    this.lost = true;
  }
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
    return [target.address, target.port, target.tls, target.auth?.user ?? '', options.heloName].join('|');
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
