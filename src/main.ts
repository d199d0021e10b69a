import { promises as dnsPromises } from 'node:dns';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { systemClock, type Clock } from './core/clock.js';
import { AppError } from './core/errors.js';
import { cursorCodec } from './core/cursors.js';
import { openStoreServices, type StoreServices } from './store-services.js';
import { createLogger } from './logger.js';
import { followerBehind, type Follower } from './store/event-log.js';
import { loadContract } from './contract/contract.js';
import { answerClientError, createApp, routedOperations } from './http/app.js';
import type { Kysely } from 'kysely';
import { rateLimiter } from './core/rate-limit.js';
import { sharedRateLimiter } from './workspaces/shared-rate-limit.js';
import { isPostgres } from './store/schema-helpers.js';
import { idempotency } from './http/idempotency.js';
import { createScheduler, type Scheduler } from './scheduler/index.js';
import { retentionService } from './retention/index.js';
import { apiKeysRoutes } from './api-keys/index.js';
import {
  domainHasUnsentEmails, domainsRoutes, domainsService, trackingTargetFor, RECHECK_TASK_EVERY_MS, type DomainsService,
} from './domains/index.js';
import { tagsRoutes, tagsService, type TagsService } from './tags/index.js';
import { suppressionsRoutes, suppressionsService, type SuppressionsService } from './suppressions/index.js';
import { audiencePage, contactsRoutes, contactsService, countAudience, lastContactPos, type ContactsService } from './contacts/index.js';
import { unsubscribeLinks, unsubscribeRoutes, type UnsubscribeLinks } from './unsubscribe/index.js';
import { attachmentsRoutes, attachmentsService, type AttachmentsService } from './attachments/index.js';
import { trackingRoutes, trackingService, type TrackingService } from './tracking/index.js';
import { outboundEmails, emailsRoutes, emailsService, MAX_RECIPIENTS, type EmailsService } from './emails/index.js';
import { DEFAULT_MAX_LIFETIME_MS, DkimSigner, SmtpPool, cachingMxResolver, deliverToDomain, deliverViaRelay, type DomainDelivery } from './delivery/index.js';
import { createDeliveryWorker, type DeliveryWorker } from './delivery/delivery.worker.js';
import { mailauthResolver } from './domains/mailauth-resolver.js';
import { cachedResolver, inboundRoutes, inboundService, ParsePool, postmasterMaildir, type InboundService } from './inbound/index.js';
import { startSmtpListeners, submissionPipeline } from './smtp/index.js';
import { eventsRoutes, eventsService, type EventsService } from './events/index.js';
import { createDispatcher, resolverLookup, webhooksRoutes, webhooksService, type Dispatcher, type WebhooksService } from './webhooks/index.js';
import { analyticsRoutes, analyticsService, type AnalyticsService } from './analytics/index.js';
import { dashboardRoutes, rootRedirect } from './dashboard/index.js';
import { healthRoutes, type Readiness } from './health/health.routes.js';
import { createMetrics } from './metrics/metrics.js';
import { metricsRoutes } from './metrics/metrics.routes.js';
import { queueDepth } from './delivery/queue.repo.js';
import { queueRoutes } from './queue/index.js';
import { providerForMx } from './delivery/provider.js';
import { sinkMessagesFor } from './delivery/sink.js';
import { templatesRoutes, templatesService, type TemplatesService } from './templates/index.js';
import { broadcastsRoutes, broadcastsService, unfinishedBroadcastUsing, type BroadcastsService } from './broadcasts/index.js';
import { runBroadcastSender } from './engines/broadcast-sender.js';
import { runDuePoller } from './engines/due-poller.js';
import { runInboundProcessor } from './engines/inbound-processor.js';
import { newLeaseOwner } from './core/lease-owner.js';

// The composition root: config -> store -> services -> HTTP (and, as they
// land, SMTP listeners and engines). Nothing else constructs singletons.

export interface Services extends StoreServices {
  domains: DomainsService;
  tags: TagsService;
  suppressions: SuppressionsService;
  contacts: ContactsService;
  /** Signed unsubscribe URLs and the RFC 8058 headers senders add. */
  unsubscribe: UnsubscribeLinks;
  attachments: AttachmentsService;
  templates: TemplatesService;
  emails: EmailsService;
  broadcasts: BroadcastsService;
  events: EventsService;
  webhooks: WebhooksService;
  /** The webhooks engine (tests call drain()). */
  webhookDispatcher: Dispatcher;
  analytics: AnalyticsService;
  inbound: InboundService;
  tracking: TrackingService;
}

/** The background engines every node runs; /readyz reports one that is not running. */
const ENGINE_NAMES = ['scheduler', 'delivery worker', 'due poller', 'broadcast sender', 'inbound processor', 'webhook dispatcher'] as const;
type EngineName = (typeof ENGINE_NAMES)[number];
/**
 * /readyz gives the store this long, in all, to commit a write and list its
 * migrations: a frozen database then reads as a 503 well within the 5 s a
 * health check waits (deploy/Dockerfile), not as a check that timed out.
 */
const READINESS_STORE_TIMEOUT_MS = 2_000;

export interface Mailroom {
  services: Services;
  scheduler: Scheduler;
  httpUrl: string;
  /** Operation ids the HTTP routers serve (a contract test compares them with schema/). */
  routedOperations: Set<string>;
  /** The outbound queue worker (tests with a manual clock call drain()). */
  delivery: DeliveryWorker;
  /** Ports the SMTP listeners are bound to; undefined when off or not started (logged). */
  smtp: { mxPort: number | undefined; submissionPort: number | undefined };
  close(): Promise<void>;
}

export interface StartOptions {
  clock?: Clock;
  logger?: Logger;
}

/** Opens the store (migrating it) and builds the services on it. */
export async function openServices(config: Config, clock: Clock = systemClock, logger: Logger = createLogger(config.logLevel)): Promise<Services> {
  const storeServices = await openStoreServices(config, clock);
  const { store, keyring, workspaces } = storeServices;
  // Lookups answer within the timeout or count as temporary failures.
  const dns = new dnsPromises.Resolver({ timeout: 2_000, tries: 2 });
  if (config.dnsServers.length > 0) dns.setServers(config.dnsServers);
  const tags = tagsService({
    store, clock,
    broadcastUsing: (tx, ws, tagId) => unfinishedBroadcastUsing(tx, ws, (b) => [...b.audience.tag_ids, ...b.audience.exclude_tag_ids].includes(tagId)),
  });
  const unsubscribe = unsubscribeLinks(keyring.unsubscribeKey, config.publicUrl);
  const suppressions = suppressionsService({ store, clock });
  const domains = domainsService({
    store, clock, logger, sealKey: keyring.sealKey, dns,
    mxHost: config.hostname, trackingTarget: trackingTargetFor(config.publicUrl, config.hostname),
    hasPendingEmails: (ws, domainId) => domainHasUnsentEmails(store.db, ws, domainId),
  });
  const attachments = attachmentsService({ store, clock });
  const events = eventsService({ store, clock });
  const contacts = contactsService({ store, clock, tags, suppressions });
  const templates = templatesService({
    store, clock, contacts: (ws, emails) => contacts.findByEmails(ws, emails),
    broadcastUsing: (tx, ws, refs) => unfinishedBroadcastUsing(tx, ws, (b) => b.templateRef !== null && refs.includes(b.templateRef)),
  });
  // Webhook hosts resolve through MAILROOM_DNS_SERVERS when set, else as the system does (hosts file included).
  const webhookResolver = new dnsPromises.Resolver({ timeout: 5_000, tries: 2 });
  if (config.dnsServers.length > 0) webhookResolver.setServers(config.dnsServers);
  const webhookDispatcher = createDispatcher({
    store, clock, logger, sealKey: keyring.sealKey, allowPrivate: config.webhookAllowPrivate,
    resolveHost: config.dnsServers.length > 0 ? resolverLookup(webhookResolver) : (host) => dnsPromises.lookup(host, { all: true, verbatim: true }),
    readEventsAfter: (afterPos, limit) => events.readAfter(afterPos, limit),
    lastEventPos: () => events.lastPos(),
  });
  const emails = emailsService({
    unsubscribeHeaders: (ws, address) => unsubscribe.unsubscribeHeaders(ws, address),
    unsubscribeUrl: (ws, address) => unsubscribe.url(ws, address), templates,
    store, clock, senders: domains.senders(), suppressions, attachments, plan: (name) => workspaces.plan(name),
    sendDelaySeconds: config.sendDelaySeconds, deliveryLifetimeMs: DEFAULT_MAX_LIFETIME_MS, liveFromAnyDomain: config.delivery === 'sink',
    keptMessage: async (emailId) => (await sinkMessagesFor(store.db, emailId))[0]?.raw,
  });
  return {
    ...storeServices,
    inbound: inboundService({
      store, clock, logger, hostname: config.hostname, suppressions, retentionDays: config.inboundRetentionDays,
      postmaster: postmasterMaildir(join(config.dataDir, 'postmaster'), { clock }), returnPathKey: keyring.returnPathKey,
      // SPF, DKIM and DMARC of received mail: the same resolvers, with a short answer cache.
      resolver: cachedResolver(mailauthResolver(dns), { ttlMs: 60_000, maxEntries: 10_000, clock }),
    }),
    domains,
    tags,
    suppressions,
    contacts,
    unsubscribe,
    attachments,
    templates,
    emails,
    broadcasts: broadcastsService({
      store, clock, logger, emails, templates,
      audience: {
        page: (ws, filter, p) => audiencePage(store.db, ws, filter, p),
        count: (ws, filter, maxPos) => countAudience(store.db, ws, filter, maxPos),
        lastPos: (ws) => lastContactPos(store.db, ws),
      },
      contacts: {
        byId: (ws, id) => contacts.get(ws, id).catch((err: unknown) => {
          if (err instanceof AppError && err.code === 'not_found') return undefined;
          throw err;
        }),
        byEmails: (ws, addresses) => contacts.findByEmails(ws, addresses),
      },
      existingTags: (ws, ids, tx) => tags.existing(ws, ids, tx),
      maySendFrom: async (ws, name) => config.delivery === 'sink' || (await domains.senders().find(ws, name))?.status === 'active',
      planOf: async (ws) => (await workspaces.find(ws))?.plan ?? config.defaultPlan,
      unsubscribeUrl: (ws, address) => unsubscribe.url(ws, address),
    }),
    events,
    webhooks: webhooksService({ store, clock, sealKey: keyring.sealKey, allowPrivate: config.webhookAllowPrivate, dispatcher: webhookDispatcher }),
    webhookDispatcher,
    analytics: analyticsService({ store, clock }),
    tracking: trackingService({ store, clock, key: keyring.trackingKey, logger }),
  };
}

export async function startMailroom(givenConfig: Config, options: StartOptions = {}): Promise<Mailroom> {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger(givenConfig.logLevel);
  // The socket is bound first, so that with port 0 the links Mailroom puts in
  // messages (tracking, unsubscribe) name the port it really got.
  let handle: RequestListener = (_req, res) => res.writeHead(503).end();
  const server: Server = await new Promise((resolve, reject) => {
    const s = createServer((req, res) => handle(req, res));
    s.on('clientError', answerClientError(logger));
    s.once('error', reject);
    s.listen(givenConfig.httpPort, givenConfig.httpHost, () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  const config: Config = givenConfig.httpPort === 0 && givenConfig.publicUrl.endsWith(':0')
    ? Object.freeze({ ...givenConfig, publicUrl: givenConfig.publicUrl.replace(/:0$/, `:${port}`) })
    : givenConfig;
  const services = await openServices(config, clock, logger).catch(async (err) => {
    await new Promise((resolve) => server.close(resolve));
    throw err;
  });
  const { store, keyring } = services;

  const idem = idempotency({ store, clock, sealKey: keyring.sealKey });
  const scheduler = createScheduler({ store, clock, logger });
  const retention = retentionService({ store, clock, days: config.emailRetentionDays });
  scheduler.register({ name: 'purge-idempotency-keys', everyMs: 3600_000, firstRunAfterMs: 3600_000, run: async () => void (await idem.purgeExpired()) });
  scheduler.register({ name: 'recheck-domains', everyMs: RECHECK_TASK_EVERY_MS, run: async () => void (await services.domains.recheckDue()) });
  // Tiers follow new email events within a minute, and age hourly.
  // The followers of the events table run only when there are events past their position.
  const behind = (follower: Follower) => () => followerBehind(store.db, follower);
  scheduler.register({ name: 'engagement-fold-events', everyMs: 60_000, hasWork: behind('engagement'), run: async () => void (await services.contacts.foldEvents()) });
  scheduler.register({ name: 'engagement-age-tiers', everyMs: 3600_000, run: async () => void (await services.contacts.ageTiers()) });
  // The events list's side indexes and the analytics rollups follow the events
  // table; reads cover what they have not reached yet, so these only bound that tail.
  scheduler.register({ name: 'index-events', everyMs: 2_000, hasWork: behind('events_index'), run: async () => void (await services.events.indexEvents()) });
  // On SQLite the emails search index follows the emails table the same way (PostgreSQL writes its side table with each email).
  if (!isPostgres(store.db as unknown as Kysely<unknown>)) {
    scheduler.register({ name: 'index-emails', everyMs: 2_000, hasWork: behind('emails_index'), run: async () => void (await services.emails.indexSearch()) });
  }
  scheduler.register({ name: 'fold-analytics', everyMs: 5_000, hasWork: behind('analytics'), run: async () => void (await services.analytics.fold()) });
  scheduler.register({ name: 'purge-key-activity', everyMs: 3600_000, run: async () => void (await services.apiKeys.purgeOldActivity()) });
  scheduler.register({ name: 'purge-webhook-deliveries', everyMs: 3600_000, run: async (now) => void (await services.webhooks.purgeOldDeliveries(now)) });
  // Every 10 minutes, so a busy store's day of mail goes in bounded runs rather than one long one.
  scheduler.register({ name: 'purge-emails', everyMs: 600_000, run: async () => void (await retention.purgeExpired()) });
  scheduler.register({ name: 'purge-inbound', everyMs: 3600_000, run: async () => void (await services.inbound.purgeExpired()) });
  scheduler.register({ name: 'purge-expired-attachments', everyMs: 3600_000, run: async () => void (await services.attachments.purgeExpired()) });

  const metrics = createMetrics({
    queueDepth: () => queueDepth(store.db, clock.now()), storeSizes: () => store.fileSizes(), now: () => clock.now(),
  });
  const httpDeps = {
    contract: loadContract(),
    apiKeys: services.apiKeys,
    // One node keeps its buckets in memory; nodes sharing PostgreSQL share them through it.
    rateLimiter: isPostgres(store.db as unknown as Kysely<unknown>) ? sharedRateLimiter(store, clock) : rateLimiter(clock),
    idempotency: idem,
    cursors: cursorCodec(keyring.cursorKey),
    clock,
    logger,
    plan: (name: string) => services.workspaces.plan(name),
    observe: metrics.httpRequest,
  };
  // Engines running now, by name; readiness reports one that stopped.
  const runningEngines = new Set<string>();
  let shuttingDown = false;
  // /readyz takes no key and its check is a write transaction: the asks that
  // come while one check runs share it, so a flood of them (or of a load
  // balancer's, while the store hangs) adds no transactions of its own.
  let storeCheck: Promise<string[]> | undefined;
  const checkStore = () => (storeCheck ??= Promise.all([
    store.checkWritable().then(() => [], (err: Error) => [`the store is not writable: ${err.message}`]),
    store.pendingMigrations().then((pending) => (pending.length > 0 ? [`migrations not run: ${pending.join(', ')}`] : []), () => []),
  ]).then((found) => found.flat()).finally(() => { storeCheck = undefined; }));
  const readiness: Readiness = {
    async problems() {
      if (shuttingDown) return ['shutting down'];
      // A copy: the engines' problems are added to it.
      const storeProblems = checkStore().then((found) => [...found]);
      const timedOut = new Promise<string[]>((resolve) => setTimeout(() => resolve([`the store did not answer within ${READINESS_STORE_TIMEOUT_MS / 1000} s`]), READINESS_STORE_TIMEOUT_MS).unref());
      const problems = await Promise.race([storeProblems, timedOut]);
      for (const name of ENGINE_NAMES) if (!runningEngines.has(name)) problems.push(`the ${name} is not running`);
      return problems;
    },
  };
  const routers = [healthRoutes(readiness), metricsRoutes(metrics, config.metricsToken), apiKeysRoutes(services.apiKeys), domainsRoutes(services.domains),
    tagsRoutes(services.tags), contactsRoutes(services.contacts), suppressionsRoutes(services.suppressions),
    unsubscribeRoutes(services.unsubscribe, services.contacts), emailsRoutes(services.emails), attachmentsRoutes(services.attachments),
    templatesRoutes(services.templates), broadcastsRoutes(services.broadcasts), queueRoutes(services.queue),
    eventsRoutes(services.events), webhooksRoutes(services.webhooks), analyticsRoutes(services.analytics),
    inboundRoutes(services.inbound), trackingRoutes(services.tracking), dashboardRoutes(), rootRedirect()];
  const app = createApp(httpDeps, routers);

  handle = app.callback();
  // Slow clients must not pin sockets forever.
  server.requestTimeout = 120_000;
  server.headersTimeout = 30_000;
  // An idle keep-alive connection stays open longer than a client or a proxy
  // in front keeps it (nginx and load balancers: about 60 s; Node's fetch: the
  // server's hint less a second), so the client, not the server, closes it:
  // a server closing first races the next request sent on it, which fails.
  server.keepAliveTimeout = 65_000;
  const host = config.httpHost.includes(':') ? `[${config.httpHost}]` : config.httpHost;
  const httpUrl = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  logger.info({ url: httpUrl }, 'HTTP API listening');

  // SMTP in: the MX and submission listeners, before any engine starts. One
  // that cannot start (a port taken, a certificate that cannot be read) stops
  // the start with the reason, unless its port is 0 (turned off).
  const smtp = await startSmtpListeners(config, {
    // Counted for the metrics on the way through.
    mx: {
      async checkRecipient(address) {
        const refusal = await services.inbound.checkRecipient(address);
        if (refusal) metrics.inboundRejected(refusal);
        return refusal;
      },
      async accept(message) {
        const ids = await services.inbound.accept(message);
        metrics.inboundAccepted();
        return ids;
      },
    },
    submission: submissionPipeline({
      authenticate: (token) => services.apiKeys.authenticate(token), contract: httpDeps.contract, rateLimiter: httpDeps.rateLimiter,
      plan: httpDeps.plan, maxRecipients: MAX_RECIPIENTS,
      createEmail: (sender, body, asWritten) => services.emails.create(sender, body, asWritten),
    }),
  }, { clock, logger }).catch(async (err: unknown) => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await store.close();
    throw err;
  });

  // Background engines run until `stopping` aborts; each one releases its
  // in-flight work (or lets its lease lapse) when it sees the signal.
  const stopping = new AbortController();
  const engines: Promise<void>[] = [];
  const startEngine = (name: EngineName, run: Promise<void>) => {
    runningEngines.add(name);
    engines.push(run.finally(() => runningEngines.delete(name)));
  };
  startEngine('scheduler', scheduler.run(stopping.signal));

  // Outbound delivery: MX lookups through MAILROOM_DNS_SERVERS, pooled SMTP
  // sessions, DKIM signing on worker threads; the sink never connects out.
  const dnsResolver = new dnsPromises.Resolver({ timeout: 5_000, tries: 2 });
  if (config.dnsServers.length > 0) dnsResolver.setServers(config.dnsServers);
  const mxResolver = cachingMxResolver(dnsResolver);
  const smtpPool = new SmtpPool();
  const signer = new DkimSigner();
  const transport = config.delivery === 'relay'
    ? (d: DomainDelivery) => deliverViaRelay(config.relayUrl!, d, { heloName: config.hostname, pool: smtpPool, chunking: config.smtpChunking })
    : (d: DomainDelivery) => deliverToDomain(d, {
      heloName: config.hostname, pool: smtpPool, chunking: config.smtpChunking, resolver: mxResolver, port: config.outboundPort,
      allowPrivate: config.allowPrivateMx,
    });
  const delivery = createDeliveryWorker({
    store, clock, logger, signer, transport, sinkOnly: config.delivery === 'sink',
    destinationConcurrency: config.destinationConcurrency, ...(config.delivery === 'relay' && { relay: 'smarthost' }),
    observe: (item, outcomes, attemptMs) => {
      for (const o of outcomes) {
        const provider = o.kind === 'delivered' ? providerForMx(o.mxHost) : o.kind === 'bounced' ? o.provider : undefined;
        const result = o.kind === 'bounced' ? (o.bounce.bounce_type === 'hard' ? 'bounced_hard' : 'bounced_soft') : o.kind === 'expired' ? 'bounced_soft' : o.kind;
        metrics.deliveryAttempt(result, provider ?? 'other');
        logger.info({
          email_id: item.emailId, job_id: item.id, domain: item.domain, attempt: item.attempt + 1, result, ms: Math.round(attemptMs),
          ...(o.kind === 'delivered' && { mx_host: o.mxHost, smtp_code: o.smtpCode }),
          ...((o.kind === 'deferred' || o.kind === 'bounced' || o.kind === 'expired') && { smtp_code: o.smtpCode, reply: o.response.slice(0, 300) }),
          ...(o.kind === 'failed' && { reason: o.reason }),
        }, 'delivery attempt');
        if (o.kind === 'delivered') metrics.delivered((clock.now() - item.createdAt) / 1000);
      }
    },
    emails: outboundEmails({
      store, clock, senders: services.domains.senders(), suppressions: services.suppressions, returnPathKey: services.keyring.returnPathKey,
      // Tracking links point at the domain's verified tracking host, else at Mailroom itself.
      rewriteHtml: ({ workspaceId, emailId, html, domain }) => services.tracking.instrument({
        workspaceId, emailId, html, openTracking: domain.openTracking === true, clickTracking: domain.clickTracking === true,
        baseUrl: domain.trackingHost ? `https://${domain.trackingHost}` : config.publicUrl,
        keepPrefixes: [`${config.publicUrl}/u/`],
      }),
    }),
  });
  services.queue.onRetry((domain) => delivery.retryNow(domain));
  startEngine('delivery worker', delivery.run(stopping.signal));
  startEngine('due poller', runDuePoller({ emails: services.emails, clock, logger }, stopping.signal));
  startEngine('broadcast sender', runBroadcastSender({ broadcasts: services.broadcasts, clock, logger, owner: newLeaseOwner() }, stopping.signal));
  startEngine('inbound processor', runInboundProcessor({ inbound: services.inbound, readers: () => new ParsePool(), logger }, stopping.signal));

  services.webhookDispatcher.observeAttempts((result, seconds) => metrics.webhookAttempt(result, seconds));
  startEngine('webhook dispatcher', services.webhookDispatcher.run(stopping.signal));

  let closing: Promise<void> | undefined;
  return {
    services,
    scheduler,
    httpUrl,
    routedOperations: routedOperations(httpDeps, routers),
    delivery,
    smtp: { mxPort: smtp.mxPort, submissionPort: smtp.submissionPort },
    close() {
      closing ??= (async () => {
        shuttingDown = true;
        await smtp.close();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        stopping.abort();
        await Promise.allSettled(engines);
        smtpPool.close();
        await signer.close();
        await store.close();
      })();
      return closing;
    },
  };
}
