import type { Logger } from 'pino';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import { hasSmugglingMarker, normaliseLineEndings } from './message-data.js';
import {
  answerMailFrom, ClientLeftMidMessage, closeServer, listenOn, MAIL_PARAMETERS, readMessage, sharedServerOptions, smtpError, temporaryFailure, unknownParameters, type SmtpListener,
} from './listener.js';
import type { TlsCredentials } from './tls.js';
import type { Clock } from '../core/clock.js';

// The inbound MX (RFC 5321 as the final destination): mail for the domains
// with inbound mail on, and bounces and feedback reports for the return paths
// of the domains we send from. Nothing else is taken, so the server is never
// an open relay. A message is acknowledged with 250 only once it is stored
// durably; parsing and the SPF/DKIM/DMARC checks come afterwards.
//
// Replies carry an RFC 3463 enhanced status code in their text. The
// ENHANCEDSTATUSCODES extension (RFC 2034) is not advertised, because
// smtp-server would then put its own, per reply code, in front of ours
// ("550 5.1.1" for every 550, a relay refusal included).
//
// smtp-server waits 100 ms before the greeting and drops a client that talks
// first (RFC 5321 §4.3.1 has the client wait for it), which turns away many
// spam bots; throughput comes from concurrent connections and from several
// messages per connection instead.

/** Why a recipient is refused. */
export type RecipientRefusal = 'relay_denied' | 'no_such_domain' | 'no_such_bounce_address' | 'postmaster_mailbox_full';

export interface IncomingMessage {
  mailFrom: string;
  rcptTo: string[];
  remoteIp: string;
  helo: string;
  tls: boolean;
  raw: Buffer;
}

/** What the listener needs from the inbound area. */
export interface MxPort {
  /** undefined when mail for the address is taken here. */
  checkRecipient(address: string): Promise<RecipientRefusal | undefined>;
  /**
   * Stores the message for each receiving domain; resolves once committed,
   * with the new ids (none when every recipient's domain went away since RCPT).
   */
  accept(message: IncomingMessage): Promise<string[]>;
}

export interface MxListenerOptions {
  /** The server's name in the greeting and in Received fields. */
  hostname: string;
  host: string;
  port: number;
  maxMessageBytes: number;
  tls: TlsCredentials | undefined;
  clock: Clock;
  logger: Logger;
  /** Where to listen when `port`, left at its default, needs a privilege this process lacks. */
  unprivilegedPort?: number;
}

/** Connections at once, in all; smtp-server answers 421 beyond. */
const MAX_CLIENTS = 1_000;
/** Connections at once from one address. */
const MAX_CLIENTS_PER_IP = 100;

const REFUSALS: Record<RecipientRefusal, Error> = {
  relay_denied: smtpError(550, '5.7.1', 'Relay access denied: this server takes mail only for its own domains'),
  no_such_domain: smtpError(550, '5.1.2', 'This domain does not receive mail here'),
  no_such_bounce_address: smtpError(550, '5.1.1', 'No such bounce address'),
  // Temporary (RFC 3463 X.2.2): the operator reading or purging the mailbox makes room.
  postmaster_mailbox_full: smtpError(452, '4.2.2', 'The postmaster mailbox is full, try again later'),
};

/** The greeting name of the client, as safe to repeat in a header field. */
const heloOf = (session: SMTPServerSession) => (session.hostNameAppearsAs || '').replace(/[^\x21-\x7e]/g, '').slice(0, 255) || 'unknown';

/** RFC 5322 §3.3 date-time, in UTC. */
function rfc5322Date(ms: number): string {
  const d = new Date(ms);
  const day = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'][d.getUTCDay()];
  const month = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][d.getUTCMonth()];
  const two = (n: number) => String(n).padStart(2, '0');
  return `${day}, ${two(d.getUTCDate())} ${month} ${d.getUTCFullYear()} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} +0000`;
}

/**
 * The trace fields a final-delivery server adds at the top of the message
 * (RFC 5321 §4.4): Return-Path with the envelope sender, and Received.
 */
export function traceFields(session: SMTPServerSession, hostname: string, now: number): string {
  const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
  const rcpts = session.envelope.rcptTo;
  // Naming the recipient is only safe with one: with several it would tell each about the others.
  const forClause = rcpts.length === 1 ? `\r\n\tfor <${rcpts[0].address}>` : '';
  const transmission = session.transmissionType || (session.secure ? 'ESMTPS' : 'ESMTP');
  // RFC 6531 section 4.3: a transaction with SMTPUTF8 is recorded as UTF8SMTP, with the same S and A suffixes.
  const protocol = session.envelope.smtpUtf8 ? transmission.replace(/^ESMTP/, 'UTF8SMTP') : transmission;
  return `Return-Path: <${mailFrom}>\r\n`
    + `Received: from ${heloOf(session)} ([${session.remoteAddress}])\r\n\tby ${hostname} with ${protocol} id ${session.id}${forClause};\r\n\t${rfc5322Date(now)}\r\n`;
}

export function createMxListener(port: MxPort, options: MxListenerOptions): SmtpListener {
  const { logger, hostname, maxMessageBytes } = options;
  const perIp = new Map<string, number>();
  const counted = new Set<string>();

  const server = new SMTPServer({
    ...sharedServerOptions({ hostname, banner: 'Mailroom', maxMessageBytes, maxClients: MAX_CLIENTS, tls: options.tls }),
    disabledCommands: options.tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],

    onConnect(session, callback) {
      const n = perIp.get(session.remoteAddress) ?? 0;
      if (n >= MAX_CLIENTS_PER_IP) return callback(smtpError(421, '4.7.0', 'Too many connections from your address, try again later'));
      perIp.set(session.remoteAddress, n + 1);
      counted.add(session.id);
      callback();
    },

    onClose(session) {
      logger.info({ session: session.id, remote_ip: session.remoteAddress, helo: session.clientHostname, messages: session.transaction - 1 }, 'MX session closed');
      if (!counted.delete(session.id)) return;
      const n = (perIp.get(session.remoteAddress) ?? 1) - 1;
      if (n <= 0) perIp.delete(session.remoteAddress);
      else perIp.set(session.remoteAddress, n);
    },

    onMailFrom(address, _session, callback) {
      answerMailFrom(callback, unknownParameters('MAIL FROM', address, MAIL_PARAMETERS));
    },

    onRcptTo(address, _session, callback) {
      // No extension advertised here (DSN is not) has a RCPT TO parameter.
      const unknown = unknownParameters('RCPT TO', address, []);
      if (unknown) return callback(unknown);
      port.checkRecipient(address.address).then(
        (refusal) => callback(refusal ? REFUSALS[refusal] : undefined),
        (err: unknown) => {
          logger.error({ err }, 'MX: recipient check failed');
          callback(temporaryFailure(err));
        },
      );
    },

    onData(stream, session, callback) {
      const receivedAt = options.clock.now();
      readMessage(stream, maxMessageBytes)
        .then(async ({ data, refusal }) => {
          if (!data) return callback(refusal);
          if (hasSmugglingMarker(data)) {
            logger.warn({ remote_ip: session.remoteAddress, session: session.id }, 'MX: refused a message with a bare CR/LF end-of-data look-alike');
            return callback(smtpError(554, '5.6.0', 'Message refused: a line holding only "." is next to a bare CR or LF (RFC 5321 section 2.3.8, section 4.1.1.4)'));
          }
          const raw = Buffer.concat([Buffer.from(traceFields(session, hostname, receivedAt)), normaliseLineEndings(data)]);
          const ids = await port.accept({
            mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            rcptTo: session.envelope.rcptTo.map((r) => r.address),
            remoteIp: session.remoteAddress,
            helo: heloOf(session),
            tls: session.secure,
            raw,
          });
          if (ids.length === 0) return callback(smtpError(550, '5.1.2', 'None of the recipients receives mail here any more'));
          callback(null, `2.0.0 Ok: queued as ${ids.join(' ')}`);
        })
        .catch((err: unknown) => {
          if (err instanceof ClientLeftMidMessage) return logger.info({ session: session.id, remote_ip: session.remoteAddress }, 'MX: the client left before the end of its message');
          logger.error({ err, session: session.id }, 'MX: could not store a message');
          callback(temporaryFailure(err));
        });
    },
  });
  server.on('error', (err: NodeJS.ErrnoException) => {
    // Bind failures are reported by listenOn; the rest are single connections going wrong.
    if (err.syscall !== 'listen') logger.debug({ err }, 'MX: connection error');
  });

  return {
    listen: () => listenOn(server, options.port, options.host, 'SMTP MX listener', 'MAILROOM_SMTP_PORT', logger, options.unprivilegedPort),
    close: () => closeServer(server),
  };
}
