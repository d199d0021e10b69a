import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { useTempStore } from '../../helpers/store.js';
import { onPostgres } from '../../helpers/database.js';
import { systemClock } from '../../../src/core/clock.js';
import { createDeliveryWorker, type DeliveryJob, type OutboundEmails } from '../../../src/delivery/delivery.worker.js';
import { enqueue, type QueueItem } from '../../../src/delivery/queue.repo.js';
import type { DkimSigner } from '../../../src/delivery/index.js';
import type { Tx } from '../../../src/store/db.js';


const temp = useTempStore();

const job = (item: QueueItem): DeliveryJob => ({
  mode: 'live',
  message: { raw: Buffer.from(`From: a@send.example\r\nTo: r@${item.domain}\r\nSubject: Hi\r\n\r\nx\r\n`), builtNow: false },
  mailFrom: 'bounces@send.example',
  dkim: [],
  recipients: [{ id: `rcpt_${item.emailId}`, address: `r@${item.domain}` }],
  skipped: [],
});

/**
 * Queues `rows` emails, runs a worker of `concurrency` slots over them with a
 * transport that delivers after `pause`, until every row is recorded, and
 * tells what the emails port saw: each hand-off and record call with its
 * transaction, how often each email was recorded, and the most attempts at once.
 */
async function deliverAll(rows: number, concurrency: number, pause: () => Promise<unknown>) {
  await temp.store.write(async (tx) => {
    for (let i = 0; i < rows; i++) {
      await enqueue(tx, [{ workspaceId: 'ws_1', emailId: `em_${i}`, domains: ['rcpt.example'], dueAt: 0, lifetimeMs: 60_000, now: 0 }]);
    }
  });
  const handOffs: Array<{ tx: Tx; emailIds: string[] }> = [];
  const records: Tx[] = [];
  const recorded = new Map<string, number>();
  const kinds = new Set<string>();
  let active = 0;
  let most = 0;
  const emails: OutboundEmails = {
    async handOff(tx, items) { handOffs.push({ tx, emailIds: items.map((i) => i.emailId) }); },
    async load(items) { return new Map(items.map((item) => [item.id, job(item)])); },
    async record(tx, done) {
      records.push(tx);
      for (const { item, outcomes } of done) {
        for (const o of outcomes) kinds.add(o.kind);
        recorded.set(item.emailId, (recorded.get(item.emailId) ?? 0) + 1);
      }
    },
  };
  const worker = createDeliveryWorker({
    store: temp.store, clock: systemClock, logger: pino({ level: 'silent' }), emails, sinkOnly: false, concurrency, idleMs: 20,
    signer: {} as DkimSigner,
    async transport(d) {
      most = Math.max(most, ++active);
      await pause();
      active--;
      return d.recipients.map((recipient) => ({ recipient, status: 'delivered' as const, smtp_code: 250, response: '250 ok', mx_host: 'mx' }));
    },
  });
  const stop = new AbortController();
  const running = worker.run(stop.signal);
  try {
    for (const deadline = Date.now() + 10_000; Date.now() < deadline && recorded.size < rows;) await new Promise((r) => setTimeout(r, 10));
  } finally {
    stop.abort();
    await running;
  }
  return { handOffs, records, recorded, kinds: [...kinds], most };
}

describe('the delivery worker loop', () => {
  it('refills its slots in batches and records every row exactly once, each with one hand-off, outcomes in batches', async () => {
    const rows = 40;
    const seen = await deliverAll(rows, 8, () => new Promise((r) => setTimeout(r, 2)));
    expect(seen.kinds).toEqual(['delivered']);
    expect(seen.recorded.size).toBe(rows);
    expect([...seen.recorded.values()].every((n) => n === 1)).toBe(true);
    // Every email handed off once, and far fewer claims than rows.
    expect(seen.handOffs.flatMap((h) => h.emailIds).sort()).toEqual(Array.from({ length: rows }, (_, i) => `em_${i}`).sort());
    expect(seen.handOffs.length).toBeLessThan(rows / 2);
    expect(seen.most).toBeLessThanOrEqual(8);
    // Outcomes that finish close together share one record call.
    expect(seen.records.length).toBeLessThan(rows / 2);
    expect(await temp.store.db.selectFrom('outbound_queue').select('id').execute()).toEqual([]);
  });

  it('frees a slot when its attempt ends: the next rows are claimed in the commit that writes the earlier outcomes', async () => {
    const seen = await deliverAll(12, 2, () => new Promise((r) => setImmediate(r)));
    expect(seen.recorded.size).toBe(12);
    expect(seen.most).toBeLessThanOrEqual(2);
    // A claim did not wait for the outcomes before it to be written: it shared
    // their transaction (SQLite's group commit; PostgreSQL commits each alone).
    if (!onPostgres) expect(seen.handOffs.some((h) => seen.records.includes(h.tx))).toBe(true);
  });
});

describe('draining the delivery worker', () => {
  it('waits for a claim the loop has under way, until its row is delivered and recorded', async () => {
    await temp.store.write((tx) => enqueue(tx, [{ workspaceId: 'ws_1', emailId: 'em_0', domains: ['rcpt.example'], dueAt: 0, lifetimeMs: 60_000, now: 0 }]));
    // The loop's claim is held in its hand-off: its row is leased (on
    // PostgreSQL, locked) but not yet in flight when the drain starts.
    let handingOff!: () => void;
    const inHandOff = new Promise<void>((resolve) => { handingOff = resolve; });
    let release!: () => void;
    const released = new Promise<void>((resolve) => { release = resolve; });
    const recorded: string[] = [];
    const emails: OutboundEmails = {
      async handOff() {
        handingOff();
        await released;
      },
      async load(items) { return new Map(items.map((item) => [item.id, job(item)])); },
      async record(_tx, done) { recorded.push(...done.map((r) => r.item.emailId)); },
    };
    const worker = createDeliveryWorker({
      store: temp.store, clock: systemClock, logger: pino({ level: 'silent' }), emails, sinkOnly: false, idleMs: 20,
      signer: {} as DkimSigner,
      async transport(d) {
        return d.recipients.map((recipient) => ({ recipient, status: 'delivered' as const, smtp_code: 250, response: '250 ok', mx_host: 'mx' }));
      },
    });
    const stop = new AbortController();
    const running = worker.run(stop.signal);
    try {
      await inHandOff;
      const drained = worker.drain();
      setTimeout(release, 50);
      await drained;
      expect(recorded).toEqual(['em_0']);
    } finally {
      release();
      stop.abort();
      await running;
    }
  });
});
