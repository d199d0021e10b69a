import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Clock } from '../core/clock.js';
import { createMxListener, type MxPort } from './mx.listener.js';
import { createSubmissionListener, type SubmissionPort, type Submitter } from './submission.listener.js';
import { loadTlsCredentials, type TlsCredentials } from './tls.js';
import type { SmtpListener } from './listener.js';

export { createMxListener, type MxPort, type RecipientRefusal, type IncomingMessage } from './mx.listener.js';
export { createSubmissionListener, type SubmissionPort, type Submitter } from './submission.listener.js';
export { submissionPipeline, type KeyHolder } from './submission.pipeline.js';

export interface SmtpListeners {
  /** Bound ports; undefined for a listener that is off or could not listen. */
  mxPort: number | undefined;
  submissionPort: number | undefined;
  close(): Promise<void>;
}

/**
 * Starts the listeners whose port is not 0. A listener that cannot start (a
 * port taken or not allowed, an unreadable certificate) is logged and left
 * off; it never stops the process, so the HTTP API stays up.
 */
export async function startSmtpListeners<U extends Submitter>(
  config: Pick<Config, 'smtpPort' | 'submissionPort' | 'smtpHost' | 'smtpMaxMessageBytes' | 'submissionRequireTls'
    | 'tlsCertFile' | 'tlsKeyFile' | 'dataDir' | 'hostname'>,
  ports: { mx: MxPort; submission: SubmissionPort<U> },
  deps: { clock: Clock; logger: Logger },
): Promise<SmtpListeners> {
  const { logger } = deps;
  if (config.smtpPort === 0 && config.submissionPort === 0) return { mxPort: undefined, submissionPort: undefined, close: async () => {} };

  let tls: TlsCredentials | undefined;
  // Listening on loopback only, with no certificate of its own, Mailroom offers
  // no STARTTLS, as a local mail catcher does: a self-signed certificate is one
  // no client can check, and mail clients' defaults (nodemailer's among them)
  // refuse it. A certificate given, another address, or TLS required: STARTTLS.
  const loopbackOnly = /^(127\.|::1$|localhost$)/i.test(config.smtpHost);
  if (loopbackOnly && config.tlsCertFile === null && !config.submissionRequireTls) {
    logger.info({ host: config.smtpHost }, 'SMTP listeners on loopback offer no STARTTLS (set MAILROOM_TLS_CERT and MAILROOM_TLS_KEY to offer it)');
  } else {
    try {
      tls = await loadTlsCredentials({ certFile: config.tlsCertFile, keyFile: config.tlsKeyFile, dataDir: config.dataDir, hostname: config.hostname }, logger);
    } catch (err) {
      logger.error({ err, cert: config.tlsCertFile, key: config.tlsKeyFile }, 'SMTP listeners offer no STARTTLS: the configured certificate or key could not be used');
    }
  }
  const common = { hostname: config.hostname, host: config.smtpHost, maxMessageBytes: config.smtpMaxMessageBytes, tls, logger };
  const started: SmtpListener[] = [];
  const start = async (listener: SmtpListener) => {
    const port = await listener.listen();
    if (port !== undefined) started.push(listener);
    return port;
  };
  const mxPort = config.smtpPort === 0 ? undefined
    : await start(createMxListener(ports.mx, { ...common, port: config.smtpPort, clock: deps.clock }));
  const submissionPort = config.submissionPort === 0 ? undefined
    : await start(createSubmissionListener(ports.submission, { ...common, port: config.submissionPort, requireTlsOnLoopback: config.submissionRequireTls }));
  return {
    mxPort,
    submissionPort,
    close: async () => void (await Promise.all(started.map((l) => l.close()))),
  };
}
