import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { loadTlsCredentials } from '../../../src/smtp/tls.js';

const logger = pino({ level: 'silent' });

describe('the SMTP listeners\' certificate', () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'mailroom-tls-'));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('is made once into the data dir and kept', async () => {
    const dataDir = tempDir();
    const first = await loadTlsCredentials({ certFile: null, keyFile: null, dataDir, hostname: 'mx.mailroom.test' }, logger);
    expect(first?.source).toBe('generated');
    const subject = execFileSync('openssl', ['x509', '-noout', '-subject', '-ext', 'subjectAltName', '-in', join(dataDir, 'tls', 'smtp-cert.pem')]).toString();
    expect(subject).toMatch(/CN ?= ?mx\.mailroom\.test/);
    expect(subject).toContain('DNS:mx.mailroom.test');
    const again = await loadTlsCredentials({ certFile: null, keyFile: null, dataDir, hostname: 'mx.mailroom.test' }, logger);
    expect(again?.cert.equals(first!.cert)).toBe(true);
  });

  it('is the configured one when given, and must match its key', async () => {
    const own = tempDir();
    const made = await loadTlsCredentials({ certFile: null, keyFile: null, dataDir: own, hostname: 'own.test' }, logger);
    const certFile = join(own, 'tls', 'smtp-cert.pem');
    const keyFile = join(own, 'tls', 'smtp-key.pem');
    const configured = await loadTlsCredentials({ certFile, keyFile, dataDir: tempDir(), hostname: 'other.test' }, logger);
    expect(configured).toMatchObject({ source: 'configured' });
    expect(configured?.cert.equals(made!.cert)).toBe(true);

    const otherDir = tempDir();
    await loadTlsCredentials({ certFile: null, keyFile: null, dataDir: otherDir, hostname: 'x.test' }, logger);
    const wrongKey = join(otherDir, 'tls', 'smtp-key.pem');
    await expect(loadTlsCredentials({ certFile, keyFile: wrongKey, dataDir: tempDir(), hostname: 'x.test' }, logger)).rejects.toThrow(/do not belong together/);
  });

  it('is made again when the stored one is unreadable', async () => {
    const dataDir = tempDir();
    const first = await loadTlsCredentials({ certFile: null, keyFile: null, dataDir, hostname: 'mx.test' }, logger);
    writeFileSync(join(dataDir, 'tls', 'smtp-cert.pem'), 'not a certificate');
    const second = await loadTlsCredentials({ certFile: null, keyFile: null, dataDir, hostname: 'mx.test' }, logger);
    expect(second?.cert.equals(first!.cert)).toBe(false);
    expect(readFileSync(join(dataDir, 'tls', 'smtp-cert.pem'), 'utf8')).toContain('BEGIN CERTIFICATE');
  });
});

describe('SMTP configuration', () => {
  it('has defaults for receiving', () => {
    expect(loadConfig({})).toMatchObject({
      smtpHost: '127.0.0.1', smtpMaxMessageBytes: 25 * 1024 * 1024, submissionRequireTls: false,
      tlsCertFile: null, tlsKeyFile: null, inboundRetentionDays: 30,
    });
  });

  it('wants a certificate and its key together, and sane limits', () => {
    expect(() => loadConfig({ MAILROOM_TLS_CERT: '/etc/cert.pem' })).toThrow(/MAILROOM_TLS_CERT and MAILROOM_TLS_KEY go together/);
    expect(() => loadConfig({ MAILROOM_SMTP_MAX_MESSAGE_BYTES: '1000' })).toThrow(/MAILROOM_SMTP_MAX_MESSAGE_BYTES/);
    expect(() => loadConfig({ MAILROOM_INBOUND_RETENTION_DAYS: '-1' })).toThrow(/MAILROOM_INBOUND_RETENTION_DAYS/);
    expect(loadConfig({ MAILROOM_INBOUND_RETENTION_DAYS: '0', MAILROOM_SUBMISSION_REQUIRE_TLS: 'yes' }))
      .toMatchObject({ inboundRetentionDays: 0, submissionRequireTls: true });
  });
});
