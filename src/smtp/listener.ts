import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { SMTPServer, SMTPServerAddress, SMTPServerDataStream, SMTPServerOptions } from 'smtp-server';
import type { TlsCredentials } from './tls.js';
import { AppError, SMTP_REPLY } from '../core/errors.js';
import { MimeStructureScan, type MimeViolation } from '../core/mime-structure.js';
import { isStoreFull } from '../store/db.js';

// What the MX and submission listeners share: starting (or saying why they
// cannot), stopping, and building replies.

export interface SmtpListener {
  /** The bound port; rejects with a ListenerError saying why it could not listen. */
  listen(): Promise<number>;
  close(): Promise<void>;
}

/** RFC 5321 §4.5.3.1.8: at least 100 recipients must be taken. */
const MAX_RECIPIENTS = 100;
/** Idle time allowed between commands or data (RFC 5321 §4.5.3.2.7 asks for at least 5 minutes). */
const IDLE_TIMEOUT_MS = 5 * 60_000;
/** How long a stop waits for open sessions before it ends them with 421. */
const CLOSE_TIMEOUT_MS = 5_000;

/** The smtp-server options both listeners share: name, size limit, TLS, limits and timeouts. */
export function sharedServerOptions(o: {
  hostname: string; banner: string; maxMessageBytes: number; maxClients: number; maxRecipients?: number; tls: TlsCredentials | undefined;
}): SMTPServerOptions {
  return {
    name: o.hostname,
    banner: o.banner,
    size: o.maxMessageBytes,
    rejectOversized: true,
    ...(o.tls && { key: o.tls.key, cert: o.tls.cert }),
    // The client's address is recorded as it is; a PTR look-up per
    // connection would cost a DNS round trip and decide nothing.
    disableReverseLookup: true,
    maxClients: o.maxClients,
    maxRecipients: o.maxRecipients ?? MAX_RECIPIENTS,
    socketTimeout: IDLE_TIMEOUT_MS,
    closeTimeout: CLOSE_TIMEOUT_MS,
    logger: false,
  };
}

/** MAIL FROM parameters of the extensions both listeners advertise: SIZE (RFC 1870), 8BITMIME (RFC 6152), SMTPUTF8 (RFC 6531). */
export const MAIL_PARAMETERS = ['SIZE', 'BODY', 'SMTPUTF8'] as const;

/**
 * The 555 for MAIL FROM or RCPT TO parameters of no extension the listener
 * advertises (RFC 5321 section 4.1.1.11), or undefined when there are none.
 * smtp-server checks the values of those it knows and passes any other on
 * unread, so without this an unknown one would be taken and ignored.
 */
export function unknownParameters(command: 'MAIL FROM' | 'RCPT TO', address: SMTPServerAddress, known: readonly string[]): (Error & { responseCode: number }) | undefined {
  const unknown = Object.keys(address.args || {}).filter((name) => !known.includes(name));
  return unknown.length === 0 ? undefined
    : smtpError(555, '5.5.4', `${command} parameters not recognized or not implemented: ${unknown.join(' ')}`);
}

/**
 * Answers MAIL FROM once the call that asked has returned. smtp-server (3.21)
 * resumes reading after a message's reply within SMTPStream.continue(), which
 * clears its continuation only once that call returns: when a client has
 * written the next transaction whole, message included, and every command of
 * it is answered within that call, the continuation the next message's end
 * sets is cleared with it, and the rest of the batch is never answered.
 */
export function answerMailFrom(callback: (err?: Error | null) => void, refusal?: Error): void {
  queueMicrotask(() => callback(refusal));
}

/** An error smtp-server sends back as `<code> <enhanced> <text>`, the text made one line of ASCII. */
export function smtpError(code: number, enhanced: string, text: string): Error & { responseCode: number } {
  return Object.assign(new Error(`${enhanced} ${replyText(text)}`), { responseCode: code });
}

/**
 * RFC 5321 §4.2 has reply text in US-ASCII (RFC 6531 does not change that),
 * and a service's message may name a domain or a person in any script: "§"
 * is spelled out, accents are dropped, typographic quotes made plain, and
 * anything else left is a "?". A line break would end the reply early.
 */
export function replyText(text: string): string {
  return text.replace(/[\r\n]+/g, ' ').replace(/§/g, 'section ').replace(/[‘’]/g, "'").replace(/[“”]/g, '"')
    .normalize('NFKD').replace(/\p{M}/gu, '').replace(/[^\x20-\x7e]/g, '?').slice(0, 400);
}

/**
 * The reply for an error thrown by a service: the code's SMTP_REPLY entry,
 * with the service's message; another refusal is a failed transaction (554,
 * RFC 5321 §4.2.3), and anything unexpected a temporary failure (451, or
 * 452 for a full store), so the client tries again rather than giving up.
 */
export function replyForError(err: unknown): Error & { responseCode: number } {
  if (err instanceof AppError) {
    const reply = SMTP_REPLY[err.code];
    if (reply) return smtpError(reply.code, reply.enhanced, err.message);
    return err.status >= 500 ? temporaryFailure(err) : smtpError(554, '5.0.0', err.message);
  }
  return temporaryFailure(err);
}

/** The reply for a failure on our side: the client keeps the message and tries again later. */
export function temporaryFailure(err: unknown): Error & { responseCode: number } {
  return isStoreFull(err) ? smtpError(452, '4.3.1', 'Insufficient system storage, try again later')
    : smtpError(451, '4.3.0', 'Temporary local problem, try again later');
}

/** A DATA command's message, or the reply that refuses it. */
export type DataRead = { data: Buffer; refusal?: undefined } | { data?: undefined; refusal: Error & { responseCode: number } };

/**
 * Reads the message of a DATA command, scanning its structure as it arrives
 * (mime-structure.ts). Past the size limit or a structural limit it is
 * refused; the rest is read and dropped, since the reply is the same
 * whatever follows, so a refused message is never held whole.
 */
export function readMessage(stream: SMTPServerDataStream, maxBytes: number): Promise<DataRead> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const scan = new MimeStructureScan();
    let size = 0;
    let refusal: (Error & { responseCode: number }) | undefined;
    const refuse = (reply: Error & { responseCode: number }) => {
      refusal = reply;
      chunks.length = 0;
    };
    stream.on('data', (chunk: Buffer) => {
      if (refusal) return;
      size += chunk.length;
      if (size > maxBytes) return refuse(tooLarge(maxBytes));
      scan.write(chunk);
      if (scan.violation) return refuse(structureRefusal(scan.violation));
      chunks.push(chunk);
    });
    stream.once('end', () => {
      if (!refusal && stream.sizeExceeded) refuse(tooLarge(maxBytes));
      const violation = refusal ? undefined : scan.end();
      if (violation) refuse(structureRefusal(violation));
      resolve(refusal ? { refusal } : { data: Buffer.concat(chunks, size) });
    });
    stream.once('error', (err: NodeJS.ErrnoException) => reject(err.code === 'ECONNECTION' ? new ClientLeftMidMessage(err.message) : err));
  });
}

/**
 * The client went away before the end of its message (smtp-server then ends
 * the data stream with an ECONNECTION error): the client's doing, with no
 * one left to answer, and nothing of ours at fault.
 */
export class ClientLeftMidMessage extends Error {}

const tooLarge = (maxBytes: number) => smtpError(552, '5.3.4', `Message exceeds the fixed size limit of ${maxBytes} bytes`);

/** RFC 3463: a header too large is a size matter (X.3.4); a structure too deep or wide, a media error (X.6.0). */
function structureRefusal(v: MimeViolation): Error & { responseCode: number } {
  return v.limit === 'header_section_bytes'
    ? smtpError(552, '5.3.4', `Message refused: ${v.message}`)
    : smtpError(554, '5.6.0', `Message refused: ${v.message}`);
}

const BIND_HINTS: Record<string, string> = {
  EACCES: 'ports below 1024 need root or the CAP_NET_BIND_SERVICE capability (setcap cap_net_bind_service=+ep on the node binary), or pick a port above 1023 and redirect to it',
  EADDRINUSE: 'another program already listens there (a system MTA such as Postfix or Exim?)',
  EADDRNOTAVAIL: 'the address is not one of this machine\'s (check MAILROOM_SMTP_HOST)',
};

/** An SMTP listener that was asked for could not start; the message says why and what to do. */
export class ListenerError extends Error {}

/**
 * Listens on `port`, or on `unprivilegedPort` when one is given and `port`
 * is refused for want of privilege (a default port below 1024, started by an
 * ordinary user). `portVariable` is the setting of the port, named in the
 * messages as the way to choose it or run without the listener.
 */
export async function listenOn(server: SMTPServer, port: number, host: string, name: string, portVariable: string, logger: Logger,
  unprivilegedPort?: number): Promise<number> {
  const refused = (p: number, err: NodeJS.ErrnoException) =>
    new ListenerError(`the ${name} cannot listen on ${host}:${p} (${err.code}): ${BIND_HINTS[err.code ?? ''] ?? err.message}; or set ${portVariable}=0 to run without it`);
  try {
    return await bind(server, port, host, name, logger);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code !== 'EACCES' || unprivilegedPort === undefined) throw refused(port, e);
    logger.warn({ host, port, instead: unprivilegedPort },
      `${name}: port ${port} needs root or the CAP_NET_BIND_SERVICE capability, so it listens on ${unprivilegedPort} instead; set ${portVariable} to choose its port`);
    return bind(server, unprivilegedPort, host, name, logger).catch((again: NodeJS.ErrnoException) => {
      throw refused(unprivilegedPort, again);
    });
  }
}

function bind(server: SMTPServer, port: number, host: string, name: string, logger: Logger): Promise<number> {
  return new Promise((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(port, host, () => {
      server.server.off('error', reject);
      const bound = (server.server.address() as AddressInfo).port;
      logger.info({ host, port: bound }, `${name} listening`);
      resolve(bound);
    });
  });
}

export function closeServer(server: SMTPServer): Promise<void> {
  return new Promise((resolve) => {
    if (!server.server.listening) return resolve();
    server.close(() => resolve());
  });
}
