import { hkdfSync, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

// Every secret the process needs is derived from one master secret, each for a
// single purpose (HKDF with a label), so a leaked cursor key cannot forge
// tracking links and rotating one purpose never means re-keying another.

export interface Keyring {
  apiKeyPepper: Buffer;
  cursorKey: Buffer;
  /** Seals DKIM private keys and webhook secrets at rest. */
  sealKey: Buffer;
  trackingKey: Buffer;
  unsubscribeKey: Buffer;
  /** Tags the recipient in a return path, so a bounce or complaint for it cannot be made up (inbound/return-path.ts). */
  returnPathKey: Buffer;
  /** Checks that every node on one store shares the master secret (store/secret-check.ts). */
  storeCheckKey: Buffer;
}

export function deriveKeyring(master: Buffer): Keyring {
  const derive = (label: string) => Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), `mailroom:${label}`, 32));
  return {
    apiKeyPepper: derive('api-key'),
    cursorKey: derive('cursor'),
    sealKey: derive('seal'),
    trackingKey: derive('tracking'),
    unsubscribeKey: derive('unsubscribe'),
    returnPathKey: derive('return-path'),
    storeCheckKey: derive('store-check'),
  };
}

/** The master secret from config, or the one in DATA_DIR/master.key (created on first use, mode 0600). */
export function openKeyring(dataDir: string, configuredSecret: string | null): Keyring {
  if (!configuredSecret && !existsSync(masterKeyFile(dataDir))) {
    mkdirSync(dataDir, { recursive: true });
    try {
      // 'wx' fails if another process created it first; then we read theirs.
      writeFileSync(masterKeyFile(dataDir), randomBytes(32).toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  return existingKeyring(dataDir, configuredSecret)!;
}

/** The keyring of the master secret this node has, without making one: undefined when there is none yet. */
export function existingKeyring(dataDir: string, configuredSecret: string | null): Keyring | undefined {
  if (configuredSecret) return deriveKeyring(Buffer.from(configuredSecret, 'utf8'));
  const file = masterKeyFile(dataDir);
  if (!existsSync(file)) return undefined;
  const master = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (master.length < 32) throw new Error(`${file} does not hold a 32-byte base64 secret`);
  return deriveKeyring(master);
}

export const masterKeyFile = (dataDir: string) => join(dataDir, 'master.key');
