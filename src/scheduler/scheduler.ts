import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import { newLeaseOwner } from '../core/lease-owner.js';
import { workLoop } from '../core/work-loop.js';
import type { Store } from '../store/db.js';
import { claimLeases, extendLeases, freeGoneLeases } from '../store/lease.js';

// Periodic tasks in an explicit registry. Each task's next_run_at is stored,
// so a restart neither skips nor doubles a run, and a task is claimed with a
// lease so two processes on one database do not run it at once. The lease is
// short and renewed while the run goes on: a run longer than the lease keeps
// its task, and the tasks of a process that died are taken by the others
// once the lease runs out (a process starting on the same host frees them at
// once). Tasks should enqueue or do bounded batches of work, not long jobs
// inline.

export interface ScheduledTask {
  /** Stable name: the row key in scheduled_tasks. */
  name: string;
  /** Time between runs; the next run is planned from the end of this one. */
  everyMs: number;
  /** Delay of the first run after the task is first registered. */
  firstRunAfterMs?: number;
  run(now: number): Promise<void>;
  /**
   * Whether a run now would find anything to do: a read, asked when the task
   * is due, before the claim (a write transaction). A task without work is
   * looked at again `everyMs` later, unclaimed and its plan unchanged.
   */
  hasWork?(): Promise<boolean>;
}

export interface Scheduler {
  register(task: ScheduledTask): void;
  /** Runs every due task once (tests call this instead of waiting). */
  tick(): Promise<void>;
  /** Starts the loop; resolves when `signal` aborts and the current tick is done. */
  run(signal: AbortSignal): Promise<void>;
}

/** How long a claim holds a task; a run renews it every quarter of that, so the lease outlasts a missed renewal or two. */
const TASK_LEASE_MS = 120_000;

export function createScheduler(deps: { store: Store; clock: Clock; logger: Logger; pollMs?: number; leaseMs?: number }): Scheduler {
  const { store, clock, logger } = deps;
  const leaseMs = deps.leaseMs ?? TASK_LEASE_MS;
  const owner = newLeaseOwner();
  const tasks = new Map<string, ScheduledTask>();
  // When each task can next be claimed, as last read or written here: a tick
  // before then costs nothing (a claim is a commit). Another process may run
  // a task meanwhile; the claim then fails and the time is read afresh.
  const claimableAt = new Map<string, number>();
  /** Runs that ended while their end could not be written, by task: written at the next tick. */
  const unrecordedEnds = new Map<string, { end: number; error: string | null }>();

  async function claim(task: ScheduledTask, now: number): Promise<boolean> {
    if ((claimableAt.get(task.name) ?? 0) > now) return false;
    if (task.hasWork && !(await task.hasWork())) {
      claimableAt.set(task.name, now + task.everyMs);
      return false;
    }
    return store.write(async (tx) => {
      await tx.insertInto('scheduled_tasks')
        .values({ name: task.name, next_run_at: now + (task.firstRunAfterMs ?? 0), locked_until: 0, lease_owner: null, last_run_at: null, last_error: null })
        .onConflict((oc) => oc.column('name').doNothing())
        .execute();
      const due = tx.selectFrom('scheduled_tasks').select('name').where('name', '=', task.name).where('next_run_at', '<=', now);
      if ((await claimLeases(tx, 'scheduled_tasks', due, { now, until: now + leaseMs, owner })).length === 1) return true;
      const row = await tx.selectFrom('scheduled_tasks').select(['next_run_at', 'locked_until']).where('name', '=', task.name).executeTakeFirstOrThrow();
      claimableAt.set(task.name, Math.max(Number(row.next_run_at), Number(row.locked_until)));
      return false;
    });
  }

  /**
   * Renews the task's lease every quarter lease while its run goes on (a
   * renewal that fails is tried at the next); stop() ends that once any
   * renewal under way has landed, so it cannot follow the run's end record.
   */
  function renewWhileRunning(task: ScheduledTask): { stop(): Promise<void> } {
    let renewing: Promise<void> = Promise.resolve();
    const renewal = setInterval(() => {
      renewing = store.write((tx) => extendLeases(tx, 'scheduled_tasks', [task.name], owner, clock.now() + leaseMs))
        .then((renewed) => {
          if (renewed.size === 0) logger.warn({ task: task.name }, 'scheduled task lost its lease while running; another process may run it too');
        }, (err: unknown) => logger.warn({ err, task: task.name }, 'could not renew the lease of a running scheduled task'));
    }, leaseMs / 4);
    // A run in progress keeps the process alive; its renewals need not.
    renewal.unref();
    return {
      async stop() {
        clearInterval(renewal);
        await renewing;
      },
    };
  }

  async function runOne(task: ScheduledTask): Promise<void> {
    const now = clock.now();
    if (!(await claim(task, now))) return;
    let error: string | null = null;
    const renewal = renewWhileRunning(task);
    try {
      await task.run(now);
    } catch (err) {
      error = (err as Error).message ?? String(err);
      logger.error({ err, task: task.name }, 'scheduled task failed');
    } finally {
      await renewal.stop();
    }
    const end = clock.now();
    try {
      await recordEnd(task, end, error);
    } catch (err) {
      unrecordedEnds.set(task.name, { end, error });
      throw err;
    }
  }

  /** Frees the task and plans its next run a period after `end`, the end of the run this process held it for. */
  async function recordEnd(task: ScheduledTask, end: number, error: string | null): Promise<void> {
    // A run whose lease ran out all the same (its renewals failed, or the
    // process stalled) may find the task claimed by another process since:
    // that run's lease and plan stand, this one's end is not recorded.
    const recorded = await store.write((tx) => tx.updateTable('scheduled_tasks')
      .set({ next_run_at: end + task.everyMs, locked_until: 0, lease_owner: null, last_run_at: end, last_error: error })
      .where('name', '=', task.name).where('lease_owner', '=', owner).executeTakeFirst());
    if (recorded.numUpdatedRows > 0n) claimableAt.set(task.name, end + task.everyMs);
    else logger.warn({ task: task.name }, 'scheduled task ran past its lease; another process holds it now');
  }

  const scheduler: Scheduler = {
    register(task) {
      if (tasks.has(task.name)) throw new Error(`scheduled task '${task.name}' is registered twice`);
      tasks.set(task.name, task);
    },
    async tick() {
      // The ends a store out of reach kept from being written: until they are,
      // their tasks stay leased here and no process runs them.
      for (const [name, { end, error }] of unrecordedEnds) {
        await recordEnd(tasks.get(name)!, end, error);
        unrecordedEnds.delete(name);
      }
      for (const task of tasks.values()) await runOne(task);
    },
    async run(signal) {
      // Tasks a crashed process of this host held would otherwise wait out their lease.
      await freeGoneLeases(store, 'scheduled_tasks', logger, () => clock.now());
      await workLoop({
        idleMs: deps.pollMs ?? 1000,
        onError: (err) => logger.error({ err }, 'scheduler tick failed'),
        round: async () => void await scheduler.tick(),
      }).run(signal);
    },
  };
  return scheduler;
}
