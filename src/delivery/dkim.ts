// DKIM signing (RFC 6376), relaxed/relaxed, RSA-SHA256 and Ed25519-SHA256
// (RFC 8463).
//
// Written here rather than calling mailauth's dkimSign because dkimSign takes
// the key as PEM and parses it again for every message (crypto.createPrivateKey
// does not accept a KeyObject), which costs about as much as the signature
// itself. Here a PEM is parsed once into a KeyObject and cached; mailauth's
// dkimVerify checks the output in the tests.
//
// The RSA private-key operation (about a millisecond for 2048 bits) runs on a
// small pool of worker threads so a burst of messages does not stall the event
// loop; canonicalisation and hashing stay on the calling thread, done once for
// all the keys that sign a message.

import { createHash, createPrivateKey, sign as cryptoSign, type KeyObject } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

export interface DkimKey {
  /** Signing domain, the d= tag. */
  domain: string;
  /** Selector, the s= tag: the public key is published at <selector>._domainkey.<domain>. */
  selector: string;
  /** PEM text (PKCS#1 or PKCS#8) or a parsed key; RSA or Ed25519. */
  privateKey: string | KeyObject;
}

export interface DkimSignerOptions {
  /** Worker threads for RSA signatures, created on first use; 0 signs on the calling thread. Default: the number of cores. */
  poolSize?: number;
  /** Header fields to sign, lower case; the default follows RFC 6376 §5.4.1 and RFC 8058 §4. */
  headerFields?: readonly string[];
  /** Clock for the t= tag, epoch ms. */
  now?: () => number;
}

export const DEFAULT_SIGNED_HEADERS: readonly string[] = Object.freeze([
  'from', 'sender', 'reply-to', 'subject', 'date', 'message-id', 'to', 'cc',
  'mime-version', 'content-type', 'content-transfer-encoding',
  'in-reply-to', 'references',
  'list-id', 'list-help', 'list-subscribe', 'list-post', 'list-owner', 'list-archive',
  // RFC 8058 §4: one-click unsubscribe only counts when both fields are signed.
  'list-unsubscribe', 'list-unsubscribe-post',
]);

/** Parsed keys kept per PEM text; a bound so a stream of one-off keys cannot grow it without end. */
const MAX_CACHED_KEYS = 1000;

// ---------------------------------------------------------------------------
// Canonicalisation, RFC 6376 §3.4

/** §3.4.2 relaxed header: lower-case name, unfolded value, runs of WSP as one SP, no WSP around the colon or at the end. */
export function relaxedHeader(field: string): string {
  const colon = field.indexOf(':');
  const name = field.slice(0, colon).trim().toLowerCase();
  const value = field.slice(colon + 1).replace(/\r\n/g, '').replace(/[ \t]+/g, ' ').trim();
  return `${name}:${value}`;
}

const SP = 0x20;
const HT = 0x09;
const CR = 0x0d;
const LF = 0x0a;
const SPACE = Buffer.from(' ', 'latin1');
const CRLF = Buffer.from('\r\n', 'latin1');

/**
 * §3.4.4 relaxed body, handed to `emit` in pieces: WSP runs as one SP, none
 * at line ends, no empty lines at the end, a final CRLF unless empty. The
 * pieces are views of `body` wherever it needs no change, so a body that is
 * already canonical (quoted-printable and base64 ones, as the composer writes
 * them) is read once and never copied.
 */
function relaxedBodyPieces(body: Buffer, emit: (piece: Buffer) => void): void {
  // Whatever ends the body after its last byte that is neither WSP nor part of a CRLF goes.
  let end = body.length;
  for (;;) {
    while (end > 0 && (body[end - 1] === SP || body[end - 1] === HT)) end--;
    if (end < 2 || body[end - 2] !== CR || body[end - 1] !== LF) break;
    end -= 2;
  }
  if (end === 0) return;
  // The content ends in a byte that is not WSP, so every WSP run below has a byte after it.
  let kept = 0;
  for (let i = 0; i < end; i++) {
    const c = body[i];
    if (c !== SP && c !== HT) continue;
    let after = i + 1;
    while (body[after] === SP || body[after] === HT) after++;
    const atLineEnd = body[after] === CR && after + 1 < end && body[after + 1] === LF;
    if (c === SP && after === i + 1 && !atLineEnd) continue;
    if (i > kept) emit(body.subarray(kept, i));
    if (!atLineEnd) emit(SPACE);
    kept = after;
    i = after - 1;
  }
  emit(body.subarray(kept, end));
  emit(CRLF);
}

/** The relaxed canonical form of a body. */
export function relaxedBody(body: Buffer): Buffer {
  const pieces: Buffer[] = [];
  relaxedBodyPieces(body, (piece) => pieces.push(piece));
  return Buffer.concat(pieces);
}

/** The bh= value: SHA-256 of the relaxed body, hashed piece by piece. */
export function relaxedBodyHash(body: Buffer): string {
  const hash = createHash('sha256');
  relaxedBodyPieces(body, (piece) => hash.update(piece));
  return hash.digest('base64');
}

interface ParsedMessage {
  /** Header fields as they appear, folding kept, without the final CRLF. */
  fields: Array<{ name: string; raw: string }>;
  body: Buffer;
}

function parseMessage(raw: Buffer): ParsedMessage {
  const end = raw.indexOf('\r\n\r\n');
  const head = (end < 0 ? raw : raw.subarray(0, end)).toString('latin1');
  const body = end < 0 ? Buffer.alloc(0) : raw.subarray(end + 4);
  const fields = head
    .split(/\r\n(?![ \t])/)
    .filter((f) => f.includes(':'))
    .map((raw) => ({ name: raw.slice(0, raw.indexOf(':')).trim().toLowerCase(), raw }));
  return { fields, body };
}

/**
 * The h= list and the header fields it covers, per §5.4.2: a name present n
 * times is listed n times and its instances are taken from the bottom up.
 * From is listed once more than it occurs ("oversigned", §8.15), so a second
 * From added in transit breaks the signature instead of slipping past DMARC.
 */
function selectHeaders(fields: ParsedMessage['fields'], wanted: readonly string[]) {
  const names: string[] = [];
  const signed: string[] = [];
  for (const name of wanted) {
    const instances = fields.filter((f) => f.name === name).reverse();
    for (const f of instances) {
      names.push(name);
      signed.push(f.raw);
    }
    if (name === 'from') names.push(name);
  }
  return { names, signed };
}

/** Folds `parts` into lines of at most ~76 octets; `glue` is what joins a part to the one before when no fold happens there. */
function fold(parts: Array<{ text: string; glue: '' | ' ' }>, column: number): string {
  let out = '';
  let col = column;
  for (const { text, glue } of parts) {
    if (col + glue.length + text.length > 76 && col > 1) {
      out += `\r\n ${text}`; // FWS is allowed between tags, around ':' in h= and inside base64 (§3.2, §3.5)
      col = 1 + text.length;
    } else {
      out += glue + text;
      col += glue.length + text.length;
    }
  }
  return out;
}

function chunks(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** What every signature of one message shares: all keys sign relaxed/relaxed with SHA-256. */
interface CanonicalMessage {
  /** The h= names, in order. */
  names: string[];
  /** The signed header fields in relaxed form, each with its CRLF. */
  signedHeaders: string;
  bodyHash: string;
}

function canonicalise(raw: Buffer, wanted: readonly string[]): CanonicalMessage {
  const { fields, body } = parseMessage(raw);
  const { names, signed } = selectHeaders(fields, wanted);
  return { names, signedHeaders: signed.map((f) => `${relaxedHeader(f)}\r\n`).join(''), bodyHash: relaxedBodyHash(body) };
}

type Algorithm = 'rsa-sha256' | 'ed25519-sha256';

interface Prepared {
  /** "DKIM-Signature: ... b=" as it goes out, minus the signature value. */
  header: string;
  /** What gets signed, latin1: the canonical signed fields and the canonical DKIM-Signature field with an empty b=. */
  data: string;
  algorithm: Algorithm;
}

function prepare(message: CanonicalMessage, key: DkimKey, algorithm: Algorithm, timestamp: number): Prepared {
  const { names } = message;
  const tags = [
    'v=1;', `a=${algorithm};`, 'c=relaxed/relaxed;', `d=${key.domain};`, `s=${key.selector};`, `t=${timestamp};`,
  ].map((text) => ({ text, glue: ' ' as const }));
  const h = names.map((n, i) => ({ text: `${i === 0 ? 'h=' : ''}${n}${i === names.length - 1 ? ';' : ':'}`, glue: (i === 0 ? ' ' : '') as '' | ' ' }));
  const bhParts = chunks(`bh=${message.bodyHash};`, 60).map((text, i) => ({ text, glue: (i === 0 ? ' ' : '') as '' | ' ' }));
  const header = `DKIM-Signature:${fold([...tags, ...h, ...bhParts, { text: 'b=', glue: ' ' }], 'DKIM-Signature:'.length)}`;
  return { header, data: message.signedHeaders + relaxedHeader(header), algorithm };
}

function finish(prepared: Prepared, signature: string): string {
  const column = prepared.header.length - (prepared.header.lastIndexOf('\n') + 1);
  const parts = chunks(signature, 60).map((text) => ({ text, glue: '' as const }));
  return `${prepared.header}${fold(parts, column)}\r\n`;
}

/** The b= value, base64. RFC 8463 §3: Ed25519 signs the SHA-256 hash of the data; RSA signs the data with SHA-256. */
function signData(algorithm: Algorithm, data: string, key: KeyObject): string {
  const bytes = Buffer.from(data, 'latin1');
  const signature = algorithm === 'ed25519-sha256'
    ? cryptoSign(null, createHash('sha256').update(bytes).digest(), key)
    : cryptoSign('sha256', bytes, key);
  return signature.toString('base64');
}

// ---------------------------------------------------------------------------
// Worker pool for the RSA private-key operation

// Plain JavaScript run with `eval`, so the same code works from the TypeScript
// sources (tests) and from dist/. It signs as signData() does. Keys arrive
// once per worker as KeyObjects (they can be posted between threads) and are
// kept by id; the main thread tells a worker which keys to drop, so both sides
// bound the cache alike. A job carries every signature of one message; the
// jobs of one turn of the event loop go to a worker, and come back, as one
// message, since each message between threads has a cost of its own. Both
// ways they travel as one flat array of numbers, strings and keys
// (encodeJobs): a copied object costs a copy of each of its property names
// as well, which made the copy of the objects cost about twice as much.

/** Entries of one signature in the flat array of jobs: key id, algorithm, data, and the key or 0. */
const SIGNATURE_STRIDE = 4;

const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { createHash, sign } = require('node:crypto');
const keys = new Map();
parentPort.on('message', (jobs) => {
  const out = [];
  for (let i = 0; i < jobs.length;) {
    const id = jobs[i++];
    for (let n = jobs[i++]; n > 0; n--) keys.delete(jobs[i++]);
    const count = jobs[i++];
    const end = i + count * ${SIGNATURE_STRIDE};
    try {
      const signatures = [];
      for (; i < end; i += ${SIGNATURE_STRIDE}) {
        const keyId = jobs[i], algorithm = jobs[i + 1], data = jobs[i + 2], key = jobs[i + 3];
        if (key) keys.set(keyId, key);
        const bytes = Buffer.from(data, 'latin1');
        const signature = algorithm === 'ed25519-sha256'
          ? sign(null, createHash('sha256').update(bytes).digest(), keys.get(keyId))
          : sign('sha256', bytes, keys.get(keyId));
        signatures.push(signature.toString('base64'));
      }
      out.push(id, signatures.length, ...signatures);
    } catch (err) {
      i = end;
      out.push(id, -1, String((err && err.message) || err));
    }
  }
  parentPort.postMessage(out);
});
`;

/** Keys each worker keeps; past this the least recently used is dropped and re-sent when needed again. */
const MAX_KEYS_PER_WORKER = 256;

interface Job {
  id: number;
  evict: number[];
  signatures: Array<{ keyId: number; algorithm: Algorithm; data: string; key?: KeyObject }>;
}

interface PoolWorker {
  worker: Worker;
  pending: Map<number, { resolve: (signatures: string[]) => void; reject: (err: Error) => void }>;
  /** Ids of the keys the worker holds, least recently used first. */
  known: Set<number>;
  /** Jobs of this turn of the event loop, posted together at its end. */
  outbox: Job[];
}

interface Signing { key: KeyObject; algorithm: Algorithm; data: string }

/** Jobs as the worker reads them: each job's id, its evictions (count, ids), its signatures (count, SIGNATURE_STRIDE entries each). */
function encodeJobs(jobs: readonly Job[]): unknown[] {
  const flat: unknown[] = [];
  for (const { id, evict, signatures } of jobs) {
    flat.push(id, evict.length, ...evict, signatures.length);
    for (const { keyId, algorithm, data, key } of signatures) flat.push(keyId, algorithm, data, key ?? 0);
  }
  return flat;
}

class SigningPool {
  private readonly workers: PoolWorker[] = [];
  private readonly keyIds = new WeakMap<KeyObject, number>();
  private nextKeyId = 1;
  private nextJobId = 1;
  private closed = false;

  constructor(private readonly size: number) {}

  /** The b= values of `signings`, in order, made by one worker in one round trip. */
  sign(signings: readonly Signing[]): Promise<string[]> {
    if (this.closed) return Promise.reject(new Error('DKIM signer is closed'));
    if (signings.length > MAX_KEYS_PER_WORKER) return Promise.reject(new Error(`DKIM signs with ${MAX_KEYS_PER_WORKER} keys at most`));
    const w = this.pick();
    const keyIdOf = (key: KeyObject) => {
      let keyId = this.keyIds.get(key);
      if (keyId === undefined) this.keyIds.set(key, (keyId = this.nextKeyId++));
      return keyId;
    };
    const ids = signings.map((s) => keyIdOf(s.key));
    // The keys of this job become the most recently used first, so making room below never drops one of them.
    const unknown = new Set<number>();
    for (const keyId of ids) {
      if (w.known.delete(keyId)) w.known.add(keyId);
      else unknown.add(keyId);
    }
    const evict: number[] = [];
    for (const keyId of unknown) {
      if (w.known.size >= MAX_KEYS_PER_WORKER) {
        const oldest = w.known.values().next().value!;
        w.known.delete(oldest);
        evict.push(oldest);
      }
      w.known.add(keyId);
    }
    const signatures = signings.map(({ key, algorithm, data }, i) => {
      const keyId = ids[i];
      // A key goes along the first time this worker needs it (once, if two signatures use it).
      const send = unknown.delete(keyId);
      return { keyId, algorithm, data, ...(send && { key }) };
    });
    const id = this.nextJobId++;
    return new Promise<string[]>((resolve, reject) => {
      w.pending.set(id, { resolve, reject });
      // A worker with work keeps the process alive; an idle one does not.
      w.worker.ref();
      if (w.outbox.push({ id, evict, signatures }) === 1) setImmediate(() => this.post(w));
    });
  }

  private post(w: PoolWorker): void {
    const jobs = w.outbox;
    w.outbox = [];
    if (this.workers.includes(w)) w.worker.postMessage(encodeJobs(jobs));
  }

  /** The least busy worker, or a new one while the pool is below its size and all are busy. */
  private pick(): PoolWorker {
    const idlest = this.workers.reduce<PoolWorker | undefined>((a, b) => (a && a.pending.size <= b.pending.size ? a : b), undefined);
    if (idlest && (idlest.pending.size === 0 || this.workers.length >= this.size)) return idlest;
    return this.spawn();
  }

  private spawn(): PoolWorker {
    const w: PoolWorker = { worker: new Worker(WORKER_SOURCE, { eval: true }), pending: new Map(), known: new Set(), outbox: [] };
    // Each job's id, then the count of its signatures and the signatures, or -1 and why it failed.
    w.worker.on('message', (results: Array<number | string>) => {
      for (let i = 0; i < results.length;) {
        const id = results[i] as number;
        const count = results[i + 1] as number;
        const job = w.pending.get(id);
        w.pending.delete(id);
        if (count < 0) job?.reject(new Error(`DKIM signing failed: ${results[i + 2]}`));
        else job?.resolve(results.slice(i + 2, i + 2 + count) as string[]);
        i += count < 0 ? 3 : 2 + count;
      }
      if (w.pending.size === 0) w.worker.unref();
    });
    const fail = (err: Error) => {
      const index = this.workers.indexOf(w);
      if (index >= 0) this.workers.splice(index, 1);
      for (const job of w.pending.values()) job.reject(err);
      w.pending.clear();
    };
    w.worker.on('error', fail);
    w.worker.on('exit', (code) => fail(new Error(`DKIM signing worker exited (${code})`)));
    this.workers.push(w);
    return w;
  }

  async close(): Promise<void> {
    this.closed = true;
    const workers = this.workers.splice(0);
    await Promise.all(workers.map((w) => w.worker.terminate()));
  }
}

// ---------------------------------------------------------------------------

export class DkimSigner {
  private readonly keys = new Map<string, KeyObject>();
  private readonly pool: SigningPool | undefined;
  private readonly headerFields: readonly string[];
  private readonly now: () => number;

  constructor(options: DkimSignerOptions = {}) {
    const size = options.poolSize ?? availableParallelism();
    this.pool = size > 0 ? new SigningPool(size) : undefined;
    this.headerFields = options.headerFields ?? DEFAULT_SIGNED_HEADERS;
    this.now = options.now ?? Date.now;
  }

  /** The parsed key for a PEM, parsed on first use only. */
  keyObject(privateKey: string | KeyObject): KeyObject {
    if (typeof privateKey !== 'string') return privateKey;
    let key = this.keys.get(privateKey);
    if (!key) {
      key = createPrivateKey(privateKey);
      if (this.keys.size >= MAX_CACHED_KEYS) this.keys.delete(this.keys.keys().next().value!);
      this.keys.set(privateKey, key);
    }
    return key;
  }

  /**
   * The DKIM-Signature fields for `raw` by each of `keys`, in the same order,
   * folded, each ending in CRLF. The message is parsed, its signed fields and
   * its body canonicalised and the body hashed once for all of them.
   */
  async signatureHeaders(raw: Buffer, keys: readonly DkimKey[]): Promise<string[]> {
    if (keys.length === 0) return [];
    const keyObjects = keys.map((key) => this.keyObject(key.privateKey));
    const algorithms = keyObjects.map(({ asymmetricKeyType: type }): Algorithm => {
      if (type === 'rsa') return 'rsa-sha256';
      if (type === 'ed25519') return 'ed25519-sha256';
      throw new Error(`DKIM keys must be RSA or Ed25519, not ${type}`);
    });
    const message = canonicalise(raw, this.headerFields);
    const timestamp = Math.floor(this.now() / 1000);
    const prepared = keys.map((key, i) => prepare(message, key, algorithms[i], timestamp));
    const signings = prepared.map(({ algorithm, data }, i) => ({ key: keyObjects[i], algorithm, data }));
    // An RSA signature (about a millisecond) goes to a thread; an Ed25519 one (tens of
    // microseconds) is not worth a hop of its own, but rides along when there is one.
    const signatures = this.pool && algorithms.includes('rsa-sha256')
      ? await this.pool.sign(signings)
      : signings.map(({ key, algorithm, data }) => signData(algorithm, data, key));
    return prepared.map((p, i) => finish(p, signatures[i]));
  }

  /** The DKIM-Signature field for `raw`, folded, ending in CRLF. */
  async signatureHeader(raw: Buffer, key: DkimKey): Promise<string> {
    const [header] = await this.signatureHeaders(raw, [key]);
    return header;
  }

  /** `raw` (an RFC 5322 message with CRLF line ends, as composeMessage makes it) with its DKIM-Signature field prepended. */
  async sign(raw: Buffer, key: DkimKey): Promise<Buffer> {
    return Buffer.concat([Buffer.from(await this.signatureHeader(raw, key), 'latin1'), raw]);
  }

  /** Stops the workers; signing afterwards fails. */
  async close(): Promise<void> {
    await this.pool?.close();
  }
}
