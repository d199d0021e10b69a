import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Clock } from '../core/clock.js';
import { isLoopbackAddress } from '../core/loopback.js';
import { createMxListener, type MxPort } from './mx.listener.js';
import { createSubmissionListener, type SubmissionPort, type Submitter } from './submission.listener.js';
import { loadTlsCredentials, type TlsCredentials } from './tls.js';
import { ListenerError, type SmtpListener } from './listener.js';

export { createMxListener, type MxPort, type RecipientRefusal, type IncomingMessage } from './mx.listener.js';
export { createSubmissionListener, type SubmissionPort, type Submitter } from './submission.listener.js';
export { submissionPipeline, type KeyHolder } from './submission.pipeline.js';
export { ListenerError } from './listener.js';

export interface SmtpListeners {
  /** Bound ports; undefined for a listener that is off or could not listen. */
  mxPort: number | undefined;
  submissionPort: number | undefined;
  close(): Promise<void>;
}

/**
 * Starts the listeners whose port is not 0. One that cannot start (a port
 * taken or not allowed), or a certificate given that cannot be used, throws
 * a ListenerError saying why, after closing what had started: a server whose
 * mail would silently go nowhere should not come up.
 */
export async function startSmtpListeners<U extends Submitter>(
  config: Pick<Config, 'smtpPort' | 'submissionPort' | 'unprivilegedSmtpPort' | 'unprivilegedSubmissionPort' | 'smtpHost' | 'smtpMaxMessageBytes' | 'submissionRequireTls'
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
  const loopbackOnly = isLoopbackAddress(config.smtpHost) || config.smtpHost.toLowerCase() === 'localhost';
  if (loopbackOnly && config.tlsCertFile === null && !config.submissionRequireTls) {
    logger.info({ host: config.smtpHost }, 'SMTP listeners on loopback offer no STARTTLS (set MAILROOM_TLS_CERT and MAILROOM_TLS_KEY to offer it)');
  } else {
    try {
      tls = await loadTlsCredentials({ certFile: config.tlsCertFile, keyFile: config.tlsKeyFile, dataDir: config.dataDir, hostname: config.hostname }, logger);
    } catch (err) {
      if (config.tlsCertFile !== null) {
        throw new ListenerError(`the STARTTLS certificate or key cannot be used (MAILROOM_TLS_CERT ${config.tlsCertFile}, MAILROOM_TLS_KEY ${config.tlsKeyFile}): ${(err as Error).message}`);
      }
      // The self-signed one could not be made (an unwritable data dir): mail still flows, without STARTTLS.
      logger.error({ err }, 'SMTP listeners offer no STARTTLS: no self-signed certificate could be made');
    }
  }
  const common = { hostname: config.hostname, host: config.smtpHost, maxMessageBytes: config.smtpMaxMessageBytes, tls, logger };
  const unprivileged = (port: number | null) => (port === null ? {} : { unprivilegedPort: port });
  const started: SmtpListener[] = [];
  const start = async (listener: SmtpListener) => {
    try {
      const port = await listener.listen();
      started.push(listener);
      return port;
    } catch (err) {
      await Promise.all(started.map((l) => l.close()));
      throw err;
    }
  };
  const mxPort = config.smtpPort === 0 ? undefined
    : await start(createMxListener(ports.mx, { ...common, port: config.smtpPort, ...unprivileged(config.unprivilegedSmtpPort), clock: deps.clock }));
  const submissionPort = config.submissionPort === 0 ? undefined
    : await start(createSubmissionListener(ports.submission, { ...common, port: config.submissionPort, ...unprivileged(config.unprivilegedSubmissionPort), requireTlsOnLoopback: config.submissionRequireTls }));
  return {
    mxPort,
    submissionPort,
    close: async () => void (await Promise.all(started.map((l) => l.close()))),
  };
}
