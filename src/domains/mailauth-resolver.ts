// mailauth looks DNS up through one function, `(name, rrtype)`, shaped like
// `dns.promises.resolve`. Routing it through a `Resolver` lets the caller pick
// the servers (the configured resolver in production, a loopback test server in
// tests) and keeps Node's error codes (ENOTFOUND, ENODATA, ETIMEOUT...), which
// mailauth reads to tell "no record" from a temporary error (RFC 7208 §4.4, RFC 6376 §6.1.2).
import type { promises as dnsPromises } from 'node:dns';
import type { DNSResolver } from 'mailauth';

export function mailauthResolver(resolver: Pick<dnsPromises.Resolver, 'resolve'>): DNSResolver {
  // mailauth's declared return type lists only string shapes, yet for MX it
  // reads the `{ exchange, priority }` objects that `resolve(name, 'MX')`
  // gives; the cast matches the declaration, not a change of values.
  return (name, rrtype) => resolver.resolve(name, rrtype) as Promise<string[][] | string[]>;
}
