import pino from 'pino';
import { describe, expect, it } from 'vitest';
import {
  CLAIMS_AHEAD, PROCESS_BATCH, READ_AHEAD_BYTES, runInboundProcessor, type ClaimedBatch, type InboundProcessing,
} from '../../../src/engines/inbound-processor.js';

/** The processor's readers: the fake reads on its own, so these do nothing. */
const readers = () => ({ read: undefined, close: async () => undefined });

/**
 * An inbound service holding `sizes.length` pending messages of those sizes:
 * claims take them in order, reads finish on a later turn, and it records
 * how many batches were claimed and not yet stored at any time.
 */
function fakeInbound(sizes: number[]) {
  const pending = [...sizes];
  const stored: number[][] = [];
  let open = 0;
  let mostOpen = 0;
  let openBytes = 0;
  let mostOpenBytes = 0;
  const listeners: Array<() => void> = [];
  const service = {
    attachProcessor: (_owner: string, wake: () => void) => void listeners.push(wake),
    detachProcessor: async () => undefined,
    releaseGoneLeases: async () => 0,
    async claimBatch(_owner: string, limit: number): Promise<ClaimedBatch> {
      const taken = pending.splice(0, limit);
      const bytes = taken.reduce((a, b) => a + b, 0);
      if (taken.length > 0) {
        mostOpen = Math.max(mostOpen, ++open);
        mostOpenBytes = Math.max(mostOpenBytes, (openBytes += bytes));
      }
      return {
        claimed: taken.length,
        bytes,
        read: new Promise<void>((resolve) => setImmediate(resolve)),
        store: async () => {
          stored.push(taken);
          open--;
          openBytes -= bytes;
        },
      };
    },
  };
  return {
    inbound: service satisfies InboundProcessing<unknown>,
    stored,
    open: () => open,
    most: () => ({ batches: mostOpen, bytes: mostOpenBytes }),
    accept: (size: number) => { pending.push(size); for (const l of listeners) l(); },
  };
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (const deadline = Date.now() + 5_000; !check();) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('the inbound processor loop', () => {
  it('works through a backlog with a few batches claimed ahead, and leaves none claimed when stopped', async () => {
    const backlog = Array.from({ length: PROCESS_BATCH * 10 + 5 }, () => 2_000);
    const fake = fakeInbound(backlog);
    const stop = new AbortController();
    const running = runInboundProcessor({ inbound: fake.inbound, readers, logger: pino({ level: 'silent' }) }, stop.signal);
    await until(() => fake.stored.flat().length === backlog.length, 'the backlog to be stored');
    expect(fake.most().batches).toBe(1 + CLAIMS_AHEAD);
    // A message accepted later wakes the idle loop.
    fake.accept(10);
    await until(() => fake.stored.flat().length === backlog.length + 1, 'the late message to be stored');
    stop.abort();
    await running;
    expect(fake.open()).toBe(0);
  });

  it('reports a store out of reach once while its claims keep failing, then goes on', async () => {
    const fake = fakeInbound([]);
    let failures = 5;
    const claimBatch = fake.inbound.claimBatch;
    const inbound = {
      ...fake.inbound,
      claimBatch: (owner: string, limit: number) => (failures-- > 0
        ? Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }))
        : claimBatch(owner, limit)),
    };
    const logged: Array<{ level: number; msg: string }> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    const stop = new AbortController();
    const running = runInboundProcessor({ inbound, readers, logger }, stop.signal);
    // Each accepted message wakes the loop for another claim, failing until the store is back.
    await until(() => {
      if (fake.stored.length === 0) fake.accept(10);
      return fake.stored.length > 0;
    }, 'a message to be stored once the claims succeed');
    stop.abort();
    await running;
    expect(failures).toBeLessThan(0);
    expect(logged.filter((l) => l.level >= 50).map((l) => l.msg)).toEqual(['inbound processing failed; trying again shortly']);
  });

  it('claims no batch ahead while the messages held are large', async () => {
    const big = Math.ceil(READ_AHEAD_BYTES / PROCESS_BATCH) + 1;
    const fake = fakeInbound(Array.from({ length: PROCESS_BATCH * 3 }, () => big));
    const stop = new AbortController();
    const running = runInboundProcessor({ inbound: fake.inbound, readers, logger: pino({ level: 'silent' }) }, stop.signal);
    await until(() => fake.stored.length === 3, 'three batches to be stored');
    stop.abort();
    await running;
    expect(fake.most().batches).toBe(1);
    expect(fake.open()).toBe(0);
  });
});
