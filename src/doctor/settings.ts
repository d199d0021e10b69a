// Checks of the configuration itself: the STARTTLS certificate and the public
// URL that links in mail point at.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Config } from '../config.js';
import { isLoopbackAddress } from '../core/loopback.js';
import { fail, ok, warn, type CheckResult } from './report.js';

/** A certificate expiring sooner than this warns: renewal has failed, or is not set up. */
export const CERT_EXPIRY_WARNING_DAYS = 14;
const DAY_MS = 24 * 3600_000;

const isLoopbackHost = (host: string) => isLoopbackAddress(host.replace(/^\[(.*)\]$/, '$1')) || host.toLowerCase() === 'localhost';

type TlsConfig = Pick<Config, 'tlsCertFile' | 'tlsKeyFile' | 'hostname' | 'smtpHost' | 'smtpPort' | 'submissionPort'>;

export async function checkTls(config: TlsConfig, now: number): Promise<CheckResult[]> {
  const getOne = `set MAILROOM_TLS_CERT and MAILROOM_TLS_KEY to a certificate for ${config.hostname} (e.g. from Let's Encrypt)`;
  if (config.tlsCertFile === null || config.tlsKeyFile === null) {
    const listening = config.smtpPort !== 0 || config.submissionPort !== 0;
    if (listening && !isLoopbackHost(config.smtpHost)) {
      return [warn('tls', 'certificate', `none set: the SMTP listeners on ${config.smtpHost} offer a self-signed certificate (mail stays encrypted, but MTA-STS, DANE and submission clients that check it refuse it)`, getOne)];
    }
    return [ok('tls', 'certificate', 'none set, and no SMTP listener beyond loopback needs one')];
  }
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(await readFile(config.tlsCertFile));
  } catch (err) {
    return [fail('tls', 'certificate', `${config.tlsCertFile} is not a readable PEM certificate: ${(err as Error).message}`, getOne)];
  }
  const checks: CheckResult[] = [];
  try {
    const key = createPrivateKey(await readFile(config.tlsKeyFile));
    checks.push(cert.checkPrivateKey(key)
      ? ok('tls', 'key', `${config.tlsKeyFile} is the certificate's key`)
      : fail('tls', 'key', `${config.tlsKeyFile} is not the key of ${config.tlsCertFile}`, 'set MAILROOM_TLS_KEY to the private key the certificate was issued for'));
  } catch (err) {
    checks.push(fail('tls', 'key', `${config.tlsKeyFile} is not a readable private key: ${(err as Error).message}`, 'set MAILROOM_TLS_KEY to the certificate\'s PEM private key'));
  }
  checks.push(cert.checkHost(config.hostname) !== undefined
    ? ok('tls', 'name', `covers ${config.hostname}`)
    : fail('tls', 'name', `issued for ${cert.subjectAltName ?? cert.subject}, not ${config.hostname}`, getOne));
  checks.push(validity(cert, now, getOne));
  return checks;
}

function validity(cert: X509Certificate, now: number, getOne: string): CheckResult {
  const notAfter = new Date(cert.validTo).getTime();
  const notBefore = new Date(cert.validFrom).getTime();
  const until = new Date(notAfter).toISOString();
  if (now >= notAfter) return fail('tls', 'expiry', `expired on ${until}`, `renew it: ${getOne}`);
  if (now < notBefore) return fail('tls', 'expiry', `not valid before ${new Date(notBefore).toISOString()}`, `check the clock of this machine, or ${getOne}`);
  const days = Math.floor((notAfter - now) / DAY_MS);
  if (notAfter - now < CERT_EXPIRY_WARNING_DAYS * DAY_MS) return warn('tls', 'expiry', `expires in ${days} days, on ${until}`, `renew it: ${getOne}`);
  return ok('tls', 'expiry', `valid until ${until} (${days} days)`);
}

/** Links in mail (tracking, unsubscribe) point at the public URL: recipients must reach it, over HTTPS. */
export function checkPublicUrl(config: Pick<Config, 'publicUrl' | 'httpHost'>): CheckResult[] {
  const url = new URL(config.publicUrl);
  const setIt = 'set MAILROOM_PUBLIC_URL to the https:// address recipients reach this server at (a reverse proxy terminating TLS in front of it)';
  if (isLoopbackHost(url.hostname)) {
    return [warn('public_url', 'public URL', `${config.publicUrl} is this machine: tracking and unsubscribe links in mail do not reach it`, setIt)];
  }
  if (url.protocol !== 'https:' && !isLoopbackHost(config.httpHost)) {
    return [warn('public_url', 'public URL', `${config.publicUrl} is not https, and the HTTP server listens on ${config.httpHost}: links in mail go in clear text`, setIt)];
  }
  return [ok('public_url', 'public URL', `${config.publicUrl}`)];
}
