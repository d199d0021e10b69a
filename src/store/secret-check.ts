import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Db, Store, Tx } from './db.js';
import { readSetting, writeSetting } from './settings.js';

// Every node on one store must derive its keys from the same master secret:
// a node with another secret would mint API keys, cursors, tracking and
// unsubscribe links and seal DKIM keys that the others reject or cannot
// open. The store keeps a check value of the secret it was set up under (an
// HMAC of a fixed text, which says nothing of the secret), written by the
// first start; a node whose secret gives another value refuses to start.

export class SecretMismatchError extends Error {}

/** The store_settings row that holds the check value. */
export const SECRET_CHECK_SETTING = 'master_secret_check';

export const SECRET_MISMATCH_FIX = 'set the same MAILROOM_SECRET on every node of one database (or copy the first node\'s DATA_DIR/master.key)';

/** The check value of the secret whose keyring's check key is `checkKey`. */
const checkValueOf = (checkKey: Buffer) => createHmac('sha256', checkKey).update('mailroom store secret check').digest('base64url');

/** The check value the store was set up under; undefined before any node has started on it. */
export async function storedSecretCheck(db: Db | Tx): Promise<string | undefined> {
  return readSetting(db, SECRET_CHECK_SETTING);
}

/** Whether `stored` is the check value of the secret behind `checkKey`, compared in constant time. */
export function isSecretOf(stored: string, checkKey: Buffer): boolean {
  const [a, b] = [Buffer.from(stored), Buffer.from(checkValueOf(checkKey))];
  return a.length === b.length && timingSafeEqual(a, b);
}

/** `checkKey` is the keyring's key for this check. Records the check value on the store's first start. */
export async function checkMasterSecret(store: Store, checkKey: Buffer): Promise<void> {
  const stored = await store.write(async (tx) => {
    await writeSetting(tx, SECRET_CHECK_SETTING, checkValueOf(checkKey), { keep: true });
    return (await storedSecretCheck(tx))!;
  });
  if (!isSecretOf(stored, checkKey)) {
    throw new SecretMismatchError(`This database was set up under another master secret: ${SECRET_MISMATCH_FIX}. `
      + 'Starting with another one would make API keys, links and sealed DKIM keys that the other nodes reject.');
  }
}
