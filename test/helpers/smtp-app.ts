// A test Mailroom with its SMTP listeners on loopback ports, and small SMTP
// clients for the tests of receiving and submission: nodemailer for whole
// messages, and a raw dialogue for what nodemailer would never send.
import { Socket } from 'node:net';
import nodemailer from 'nodemailer';
import { ListenerError } from '../../src/smtp/index.js';
import { startTestApp, type TestApp, type TestAppOptions } from './app.js';
import { freePort } from './ports.js';

export interface SmtpTestApp extends TestApp {
  mxPort: number;
  submissionPort: number;
}

const START_ATTEMPTS = 5;

/**
 * startTestApp with both SMTP listeners on free loopback ports. Port 0 turns
 * a listener off, so free ports are picked first; if another process takes
 * one in the meantime the start fails, and the app is started again.
 */
export async function startSmtpTestApp(options: Pick<TestAppOptions, 'env' | 'clock' | 'logger'> = {}): Promise<SmtpTestApp> {
  for (let attempt = 1; ; attempt++) {
    const [mx, submission] = [await freePort(), await freePort()];
    try {
      const t = await startTestApp({
        ...options,
        env: { MAILROOM_SMTP_HOST: '127.0.0.1', MAILROOM_SMTP_PORT: String(mx), MAILROOM_SUBMISSION_PORT: String(submission), ...options.env },
      });
      return Object.assign(t, { mxPort: t.mailroom.smtp.mxPort!, submissionPort: t.mailroom.smtp.submissionPort! });
    } catch (err) {
      if (!(err instanceof ListenerError) || attempt === START_ATTEMPTS) throw err;
    }
  }
}

/** A domain of the default workspace that is active and receives mail. */
export async function inboundDomain(t: TestApp, name: string): Promise<{ id: string }> {
  const d = await t.seed.activeDomain(name);
  const patched = await t.api.patch(`/v1/domains/${d.id}`, { inbound_enabled: true });
  if (patched.status !== 200) throw new Error(`could not enable inbound mail on ${name}: ${JSON.stringify(patched.body)}`);
  return { id: d.id };
}

/** Sends a whole message to a port with nodemailer; resolves with the server's final reply, rejects with its error. */
export async function sendRaw(port: number, envelope: { from: string; to: string[] }, raw: string | Buffer,
  auth?: { user: string; pass: string }): Promise<string> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1', port, secure: false,
    // The listeners' certificate is self-signed.
    tls: { rejectUnauthorized: false },
    ...(auth && { auth }),
  });
  try {
    const info = await transport.sendMail({ envelope, raw });
    return info.response;
  } finally {
    transport.close();
  }
}

/**
 * A raw SMTP dialogue over one connection: waits for the greeting, then for
 * each line sends it (CRLF added unless `raw` is set) and collects the full
 * reply. Bounded by `timeoutMs` in all.
 */
export class SmtpDialog {
  private buffer = '';
  private waiters: Array<() => void> = [];
  private closed = false;

  private constructor(private readonly socket: Socket, private readonly timeoutMs: number) {
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      this.buffer += chunk;
      this.waiters.splice(0).forEach((w) => w());
    });
    socket.on('close', () => {
      this.closed = true;
      this.waiters.splice(0).forEach((w) => w());
    });
    socket.on('error', () => undefined);
  }

  static async open(port: number, timeoutMs = 10_000): Promise<{ dialog: SmtpDialog; greeting: string }> {
    const socket = new Socket();
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.connect(port, '127.0.0.1', () => resolve());
    });
    const dialog = new SmtpDialog(socket, timeoutMs);
    return { dialog, greeting: await dialog.reply() };
  }

  /** The next complete reply (all lines of a multi-line one). */
  async reply(): Promise<string> {
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      const m = /^(?:\d{3}-[^\n]*\n)*\d{3}(?: [^\n]*)?\r?\n/.exec(this.buffer);
      if (m) {
        this.buffer = this.buffer.slice(m[0].length);
        return m[0].trimEnd();
      }
      if (this.closed) throw new Error(`connection closed; unread: ${JSON.stringify(this.buffer)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no reply within ${this.timeoutMs} ms; unread: ${JSON.stringify(this.buffer)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Sends one command line and returns its reply. */
  async command(line: string): Promise<string> {
    this.socket.write(`${line}\r\n`);
    return this.reply();
  }

  /** Sends bytes as they are (a DATA payload with its terminator). */
  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  close(): void {
    this.socket.destroy();
  }
}

/** Polls `probe` until it returns a value other than undefined, for at most `ms`. */
export async function eventually<T>(probe: () => Promise<T | undefined>, ms = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
