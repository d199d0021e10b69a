import type { Logger } from 'pino';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import { AppError } from '../core/errors.js';
import {
  answerMailFrom, ClientLeftMidMessage, closeServer, listenOn, MAIL_PARAMETERS, readMessage, replyForError, sharedServerOptions, smtpError, unknownParameters, type SmtpListener,
} from './listener.js';
import { normaliseLineEndings } from './message-data.js';
import { emailFromSubmission, type AsWritten, type SubmittedEmail } from './submitted-message.js';
import type { TlsCredentials } from './tls.js';
import { isLoopbackAddress } from '../core/loopback.js';
import { isValidAddress } from '../core/mail-address.js';
import { missingScope, type FineScope } from '../core/scopes.js';

// Message submission (RFC 6409): any program that speaks SMTP can send
// through Mailroom with an API key as the password (RFC 4954 AUTH PLAIN or
// LOGIN; the user name is not looked at, "apikey" by convention). Each
// message goes through the same checks, limits and events as POST /v1/emails.
//
// Credentials only travel encrypted: AUTH is offered after STARTTLS
// (RFC 3207), except to loopback clients, which may authenticate in clear
// unless MAILROOM_SUBMISSION_REQUIRE_TLS is set (nothing on the wire leaves
// the machine). Without a certificate, only loopback clients can submit.

/** Who a key belongs to, as far as submission needs to know. */
export interface Submitter {
  workspaceId: string;
  granted: ReadonlySet<string>;
}

export interface SubmissionPort<U extends Submitter> {
  /**
   * The most recipients one email may have: a RCPT past it gets 452, and the
   * client sends the rest in another transaction (RFC 5321 section 4.5.3.1.10),
   * rather than the whole message being refused after its DATA.
   */
  maxRecipients: number;
  /** The key's holder, or undefined when the key is not valid. */
  authenticate(token: string): Promise<U | undefined>;
  /** Sends like POST /v1/emails, keeping what the message has `asWritten`; throws the AppError the API would answer with. */
  send(user: U, email: SubmittedEmail, asWritten: AsWritten): Promise<{ id: string }>;
}

export interface SubmissionListenerOptions {
  hostname: string;
  host: string;
  port: number;
  maxMessageBytes: number;
  tls: TlsCredentials | undefined;
  requireTlsOnLoopback: boolean;
  logger: Logger;
  /** Where to listen when `port`, left at its default, needs a privilege this process lacks. */
  unprivilegedPort?: number;
}

const MAX_CLIENTS = 500;
/**
 * With AUTH advertised, a client may name the message's submitter in MAIL
 * FROM (RFC 4954 section 5, `AUTH=<>`); it is taken and not relied on, as
 * the key says who sends.
 */
const SUBMISSION_MAIL_PARAMETERS = [...MAIL_PARAMETERS, 'AUTH'];
/**
 * Failed AUTH attempts a session may make; the last is answered 421 and the
 * connection closed, as Postfix does past its error limit: a client with a
 * wrong key in its configuration stops there instead of trying for ever.
 */
export const MAX_FAILED_AUTHS = 3;
/** The scope a key needs, as for POST /v1/emails. */
export const SEND_SCOPE: FineScope = 'emails:send';

export function createSubmissionListener<U extends Submitter>(port: SubmissionPort<U>, options: SubmissionListenerOptions): SmtpListener {
  const { logger, maxMessageBytes } = options;
  const clearTextAuth = (session: SMTPServerSession) => isLoopbackAddress(session.remoteAddress) && !options.requireTlsOnLoopback;
  const user = (session: SMTPServerSession) => session.user as U | undefined;
  const failedAuths = new WeakMap<SMTPServerSession, number>();

  const server = new SMTPServer({
    ...sharedServerOptions({
      hostname: options.hostname, banner: 'Mailroom submission', maxMessageBytes, maxClients: MAX_CLIENTS, maxRecipients: port.maxRecipients, tls: options.tls,
    }),
    authMethods: ['PLAIN', 'LOGIN'],
    // The policy above is applied per session (onConnect, onSecure); the
    // server-wide switch only lets it through.
    allowInsecureAuth: true,
    disabledCommands: options.tls ? [] : ['STARTTLS'],
    authRequiredMessage: '5.7.0 Authentication required: AUTH with an API key as the password',

    onClose(session) {
      logger.info({ session: session.id, remote_ip: session.remoteAddress, workspace_id: user(session)?.workspaceId, messages: session.transaction - 1 }, 'submission session closed');
    },

    onConnect(session, callback) {
      // Before TLS, a client that may not authenticate in clear is not offered AUTH at all.
      if (!clearTextAuth(session)) session.disabledCommands = options.tls ? ['AUTH'] : ['AUTH', 'STARTTLS'];
      callback();
    },

    onSecure(_socket, session, callback) {
      session.disabledCommands = [];
      callback();
    },

    onAuth(auth, session, callback) {
      if (!session.secure && !clearTextAuth(session)) return callback(smtpError(538, '5.7.11', 'Encryption required: use STARTTLS first'));
      port.authenticate(auth.password ?? '').then(
        (found) => {
          if (found) return callback(null, { user: found });
          logger.warn({ session: session.id, remote_ip: session.remoteAddress, user: auth.username }, 'submission: refused an API key that is not valid');
          const failed = (failedAuths.get(session) ?? 0) + 1;
          failedAuths.set(session, failed);
          if (failed >= MAX_FAILED_AUTHS) return callback(smtpError(421, '4.7.0', `Too many failed authentication attempts (${failed}): closing the connection`));
          return callback(smtpError(535, '5.7.8', 'Authentication credentials invalid: the password must be a valid API key'));
        },
        (err: unknown) => {
          logger.error({ err }, 'submission: key check failed');
          callback(smtpError(454, '4.7.0', 'Temporary authentication failure'));
        },
      );
    },

    onMailFrom(address, session, callback) {
      const u = user(session);
      // AUTH is disabled for some sessions, and smtp-server only asks for it where it is enabled.
      if (!u) return callback(smtpError(530, '5.7.0', 'Authentication required: AUTH with an API key as the password'));
      const refusal = missingScope(u.granted, SEND_SCOPE, 'to send');
      if (refusal) return callback(replyForError(refusal));
      answerMailFrom(callback, unknownParameters('MAIL FROM', address, SUBMISSION_MAIL_PARAMETERS));
    },

    onRcptTo(address, _session, callback) {
      // No extension advertised here (DSN is not) has a RCPT TO parameter.
      const unknown = unknownParameters('RCPT TO', address, []);
      if (unknown) return callback(unknown);
      // Refused here, one recipient alone, rather than by the API after DATA, which would fail the message for all of them.
      if (!isValidAddress(address.address, 'dot-atom or quoted')) {
        return callback(smtpError(553, '5.1.3', `Bad destination mailbox address syntax: <${address.address}> is not an address mail can be sent to`));
      }
      callback();
    },

    onData(stream, session, callback) {
      readMessage(stream, maxMessageBytes)
        .then(async ({ data, refusal }) => {
          if (!data) return callback(refusal);
          const u = user(session)!;
          const envelope = {
            mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            rcptTo: session.envelope.rcptTo.map((r) => r.address),
          };
          const { email, asWritten } = await emailFromSubmission(normaliseLineEndings(data), envelope);
          const sent = await port.send(u, email, asWritten);
          callback(null, `2.0.0 Ok: queued as ${sent.id}`);
        })
        .catch((err: unknown) => {
          if (err instanceof ClientLeftMidMessage) return logger.info({ session: session.id, remote_ip: session.remoteAddress }, 'submission: the client left before the end of its message');
          if (!(err instanceof AppError) || err.status >= 500) logger.error({ err, session: session.id }, 'submission: could not send a message');
          callback(replyForError(err));
        });
    },
  });
  server.on('error', (err: NodeJS.ErrnoException) => {
    if (err.syscall !== 'listen') logger.debug({ err }, 'submission: connection error');
  });

  return {
    listen: () => listenOn(server, options.port, options.host, 'SMTP submission listener', 'MAILROOM_SUBMISSION_PORT', logger, options.unprivilegedPort),
    close: () => closeServer(server),
  };
}
