// Where mail for a domain goes: its MX hosts and their addresses, in the order
// to try them (RFC 5321 §5.1), or why there is nowhere to go.

import type { promises as dnsPromises } from 'node:dns';
import net from 'node:net';
import { domainToASCII } from 'node:url';
import { answerCache } from '../core/answer-cache.js';

/** The lookups this module needs; a `dns.promises.Resolver` set to MAILROOM_DNS_SERVERS fits. */
export type MxResolver = Pick<dnsPromises.Resolver, 'resolveMx' | 'resolve4' | 'resolve6'>;

export interface MxHost {
  /** Host name as published in the MX record (the domain itself for an implicit MX). */
  exchange: string;
  priority: number;
  /** Addresses to connect to, in order; IPv4 first (see `lookupAddresses`). */
  addresses: string[];
}

export type Destination =
  | { ok: true; hosts: MxHost[] }
  | {
      ok: false;
      /** True when asking again later cannot help: the message should bounce now. */
      permanent: boolean;
      reason: string;
      /** DNS error code (ENOTFOUND, ESERVFAIL, ETIMEOUT, ...) or null_mx, no_address, private_address, invalid_domain. */
      code?: string;
    };

export interface ResolveOptions {
  resolver: MxResolver;
  /** Let MX hosts on private, loopback and other non-global addresses through (tests, closed networks). */
  allowPrivate?: boolean;
  /** [0, 1) source for ordering MX hosts of equal preference; Math.random by default. */
  rng?: () => number;
}

/**
 * At most this many MX hosts are looked at, the most preferred first; a domain
 * publishing more is either misconfigured or trying to make us work
 * (Postfix bounds the same way with smtp_mx_address_limit).
 */
export const MAX_MX_HOSTS = 10;

// Special-purpose IPv4 blocks that are not globally reachable (RFC 6890 and the
// IANA registry it created). A public MX never sits in one; an MX record that
// points there is a misconfiguration or an attempt to reach our own network.
const REFUSED_V4: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], // "this network" (RFC 791)
  ['10.0.0.0', 8], // private (RFC 1918)
  ['100.64.0.0', 10], // shared address space, carrier-grade NAT (RFC 6598)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (RFC 3927)
  ['172.16.0.0', 12], // private (RFC 1918)
  ['192.0.0.0', 24], // IETF protocol assignments (RFC 6890)
  ['192.0.2.0', 24], // documentation, TEST-NET-1 (RFC 5737)
  ['192.88.99.0', 24], // 6to4 relay anycast, deprecated (RFC 7526)
  ['192.168.0.0', 16], // private (RFC 1918)
  ['198.18.0.0', 15], // benchmarking (RFC 2544)
  ['198.51.100.0', 24], // documentation, TEST-NET-2 (RFC 5737)
  ['203.0.113.0', 24], // documentation, TEST-NET-3 (RFC 5737)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the limited broadcast address
];

const REFUSED_V6: ReadonlyArray<readonly [string, number]> = [
  ['::', 96], // unspecified, loopback and the deprecated IPv4-compatible forms (RFC 4291 §2.5.5.1)
  ['::ffff:0:0', 96], // IPv4-mapped: only meaningful inside a host, never published for an MX
  ['64:ff9b:1::', 48], // local-use NAT64 (RFC 8215)
  ['100::', 64], // discard-only (RFC 6666)
  ['2001::', 23], // IETF protocol assignments: Teredo, ORCHID, benchmarking (RFC 2928)
  ['2001:db8::', 32], // documentation (RFC 3849)
  ['2002::', 16], // 6to4, deprecated (RFC 7526)
  ['3fff::', 20], // documentation (RFC 9637)
  ['fc00::', 7], // unique local (RFC 4193)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local, deprecated (RFC 3879)
  ['ff00::', 8], // multicast
  // The NAT64 well-known prefix (RFC 6052) is fine in front of a global IPv4
  // address (a DNS64 resolver synthesises those) but not in front of a refused one.
  ...REFUSED_V4.map(([v4, bits]) => [`64:ff9b::${v4}`, 96 + bits] as const),
];

// Two lists, because a BlockList compares IPv4-mapped IPv6 addresses with its
// IPv4 rules and an IPv4 address with its ::ffff:0:0/96 rule: kept apart, each
// family is judged by its own table only.
const refusedV4 = new net.BlockList();
for (const [addr, bits] of REFUSED_V4) refusedV4.addSubnet(addr, bits, 'ipv4');
const refusedV6 = new net.BlockList();
for (const [addr, bits] of REFUSED_V6) refusedV6.addSubnet(addr, bits, 'ipv6');

/** True for an IP address that is globally reachable, so fit to be an MX. */
export function isPublicAddress(ip: string): boolean {
  switch (net.isIP(ip)) {
    case 4:
      return !refusedV4.check(ip, 'ipv4');
    case 6:
      return !refusedV6.check(ip, 'ipv6');
    default:
      return false;
  }
}

interface DnsError { code?: string; message?: string }

// c-ares reports NXDOMAIN as ENOTFOUND and "the name exists but has no record
// of this type" as ENODATA; everything else (SERVFAIL, timeouts, refused) says
// nothing about the domain and is worth asking again.
function isNoData(err: unknown): boolean {
  const code = (err as DnsError).code;
  return code === 'ENODATA' || code === 'ENOTFOUND';
}

function dnsFailure(domain: string, err: unknown): Destination {
  const code = (err as DnsError).code ?? 'EDNS';
  if (code === 'ENOTFOUND') {
    return { ok: false, permanent: true, code, reason: `${domain} does not exist (NXDOMAIN)` };
  }
  return { ok: false, permanent: false, code, reason: `DNS lookup for ${domain} failed (${code}), will retry` };
}

/**
 * MX records by preference; records of equal preference in random order, to
 * spread the load as RFC 5321 §5.1 asks (a random sort key breaks the ties).
 */
function orderMx(records: Array<{ exchange: string; priority: number }>, rng: () => number) {
  return records
    .map((record) => ({ record, tie: rng() }))
    .sort((a, b) => a.record.priority - b.record.priority || a.tie - b.tie)
    .map(({ record }) => record);
}

interface HostLookup { addresses: string[]; error?: unknown }

/**
 * A and AAAA of one host. IPv4 comes first: receivers hold IPv6 senders to a
 * stricter standard (Gmail requires a PTR record and SPF or DKIM for them), so
 * IPv4 is the more dependable path when both exist.
 */
async function lookupAddresses(resolver: MxResolver, host: string): Promise<HostLookup> {
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
  const addresses: string[] = [];
  let error: unknown;
  for (const result of [v4, v6]) {
    if (result.status === 'fulfilled') addresses.push(...result.value);
    else if (!isNoData(result.reason)) error = result.reason;
  }
  return { addresses, error };
}

/** Resolves the hosts to try for `domain`, most preferred first, each with its usable addresses. */
export async function resolveDestination(domain: string, opts: ResolveOptions): Promise<Destination> {
  const { resolver, allowPrivate = false, rng = Math.random } = opts;
  const name = domainToASCII(domain.trim().replace(/\.$/, '').toLowerCase());
  if (!name || !name.includes('.')) {
    return { ok: false, permanent: true, code: 'invalid_domain', reason: `${JSON.stringify(domain)} is not a valid domain` };
  }

  let records: Array<{ exchange: string; priority: number }>;
  try {
    records = await resolver.resolveMx(name);
  } catch (err) {
    if ((err as DnsError).code !== 'ENODATA') return dnsFailure(name, err);
    records = [];
  }

  // RFC 7505: a single MX with an empty exchange ("." in zone files) says the
  // domain takes no mail at all. Mixed with real MX records it is malformed;
  // the "." host cannot be connected to, so it is left out and the rest used.
  const isNull = (r: { exchange: string }) => r.exchange === '' || r.exchange === '.';
  if (records.length === 1 && isNull(records[0])) {
    return { ok: false, permanent: true, code: 'null_mx', reason: `${name} does not accept mail (null MX, RFC 7505)` };
  }
  const candidates = records.length
    ? orderMx(records.filter((r) => !isNull(r)), rng).slice(0, MAX_MX_HOSTS)
    : // No MX at all: the domain itself is the implicit MX, preference 0 (RFC 5321 §5.1).
      [{ exchange: name, priority: 0 }];

  const lookups = await Promise.all(candidates.map((c) => lookupAddresses(resolver, c.exchange)));
  const hosts: MxHost[] = [];
  const refused: string[] = [];
  let temporary: unknown;
  candidates.forEach((c, i) => {
    const { addresses, error } = lookups[i];
    temporary ??= error;
    const usable = allowPrivate ? addresses : addresses.filter(isPublicAddress);
    refused.push(...addresses.filter((a) => !usable.includes(a)).map((a) => `${c.exchange}=${a}`));
    if (usable.length) hosts.push({ exchange: c.exchange.replace(/\.$/, '').toLowerCase(), priority: c.priority, addresses: usable });
  });

  if (hosts.length) return { ok: true, hosts };
  // Nothing usable now; if some lookup failed for a passing reason, the answer may differ later.
  if (temporary !== undefined) return dnsFailure(name, temporary);
  if (refused.length) {
    return {
      ok: false,
      permanent: true,
      code: 'private_address',
      reason: `mail hosts of ${name} resolve only to private or reserved addresses (${refused.slice(0, 4).join(', ')})`,
    };
  }
  return {
    ok: false,
    permanent: true,
    code: 'no_address',
    reason: records.length ? `no MX host of ${name} has an address` : `${name} has no MX and no address record`,
  };
}

export interface MxCacheOptions {
  /** Longest an answer is kept (default 60 s); an A/AAAA answer with a shorter TTL is kept for that TTL. */
  maxTtlMs?: number;
  /**
   * Shortest time an answer is kept (default 1 s), even with a TTL of 0: the
   * messages of one burst to a domain share its lookups, and an answer is at
   * most this much out of date.
   */
  minTtlMs?: number;
  /** How long "no such name" / "no such record" is kept (default 5 s, RFC 2308 negative caching, kept short). */
  negativeTtlMs?: number;
  /** Names kept per record type; past this the oldest entry goes (default 10,000). */
  maxEntries?: number;
  /** Epoch ms, for expiry. */
  now?: () => number;
}

type Address = string | { address: string; ttl: number };

/**
 * A resolver that remembers answers, so a burst of mail to one domain asks
 * DNS once instead of once per message. Concurrent lookups of one name share
 * one query. Answers are kept for their TTL where the resolver reports one
 * (A, AAAA), at least `minTtlMs` and at most `maxTtlMs` (the MX TTL is not
 * exposed by c-ares through Node, so MX answers get the cap); NXDOMAIN and NODATA are kept
 * briefly; SERVFAIL, timeouts and other failures are not kept at all, so the
 * next message asks again.
 */
export function cachingMxResolver(resolver: MxResolver, opts: MxCacheOptions = {}): MxResolver {
  const maxTtlMs = opts.maxTtlMs ?? 60_000;
  const minTtlMs = Math.min(opts.minTtlMs ?? 1_000, maxTtlMs);
  const negativeTtlMs = opts.negativeTtlMs ?? 5_000;
  const maxEntries = opts.maxEntries ?? 10_000;
  const now = opts.now ?? Date.now;

  function cached<T>(lookup: (name: string) => Promise<T>, ttlOf: (answer: T) => number) {
    const cache = answerCache<T>({
      maxEntries, now,
      keepFor: (answer) => Math.max(minTtlMs, Math.min(maxTtlMs, ttlOf(answer))),
      keepFailureFor: (err) => (isNoData(err) ? negativeTtlMs : undefined),
    });
    return (name: string) => cache(name.toLowerCase(), () => lookup(name));
  }

  // The shortest TTL of the records, in ms; an answer without TTLs gets the cap.
  const addressTtl = (records: Address[]) =>
    Math.min(maxTtlMs, ...records.map((r) => (typeof r === 'string' ? maxTtlMs : r.ttl * 1000)));
  const withTtl = (lookup: (name: string, options: { ttl: true }) => Promise<Address[]>) =>
    cached((name) => lookup(name, { ttl: true }), addressTtl);
  const mx = cached((name) => resolver.resolveMx(name), () => maxTtlMs);
  const a = withTtl((name, o) => resolver.resolve4(name, o));
  const aaaa = withTtl((name, o) => resolver.resolve6(name, o));
  const plain = (records: Address[]) => records.map((r) => (typeof r === 'string' ? r : r.address));

  return {
    resolveMx: (name: string) => mx(name),
    resolve4: (async (name: string) => plain(await a(name))) as MxResolver['resolve4'],
    resolve6: (async (name: string) => plain(await aaaa(name))) as MxResolver['resolve6'],
  };
}
