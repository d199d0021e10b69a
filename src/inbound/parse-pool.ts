import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { AddressObject } from 'mailparser';
import type { DNSResolver } from 'mailauth';
import type { AuthResults } from './inbound.repo.js';

// The processor's reading of received mail on worker threads: MIME parsing
// (mailparser) and the SPF, DKIM and DMARC checks (mailauth). Both are CPU
// work on the whole message (DKIM hashes the body and verifies signatures)
// and the processor works on dozens of messages at once; on the event loop
// that would hold up the listener's replies, and so the rate mail is taken
// at. Here it runs beside the event loop; the mapping of the parts to API
// fields stays in parse-message.ts.
//
// The checks' DNS look-ups are not made by the threads: each one is posted
// back to this thread and answered by the resolver the caller passed with the
// message, so one answer cache (dns-cache.ts) serves every thread and the
// configured servers stay the only ones asked.
//
// The worker is plain JavaScript run with `eval`, so the same code works from
// the TypeScript sources (tests) and from dist/; mailparser and mailauth are
// loaded from the paths this module resolves, not from wherever the process
// was started. The worker sends back only what the fields and the results
// are made of, as data that survives being posted between threads.

/**
 * The message itself cannot be read (the parser refused it, or it is past a
 * structural limit): trying again would fail again.
 */
export class UnreadableMessage extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnreadableMessage';
  }
}

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

/** The envelope the checks of a received message need, and where their DNS look-ups go. */
export interface AuthRequest {
  remoteIp: string;
  helo: string;
  /** MAIL FROM; '' for the null sender, whose SPF identity is the HELO name (RFC 7208 §2.4). */
  mailFrom: string;
  /** This server's name, in the Authentication-Results field. */
  mta: string;
  resolver: DNSResolver;
}

/** A message read: its parts, and the check results when they were asked for. */
export interface ReadMessage {
  parts: ParsedParts;
  auth?: AuthResults;
}

/** Parses a message and, given an AuthRequest, checks it. */
export type MessageReader = (raw: Buffer, auth?: AuthRequest) => Promise<ReadMessage>;

// keepDeliveryStatus: a message/delivery-status part stays a part of its own
// (mailparser otherwise folds it into the text), so a DSN can be read from it.
// No conversion between text and HTML: the API shows what the sender sent.
export const PARSER_OPTIONS = {
  keepDeliveryStatus: true,
  skipHtmlToText: true,
  skipTextToHtml: true,
  skipImageLinks: true,
} as const;

// ARC only matters to a server that forwards; BIMI would fetch logos and
// certificates over HTTPS for every message.
export const AUTH_OPTIONS = { disableArc: true, disableBimi: true } as const;

/**
 * The worker's copies of partsOf and authResultsOf in parse-message.ts; a
 * test holds each pair to the same output. Copies rather than the functions'
 * own source text (toString): a transpiler may put its helpers in that text
 * (tsx's esbuild adds __name calls), and the worker has none of them.
 */
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

const result = (r) => (r === 'temperr' ? 'temperror' : r);

function authResultsOf(res) {
  const authResults = /(?:^|\\r?\\n)Authentication-Results:\\s*([\\s\\S]*?)(?=\\r?\\n(?![ \\t])|$)/i.exec(res.headers)?.[1] ?? '';
  return {
    spf: res.spf ? { result: result(res.spf.status.result), domain: res.spf.domain ?? null } : { result: 'none', domain: null },
    dkim: res.dkim.results
      .filter((r) => Boolean(r.signingDomain))
      .map((r) => ({ result: result(r.status.result), domain: r.signingDomain, selector: r.selector ?? null, aligned: Boolean(r.status.aligned) })),
    dmarc: res.dmarc
      ? { result: result(res.dmarc.status.result), policy: res.dmarc.policy ?? null, domain: res.dmarc.domain ?? null }
      : { result: 'none', policy: null, domain: null },
    authentication_results: authResults.replace(/\\r?\\n[ \\t]+/g, ' ').trim(),
  };
}
`;

// A job is `{ id, raw, auth? }`; the worker answers `{ id, parts, auth? }` or
// `{ id, error, unreadable }` (unreadable: the parser refused the message).
// While a job is checked, the worker asks `{ dns, job, name, rrtype }` and
// is told `{ dns, answer }` or `{ dns, error: { code, message } }`:
// mailauth reads the code to tell "no such record" from a temporary failure
// (RFC 7208 §5, RFC 7489 §6.6.3). Each side posts what it has to say in one
// turn of its event loop as one array: a message between threads costs each
// side about as much as a small look-up, and a batch makes several per
// received message.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { simpleParser } = require(workerData.mailparser);
const { authenticate } = require(workerData.mailauth);
${PARTS_SOURCE}
let outbox = [];
const send = (msg) => {
  if (outbox.push(msg) === 1) setImmediate(() => { parentPort.postMessage(outbox); outbox = []; });
};
const lookups = new Map();
let nextLookup = 1;
// Messages of one batch mostly come from one sender and ask the same names
// at the same moment: those share a question while it is open (nothing is
// kept after the answer; caching is the other side's). Only jobs of the same
// resolver share, and a job is answered only after its checks have settled,
// so the job a question is asked for is still there to answer it.
const asking = new Map();
const resolverFor = (job, resolver) => (name, rrtype) => {
  const key = resolver + ' ' + rrtype + ' ' + name.toLowerCase();
  let answer = asking.get(key);
  if (!answer) {
    answer = new Promise((resolve, reject) => {
      const dns = nextLookup++;
      lookups.set(dns, { resolve, reject });
      send({ dns, job, name, rrtype });
    });
    asking.set(key, answer);
    const forget = () => { if (asking.get(key) === answer) asking.delete(key); };
    answer.then(forget, forget);
  }
  return answer;
};
function receive(msg) {
  if (msg.dns !== undefined) {
    const lookup = lookups.get(msg.dns);
    lookups.delete(msg.dns);
    if (msg.error) lookup?.reject(Object.assign(new Error(msg.error.message), { code: msg.error.code }));
    else lookup?.resolve(msg.answer);
    return;
  }
  const { id, raw, auth } = msg;
  const buf = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  const check = auth && authenticate(buf, {
    ip: auth.remoteIp, helo: auth.helo, sender: auth.mailFrom, mta: auth.mta, resolver: resolverFor(id, auth.resolver), ...workerData.authOptions,
  }).then(authResultsOf);
  Promise.allSettled([simpleParser(buf, workerData.options), check]).then(([mail, results]) => {
    const failed = [mail, results].find((r) => r.status === 'rejected');
    if (failed) send({ id, error: String((failed.reason && failed.reason.message) || failed.reason), unreadable: failed === mail });
    else send({ id, parts: partsOf(mail.value), auth: results.value });
  });
}
parentPort.on('message', (batch) => batch.forEach(receive));
`;

const requireHere = createRequire(import.meta.url);
const MAILPARSER_PATH = requireHere.resolve('mailparser');
const MAILAUTH_PATH = requireHere.resolve('mailauth');

/** Messages waiting for a worker: a bound, so a backlog waits in the database rather than in memory. */
const MAX_QUEUED_PER_WORKER = 256;

interface Job {
  resolve: (read: ReadMessage) => void;
  reject: (err: Error) => void;
  /** Answers the job's DNS look-ups. */
  resolver: DNSResolver | undefined;
}

interface PoolWorker {
  worker: Worker;
  pending: Map<number, Job>;
  /** Messages to post together at the end of this turn of the event loop. */
  outbox: unknown[];
}

type FromWorker =
  | { id: number; parts?: ParsedParts; auth?: AuthResults; error?: string; unreadable?: boolean; dns?: undefined }
  | { dns: number; job: number; name: string; rrtype: string };

/**
 * A pool of `size` reading threads, started on first use. A worker that dies
 * fails the messages it held (the processor retries those later) and is
 * replaced on the next one.
 */
export class ParsePool {
  private readonly workers: PoolWorker[] = [];
  /** A number per resolver, so the threads share questions only between jobs of one. */
  private readonly resolverIds = new WeakMap<DNSResolver, number>();
  private nextJobId = 1;
  private nextResolverId = 1;
  private closed = false;

  constructor(private readonly size = Math.max(1, Math.min(4, availableParallelism() - 1))) {}

  readonly read: MessageReader = (raw, auth) => {
    if (this.closed) return Promise.reject(new Error('the parsing pool is closed'));
    const w = this.pick();
    if (w.pending.size >= MAX_QUEUED_PER_WORKER) return Promise.reject(new Error('every parsing thread is full'));
    const id = this.nextJobId++;
    return new Promise<ReadMessage>((resolve, reject) => {
      w.pending.set(id, { resolve, reject, resolver: auth?.resolver });
      // A worker with work keeps the process alive; an idle one does not.
      w.worker.ref();
      this.send(w, { id, raw, auth: auth && { remoteIp: auth.remoteIp, helo: auth.helo, mailFrom: auth.mailFrom, mta: auth.mta, resolver: this.resolverId(auth.resolver) } });
    });
  };

  private resolverId(resolver: DNSResolver): number {
    let id = this.resolverIds.get(resolver);
    if (id === undefined) this.resolverIds.set(resolver, (id = this.nextResolverId++));
    return id;
  }

  /** The least busy worker, or a new one while the pool is below its size and all are busy. */
  private pick(): PoolWorker {
    const idlest = this.workers.reduce<PoolWorker | undefined>((a, b) => (a && a.pending.size <= b.pending.size ? a : b), undefined);
    if (idlest && (idlest.pending.size === 0 || this.workers.length >= this.size)) return idlest;
    return this.spawn();
  }

  private spawn(): PoolWorker {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      // Parsing and checking leave mostly short-lived garbage; a young
      // generation larger than a thread's default is collected less often,
      // for about a fifth less CPU per message here.
      resourceLimits: { maxYoungGenerationSizeMb: 64 },
      workerData: { mailparser: MAILPARSER_PATH, mailauth: MAILAUTH_PATH, options: PARSER_OPTIONS, authOptions: AUTH_OPTIONS },
    });
    const w: PoolWorker = { worker, pending: new Map(), outbox: [] };
    worker.on('message', (batch: FromWorker[]) => {
      for (const msg of batch) {
        if (msg.dns !== undefined) {
          this.lookUp(w, msg);
          continue;
        }
        const job = w.pending.get(msg.id);
        w.pending.delete(msg.id);
        if (msg.parts) job?.resolve({ parts: withBuffers(msg.parts), ...(msg.auth && { auth: msg.auth }) });
        else job?.reject(msg.unreadable ? new UnreadableMessage(`the message could not be parsed: ${msg.error}`) : new Error(msg.error));
      }
      if (w.pending.size === 0) worker.unref();
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

  private send(w: PoolWorker, msg: unknown): void {
    if (w.outbox.push(msg) > 1) return;
    setImmediate(() => {
      w.worker.postMessage(w.outbox);
      w.outbox = [];
    });
  }

  /** Answers a worker's look-up with the resolver of the job that made it. */
  private lookUp(w: PoolWorker, q: { dns: number; job: number; name: string; rrtype: string }): void {
    const resolver = w.pending.get(q.job)?.resolver;
    new Promise<unknown>((resolve) => {
      if (!resolver) throw Object.assign(new Error('the look-up outlived its message'), { code: 'ECANCELLED' });
      resolve(resolver(q.name, q.rrtype));
    }).then(
      (answer) => this.send(w, { dns: q.dns, answer }),
      (err: unknown) => {
        const e = err as { code?: unknown; message?: unknown };
        this.send(w, { dns: q.dns, error: { code: typeof e?.code === 'string' ? e.code : undefined, message: String(e?.message ?? err) } });
      },
    );
  }

  /** Ends the threads; reads still running fail. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.workers.splice(0).map((w) => w.worker.terminate()));
  }
}

/** Attachment contents arrive as Uint8Array; the rest of the code reads them as Buffers. */
function withBuffers(parts: ParsedParts): ParsedParts {
  return { ...parts, attachments: parts.attachments.map((a) => ({ ...a, content: Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength) })) };
}
