// Checks what a domain's DNS actually holds against the records Mailroom asked
// for. Matching follows how receivers read the records, not how the user
// typed them: chunked TXT strings, foreign TXT records at the same name, SPF
// terms around ours, tag order and spacing, trailing dots and case.
import type { MxRecord } from 'node:dns';
import { peerText } from '../core/nul.js';
import type { DnsRecordSpec } from './dns-records.js';
import { parseTagList } from './tag-list.js';

/** The part of `dns.promises.Resolver` the checks use. */
export interface DnsLookup {
  resolveTxt(name: string): Promise<string[][]>;
  resolveMx(name: string): Promise<MxRecord[]>;
  resolveCname(name: string): Promise<string[]>;
}

export type RecordState = 'verified' | 'pending' | 'failed';

export type CheckedRecord = DnsRecordSpec & { status: RecordState; detail?: string };

/**
 * The detail of a record whose lookup failed for a reason other than "no such
 * record" (SERVFAIL, timeout, refused): the caller keeps the status it had.
 */
export const TEMPORARY_DNS_ERROR = 'temporary DNS error';

type Outcome = { status: RecordState; detail?: string };

const VERIFIED: Outcome = { status: 'verified' };
const PENDING: Outcome = { status: 'pending' };
const failed = (detail: string): Outcome => ({ status: 'failed', detail });

/** Looks every record up (in parallel) and says, per record, whether it matches. */
export async function checkRecords(records: readonly DnsRecordSpec[], dns: DnsLookup): Promise<CheckedRecord[]> {
  return Promise.all(records.map(async (record) => ({ ...record, ...(await checkRecord(record, dns)) })));
}

/** `active` once every required record is verified. */
export function domainStatus(records: readonly { required: boolean; status: RecordState }[]): 'active' | 'verifying' {
  return records.every((r) => !r.required || r.status === 'verified') ? 'active' : 'verifying';
}

async function checkRecord(record: DnsRecordSpec, dns: DnsLookup): Promise<Outcome> {
  try {
    switch (record.type) {
      case 'TXT': {
        // A TXT record is a list of strings of at most 255 bytes each; a long
        // value such as a 2048-bit DKIM key is split over several, and
        // receivers join them without separators (RFC 7208 §3.3, RFC 6376 §3.6.2.2).
        // Node reads each byte as a character: UTF-8 is decoded, so the details
        // quote what was published, and a NUL is U+FFFD, which PostgreSQL can hold.
        const texts = (await dns.resolveTxt(record.name)).map((chunks) => peerText(chunks.join('')));
        if (texts.length === 0) return PENDING;
        if (record.record === 'SPF') return matchSpf(record.value, texts);
        if (record.record === 'DMARC') return matchDmarc(texts);
        return matchDkim(record.value, texts);
      }
      case 'MX':
        return matchMx(record.value, await dns.resolveMx(record.name));
      case 'CNAME':
        return matchCname(record.value, await dns.resolveCname(record.name));
    }
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    // NXDOMAIN and NOERROR-without-data: nothing published yet.
    if (code === 'ENOTFOUND' || code === 'ENODATA') return PENDING;
    if (typeof code === 'string') return { status: 'pending', detail: TEMPORARY_DNS_ERROR };
    throw err;
  }
}

const quoted = (texts: readonly string[]): string => texts.map((t) => JSON.stringify(t)).join(', ');

const hostOf = (name: string): string => name.toLowerCase().replace(/\.$/, '');

interface DkimKeyTags {
  version: string | undefined;
  keyType: string;
  publicKey: string;
}

function dkimKeyTags(text: string): DkimKeyTags | null {
  const tags = parseTagList(text);
  if (!tags?.has('p')) return null;
  return {
    version: tags.get('v'),
    // RFC 6376 §3.6.1: k= defaults to rsa.
    keyType: (tags.get('k') ?? 'rsa').toLowerCase(),
    // Base64 may carry folding whitespace (RFC 6376 §3.6.1), and a key
    // re-typed without its trailing "=" padding is still the same key.
    publicKey: (tags.get('p') ?? '').replace(/\s+/g, '').replace(/=+$/, ''),
  };
}

function matchDkim(expected: string, texts: readonly string[]): Outcome {
  const want = dkimKeyTags(expected);
  if (!want) throw new Error(`Expected DKIM value has no p= tag: ${expected}`);
  // RFC 6376 §3.6.2.2: the result is undefined when a selector has several
  // TXT records, and verifiers (mailauth among them) read only the first one
  // returned, in whatever order the server returns them. So ours being among
  // several is still a failure: signatures would fail some of the time.
  if (texts.length > 1) {
    return failed(`${texts.length} TXT records at this name, a DKIM selector must have exactly one: ${quoted(texts)}`);
  }
  const found = dkimKeyTags(texts[0]);
  if (!found) return failed(`not a DKIM key record: ${quoted(texts)}`);
  if (found.publicKey !== want.publicKey) return failed(`different public key: ${quoted(texts)}`);
  if (found.keyType !== want.keyType) return failed(`key type k=${found.keyType}, expected k=${want.keyType}`);
  if (found.version !== undefined && found.version !== 'DKIM1') {
    return failed(`version v=${found.version}, expected v=DKIM1`);
  }
  return VERIFIED;
}

interface SpfMechanism {
  qualifier: string;
  name: string;
  /** The domain-spec of a:, mx:, include: and the like, normalised; '' when absent. */
  target: string;
  text: string;
}

const isSpfRecord = (text: string): boolean => /^v=spf1(?: |$)/i.test(text.trim());

/**
 * The mechanisms of an SPF record that a receiver can reach: those before
 * `all`, since evaluation stops at the first match and `all` always matches
 * (RFC 7208 §5.1). Modifiers (`redirect=`, `exp=`) are skipped.
 */
function reachableMechanisms(record: string): SpfMechanism[] {
  const mechanisms: SpfMechanism[] = [];
  for (const term of record.trim().split(/\s+/).slice(1)) {
    if (/^[a-z][a-z0-9_.-]*=/i.test(term)) continue;
    const explicit = /^[+\-~?]/.test(term);
    const qualifier = explicit ? term[0] : '+';
    const body = explicit ? term.slice(1) : term;
    const [, name = '', target = ''] = /^([^:/]*):?([^/]*)/.exec(body) ?? [];
    if (name.toLowerCase() === 'all') break;
    // A CIDR suffix (`a:host/24`) is left out of the comparison: any prefix
    // length still covers the host's own address.
    mechanisms.push({ qualifier, name: name.toLowerCase(), target: hostOf(target), text: term });
  }
  return mechanisms;
}

function matchSpf(expected: string, texts: readonly string[]): Outcome {
  const spf = texts.filter(isSpfRecord);
  if (spf.length === 0) return failed(`no SPF record (v=spf1) among: ${quoted(texts)}`);
  if (spf.length > 1) {
    // RFC 7208 §4.5: several SPF records make the result "permerror".
    return failed(`${spf.length} SPF records, receivers treat that as an error: ${quoted(spf)}`);
  }
  const published = reachableMechanisms(spf[0]);
  for (const want of reachableMechanisms(expected)) {
    // The first matching term decides (RFC 7208 §4.6.2), so a `~a:host`
    // before an `a:host` wins.
    const hit = published.find((m) => m.name === want.name && m.target === want.target);
    if (!hit) return failed(`SPF record does not authorise ${want.text}: ${quoted(spf)}`);
    if (hit.qualifier !== '+') return failed(`${hit.text} does not pass (qualifier "${hit.qualifier}"): ${quoted(spf)}`);
  }
  return VERIFIED;
}

/**
 * Any single valid DMARC record counts: the value Mailroom suggests (p=none)
 * is a floor, and an owner who already publishes a stricter policy is better
 * off keeping it.
 */
function matchDmarc(texts: readonly string[]): Outcome {
  // RFC 7489 §6.6.3: records not starting with v=DMARC1 are ignored, and
  // more than one left means no policy at all.
  const dmarc = texts.filter((t) => /^v=DMARC1\s*(?:;|$)/i.test(t.trim()));
  if (dmarc.length === 0) return failed(`no DMARC record (v=DMARC1) among: ${quoted(texts)}`);
  if (dmarc.length > 1) return failed(`${dmarc.length} DMARC records, receivers ignore them all: ${quoted(dmarc)}`);
  const policy = parseTagList(dmarc[0])?.get('p')?.toLowerCase();
  if (policy !== 'none' && policy !== 'quarantine' && policy !== 'reject') {
    return failed(`no valid p= policy: ${quoted(dmarc)}`);
  }
  return VERIFIED;
}

/**
 * Our host must be among the MX records and none may be preferred over it:
 * senders try the lowest preference first (RFC 5321 §5.1), so a more
 * preferred foreign host would receive the bounces or the inbound mail.
 */
function matchMx(expected: string, records: readonly MxRecord[]): Outcome {
  if (records.length === 0) return PENDING;
  const want = hostOf(expected);
  // A null MX (RFC 7505) has the root as exchange, which Node reports as ''.
  const found = records.map((mx) => `${mx.priority} ${mx.exchange || '.'}`).join(', ');
  const ours = records.filter((mx) => hostOf(mx.exchange) === want);
  if (ours.length === 0) return failed(`MX points at ${found}`);
  const best = Math.min(...records.map((mx) => mx.priority));
  if (Math.min(...ours.map((mx) => mx.priority)) > best) {
    return failed(`another MX host is preferred over ${want}: ${found}`);
  }
  return VERIFIED;
}

function matchCname(expected: string, targets: readonly string[]): Outcome {
  if (targets.length === 0) return PENDING;
  const want = hostOf(expected);
  return targets.some((t) => hostOf(t) === want) ? VERIFIED : failed(`CNAME points at ${targets.join(', ')}`);
}
