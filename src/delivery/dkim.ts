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
// loop; canonicalisation and hashing stay on the calling thread, they are cheap.

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

/** §3.4.4 relaxed body: WSP runs as one SP, none at line ends, no empty lines at the end, a final CRLF unless empty. */
export function relaxedBody(body: Buffer): Buffer {
  // latin1 maps bytes to code units one to one, so 8-bit bodies survive the round trip.
  const text = body.toString('latin1').replace(/[ \t]+/g, ' ').replace(/ \r\n/g, '\r\n');
  let end = text.length;
  if (text[end - 1] === ' ') end--;
  while (end >= 2 && text[end - 2] === '\r' && text[end - 1] === '\n') end -= 2;
  return end === 0 ? Buffer.alloc(0) : Buffer.from(`${text.slice(0, end)}\r\n`, 'latin1');
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

interface Prepared {
  /** "DKIM-Signature: ... b=" as it goes out, minus the signature value. */
  header: string;
  /** What gets signed: the canonical signed fields and the canonical DKIM-Signature field with an empty b=. */
  data: Buffer;
  algorithm: 'rsa-sha256' | 'ed25519-sha256';
}

function prepare(raw: Buffer, key: DkimKey, keyType: string, wanted: readonly string[], nowMs: number): Prepared {
  const algorithm = keyType === 'ed25519' ? 'ed25519-sha256' : 'rsa-sha256';
  const { fields, body } = parseMessage(raw);
  const { names, signed } = selectHeaders(fields, wanted);
  const bh = createHash('sha256').update(relaxedBody(body)).digest('base64');
  const tags = [
    'v=1;', `a=${algorithm};`, 'c=relaxed/relaxed;', `d=${key.domain};`, `s=${key.selector};`,
    `t=${Math.floor(nowMs / 1000)};`,
  ].map((text) => ({ text, glue: ' ' as const }));
  const h = names.map((n, i) => ({ text: `${i === 0 ? 'h=' : ''}${n}${i === names.length - 1 ? ';' : ':'}`, glue: (i === 0 ? ' ' : '') as '' | ' ' }));
  const bhParts = chunks(`bh=${bh};`, 60).map((text, i) => ({ text, glue: (i === 0 ? ' ' : '') as '' | ' ' }));
  const header = `DKIM-Signature:${fold([...tags, ...h, ...bhParts, { text: 'b=', glue: ' ' }], 'DKIM-Signature:'.length)}`;
  const canonical = [...signed.map((f) => `${relaxedHeader(f)}\r\n`), relaxedHeader(header)].join('');
  return { header, data: Buffer.from(canonical, 'latin1'), algorithm };
}

function finish(prepared: Prepared, signature: Buffer): string {
  const column = prepared.header.length - (prepared.header.lastIndexOf('\n') + 1);
  const parts = chunks(signature.toString('base64'), 60).map((text) => ({ text, glue: '' as const }));
  return `${prepared.header}${fold(parts, column)}\r\n`;
}

// ---------------------------------------------------------------------------
// Worker pool for the RSA private-key operation

// Plain JavaScript run with `eval`, so the same code works from the TypeScript
// sources (tests) and from dist/. Keys arrive once per worker as KeyObjects
// (they can be posted between threads) and are kept by id; the main thread
// tells a worker which key to drop, so both sides bound the cache alike.
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { sign } = require('node:crypto');
const keys = new Map();
parentPort.on('message', ({ id, keyId, key, evict, data }) => {
  if (evict !== undefined) keys.delete(evict);
  if (key) keys.set(keyId, key);
  try {
    parentPort.postMessage({ id, signature: sign('sha256', data, keys.get(keyId)) });
  } catch (err) {
    parentPort.postMessage({ id, error: String((err && err.message) || err) });
  }
});
`;

/** Keys each worker keeps; past this the oldest is dropped and re-sent when needed again. */
const MAX_KEYS_PER_WORKER = 256;

interface PoolWorker {
  worker: Worker;
  pending: Map<number, { resolve: (sig: Buffer) => void; reject: (err: Error) => void }>;
  known: Set<number>;
}

class SigningPool {
  private readonly workers: PoolWorker[] = [];
  private readonly keyIds = new WeakMap<KeyObject, number>();
  private nextKeyId = 1;
  private nextJobId = 1;
  private closed = false;

  constructor(private readonly size: number) {}

  sign(key: KeyObject, data: Buffer): Promise<Buffer> {
    if (this.closed) return Promise.reject(new Error('DKIM signer is closed'));
    const w = this.pick();
    let keyId = this.keyIds.get(key);
    if (keyId === undefined) this.keyIds.set(key, (keyId = this.nextKeyId++));
    let evict: number | undefined;
    const sendKey = !w.known.has(keyId);
    if (sendKey) {
      if (w.known.size >= MAX_KEYS_PER_WORKER) {
        evict = w.known.values().next().value;
        w.known.delete(evict!);
      }
      w.known.add(keyId);
    }
    const id = this.nextJobId++;
    return new Promise<Buffer>((resolve, reject) => {
      w.pending.set(id, { resolve, reject });
      // A worker with work keeps the process alive; an idle one does not.
      w.worker.ref();
      w.worker.postMessage({ id, keyId, evict, data, ...(sendKey && { key }) });
    });
  }

  /** The least busy worker, or a new one while the pool is below its size and all are busy. */
  private pick(): PoolWorker {
    const idlest = this.workers.reduce<PoolWorker | undefined>((a, b) => (a && a.pending.size <= b.pending.size ? a : b), undefined);
    if (idlest && (idlest.pending.size === 0 || this.workers.length >= this.size)) return idlest;
    return this.spawn();
  }

  private spawn(): PoolWorker {
    const w: PoolWorker = { worker: new Worker(WORKER_SOURCE, { eval: true }), pending: new Map(), known: new Set() };
    w.worker.on('message', (msg: { id: number; signature?: Uint8Array; error?: string }) => {
      const job = w.pending.get(msg.id);
      w.pending.delete(msg.id);
      if (w.pending.size === 0) w.worker.unref();
      if (msg.signature) job?.resolve(Buffer.from(msg.signature));
      else job?.reject(new Error(`DKIM signing failed: ${msg.error}`));
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

  /** The DKIM-Signature field for `raw`, folded, ending in CRLF. */
  async signatureHeader(raw: Buffer, key: DkimKey): Promise<string> {
    const keyObject = this.keyObject(key.privateKey);
    const type = keyObject.asymmetricKeyType;
    if (type !== 'rsa' && type !== 'ed25519') throw new Error(`DKIM keys must be RSA or Ed25519, not ${type}`);
    const prepared = prepare(raw, key, type, this.headerFields, this.now());
    let signature: Buffer;
    if (type === 'ed25519') {
      // RFC 8463 §3: Ed25519 signs the SHA-256 hash of the data. Tens of microseconds: not worth a thread hop.
      signature = cryptoSign(null, createHash('sha256').update(prepared.data).digest(), keyObject);
    } else if (this.pool) {
      signature = await this.pool.sign(keyObject, prepared.data);
    } else {
      signature = cryptoSign('sha256', prepared.data, keyObject);
    }
    return finish(prepared, signature);
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
