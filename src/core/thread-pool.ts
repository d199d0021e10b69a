import { Worker } from 'node:worker_threads';

// CPU-bound steps long enough to be worth a hop to another thread (an RSA
// signature, the text part derived from a large HTML body) run on a few
// worker threads beside the event loop, so a burst of them neither stalls
// the loop nor leaves the other cores idle. Threads start on first use, up to
// the pool's size, and a job goes to the least busy one. The jobs of one turn
// of the event loop travel to a thread, and their results back, as one
// message, since each message between threads has a cost of its own; both
// ways they are one flat array (a copied object costs a copy of each of its
// property names as well): [id, payload, id, payload, …] there, and
// [id, 1, result, …] or [id, 0, why it failed, …] back.

/**
 * What a thread runs: plain JavaScript, evaluated as CommonJS (so the same
 * code works from the TypeScript sources and from dist/), that defines
 * `function handle(payload)` returning the job's result or throwing. It may
 * read `workerData`, and keep state of its own between jobs.
 */
export interface ThreadCode {
  source: string;
  workerData?: unknown;
}

const wrapped = (code: ThreadCode) => `
const { parentPort, workerData } = require('node:worker_threads');
${code.source}
parentPort.on('message', (jobs) => {
  const out = [];
  for (let i = 0; i < jobs.length; i += 2) {
    try {
      out.push(jobs[i], 1, handle(jobs[i + 1]));
    } catch (err) {
      out.push(jobs[i], 0, String((err && err.message) || err));
    }
  }
  parentPort.postMessage(out);
});
`;

interface Thread<S> {
  worker: Worker;
  pending: Map<number, { resolve: (result: never) => void; reject: (err: Error) => void }>;
  /** What the caller keeps about this thread (the keys it was given, say). */
  state: S;
  /** Ids and payloads of this turn of the event loop, posted together at its end. */
  outbox: unknown[];
}

export class ThreadPool<S = undefined> {
  private readonly threads: Array<Thread<S>> = [];
  private nextJobId = 1;
  private closed = false;

  /** `name` says whose threads failed in errors; `newState` makes what the caller keeps per thread. */
  constructor(private readonly name: string, private readonly code: ThreadCode, private readonly size: number,
    private readonly newState: () => S = () => undefined as S) {}

  /**
   * Runs a job on the least busy thread. `payload` is made for that thread
   * from what the caller keeps about it, which it may change: jobs reach a
   * thread in the order they were made for it.
   */
  run<R>(payload: (state: S) => unknown): Promise<R> {
    if (this.closed) return Promise.reject(new Error(`${this.name} is closed`));
    const t = this.pick();
    const id = this.nextJobId++;
    const data = payload(t.state);
    return new Promise<R>((resolve, reject) => {
      t.pending.set(id, { resolve: resolve as (result: never) => void, reject });
      // A thread with work keeps the process alive; an idle one does not.
      t.worker.ref();
      if (t.outbox.push(id, data) === 2) setImmediate(() => this.post(t));
    });
  }

  private post(t: Thread<S>): void {
    const jobs = t.outbox;
    t.outbox = [];
    if (this.threads.includes(t)) t.worker.postMessage(jobs);
  }

  /** The least busy thread, or a new one while the pool is below its size and all are busy. */
  private pick(): Thread<S> {
    const idlest = this.threads.reduce<Thread<S> | undefined>((a, b) => (a && a.pending.size <= b.pending.size ? a : b), undefined);
    if (idlest && (idlest.pending.size === 0 || this.threads.length >= this.size)) return idlest;
    return this.spawn();
  }

  private spawn(): Thread<S> {
    const worker = new Worker(wrapped(this.code), { eval: true, workerData: this.code.workerData });
    const t: Thread<S> = { worker, pending: new Map(), state: this.newState(), outbox: [] };
    worker.on('message', (results: unknown[]) => {
      for (let i = 0; i < results.length; i += 3) {
        const job = t.pending.get(results[i] as number);
        t.pending.delete(results[i] as number);
        if (results[i + 1] === 1) job?.resolve(results[i + 2] as never);
        else job?.reject(new Error(`${this.name} failed: ${String(results[i + 2])}`));
      }
      if (t.pending.size === 0) worker.unref();
    });
    const fail = (err: Error) => {
      const index = this.threads.indexOf(t);
      if (index >= 0) this.threads.splice(index, 1);
      for (const job of t.pending.values()) job.reject(err);
      t.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`${this.name} thread exited (${code})`)));
    this.threads.push(t);
    return t;
  }

  /** Stops the threads; jobs afterwards fail. */
  async close(): Promise<void> {
    this.closed = true;
    const threads = this.threads.splice(0);
    await Promise.all(threads.map((t) => t.worker.terminate()));
  }
}
