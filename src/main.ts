import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { systemClock, type Clock } from './core/clock.js';
import { cursorCodec } from './core/cursors.js';
import { openKeyring, type Keyring } from './keyring.js';
import { createLogger } from './logger.js';
import { openStore, type Store } from './store/db.js';
import { loadContract } from './http/contract.js';
import { createApp, routedOperations } from './http/app.js';
import { rateLimiter } from './http/rate-limit.js';
import { idempotency } from './http/idempotency.js';
import { createScheduler, type Scheduler } from './scheduler/index.js';
import { workspacesService, type WorkspacesService } from './workspaces/index.js';
import { apiKeysRoutes, apiKeysService, type ApiKeysService } from './api-keys/index.js';

// The composition root: config -> store -> services -> HTTP (and, as they
// land, SMTP listeners and engines). Nothing else constructs singletons.

export interface Services {
  store: Store;
  keyring: Keyring;
  workspaces: WorkspacesService;
  apiKeys: ApiKeysService;
}

export interface Mailroom {
  services: Services;
  scheduler: Scheduler;
  httpUrl: string;
  /** Operation ids the HTTP routers serve (a contract test compares them with schema/). */
  routedOperations: Set<string>;
  close(): Promise<void>;
}

export interface StartOptions {
  clock?: Clock;
  logger?: Logger;
}

/** Opens the store (migrating it) and builds the services; used by serve and by the CLI commands. */
export async function openServices(config: Config, clock: Clock = systemClock): Promise<Services> {
  const store = openStore(config.databaseUrl);
  await store.migrate();
  const keyring = openKeyring(config.dataDir, config.secret);
  return {
    store,
    keyring,
    workspaces: workspacesService({ store, clock, plans: config.plans, defaultPlan: config.defaultPlan }),
    apiKeys: apiKeysService({ store, clock, pepper: keyring.apiKeyPepper }),
  };
}

export async function startMailroom(config: Config, options: StartOptions = {}): Promise<Mailroom> {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger(config.logLevel);
  const services = await openServices(config, clock);
  const { store, keyring } = services;

  const idem = idempotency({ store, clock, sealKey: keyring.sealKey });
  const scheduler = createScheduler({ store, clock, logger });
  scheduler.register({ name: 'purge-idempotency-keys', everyMs: 3600_000, firstRunAfterMs: 3600_000, run: async () => void (await idem.purgeExpired()) });

  const httpDeps = {
    contract: loadContract(),
    apiKeys: services.apiKeys,
    rateLimiter: rateLimiter(clock),
    idempotency: idem,
    cursors: cursorCodec(keyring.cursorKey),
    clock,
    logger,
    plan: (name: string) => services.workspaces.plan(name),
  };
  const routers = [apiKeysRoutes(services.apiKeys)];
  const app = createApp(httpDeps, routers);

  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(config.httpPort, config.httpHost, () => resolve(s));
    s.once('error', reject);
  });
  // Slow clients must not pin sockets forever.
  server.requestTimeout = 120_000;
  server.headersTimeout = 30_000;
  const { port } = server.address() as AddressInfo;
  const host = config.httpHost.includes(':') ? `[${config.httpHost}]` : config.httpHost;
  const httpUrl = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  logger.info({ url: httpUrl }, 'HTTP API listening');

  // Background engines run until `stopping` aborts; each one releases its
  // in-flight work (or lets its lease lapse) when it sees the signal.
  const stopping = new AbortController();
  const engines: Promise<void>[] = [scheduler.run(stopping.signal)];

  let closing: Promise<void> | undefined;
  return {
    services,
    scheduler,
    httpUrl,
    routedOperations: routedOperations(httpDeps, routers),
    close() {
      closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        stopping.abort();
        await Promise.allSettled(engines);
        await store.close();
      })();
      return closing;
    },
  };
}
