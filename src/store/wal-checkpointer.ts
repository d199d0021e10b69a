import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

// A connection of its own on a worker thread, which the SQLite store asks
// for a PASSIVE checkpoint between two of its commits (see openSqliteStore).
// The worker is plain JavaScript run with `eval`, so the same code works from
// the TypeScript sources and from dist/; the driver is loaded from the path
// this module resolves.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Sqlite = require(workerData.driver);
const db = new Sqlite(workerData.file);
db.pragma('busy_timeout = 5000');
parentPort.postMessage({ ready: true });
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ result });
  } catch (err) {
    parentPort.postMessage({ error: String((err && err.message) || err) });
  }
});
`;

const DRIVER_PATH = createRequire(import.meta.url).resolve('better-sqlite3');

export interface WalCheckpointer {
  /**
   * Checkpoints the WAL into the database file; resolves when done. The
   * first call only starts the thread (a store that never writes much never
   * has one) and resolves at once; later calls wait for it to be ready.
   */
  checkpoint(): Promise<void>;
  /** Waits for a checkpoint under way, then closes the connection and ends the thread. */
  close(): Promise<void>;
}

export function walCheckpointer(file: string): WalCheckpointer {
  let worker: Worker | undefined;
  let dead = false;
  let exited: Promise<void> = Promise.resolve();
  let running: { resolve(): void; reject(err: unknown): void } | undefined;
  let done: Promise<void> | undefined;

  function start(): void {
    const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver: DRIVER_PATH, file } });
    // Idle, it never keeps a process alive; a checkpoint or a close under way does, so what awaits it gets its answer.
    w.unref();
    worker = w;
    exited = new Promise<void>((resolve) => w.once('exit', () => {
      // A thread that died is not started again: SQLite's own checkpoint, the store's backstop, takes over.
      dead = true;
      running?.reject(new Error('the WAL checkpoint thread exited'));
      running = undefined;
      resolve();
    }));
    w.on('error', () => undefined);
    w.on('message', (message: { ready?: true; error?: string }) => {
      if (message.ready) return;
      const r = running;
      running = undefined;
      w.unref();
      if (message.error) r?.reject(new Error(message.error)); else r?.resolve();
    });
  }

  return {
    checkpoint() {
      if (dead) return Promise.resolve();
      if (!worker) {
        start();
        return Promise.resolve();
      }
      const w = worker;
      done = new Promise<void>((resolve, reject) => {
        running = { resolve, reject };
        w.ref();
        w.postMessage('checkpoint');
      });
      return done;
    },
    async close() {
      await done?.catch(() => undefined);
      if (!dead && worker) {
        worker.ref();
        worker.postMessage('close');
      }
      await exited;
    },
  };
}
