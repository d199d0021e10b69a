import { describe, expect, it } from 'vitest';
import { createMetrics, type QueueDepth } from '../../src/metrics/metrics.js';

// A scrape while the store cannot be read still answers, with what the
// process itself knows: that is when an operator looks.

describe('metrics', () => {
  it('answer a scrape while the store cannot be read, its queue gauges NaN and saying so', async () => {
    let depth: () => Promise<QueueDepth> = async () => ({ queued: 3, deferred: 1, leased: 2, oldestQueuedAt: 1_000 });
    const metrics = createMetrics({ queueDepth: () => depth(), storeSizes: () => undefined, now: () => 11_000 });
    metrics.httpRequest('createEmail', 503, 0.005);

    const readable = await metrics.registry.metrics();
    expect(readable).toMatch(/^mailroom_store_readable 1$/m);
    expect(readable).toMatch(/^mailroom_outbound_queue_rows\{state="leased"\} 2$/m);
    expect(readable).toMatch(/^mailroom_outbound_queue_oldest_seconds 10$/m);

    depth = () => Promise.reject(new Error('connect ECONNREFUSED'));
    const down = await metrics.registry.metrics();
    expect(down).toMatch(/^mailroom_store_readable 0$/m);
    expect(down).toMatch(/^mailroom_http_requests_total\{operation="createEmail",status="503"\} 1$/m);
    // Not known, rather than a made-up 0 (prom-client writes "Nan", which Prometheus reads as NaN).
    expect(down).toMatch(/^mailroom_outbound_queue_rows\{state="queued"\} NaN$/im);
    expect(down).toMatch(/^mailroom_outbound_queue_oldest_seconds NaN$/im);
  });
});
