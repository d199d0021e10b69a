import type { DNSResolver } from 'mailauth';
import type { Clock } from '../core/clock.js';
import { answerCache } from '../core/answer-cache.js';

// A small answer cache in front of the resolver mailauth uses. Mail from one
// sender arrives in bursts, and each message costs SPF, DKIM and DMARC look-ups
// (up to a dozen with SPF includes, RFC 7208 §4.6.4), all of the same names.
// Answers, "no such name" and "no such record" included, are kept for a
// short, fixed time, well under the TTLs these records are published with;
// temporary failures are not kept, so the next message asks again. Concurrent
// look-ups of one name share a single query.

export interface DnsCacheOptions {
  ttlMs: number;
  maxEntries: number;
  clock: Clock;
}

// Node's codes for an answer that says the name or record does not exist.
const NEGATIVE_ANSWERS = new Set(['ENOTFOUND', 'ENODATA']);

export function cachedResolver(resolve: DNSResolver, options: DnsCacheOptions): DNSResolver {
  const cache = answerCache<Awaited<ReturnType<DNSResolver>>>({
    maxEntries: options.maxEntries,
    now: () => options.clock.now(),
    keepFor: () => options.ttlMs,
    keepFailureFor: (err) => (NEGATIVE_ANSWERS.has((err as { code?: string }).code ?? '') ? options.ttlMs : undefined),
  });
  return (name, rrtype) => cache(`${rrtype} ${name.toLowerCase()}`, () => resolve(name, rrtype));
}
