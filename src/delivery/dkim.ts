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
// few threads (core/thread-pool.ts) so a burst of messages does not stall the
// event loop; canonicalisation and hashing stay on the calling thread, done once for
// all the keys that sign a message.

import { createHash, createPrivateKey, sign as cryptoSign, type KeyObject } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { ThreadPool } from '../core/thread-pool.js';

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
// Threads for the RSA private-key operation

// A thread signs as signData() does. Keys arrive once per thread as KeyObjects
// (they can be posted between threads) and are kept by id; the main thread
// tells a thread which keys to drop, so both sides bound the cache alike. A
// job carries every signature of one message, as one flat array (see
// encodeJob).

/** Entries of one signature in a job: key id, algorithm, data, and the key or 0. */
const SIGNATURE_STRIDE = 4;

const SIGNING_THREAD = `
const { createHash, sign } = require('node:crypto');
const keys = new Map();
function handle(job) {
  let i = 0;
  for (let n = job[i++]; n > 0; n--) keys.delete(job[i++]);
  const signatures = [];
  for (let n = job[i++]; n > 0; n--, i += ${SIGNATURE_STRIDE}) {
    const keyId = job[i], algorithm = job[i + 1], data = job[i + 2], key = job[i + 3];
    if (key) keys.set(keyId, key);
    const bytes = Buffer.from(data, 'latin1');
    signatures.push((algorithm === 'ed25519-sha256'
      ? sign(null, createHash('sha256').update(bytes).digest(), keys.get(keyId))
      : sign('sha256', bytes, keys.get(keyId))).toString('base64'));
  }
  return signatures;
}
`;

/** Keys each thread keeps; past this the least recently used is dropped and re-sent when needed again. */
const MAX_KEYS_PER_WORKER = 256;

interface Signing { key: KeyObject; algorithm: Algorithm; data: string }

/** A job as the thread reads it: its evictions (count, ids), its signatures (count, SIGNATURE_STRIDE entries each). */
function encodeJob(evict: readonly number[], signatures: ReadonlyArray<{ keyId: number; algorithm: Algorithm; data: string; key?: KeyObject }>): unknown[] {
  const flat: unknown[] = [evict.length, ...evict, signatures.length];
  for (const { keyId, algorithm, data, key } of signatures) flat.push(keyId, algorithm, data, key ?? 0);
  return flat;
}

class SigningPool {
  /** Per thread, the ids of the keys it holds, least recently used first. */
  private readonly threads: ThreadPool<Set<number>>;
  private readonly keyIds = new WeakMap<KeyObject, number>();
  private nextKeyId = 1;

  constructor(size: number) {
    this.threads = new ThreadPool('DKIM signing', { source: SIGNING_THREAD }, size, { newState: () => new Set<number>() });
  }

  /** The b= values of `signings`, in order, made by one thread in one round trip. */
  sign(signings: readonly Signing[]): Promise<string[]> {
    if (signings.length > MAX_KEYS_PER_WORKER) return Promise.reject(new Error(`DKIM signs with ${MAX_KEYS_PER_WORKER} keys at most`));
    const keyIdOf = (key: KeyObject) => {
      let keyId = this.keyIds.get(key);
      if (keyId === undefined) this.keyIds.set(key, (keyId = this.nextKeyId++));
      return keyId;
    };
    const ids = signings.map((s) => keyIdOf(s.key));
    return this.threads.run<string[]>((known) => {
      // The keys of this job become the most recently used first, so making room below never drops one of them.
      const unknown = new Set<number>();
      for (const keyId of ids) {
        if (known.delete(keyId)) known.add(keyId);
        else unknown.add(keyId);
      }
      const evict: number[] = [];
      for (const keyId of unknown) {
        if (known.size >= MAX_KEYS_PER_WORKER) {
          const oldest = known.values().next().value!;
          known.delete(oldest);
          evict.push(oldest);
        }
        known.add(keyId);
      }
      return encodeJob(evict, signings.map(({ key, algorithm, data }, i) => {
        const keyId = ids[i];
        // A key goes along the first time this thread needs it (once, if two signatures use it).
        const send = unknown.delete(keyId);
        return { keyId, algorithm, data, ...(send && { key }) };
      }));
    });
  }

  close(): Promise<void> {
    return this.threads.close();
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
