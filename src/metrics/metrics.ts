import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

// Prometheus metrics, with prom-client. Each Mailroom has its own registry
// (tests run several in one process). Labels stay bounded: operation ids,
// status codes, outcome kinds, the provider table's names, refusal reasons;
// never an address, an email id or a domain.

export interface QueueDepth {
  queued: number;
  deferred: number;
  leased: number;
  /** Epoch ms of the oldest row waiting for its first attempt, if any. */
  oldestQueuedAt?: number;
}

export interface MetricsSources {
  queueDepth(): Promise<QueueDepth>;
  storeSizes(): { database: number; wal: number; free: number } | undefined;
  now(): number;
}

/** How one recipient's attempt ended, as delivery attempts are counted. */
export type AttemptResult = 'delivered' | 'deferred' | 'bounced_hard' | 'bounced_soft' | 'failed';

export interface Metrics {
  registry: Registry;
  httpRequest(operation: string, status: number, seconds: number): void;
  deliveryAttempt(result: AttemptResult, provider: string): void;
  /** From the email's acceptance to its delivery to one recipient. */
  delivered(secondsSinceCreated: number): void;
  inboundAccepted(): void;
  inboundRejected(reason: string): void;
  webhookAttempt(result: string, seconds: number): void;
}

/**
 * How often the event loop's delay is sampled for the lag gauges. Each
 * sample wakes the loop: prom-client's default of 10 ms made an idle node
 * wake 100 times a second, half its idle CPU. A stall of this length or
 * more still shows.
 */
const EVENT_LOOP_SAMPLE_MS = 50;

export function createMetrics(sources: MetricsSources): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'mailroom_process_', eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });

  const requests = new Counter({ name: 'mailroom_http_requests_total', help: 'HTTP requests by API operation and status.', labelNames: ['operation', 'status'], registers: [registry] });
  const latency = new Histogram({
    name: 'mailroom_http_request_duration_seconds', help: 'HTTP request latency by API operation.', labelNames: ['operation'], registers: [registry],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  });
  const attempts = new Counter({
    name: 'mailroom_delivery_attempts_total', help: 'Delivery attempts per recipient, by result and mailbox provider.',
    labelNames: ['result', 'provider'], registers: [registry],
  });
  const toDelivery = new Histogram({
    name: 'mailroom_delivery_latency_seconds', help: 'Time from an email\'s acceptance to its delivery, per recipient.', registers: [registry],
    buckets: [0.5, 1, 2, 5, 15, 60, 300, 900, 3600, 4 * 3600, 24 * 3600],
  });
  const webhookAttempts = new Counter({ name: 'mailroom_webhook_attempts_total', help: 'Webhook POSTs by result.', labelNames: ['result'], registers: [registry] });
  const webhookLatency = new Histogram({
    name: 'mailroom_webhook_attempt_duration_seconds', help: 'How long a webhook POST took to be answered (or to fail).', registers: [registry],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
  });
  const inbound = new Counter({ name: 'mailroom_inbound_messages_total', help: 'Inbound messages accepted, and recipients refused by reason.', labelNames: ['result', 'reason'], registers: [registry] });
  // prom-client collects every metric of a scrape at once: the two queue
  // gauges share one query, the one under way. While the store cannot be
  // read (PostgreSQL restarting, say) the scrape still answers, when it is
  // needed most: the queue gauges are NaN (not known, rather than a made-up
  // 0), and mailroom_store_readable says why.
  let depthUnderWay: Promise<QueueDepth | undefined> | undefined;
  const queueDepth = () => (depthUnderWay ??= sources.queueDepth().catch(() => undefined).finally(() => {
    depthUnderWay = undefined;
  }));
  new Gauge({
    name: 'mailroom_store_readable', help: 'Whether the store answered this scrape\'s read of the queue (1) or not (0).', registers: [registry],
    async collect() {
      this.set((await queueDepth()) === undefined ? 0 : 1);
    },
  });
  new Gauge({
    name: 'mailroom_outbound_queue_rows', help: 'Outbound queue rows (an email and a destination domain) by state.', labelNames: ['state'], registers: [registry],
    async collect() {
      const depth = await queueDepth();
      for (const state of ['queued', 'deferred', 'leased'] as const) this.set({ state }, depth ? depth[state] : NaN);
    },
  });
  new Gauge({
    name: 'mailroom_outbound_queue_oldest_seconds', help: 'Age of the oldest queue row waiting for its first attempt (0 when none).', registers: [registry],
    async collect() {
      const depth = await queueDepth();
      if (!depth) this.set(NaN);
      else this.set(depth.oldestQueuedAt === undefined ? 0 : Math.max(0, (sources.now() - depth.oldestQueuedAt) / 1000));
    },
  });
  new Gauge({
    name: 'mailroom_store_bytes', help: 'Size of the SQLite database and its WAL on disk.', labelNames: ['file'], registers: [registry],
    collect() {
      const sizes = sources.storeSizes();
      if (!sizes) return;
      this.set({ file: 'database' }, sizes.database);
      this.set({ file: 'wal' }, sizes.wal);
    },
  });
  // Only a store with a file has one: a gauge without labels would say 0 on PostgreSQL.
  if (sources.storeSizes()) {
    new Gauge({
      name: 'mailroom_store_free_bytes', help: 'Bytes of the SQLite database in free pages: reused for new rows, given back to the disk by mailroom store compact.',
      registers: [registry],
      collect() {
        this.set(sources.storeSizes()!.free);
      },
    });
  }

  return {
    registry,
    httpRequest(operation, status, seconds) {
      requests.inc({ operation, status: String(status) });
      latency.observe({ operation }, seconds);
    },
    deliveryAttempt: (result, provider) => attempts.inc({ result, provider }),
    delivered: (seconds) => toDelivery.observe(seconds),
    inboundAccepted: () => inbound.inc({ result: 'accepted', reason: '' }),
    inboundRejected: (reason) => inbound.inc({ result: 'rejected', reason }),
    webhookAttempt(result, seconds) {
      webhookAttempts.inc({ result });
      webhookLatency.observe(seconds);
    },
  };
}
