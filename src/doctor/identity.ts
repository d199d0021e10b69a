// The server's own name: receivers look its address up in reverse and expect
// the name they get to resolve back to that address (forward-confirmed
// reverse DNS, FCrDNS); many refuse or mark mail from an address without it.
import type { promises as dnsPromises } from 'node:dns';
import { isIPv4 } from 'node:net';
import { normaliseDomainName } from '../domains/domain-name.js';
import { fail, ok, warn, type CheckResult } from './report.js';

export type HostLookup = Pick<dnsPromises.Resolver, 'resolve4' | 'resolve6' | 'reverse'>;

export interface Identity {
  checks: CheckResult[];
  /** The host name's addresses; undefined when they could not be looked up. */
  addresses: string[] | undefined;
}

/** NXDOMAIN and NOERROR without data: nothing published. */
export const isNoRecord = (err: unknown): boolean => ['ENOTFOUND', 'ENODATA'].includes((err as { code?: string }).code ?? '');

/** The records at a name, [] when there are none; a temporary failure (timeout, SERVFAIL) is thrown. */
export async function recordsAt<T>(lookup: Promise<T[]>): Promise<T[]> {
  return lookup.catch((err: unknown) => {
    if (isNoRecord(err)) return [];
    throw err;
  });
}

/** What went wrong, in a word where there is one: the error's code (ENOTFOUND, ETIMEOUT), else its message. */
export const whyFailed = (err: unknown): string => (err as { code?: string }).code ?? (err as Error).message ?? String(err);

export const couldNotCheck = (err: unknown): string => `could not be checked: ${whyFailed(err)}`;

/** The name reverse DNS looks an address up under. */
export function reverseName(address: string): string {
  if (isIPv4(address)) return `${address.split('.').reverse().join('.')}.in-addr.arpa`;
  return `${[...expandIpv6(address).replace(/:/g, '')].reverse().join('.')}.ip6.arpa`;
}

/** 2001:db8::1 as eight groups of four hex digits. */
function expandIpv6(address: string): string {
  const [head, tail] = address.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((g) => g.padStart(4, '0')).join(':');
}

const sameAddress = (a: string, b: string) => (isIPv4(a) ? a === b : expandIpv6(a) === expandIpv6(b));

/** `reverse`: whether receivers look this server's addresses up in reverse (it delivers to MX hosts itself). */
export async function checkIdentity(hostname: string, dns: HostLookup, reverse: boolean): Promise<Identity> {
  const name = normaliseDomainName(hostname);
  if (!name.ok || !name.name.includes('.')) {
    return {
      checks: [fail('identity', 'host name', `MAILROOM_HOSTNAME is '${hostname}', not a fully qualified name`,
        'set MAILROOM_HOSTNAME to this server\'s public DNS name, e.g. mail.example.com: the MX and SPF records of your domains name it')],
      addresses: undefined,
    };
  }
  const host = name.name;
  let addresses: string[];
  try {
    const [v4, v6] = await Promise.all([recordsAt(dns.resolve4(host)), recordsAt(dns.resolve6(host))]);
    addresses = [...v4, ...v6];
  } catch (err) {
    return { checks: [warn('identity', 'host name', `${host}: ${couldNotCheck(err)}`)], addresses: undefined };
  }
  if (addresses.length === 0) {
    return {
      checks: [fail('identity', 'host name', `${host} has no A or AAAA record`, `publish A ${host} <this server's public IPv4 address> (and AAAA for IPv6)`)],
      addresses: [],
    };
  }
  const checks = [ok('identity', 'host name', `${host} resolves to ${addresses.join(', ')}`)];
  if (reverse) checks.push(...await Promise.all(addresses.map((address) => checkReverse(host, address, dns))));
  else checks.push(ok('identity', 'reverse DNS', 'not checked: mail does not leave from this server\'s addresses (see Delivery)'));
  return { checks, addresses };
}

/** The address's PTR names, and whether one resolves back to it and is the host name itself. */
async function checkReverse(host: string, address: string, dns: HostLookup): Promise<CheckResult> {
  const check = `PTR ${address}`;
  const fix = `have the provider of ${address} set its reverse DNS: PTR ${reverseName(address)} ${host}`;
  let names: string[];
  const confirmed: string[] = [];
  try {
    names = (await recordsAt(dns.reverse(address))).map((n) => n.toLowerCase().replace(/\.$/, ''));
    for (const name of names) {
      const forward = await Promise.all([recordsAt(dns.resolve4(name)), recordsAt(dns.resolve6(name))]);
      if (forward.flat().some((a) => sameAddress(a, address))) confirmed.push(name);
    }
  } catch (err) {
    return warn('identity', check, couldNotCheck(err));
  }
  if (names.length === 0) return fail('identity', check, `${address} has no reverse DNS (PTR) record`, fix);
  if (confirmed.includes(host)) return ok('identity', check, `${address} points back to ${host}, which resolves to it`);
  if (confirmed.length > 0) {
    return warn('identity', check, `${address} points back to ${confirmed.join(', ')}, not to MAILROOM_HOSTNAME ${host}`,
      `${fix}, or set MAILROOM_HOSTNAME to ${confirmed[0]} (the name this server greets with should be the one its address gives)`);
  }
  return fail('identity', check, `${address} points back to ${names.join(', ')}, which does not resolve to ${address} (not forward-confirmed)`, fix);
}
