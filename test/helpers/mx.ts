// A remote MX for tests: smtp-server on a loopback address, answering each
// stage of the SMTP dialogue the way the test scripts it, and recording what
// it accepted.

import { SMTPServer, type SMTPServerDataStream, type SMTPServerOptions } from 'smtp-server';
import type { SMTPConnection as ServerConnection } from 'smtp-server/lib/smtp-connection';

export type MxStage = 'connect' | 'mail' | 'rcpt' | 'data';

export interface MxReplyContext {
  /** 1-based number of the TCP connection the command arrived on. */
  connection: number;
  /** The address of the MAIL FROM or RCPT TO command being answered. */
  address?: string;
  mailFrom?: string;
  /** Recipients accepted so far in this transaction. */
  rcptTo: string[];
}

export interface ScriptedMxOptions {
  /** A 127.0.0.x address; 127.0.0.1 by default. */
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** The reply for a stage, e.g. '451 4.7.1 greylisted'; undefined accepts. */
  reply?: (stage: MxStage, ctx: MxReplyContext) => string | undefined;
  /** Offer STARTTLS, with smtp-server's built-in self-signed certificate. */
  tls?: boolean;
  /** Advertise PIPELINING (RFC 2920); true by default, as smtp-server does. */
  pipelining?: boolean;
  /**
   * Awaited before a stage is answered (the greeting for 'connect', and for
   * 'data' once the message is read): holds the sender waiting on that reply.
   */
  hold?: (stage: MxStage, ctx: MxReplyContext) => Promise<void> | void;
  /** Further smtp-server options (SIZE, AUTH, hidden extensions, TLS versions), over the ones above. */
  server?: Partial<SMTPServerOptions>;
}

/** A command line the server read, in order of arrival. */
export interface MxCommand {
  /** 1-based number of the TCP connection it came on. */
  connection: number;
  line: string;
  /**
   * How many reads the connection's TCP socket had delivered when the command
   * was parsed: commands with the same number came in one read, i.e. pipelined
   * (on a connection without STARTTLS, where the reads are the commands' own).
   */
  read: number;
}

export interface ReceivedMessage {
  mailFrom: string;
  rcptTo: string[];
  raw: Buffer;
  /** Whether the message came over TLS. */
  secure: boolean;
}

export interface ScriptedMx {
  host: string;
  port: number;
  received: ReceivedMessage[];
  /** Every command line read, in order; the message text is not one. */
  commands: MxCommand[];
  /** TCP connections accepted so far. */
  readonly connections: number;
  /** Resolves once `n` messages have been received; rejects after `ms`. */
  waitFor(n: number, ms?: number): Promise<void>;
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** '451 4.7.1 greylisted' -> an error smtp-server sends back as that exact line. */
function replyError(line: string): Error {
  const m = /^([2-5]\d\d)[ -]?(.*)$/s.exec(line);
  if (!m) throw new Error(`scripted reply ${JSON.stringify(line)} has no reply code`);
  return Object.assign(new Error(m[2]), { responseCode: Number(m[1]) });
}

function readAll(stream: SMTPServerDataStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

export async function startScriptedMx(options: ScriptedMxOptions = {}): Promise<ScriptedMx> {
  const host = options.host ?? '127.0.0.1';
  const script = options.reply ?? (() => undefined);
  const received: ReceivedMessage[] = [];
  const commands: MxCommand[] = [];
  const waiters = new Set<() => void>();
  let connections = 0;
  const connectionNumber = new WeakMap<object, number>();

  const respond = (stage: MxStage, ctx: MxReplyContext, callback: (err?: Error | null) => void) => {
    Promise.resolve(options.hold?.(stage, ctx)).then(() => {
      const line = script(stage, ctx);
      callback(line === undefined ? null : replyError(line));
    }, callback);
  };
  const contextOf = (session: { id: string; envelope: { mailFrom: false | { address: string }; rcptTo: Array<{ address: string }> } }) => ({
    connection: connectionNumber.get(session) ?? connections,
    mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : undefined,
    rcptTo: session.envelope.rcptTo.map((r) => r.address),
  });

  const server = new SMTPServer({
    name: `mx.${host}`,
    authOptional: true,
    disableReverseLookup: true,
    // The test decides every enhanced status code; smtp-server would otherwise add its own.
    hideENHANCEDSTATUSCODES: true,
    ...(options.tls ? {} : { hideSTARTTLS: true, disabledCommands: ['STARTTLS'] }),
    ...(options.pipelining === false && { hidePIPELINING: true }),
    // Without key and cert smtp-server uses its built-in self-signed certificate; no logger, no warning.
    logger: false,
    // Pooled client connections are still open when a test ends; stop() should not wait 30 s for them.
    closeTimeout: 10,
    ...options.server,
    onConnect(session, callback) {
      connections += 1;
      connectionNumber.set(session, connections);
      respond('connect', { connection: connections, rcptTo: [] }, callback);
    },
    onMailFrom(address, session, callback) {
      respond('mail', { ...contextOf(session), address: address.address, mailFrom: address.address }, callback);
    },
    onRcptTo(address, session, callback) {
      respond('rcpt', { ...contextOf(session), address: address.address }, callback);
    },
    onData(stream, session, callback) {
      readAll(stream).then(
        async (raw) => {
          const ctx = contextOf(session);
          await options.hold?.('data', ctx);
          const line = script('data', ctx);
          if (line !== undefined && !line.startsWith('2')) return callback(replyError(line));
          received.push({ mailFrom: ctx.mailFrom ?? '', rcptTo: ctx.rcptTo, raw, secure: session.secure });
          for (const wake of waiters) wake();
          callback(null, line?.replace(/^250[ -]?/, ''));
        },
        (err: Error) => callback(err),
      );
    },
  });

  // smtp-server holds every new connection for 100 ms before greeting, to catch
  // clients that talk before the greeting (it has no option for this). The
  // delivery client never does, and the pause would add up over a test run, so
  // each connection is set up the way init() does, minus the timer.
  server.connections = new (class extends Set<ServerConnection> {
    override add(connection: ServerConnection) {
      connection.init = () => connection._setListeners(() => connection.connectionReady());
      // Socket reads are counted and every parsed command is logged with the count so far.
      let reads = 0;
      connection._socket.on('data', () => (reads += 1));
      const onCommand = connection._onCommand.bind(connection);
      connection._onCommand = (command, callback) => {
        commands.push({ connection: connectionNumber.get(connection.session) ?? connections, line: command.toString(), read: reads });
        onCommand(command, callback);
      };
      return super.add(connection);
    }
  })();

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const address = server.server.address();
  if (!address || typeof address === 'string') throw new Error('scripted MX has no TCP address');
  // A client that vanishes mid-session (a killed sender) resets its connection; smtp-server reports it as an error event.
  server.on('error', () => undefined);

  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= new Promise<void>((resolve) => server.close(() => resolve())));

  return {
    host,
    port: address.port,
    received,
    commands,
    get connections() {
      return connections;
    },
    waitFor(n, ms = 5000) {
      if (received.length >= n) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const wake = () => {
          if (received.length < n) return;
          clearTimeout(timer);
          waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(wake);
          reject(new Error(`scripted MX received ${received.length} of ${n} messages within ${ms} ms`));
        }, ms);
        waiters.add(wake);
      });
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/** The settings of a Mailroom that delivers straight to MX hosts found through `dnsServer`, on loopback, at `port`. */
export function directDeliveryEnv(dnsServer: string, port: number): Record<string, string> {
  return { MAILROOM_DELIVERY: 'direct', MAILROOM_DNS_SERVERS: dnsServer, MAILROOM_ALLOW_PRIVATE_MX: 'true', MAILROOM_OUTBOUND_PORT: String(port) };
}
