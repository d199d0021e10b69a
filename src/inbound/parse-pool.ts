import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { AddressObject } from 'mailparser';

// MIME parsing of received mail on worker threads. mailparser takes about an
// eighth of the main thread's time per received message (profile of the
// inbound benchmark), and the processor parses dozens at once, which would
// hold up the listener's replies, and so the rate mail is taken at, for as
// long. Here it runs
// beside the event loop; the mapping to API fields stays in parse-message.ts.
//
// The worker is plain JavaScript run with `eval`, so the same code works from
// the TypeScript sources (tests) and from dist/; mailparser is loaded from the
// path this module resolves, not from wherever the process was started. The
// worker sends back only the parts of mailparser's result that the fields are
// made of, as data that survives being posted between threads.

/** What parse-message.ts needs of a parsed message. */
export interface ParsedParts {
  headerLines: ReadonlyArray<{ key: string; line: string }>;
  contentType: { value?: string; params?: Record<string, string> } | undefined;
  from: AddressObject | AddressObject[] | undefined;
  to: AddressObject | AddressObject[] | undefined;
  cc: AddressObject | AddressObject[] | undefined;
  replyTo: AddressObject | AddressObject[] | undefined;
  subject: string | undefined;
  text: string | undefined;
  html: string | false;
  messageId: string | undefined;
  attachments: Array<{ filename: string | undefined; contentType: string; size: number; cid: string | undefined; contentDisposition: string; content: Buffer }>;
}

export type PartsParser = (raw: Buffer) => Promise<ParsedParts>;

// keepDeliveryStatus: a message/delivery-status part stays a part of its own
// (mailparser otherwise folds it into the text), so a DSN can be read from it.
// No conversion between text and HTML: the API shows what the sender sent.
export const PARSER_OPTIONS = {
  keepDeliveryStatus: true,
  skipHtmlToText: true,
  skipTextToHtml: true,
  skipImageLinks: true,
} as const;

/** The worker's copy of partsOf in parse-message.ts; a test holds the two to the same output. */
const PARTS_SOURCE = `
function partsOf(mail) {
  return {
    headerLines: mail.headerLines,
    contentType: mail.headers.get('content-type'),
    from: mail.from, to: mail.to, cc: mail.cc, replyTo: mail.replyTo,
    subject: mail.subject, text: mail.text, html: mail.html, messageId: mail.messageId,
    attachments: mail.attachments.map((a) => ({
      filename: a.filename, contentType: a.contentType, size: a.size, cid: a.cid,
      contentDisposition: a.contentDisposition, content: a.content,
    })),
  };
}
`;

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { simpleParser } = require(workerData.mailparser);
${PARTS_SOURCE}
parentPort.on('message', ({ id, raw }) => {
  simpleParser(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength), workerData.options).then(
    (mail) => parentPort.postMessage({ id, parts: partsOf(mail) }),
    (err) => parentPort.postMessage({ id, error: String((err && err.message) || err) }),
  );
});
`;

const MAILPARSER_PATH = createRequire(import.meta.url).resolve('mailparser');

/** Parses waiting for a worker: a bound, so a backlog waits in the database rather than in memory. */
const MAX_QUEUED_PER_WORKER = 256;

interface PoolWorker {
  worker: Worker;
  pending: Map<number, { resolve: (parts: ParsedParts) => void; reject: (err: Error) => void }>;
}

/**
 * A pool of `size` parsing threads, started on first use. A worker that dies
 * fails the parses it held (the processor retries those messages later) and
 * is replaced on the next parse.
 */
export class ParsePool {
  private readonly workers: PoolWorker[] = [];
  private nextJobId = 1;
  private closed = false;

  constructor(private readonly size = Math.max(1, Math.min(4, availableParallelism() - 1))) {}

  readonly parse: PartsParser = (raw) => {
    if (this.closed) return Promise.reject(new Error('the parsing pool is closed'));
    const w = this.pick();
    if (w.pending.size >= MAX_QUEUED_PER_WORKER) return Promise.reject(new Error('every parsing thread is full'));
    const id = this.nextJobId++;
    return new Promise<ParsedParts>((resolve, reject) => {
      w.pending.set(id, { resolve, reject });
      // A worker with work keeps the process alive; an idle one does not.
      w.worker.ref();
      w.worker.postMessage({ id, raw });
    });
  };

  /** The least busy worker, or a new one while the pool is below its size and all are busy. */
  private pick(): PoolWorker {
    const idlest = this.workers.reduce<PoolWorker | undefined>((a, b) => (a && a.pending.size <= b.pending.size ? a : b), undefined);
    if (idlest && (idlest.pending.size === 0 || this.workers.length >= this.size)) return idlest;
    return this.spawn();
  }

  private spawn(): PoolWorker {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { mailparser: MAILPARSER_PATH, options: PARSER_OPTIONS } });
    const w: PoolWorker = { worker, pending: new Map() };
    worker.on('message', (msg: { id: number; parts?: ParsedParts; error?: string }) => {
      const job = w.pending.get(msg.id);
      w.pending.delete(msg.id);
      if (w.pending.size === 0) worker.unref();
      if (msg.parts) job?.resolve(withBuffers(msg.parts));
      else job?.reject(new Error(msg.error));
    });
    const fail = (err: Error) => {
      const index = this.workers.indexOf(w);
      if (index >= 0) this.workers.splice(index, 1);
      for (const job of w.pending.values()) job.reject(err);
      w.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`parsing thread exited (${code})`)));
    this.workers.push(w);
    return w;
  }

  /** Ends the threads; parses still running fail. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.workers.splice(0).map((w) => w.worker.terminate()));
  }
}

/** Attachment contents arrive as Uint8Array; the rest of the code reads them as Buffers. */
function withBuffers(parts: ParsedParts): ParsedParts {
  return { ...parts, attachments: parts.attachments.map((a) => ({ ...a, content: Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength) })) };
}
