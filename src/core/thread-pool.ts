import { Worker, type WorkerOptions } from 'node:worker_threads';

// CPU-bound steps long enough to be worth a hop to another thread (an RSA
// signature, the text part derived from a large HTML body, the parsing and
// checking of a received message) run on a few worker threads beside the
// event loop, so a burst of them neither stalls the loop nor leaves the other
// cores idle. Threads start on first use, up to the pool's size, and a job
// goes to the least busy one. A job may ask this thread questions while it
// runs (the checks of a received message have their DNS look-ups answered
// here, so one resolver and its cache serve every thread).
//
// What one side has to say in one turn of its event loop travels as one
// message, since each message between threads has a cost of its own; it is
// one flat array of entries, each a kind and its fields (a copied object
// costs a copy of each of its property names as well):
//   to a thread:   RUN id payload | ANSWER question answer | REFUSE question {message, code}
//   from a thread: DONE id result | FAILED id why | ASK id question question-payload

const RUN = 0;
const ANSWER = 1;
const REFUSE = 2;
const DONE = 3;
const FAILED = 4;
const ASK = 5;

/**
 * What a thread runs: plain JavaScript, evaluated as CommonJS (so the same
 * code works from the TypeScript sources and from dist/), that defines
 * `function handle(payload, ask)` returning the job's result, or a promise of
 * it, or throwing. `ask(question)` resolves with the pool's answer to it, or
 * rejects with an Error carrying the refusal's `code`. The code may read
 * `workerData`, and keep state of its own between jobs.
 */
export interface ThreadCode {
  source: string;
  workerData?: unknown;
}

const wrapped = (code: ThreadCode) => `
const { parentPort, workerData } = require('node:worker_threads');
${code.source}
// In a block of its own, so the code's names cannot clash with these.
{
  let outbox = [];
  let flushing = false;
  const flush = () => {
    flushing = false;
    if (outbox.length > 0) parentPort.postMessage(outbox);
    outbox = [];
  };
  // What settles later leaves together at the end of the turn it settled in.
  const send = (...entry) => {
    outbox.push(...entry);
    if (!flushing) {
      flushing = true;
      setImmediate(flush);
    }
  };
  const why = (err) => String((err && err.message) || err);
  const questions = new Map();
  let nextQuestion = 1;
  const askFor = (id) => (question) => new Promise((resolve, reject) => {
    const q = nextQuestion++;
    questions.set(q, { resolve, reject });
    send(${ASK}, id, q, question);
  });
  const settle = (kind, q, value) => {
    const question = questions.get(q);
    questions.delete(q);
    if (kind === ${ANSWER}) question.resolve(value);
    else question.reject(Object.assign(new Error(value.message), { code: value.code }));
  };
  parentPort.on('message', (entries) => {
    for (let i = 0; i < entries.length; i += 3) {
      if (entries[i] !== ${RUN}) {
        settle(entries[i], entries[i + 1], entries[i + 2]);
        continue;
      }
      const id = entries[i + 1];
      try {
        const result = handle(entries[i + 2], askFor(id));
        if (result && typeof result.then === 'function') result.then((r) => send(${DONE}, id, r), (err) => send(${FAILED}, id, why(err)));
        else send(${DONE}, id, result);
      } catch (err) {
        send(${FAILED}, id, why(err));
      }
    }
    // The results of synchronous jobs leave now, not a turn later.
    flush();
  });
}
`;

interface Job<C> {
  resolve: (result: never) => void;
  reject: (err: Error) => void;
  /** What the answers to this job's questions are made from. */
  context: C | undefined;
}

interface Thread<S, C> {
  worker: Worker;
  pending: Map<number, Job<C>>;
  /** What the caller keeps about this thread (the keys it was given, say). */
  state: S;
  /** Entries of this turn of the event loop, posted together at its end. */
  outbox: unknown[];
}

export interface ThreadPoolOptions<S, C> {
  /** Makes what the caller keeps per thread. */
  newState?: () => S;
  /** Options for each thread beyond its code (`resourceLimits`, say). */
  worker?: Omit<WorkerOptions, 'eval' | 'workerData'>;
  /** Jobs a thread holds at most: past that, run() refuses rather than letting a backlog grow in memory. */
  maxJobsPerThread?: number;
  /**
   * Answers a question a job asked, given the context the job was run with;
   * what it throws reaches the job as a refusal with the error's message and
   * `code`. Without it every question is refused.
   */
  answer?: (question: never, context: C) => unknown;
}

/** An answer's failure as a thread receives it: its message, and its code (e.g. ENOTFOUND) when it has one. */
const refusal = (err: unknown) => {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  return { message: String(e?.message ?? err), code: typeof e?.code === 'string' ? e.code : undefined };
};

export class ThreadPool<S = undefined, C = undefined> {
  private readonly threads: Array<Thread<S, C>> = [];
  private nextJobId = 1;
  private closed = false;

  /** `name` says whose threads failed in errors. */
  constructor(private readonly name: string, private readonly code: ThreadCode, private readonly size: number,
    private readonly options: ThreadPoolOptions<S, C> = {}) {}

  /**
   * Runs a job on the least busy thread. `payload` is made for that thread
   * from what the caller keeps about it, which it may change: jobs reach a
   * thread in the order they were made for it. The job's questions are
   * answered from `context`.
   */
  run<R>(payload: (state: S) => unknown, context?: C): Promise<R> {
    if (this.closed) return Promise.reject(new Error(`the ${this.name} pool is closed`));
    const t = this.pick();
    if (t.pending.size >= (this.options.maxJobsPerThread ?? Infinity)) return Promise.reject(new Error(`every ${this.name} thread is full`));
    const id = this.nextJobId++;
    const data = payload(t.state);
    return new Promise<R>((resolve, reject) => {
      t.pending.set(id, { resolve: resolve as (result: never) => void, reject, context });
      // A thread with work keeps the process alive; an idle one does not.
      t.worker.ref();
      this.send(t, RUN, id, data);
    });
  }

  private send(t: Thread<S, C>, ...entry: unknown[]): void {
    if (t.outbox.push(...entry) === entry.length) setImmediate(() => this.post(t));
  }

  private post(t: Thread<S, C>): void {
    const entries = t.outbox;
    t.outbox = [];
    if (this.threads.includes(t)) t.worker.postMessage(entries);
  }

  /** The least busy thread, or a new one while the pool is below its size and all are busy. */
  private pick(): Thread<S, C> {
    const idlest = this.threads.reduce<Thread<S, C> | undefined>((a, b) => (a && a.pending.size <= b.pending.size ? a : b), undefined);
    if (idlest && (idlest.pending.size === 0 || this.threads.length >= this.size)) return idlest;
    return this.spawn();
  }

  private spawn(): Thread<S, C> {
    const worker = new Worker(wrapped(this.code), { ...this.options.worker, eval: true, workerData: this.code.workerData });
    const t: Thread<S, C> = { worker, pending: new Map(), state: this.options.newState?.() as S, outbox: [] };
    worker.on('message', (entries: unknown[]) => {
      for (let i = 0; i < entries.length;) {
        const id = entries[i + 1] as number;
        if (entries[i] === ASK) {
          this.answer(t, id, entries[i + 2] as number, entries[i + 3]);
          i += 4;
          continue;
        }
        const job = t.pending.get(id);
        t.pending.delete(id);
        if (entries[i] === DONE) job?.resolve(entries[i + 2] as never);
        else job?.reject(new Error(`${this.name} failed: ${String(entries[i + 2])}`));
        i += 3;
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

  /** Answers question `q` of job `id`, from the context that job was run with. */
  private answer(t: Thread<S, C>, id: number, q: number, question: unknown): void {
    const job = t.pending.get(id);
    new Promise<unknown>((resolve) => {
      if (!job) throw Object.assign(new Error('the question outlived its job'), { code: 'ECANCELLED' });
      if (!this.options.answer) throw new Error(`${this.name} answers no questions`);
      resolve(this.options.answer(question as never, job.context as C));
    }).then(
      (answer) => this.send(t, ANSWER, q, answer),
      (err: unknown) => this.send(t, REFUSE, q, refusal(err)),
    );
  }

  /** Stops the threads; jobs still running fail, and jobs afterwards too. */
  async close(): Promise<void> {
    this.closed = true;
    const threads = this.threads.splice(0);
    await Promise.all(threads.map((t) => t.worker.terminate()));
  }
}
