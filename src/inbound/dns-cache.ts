import type { DNSResolver } from 'mailauth';
import type { Clock } from '../core/clock.js';

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
  const entries = new Map<string, { until: number; answer: ReturnType<DNSResolver> }>();
  return (name, rrtype) => {
    const key = `${rrtype} ${name.toLowerCase()}`;
    const now = options.clock.now();
    const hit = entries.get(key);
    if (hit && hit.until > now) return hit.answer;
    if (hit) entries.delete(key);
    if (entries.size >= options.maxEntries) entries.delete(entries.keys().next().value!);
    const answer = resolve(name, rrtype);
    entries.set(key, { until: now + options.ttlMs, answer });
    answer.catch((err: unknown) => {
      if (!NEGATIVE_ANSWERS.has((err as { code?: string }).code ?? '') && entries.get(key)?.answer === answer) entries.delete(key);
    });
    return answer;
  };
}
