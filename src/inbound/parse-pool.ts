import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import type { AddressObject } from 'mailparser';
import type { DNSResolver } from 'mailauth';
import type { AuthResults } from './inbound.repo.js';
import { ThreadPool } from '../core/thread-pool.js';

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
// The threads are core/thread-pool.ts's, running plain JavaScript, so the
// same code works from the TypeScript sources (tests) and from dist/;
// mailparser and mailauth are loaded from the paths this module resolves, not
// from wherever the process was started. A thread sends back only what the
// fields and the results are made of, as data that survives being posted
// between threads.

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
 * The thread's copies of partsOf and authResultsOf in parse-message.ts; a
 * test holds each pair to the same output. Copies rather than the functions'
 * own source text (toString): a transpiler may put its helpers in that text
 * (tsx's esbuild adds __name calls), and the thread has none of them.
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

// A job is `{ raw, auth? }`; the thread answers `{ parts, auth? }` or
// `{ error, unreadable }` (unreadable: the parser refused the message).
// While a job is checked, the thread asks `{ name, rrtype }` of this thread,
// which answers with the job's resolver or refuses with the resolver's error
// code: mailauth reads the code to tell "no such record" from a temporary
// failure (RFC 7208 §5, RFC 7489 §6.6.3).
const THREAD_SOURCE = `
const { simpleParser } = require(workerData.mailparser);
const { authenticate } = require(workerData.mailauth);
${PARTS_SOURCE}
// Messages of one batch mostly come from one sender and ask the same names
// at the same moment: those share a question while it is open (nothing is
// kept after the answer; caching is the other side's). Only jobs of the same
// resolver share, and a job is answered only after its checks have settled,
// so the job a question is asked for is still there to answer it.
const asking = new Map();
const resolverFor = (resolver, ask) => (name, rrtype) => {
  const key = resolver + ' ' + rrtype + ' ' + name.toLowerCase();
  let answer = asking.get(key);
  if (!answer) {
    answer = ask({ name, rrtype });
    asking.set(key, answer);
    const forget = () => { if (asking.get(key) === answer) asking.delete(key); };
    answer.then(forget, forget);
  }
  return answer;
};
function handle({ raw, auth }, ask) {
  const buf = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  const check = auth && authenticate(buf, {
    ip: auth.remoteIp, helo: auth.helo, sender: auth.mailFrom, mta: auth.mta, resolver: resolverFor(auth.resolver, ask), ...workerData.authOptions,
  }).then(authResultsOf);
  return Promise.allSettled([simpleParser(buf, workerData.options), check]).then(([mail, results]) => {
    const failed = [mail, results].find((r) => r.status === 'rejected');
    if (failed) return { error: String((failed.reason && failed.reason.message) || failed.reason), unreadable: failed === mail };
    return { parts: partsOf(mail.value), auth: results.value };
  });
}
`;

const requireHere = createRequire(import.meta.url);
const MAILPARSER_PATH = requireHere.resolve('mailparser');
const MAILAUTH_PATH = requireHere.resolve('mailauth');

/** Messages waiting for a thread: a bound, so a backlog waits in the database rather than in memory. */
const MAX_QUEUED_PER_THREAD = 256;

type ThreadResult = { parts: ParsedParts; auth?: AuthResults } | { parts?: undefined; error: string; unreadable: boolean };

/**
 * A pool of `size` reading threads, started on first use. A thread that dies
 * fails the messages it held (the processor retries those later) and is
 * replaced on the next one.
 */
export class ParsePool {
  private readonly threads: ThreadPool<undefined, DNSResolver>;
  /** A number per resolver, so the threads share questions only between jobs of one. */
  private readonly resolverIds = new WeakMap<DNSResolver, number>();
  private nextResolverId = 1;

  constructor(size = Math.max(1, Math.min(4, availableParallelism() - 1))) {
    this.threads = new ThreadPool('parsing', {
      source: THREAD_SOURCE,
      workerData: { mailparser: MAILPARSER_PATH, mailauth: MAILAUTH_PATH, options: PARSER_OPTIONS, authOptions: AUTH_OPTIONS },
    }, size, {
      // Parsing and checking leave mostly short-lived garbage; a young
      // generation larger than a thread's default is collected less often,
      // for about a fifth less CPU per message here.
      worker: { resourceLimits: { maxYoungGenerationSizeMb: 64 } },
      maxJobsPerThread: MAX_QUEUED_PER_THREAD,
      answer: (q: { name: string; rrtype: string }, resolver) => resolver(q.name, q.rrtype),
    });
  }

  readonly read: MessageReader = (raw, auth) => {
    const job = { raw, auth: auth && { remoteIp: auth.remoteIp, helo: auth.helo, mailFrom: auth.mailFrom, mta: auth.mta, resolver: this.resolverId(auth.resolver) } };
    return this.threads.run<ThreadResult>(() => job, auth?.resolver).then((read) => {
      if (read.parts) return { parts: withBuffers(read.parts), ...(read.auth && { auth: read.auth }) };
      throw read.unreadable ? new UnreadableMessage(`the message could not be parsed: ${read.error}`) : new Error(read.error);
    });
  };

  private resolverId(resolver: DNSResolver): number {
    let id = this.resolverIds.get(resolver);
    if (id === undefined) this.resolverIds.set(resolver, (id = this.nextResolverId++));
    return id;
  }

  /** Ends the threads; reads still running fail. */
  close(): Promise<void> {
    return this.threads.close();
  }
}

/** Attachment contents arrive as Uint8Array; the rest of the code reads them as Buffers. */
function withBuffers(parts: ParsedParts): ParsedParts {
  return { ...parts, attachments: parts.attachments.map((a) => ({ ...a, content: Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength) })) };
}
