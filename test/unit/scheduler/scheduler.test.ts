import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { useTempStore } from '../../helpers/store.js';
import { ManualClock } from '../../../src/core/clock.js';
import type { Store } from '../../../src/store/db.js';
import { createScheduler } from '../../../src/scheduler/scheduler.js';
import { newLeaseOwner } from '../../../src/core/lease-owner.js';
import { goneLocalOwner } from '../../helpers/lease-owners.js';

const logger = pino({ level: 'silent' });

const temp = useTempStore();

/** Counts the write units the store runs. */
function countWrites(s: Store): { writes: number } {
  const counter = { writes: 0 };
  const write = s.write.bind(s);
  s.write = ((work, options) => { counter.writes++; return write(work, options); }) as Store['write'];
  return counter;
}

describe('scheduler', () => {
  it('runs a task when due, and a tick before then writes nothing', async () => {
    const clock = new ManualClock(1_000_000);
    const counter = countWrites(temp.store);
    const scheduler = createScheduler({ store: temp.store, clock, logger });
    const runs: number[] = [];
    scheduler.register({ name: 'every-minute', everyMs: 60_000, run: async (now) => void runs.push(now) });

    await scheduler.tick();
    expect(runs).toEqual([1_000_000]);
    const afterFirst = counter.writes;
    for (let i = 0; i < 5; i++) {
      clock.advance(10_000);
      await scheduler.tick();
    }
    expect(counter.writes).toBe(afterFirst);
    expect(runs).toHaveLength(1);
    clock.advance(10_001);
    await scheduler.tick();
    expect(runs).toEqual([1_000_000, 1_060_001]);
  });

  it('claims a task with nothing to do not at all, asks again a period later, and runs it once it has work', async () => {
    const clock = new ManualClock(1_000_000);
    const counter = countWrites(temp.store);
    const scheduler = createScheduler({ store: temp.store, clock, logger });
    const runs: number[] = [];
    let work = false;
    let asked = 0;
    scheduler.register({
      name: 'follower', everyMs: 2_000, run: async (now) => void runs.push(now),
      hasWork: async () => { asked++; return work; },
    });

    await scheduler.tick();
    expect([asked, runs.length, counter.writes]).toEqual([1, 0, 0]);
    // Within the period the task is not looked at again.
    clock.advance(1_999);
    await scheduler.tick();
    expect(asked).toBe(1);
    work = true;
    clock.advance(1);
    await scheduler.tick();
    expect(asked).toBe(2);
    expect(runs).toEqual([1_002_000]);
    // Its next run is a period after this one, as for any task.
    clock.advance(1_000);
    await scheduler.tick();
    expect(runs).toHaveLength(1);
    clock.advance(1_001);
    await scheduler.tick();
    expect(runs).toEqual([1_002_000, 1_004_001]);
  });

  it('runs a periodic task once a period across several nodes ticking at once', async () => {
    const clock = new ManualClock(1_000_000);
    const runs: number[] = [];
    const nodes = [0, 1, 2].map(() => {
      const scheduler = createScheduler({ store: temp.store, clock, logger });
      scheduler.register({ name: 'cluster-wide', everyMs: 60_000, run: async (now) => void runs.push(now) });
      return scheduler;
    });
    for (let period = 0; period < 5; period++) {
      // Every node ticks several times in the period, all at once.
      for (let tick = 0; tick < 3; tick++) await Promise.all(nodes.map((n) => n.tick()));
      clock.advance(60_000);
    }
    expect(runs).toEqual([0, 1, 2, 3, 4].map((p) => 1_000_000 + p * 60_000));
  });

  it('leaves a task to the process that claimed it, and learns when it may next try', async () => {
    const clock = new ManualClock(1_000_000);
    const first = createScheduler({ store: temp.store, clock, logger });
    const second = createScheduler({ store: temp.store, clock, logger });
    const ran: string[] = [];
    first.register({ name: 'shared', everyMs: 60_000, run: async () => void ran.push('first') });
    second.register({ name: 'shared', everyMs: 60_000, run: async () => void ran.push('second') });

    await first.tick();
    const counter = countWrites(temp.store);
    await second.tick(); // Not due: the first process ran it; the second reads when it may try next.
    await second.tick(); // Knows now: no write at all.
    expect(counter.writes).toBe(1);
    clock.advance(60_000);
    await second.tick();
    expect(ran).toEqual(['first', 'second']);
  });

  it('does not free a lease another process took while a run outlived its own', async () => {
    const clock = new ManualClock(1_000_000);
    const slow = createScheduler({ store: temp.store, clock, logger });
    const other = createScheduler({ store: temp.store, clock, logger });
    const ran: string[] = [];
    const leaseOf = () => temp.store.db.selectFrom('scheduled_tasks').select(['lease_owner', 'locked_until']).where('name', '=', 'shared').executeTakeFirstOrThrow();
    let finishSlowRun!: () => void;
    let heldWhenSlowEnded: Awaited<ReturnType<typeof leaseOf>> | undefined;
    slow.register({ name: 'shared', everyMs: 60_000, run: async () => {
      ran.push('slow');
      await new Promise<void>((resolve) => (finishSlowRun = resolve));
    } });
    other.register({ name: 'shared', everyMs: 60_000, run: async () => {
      ran.push('other');
      const before = await leaseOf();
      finishSlowRun();
      await slowTick; // the slow run ends while this one holds the task
      heldWhenSlowEnded = await leaseOf();
      expect(heldWhenSlowEnded).toEqual(before);
    } });

    const slowTick = slow.tick();
    await vi.waitFor(() => expect(ran).toEqual(['slow']));
    clock.advance(2 * 60_000 + 1); // past the slow run's lease, which a stalled process did not renew
    await other.tick();
    expect(ran).toEqual(['slow', 'other']);
    expect(heldWhenSlowEnded).toMatchObject({ lease_owner: expect.any(String), locked_until: clock.now() + 2 * 60_000 });
    // The run that held the lease at its end planned the next one.
    const row = await temp.store.db.selectFrom('scheduled_tasks').selectAll().where('name', '=', 'shared').executeTakeFirstOrThrow();
    expect(row).toMatchObject({ lease_owner: null, locked_until: 0, next_run_at: clock.now() + 60_000 });
  });

  it('leaves a dead process\'s task to the others two minutes after its claim', async () => {
    const clock = new ManualClock(1_000_000);
    const dying = createScheduler({ store: temp.store, clock, logger });
    const other = createScheduler({ store: temp.store, clock, logger });
    const ran: string[] = [];
    let endDyingRun!: () => void;
    // The run never ends while the test looks: as a process killed in the middle of it.
    dying.register({ name: 'shared', everyMs: 3600_000, run: async () => {
      ran.push('dying');
      await new Promise<void>((resolve) => (endDyingRun = resolve));
    } });
    other.register({ name: 'shared', everyMs: 3600_000, run: async () => void ran.push('other') });

    const dyingTick = dying.tick();
    await vi.waitFor(() => expect(ran).toEqual(['dying']));
    clock.advance(2 * 60_000 - 1);
    await other.tick();
    expect(ran).toEqual(['dying']);
    clock.advance(1);
    await other.tick();
    expect(ran).toEqual(['dying', 'other']);
    endDyingRun();
    await dyingTick;
  });

  it('renews the lease of a run that lasts longer than it, so no other process runs the task meanwhile', async () => {
    const clock = new ManualClock(1_000_000);
    const leaseMs = 200;
    const long = createScheduler({ store: temp.store, clock, logger, leaseMs });
    const other = createScheduler({ store: temp.store, clock, logger, leaseMs });
    const ran: string[] = [];
    let endLongRun!: () => void;
    long.register({ name: 'shared', everyMs: 3600_000, run: async () => {
      ran.push('long');
      await new Promise<void>((resolve) => (endLongRun = resolve));
    } });
    other.register({ name: 'shared', everyMs: 3600_000, run: async () => void ran.push('other') });
    const leaseOf = () => temp.store.db.selectFrom('scheduled_tasks').select(['locked_until']).where('name', '=', 'shared').executeTakeFirstOrThrow();

    const longTick = long.tick();
    await vi.waitFor(() => expect(ran).toEqual(['long']));
    for (let step = 0; step < 3; step++) {
      // Past the lease of a run that ran long: a renewal under the new time comes a quarter lease later.
      clock.advance(11 * 60_000);
      await vi.waitFor(async () => expect(Number((await leaseOf()).locked_until)).toBeGreaterThan(clock.now()));
      await other.tick();
    }
    expect(ran).toEqual(['long']);
    endLongRun();
    await longTick;
    const row = await temp.store.db.selectFrom('scheduled_tasks').selectAll().where('name', '=', 'shared').executeTakeFirstOrThrow();
    expect(row).toMatchObject({ lease_owner: null, locked_until: 0, next_run_at: clock.now() + 3600_000 });
  });

  it('writes at its next tick the end of a run the store could not take, so the task is not held until its lease runs out', async () => {
    const clock = new ManualClock(1_000_000);
    const scheduler = createScheduler({ store: temp.store, clock, logger });
    const other = createScheduler({ store: temp.store, clock, logger });
    const ran: string[] = [];
    scheduler.register({ name: 'shared', everyMs: 60_000, run: async () => void ran.push('here') });
    other.register({ name: 'shared', everyMs: 60_000, run: async () => void ran.push('other') });
    // The store goes away as the run ends (a database restart): the write of its end fails.
    const write = temp.store.write.bind(temp.store);
    let writes = 0;
    temp.store.write = ((work, options) => (++writes === 2 ? Promise.reject(new Error('Connection terminated unexpectedly')) : write(work, options))) as Store['write'];
    await expect(scheduler.tick()).rejects.toThrow('Connection terminated unexpectedly');
    expect(ran).toEqual(['here']);

    // Back a moment later: the end is written, and the task runs a period after it, on whichever node ticks.
    clock.advance(1_000);
    await scheduler.tick();
    clock.advance(58_999);
    await other.tick();
    expect(ran).toEqual(['here']);
    clock.advance(1);
    await other.tick();
    expect(ran).toEqual(['here', 'other']);
  });

  it('frees at start the tasks a crashed process of this host held, and runs them when due', async () => {
    const clock = new ManualClock(1_000_000);
    const held = { next_run_at: 900_000, locked_until: 1_000_000 + 2 * 60_000, last_run_at: null, last_error: null };
    await temp.store.write((tx) => tx.insertInto('scheduled_tasks').values([
      { name: 'left-by-crash', lease_owner: goneLocalOwner(), ...held },
      { name: 'running-elsewhere', lease_owner: newLeaseOwner(), ...held },
    ]).execute());
    const scheduler = createScheduler({ store: temp.store, clock, logger, pollMs: 5 });
    const ran: string[] = [];
    for (const name of ['left-by-crash', 'running-elsewhere']) scheduler.register({ name, everyMs: 60_000, run: async () => void ran.push(name) });
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    for (const deadline = Date.now() + 5_000; ran.length === 0 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 5));
    stop.abort();
    await running;
    expect(ran).toEqual(['left-by-crash']);
    const rows = await temp.store.db.selectFrom('scheduled_tasks').select(['name', 'lease_owner', 'next_run_at']).orderBy('name').execute();
    expect(rows).toEqual([
      { name: 'left-by-crash', lease_owner: null, next_run_at: 1_060_000 },
      { name: 'running-elsewhere', lease_owner: expect.any(String), next_run_at: 900_000 },
    ]);
  });
});
