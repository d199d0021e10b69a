import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Store } from './db.js';

// Every node on one store must derive its keys from the same master secret:
// a node with another secret would mint API keys, cursors, tracking and
// unsubscribe links and seal DKIM keys that the others reject or cannot
// open. The store keeps a check value of the secret it was set up under (an
// HMAC of a fixed text, which says nothing of the secret), written by the
// first start; a node whose secret gives another value refuses to start.

export class SecretMismatchError extends Error {}

const SETTING = 'master_secret_check';

/** `checkKey` is the keyring's key for this check. */
export async function checkMasterSecret(store: Store, checkKey: Buffer): Promise<void> {
  const mine = createHmac('sha256', checkKey).update('mailroom store secret check').digest('base64url');
  const stored = await store.write(async (tx) => {
    await tx.insertInto('store_settings').values({ name: SETTING, value: mine })
      .onConflict((oc) => oc.column('name').doNothing()).execute();
    return (await tx.selectFrom('store_settings').select('value').where('name', '=', SETTING).executeTakeFirstOrThrow()).value;
  });
  const [a, b] = [Buffer.from(stored), Buffer.from(mine)];
  if (a.length !== b.length || !timingSafeEqual(a, b)) {
    throw new SecretMismatchError('This database was set up under another master secret. Every node on one database must share it: '
      + 'set the same MAILROOM_SECRET on all of them (or copy the first node\'s DATA_DIR/master.key). Starting with another one '
      + 'would make API keys, links and sealed DKIM keys that the other nodes reject.');
  }
}
