import type { Config } from './config.js';
import { systemClock, type Clock } from './core/clock.js';
import { openKeyring, type Keyring } from './keyring.js';
import { openStore, type Store } from './store/db.js';
import { checkMasterSecret } from './store/secret-check.js';
import { workspacesService, type WorkspacesService } from './workspaces/workspaces.service.js';
import { apiKeysService, type ApiKeysService } from './api-keys/api-keys.service.js';
import { queueService, type QueueService } from './queue/queue.service.js';
import { destinationSummaries, holdDestination, releaseDestination, retryNow, waitingItems } from './delivery/queue.repo.js';
import { emailExists } from './emails/emails.repo.js';

// The part of the composition root that the CLI's commands on the store
// need: the store, migrated and checked against the master secret, with
// workspaces, API keys and the queue over it. It imports no HTTP, SMTP,
// MIME or templating code, so a command starts in about half the time the
// whole application takes to load; main.ts builds the rest on top of it.

export interface StoreServices {
  store: Store;
  keyring: Keyring;
  workspaces: WorkspacesService;
  apiKeys: ApiKeysService;
  /** The outbound queue as operators steer it (API, dashboard, command line); `onRetry` hands it this process's
   * delivery worker, once one runs, to wake for rows made due. */
  queue: QueueService & { onRetry(wake: (domain?: string) => void): void };
}

export async function openStoreServices(config: Config, clock: Clock = systemClock): Promise<StoreServices> {
  const store = openStore(config.databaseUrl, {
    poolSize: config.databasePoolSize,
    preparedStatements: config.databasePreparedStatements,
    postgresTimeouts: { connectMs: config.databaseConnectTimeout * 1000, queryMs: config.databaseQueryTimeout * 1000 },
  });
  await store.migrate();
  const keyring = openKeyring(config.dataDir, config.secret);
  await checkMasterSecret(store, keyring.storeCheckKey).catch(async (err: unknown) => {
    await store.close();
    throw err;
  });
  // Rows retried or released are due at once; a delivery worker of this process, once running, is told so.
  let wakeDelivery: (domain?: string) => void = () => undefined;
  const queue = queueService({
    clock,
    queue: {
      summaries: (ws, now) => destinationSummaries(store.db, ws, now),
      items: (ws, f, page, now) => waitingItems(store.db, ws, f, page, now),
      retry: (ws, f, now) => store.write((tx) => retryNow(tx, ws, f, now)),
      hold: (ws, domain, now) => store.write((tx) => holdDestination(tx, ws, domain, now)),
      release: (ws, domain, now) => store.write((tx) => releaseDestination(tx, ws, domain, now)),
      wake: (domain) => wakeDelivery(domain),
      emailExists: (ws, id) => emailExists(store.db, ws, id),
    },
  });
  return {
    store,
    keyring,
    workspaces: workspacesService({ store, clock, plans: config.plans, defaultPlan: config.defaultPlan }),
    apiKeys: apiKeysService({ store, clock, pepper: keyring.apiKeyPepper }),
    queue: { ...queue, onRetry: (wake) => void (wakeDelivery = wake) },
  };
}
