import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { useTempStore } from '../../helpers/store.js';
import { systemClock } from '../../../src/core/clock.js';
import { createDeliveryWorker, type DeliveryJob, type DeliveryLedger } from '../../../src/delivery/delivery.worker.js';
import { enqueue, type QueueItem } from '../../../src/delivery/queue.repo.js';
import type { DkimSigner } from '../../../src/delivery/index.js';
import type { Tx } from '../../../src/store/db.js';


const temp = useTempStore();

const job = (item: QueueItem): DeliveryJob => ({
  mode: 'live',
  compose: { from: 'a@send.example', to: [`r@${item.domain}`], subject: 'Hi', text: 'x', messageIdDomain: 'send.example', messageIdLocal: item.emailId },
  mailFrom: 'bounces@send.example',
  dkim: [],
  recipients: [{ id: `rcpt_${item.emailId}`, address: `r@${item.domain}` }],
  skipped: [],
});

describe('the delivery worker loop', () => {
  it('refills its slots in batches and records every row exactly once, each with one hand-off, outcomes in batches', async () => {
    const rows = 40;
    await temp.store.write(async (tx) => {
      for (let i = 0; i < rows; i++) {
        await enqueue(tx, { workspaceId: 'ws_1', emailId: `em_${i}`, domains: ['rcpt.example'], dueAt: 0, lifetimeMs: 60_000, now: 0 });
      }
    });
    const handedOff: string[][] = [];
    const recorded = new Map<string, number>();
    let records = 0;
    let active = 0;
    let most = 0;
    const ledger: DeliveryLedger = {
      async handOff(_tx, items) { handedOff.push(items.map((i) => i.emailId)); },
      async load(items) { return new Map(items.map((item) => [item.id, job(item)])); },
      async record(_tx, rows) {
        records += 1;
        for (const { item, outcomes } of rows) {
          expect(outcomes.map((o) => o.kind)).toEqual(['delivered']);
          recorded.set(item.emailId, (recorded.get(item.emailId) ?? 0) + 1);
        }
      },
    };
    const worker = createDeliveryWorker({
      store: temp.store, clock: systemClock, logger: pino({ level: 'silent' }), ledger, sinkOnly: false, concurrency: 8, idleMs: 20,
      signer: {} as DkimSigner,
      async transport(d) {
        active += 1;
        most = Math.max(most, active);
        await new Promise((r) => setTimeout(r, 2));
        active -= 1;
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
    expect(recorded.size).toBe(rows);
    expect([...recorded.values()].every((n) => n === 1)).toBe(true);
    // Every email handed off once, and far fewer claims than rows.
    expect(handedOff.flat().sort()).toEqual(Array.from({ length: rows }, (_, i) => `em_${i}`).sort());
    expect(handedOff.length).toBeLessThan(rows / 2);
    expect(most).toBeLessThanOrEqual(8);
    // Outcomes that finish close together share one record call.
    expect(records).toBeLessThan(rows / 2);
    expect(await temp.store.db.selectFrom('outbound_queue').select('id').execute()).toEqual([]);
  });

  it('frees a slot when its attempt ends: the next rows are claimed in the commit that writes the earlier outcomes', async () => {
    const rows = 12;
    await temp.store.write(async (tx) => {
      for (let i = 0; i < rows; i++) {
        await enqueue(tx, { workspaceId: 'ws_1', emailId: `em_${i}`, domains: ['rcpt.example'], dueAt: 0, lifetimeMs: 60_000, now: 0 });
      }
    });
    const handOffs: Tx[] = [];
    const records: Tx[] = [];
    const recorded = new Set<string>();
    let active = 0;
    let most = 0;
    const ledger: DeliveryLedger = {
      async handOff(tx) { handOffs.push(tx); },
      async load(items) { return new Map(items.map((item) => [item.id, job(item)])); },
      async record(tx, done) {
        records.push(tx);
        for (const { item } of done) recorded.add(item.emailId);
      },
    };
    const worker = createDeliveryWorker({
      store: temp.store, clock: systemClock, logger: pino({ level: 'silent' }), ledger, sinkOnly: false, concurrency: 2, idleMs: 20,
      signer: {} as DkimSigner,
      async transport(d) {
        most = Math.max(most, ++active);
        await new Promise((r) => setImmediate(r));
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
    expect(recorded.size).toBe(rows);
    expect(most).toBeLessThanOrEqual(2);
    // A claim did not wait for the outcomes before it to be written: it shared their transaction.
    expect(handOffs.some((tx) => records.includes(tx))).toBe(true);
  });
});
