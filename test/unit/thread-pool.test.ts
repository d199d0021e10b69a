import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { ThreadPool, type ThreadPoolOptions } from '../../src/core/thread-pool.js';

// A job of these threads is [what, ...arguments]: 'ask' asks each argument
// in turn and returns the answers, 'sum' adds at once, 'throw' throws,
// 'hoard' allocates until the thread runs out of memory.
const THREAD = {
  source: `
async function askAll(questions, ask) {
  const answers = [];
  for (const q of questions) {
    answers.push(await ask(q).catch((err) => 'refused: ' + err.message + ' (' + err.code + ')'));
  }
  return answers;
}
function handle([what, ...args], ask) {
  if (what === 'ask') return askAll(args, ask);
  if (what === 'sum') return args.reduce((a, b) => a + b, workerData.start);
  if (what === 'throw') throw new Error('no ' + args[0]);
  const hoard = [];
  for (;;) hoard.push(new Array(1e5).fill(hoard.length));
}
`,
  workerData: { start: 100 },
};

const pools: Array<ThreadPool<unknown, unknown>> = [];
afterEach(async () => { await Promise.all(pools.splice(0).map((p) => p.close())); });

function pool<C>(size: number, options: ThreadPoolOptions<undefined, C> = {}): ThreadPool<undefined, C> {
  const made = new ThreadPool<undefined, C>('testing', THREAD, size, options);
  pools.push(made as ThreadPool<unknown, unknown>);
  return made;
}

/** A promise and the functions that settle it. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => { resolve = res; reject = rej; });
  return { promise, resolve, reject };
}

describe('ThreadPool', () => {
  it('runs plain and failing jobs, their results and failures told apart', async () => {
    const threads = pool(2);
    const sums = await Promise.all(Array.from({ length: 20 }, (_, i) => threads.run<number>(() => ['sum', i, 1])));
    expect(sums).toEqual(Array.from({ length: 20 }, (_, i) => 101 + i));
    await expect(threads.run(() => ['throw', 'luck'])).rejects.toThrow('testing failed: no luck');
  });

  it('answers what a job asks mid-job from the context it was run with, passing a refusal\'s code to the thread', async () => {
    const asked: string[] = [];
    const threads = pool<string>(2, {
      answer: async (question: string, context) => {
        asked.push(`${context}:${question}`);
        if (question === 'missing') throw Object.assign(new Error(`no ${question} here`), { code: 'ENOTFOUND' });
        if (question === 'odd') throw 'a bare string';
        await new Promise((r) => setImmediate(r));
        return { question, context };
      },
    });
    const [first, second] = await Promise.all([
      threads.run(() => ['ask', 'a', 'missing', 'b'], 'one'),
      threads.run(() => ['ask', 'a', 'odd'], 'two'),
    ]);
    expect(first).toEqual([{ question: 'a', context: 'one' }, 'refused: no missing here (ENOTFOUND)', { question: 'b', context: 'one' }]);
    expect(second).toEqual([{ question: 'a', context: 'two' }, 'refused: a bare string (undefined)']);
    expect(asked.sort()).toEqual(['one:a', 'one:b', 'one:missing', 'two:a', 'two:odd']);
    // Without an answer handler a question is refused, and the job goes on.
    expect(await pool(1).run(() => ['ask', 'a'])).toEqual(['refused: testing answers no questions (undefined)']);
  });

  it('fails the jobs of a thread that runs out of memory while a question is outstanding, and goes on with a new thread', async () => {
    const outstanding = deferred<string>();
    const questionAsked = deferred<void>();
    const threads = pool<undefined>(1, {
      // A small heap, so the hoarding job runs out of it soon.
      worker: { resourceLimits: { maxOldGenerationSizeMb: 16 } },
      answer: () => {
        questionAsked.resolve();
        return outstanding.promise;
      },
    });
    const asking = threads.run(() => ['ask', 'slow']);
    await questionAsked.promise;
    const hoarding = threads.run(() => ['hoard']);
    for (const job of [asking, hoarding]) {
      await expect(job).rejects.toMatchObject({ code: 'ERR_WORKER_OUT_OF_MEMORY' });
    }
    // The answer arrives for a thread that is gone: nothing is posted, and the next job has a new thread.
    outstanding.resolve('late');
    await new Promise((r) => setImmediate(r));
    expect(await threads.run(() => ['sum', 2])).toBe(102);
  });

  it('refuses jobs past its bound per thread, and all of them once closed, failing those still running', async () => {
    const held = deferred<string>();
    const bothAsked = deferred<void>();
    let asked = 0;
    const threads = pool<undefined>(1, {
      maxJobsPerThread: 2,
      answer: () => {
        if (++asked === 2) bothAsked.resolve();
        return held.promise;
      },
    });
    const running = [threads.run(() => ['ask', 'q']), threads.run(() => ['ask', 'q'])];
    await expect(threads.run(() => ['sum'])).rejects.toThrow('every testing thread is full');
    await bothAsked.promise;
    await threads.close();
    // A refusal for a closed pool's thread goes nowhere.
    held.reject(new Error('after close'));
    for (const job of running) await expect(job).rejects.toThrow(/^testing thread exited/);
    await expect(threads.run(() => ['sum'])).rejects.toThrow('the testing pool is closed');
  });

  it('keeps the process alive while a job runs on a thread that was idle, and not once its threads are idle again', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailroom-thread-pool-'));
    try {
      const module = fileURLToPath(new URL('../../src/core/thread-pool.ts', import.meta.url));
      const script = join(dir, 'idle.mts');
      writeFileSync(script, `
        const { ThreadPool } = await import(${JSON.stringify(module)});
        const threads = new ThreadPool('idling', {
          source: 'function handle(ms, ask) { const until = Date.now() + ms; while (Date.now() < until); return ask(ms); }',
        }, 1, { answer: (ms) => new Promise((r) => setTimeout(() => r(ms * 2), ms)) });
        // The thread is idle after its first job; during the second nothing else is left on this
        // thread while the thread is busy: were it unreferenced, the await would end the process (13).
        await threads.run(() => 0);
        console.log(await threads.run(() => 300));
      `);
      const child = spawnSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8', timeout: 30_000 });
      // Never closed: the process ends because its idle thread does not hold it.
      expect(child.status).toBe(0);
      expect(child.stdout.trim()).toBe('600');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
