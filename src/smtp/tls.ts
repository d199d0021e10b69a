import { execFile } from 'node:child_process';
import { createPrivateKey, generateKeyPair, X509Certificate } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from 'pino';

// The certificate the SMTP listeners offer with STARTTLS (RFC 3207). An
// operator's certificate when configured; otherwise a self-signed one made on
// first start and kept in the data dir. Sending MTAs use opportunistic TLS and
// do not check the certificate (RFC 7435), so a self-signed one still keeps
// the mail encrypted in transit; MTA-STS or DANE need a real one.
//
// node:crypto makes the key but cannot issue a certificate, and no declared
// dependency can either, so the certificate comes from the `openssl` command
// when it is installed. Without it the listeners offer no STARTTLS, and say so.

export interface TlsCredentials {
  key: Buffer;
  cert: Buffer;
  /** Where they came from, for the start-up log. */
  source: 'configured' | 'generated';
}

export interface TlsSettings {
  certFile: string | null;
  keyFile: string | null;
  dataDir: string;
  hostname: string;
}

const execFileAsync = promisify(execFile);
const generateKeyPairAsync = promisify(generateKeyPair);
const TLS_DIR = 'tls';
const KEY_FILE = 'smtp-key.pem';
const CERT_FILE = 'smtp-cert.pem';
// Ten years: nobody checks a self-signed certificate's dates, and an expired
// one would make the odd strict client give up on TLS for no gain.
const SELF_SIGNED_DAYS = 3650;
const OPENSSL_TIMEOUT_MS = 15_000;

/** The listeners' certificate and key, or undefined when no certificate can be had (STARTTLS is then not offered). */
export async function loadTlsCredentials(settings: TlsSettings, logger: Logger): Promise<TlsCredentials | undefined> {
  if (settings.certFile && settings.keyFile) {
    const [cert, key] = await Promise.all([readFile(settings.certFile), readFile(settings.keyFile)]);
    checkPair(cert, key);
    return { cert, key, source: 'configured' };
  }
  const dir = join(settings.dataDir, TLS_DIR);
  const keyPath = join(dir, KEY_FILE);
  const certPath = join(dir, CERT_FILE);
  const existing = await readPair(certPath, keyPath);
  if (existing) return { ...existing, source: 'generated' };

  const made = await selfSigned(dir, keyPath, certPath, settings.hostname, logger);
  return made && { ...made, source: 'generated' };
}

function checkPair(cert: Buffer, key: Buffer): void {
  const x509 = new X509Certificate(cert);
  if (!x509.checkPrivateKey(createPrivateKey(key))) throw new Error('The TLS certificate and key do not belong together');
}

async function readPair(certPath: string, keyPath: string): Promise<{ cert: Buffer; key: Buffer } | undefined> {
  try {
    const [cert, key] = await Promise.all([readFile(certPath), readFile(keyPath)]);
    checkPair(cert, key);
    return { cert, key };
  } catch {
    return undefined;
  }
}

async function selfSigned(dir: string, keyPath: string, certPath: string, hostname: string, logger: Logger): Promise<{ cert: Buffer; key: Buffer } | undefined> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // RSA rather than ECDSA: every MTA in service can negotiate it.
  const { privateKey } = await generateKeyPairAsync('rsa', { modulusLength: 2048 });
  const key = Buffer.from(privateKey.export({ type: 'pkcs8', format: 'pem' }));
  // Written under temporary names and renamed, so a crash never leaves a key
  // without its certificate for the next start to trip over.
  const tmpKey = `${keyPath}.${process.pid}.tmp`;
  const tmpCert = `${certPath}.${process.pid}.tmp`;
  await writeFile(tmpKey, key, { mode: 0o600 });
  try {
    const name = hostname.replace(/[^A-Za-z0-9.-]/g, '') || 'localhost';
    await execFileAsync('openssl', [
      'req', '-new', '-x509', '-key', tmpKey, '-out', tmpCert, '-days', String(SELF_SIGNED_DAYS),
      '-subj', `/CN=${name}`, '-addext', `subjectAltName=DNS:${name}`,
    ], { timeout: OPENSSL_TIMEOUT_MS });
    const cert = await readFile(tmpCert);
    checkPair(cert, key);
    await rename(tmpKey, keyPath);
    await rename(tmpCert, certPath);
    logger.info({ cert: certPath }, 'generated a self-signed certificate for SMTP STARTTLS');
    return { cert, key };
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    logger.warn({ err: missing ? undefined : err },
      missing
        ? 'SMTP listeners offer no STARTTLS: no certificate is configured (MAILROOM_TLS_CERT/MAILROOM_TLS_KEY) and the openssl command, needed to make a self-signed one, is not installed'
        : 'SMTP listeners offer no STARTTLS: no certificate is configured and making a self-signed one with openssl failed');
    await Promise.all([rm(tmpKey, { force: true }), rm(tmpCert, { force: true })]);
    return undefined;
  }
}
