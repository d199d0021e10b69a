import { isIP } from 'node:net';
import type { LookupAddress, LookupOptions } from 'node:dns';

// Which webhook targets are allowed. A webhook URL is chosen by an API user
// and fetched by this server, so without these checks it would reach the
// loopback admin ports, the cloud metadata service (169.254.169.254) and the
// private network behind it (SSRF). Checks run twice:
//   - on the URL at create/update (IP literals, in every spelling: the WHATWG
//     URL parser turns 2130706433, 0x7f.1 and 017700000001 into 127.0.0.1);
//   - on the addresses a host name resolves to, at connect time, inside the
//     socket's `lookup`, so the connection goes to exactly the address that
//     was checked and a DNS answer that changes in between (DNS rebinding)
//     cannot slip through.

interface Range {
  /** Address bytes of the network. */
  net: number[];
  bits: number;
  why: string;
  /** For IPv6 forms carrying an IPv4 address: where its 4 bytes start. */
  embedsV4At?: number;
}

function v4Bytes(text: string): number[] {
  return text.split('.').map(Number);
}

/** The 16 bytes of an IPv6 address (with an optional dotted IPv4 tail), or undefined. */
export function v6Bytes(text: string): number[] | undefined {
  let addr = text.replace(/^\[|\]$/g, '').split('%')[0];
  if (isIP(addr) !== 6) return undefined;
  let tail: number[] = [];
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(addr);
  if (dotted) {
    const b = v4Bytes(dotted[2]);
    tail = [(b[0] << 8) | b[1], (b[2] << 8) | b[3]];
    // "::ffff:1.2.3.4" -> "::ffff"; "::1.2.3.4" keeps its "::".
    addr = dotted[1].endsWith('::') ? dotted[1] : dotted[1].slice(0, -1);
  }
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  let groups: number[];
  if (addr.includes('::')) {
    const [l, r] = addr.split('::');
    const left = parse(l);
    const right = [...parse(r), ...tail];
    groups = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  } else {
    groups = [...parse(addr), ...tail];
  }
  return groups.flatMap((g) => [g >> 8, g & 0xff]);
}

const v4 = (cidr: string, why: string): Range => {
  const [net, bits] = cidr.split('/');
  return { net: v4Bytes(net), bits: Number(bits), why };
};
const v6 = (cidr: string, why: string, embedsV4At?: number): Range => {
  const [net, bits] = cidr.split('/');
  return { net: v6Bytes(net)!, bits: Number(bits), why, embedsV4At };
};

// IANA special-purpose registries (RFC 6890 and updates): everything that is
// not a globally routed unicast address.
const V4_BLOCKED: Range[] = [
  v4('0.0.0.0/8', 'is "this network", including the unspecified address (RFC 791)'),
  v4('10.0.0.0/8', 'is private (RFC 1918)'),
  v4('100.64.0.0/10', 'is carrier-grade NAT space (RFC 6598)'),
  v4('127.0.0.0/8', 'is loopback (RFC 1122)'),
  v4('169.254.0.0/16', 'is link-local (RFC 3927)'),
  v4('172.16.0.0/12', 'is private (RFC 1918)'),
  v4('192.0.0.0/24', 'is reserved for IETF protocol assignments (RFC 6890)'),
  v4('192.0.2.0/24', 'is documentation space (RFC 5737)'),
  v4('192.88.99.0/24', 'is the 6to4 relay anycast (RFC 7526)'),
  v4('192.168.0.0/16', 'is private (RFC 1918)'),
  v4('198.18.0.0/15', 'is benchmarking space (RFC 2544)'),
  v4('198.51.100.0/24', 'is documentation space (RFC 5737)'),
  v4('203.0.113.0/24', 'is documentation space (RFC 5737)'),
  v4('224.0.0.0/4', 'is multicast (RFC 5771)'),
  v4('240.0.0.0/4', 'is reserved, including broadcast (RFC 1112, RFC 919)'),
];

// The first matching range decides, so ::/128 and ::1/128 come before the
// ::/96 form that would otherwise claim them.
const V6_RANGES: Range[] = [
  v6('::/128', 'is the unspecified address (RFC 4291)'),
  v6('::1/128', 'is loopback (RFC 4291)'),
  v6('::ffff:0:0/96', 'is an IPv4-mapped address (RFC 4291)', 12),
  v6('::ffff:0:0:0/96', 'is an IPv4-translated address (RFC 2765)', 12),
  v6('::/96', 'is an IPv4-compatible address (RFC 4291)', 12),
  v6('64:ff9b::/96', 'is a NAT64 address (RFC 6052)', 12),
  v6('64:ff9b:1::/48', 'is local-use NAT64 space (RFC 8215)'),
  v6('100::/64', 'is discard-only space (RFC 6666)'),
  // Teredo embeds an obfuscated client address; none of it is a target.
  v6('2001::/32', 'is a Teredo address (RFC 4380)'),
  v6('2001:db8::/32', 'is documentation space (RFC 3849)'),
  v6('2002::/16', 'is a 6to4 address (RFC 3056)', 2),
  v6('fc00::/7', 'is unique-local (RFC 4193)'),
  v6('fe80::/10', 'is link-local (RFC 4291)'),
  v6('fec0::/10', 'is site-local (RFC 3879)'),
  v6('ff00::/8', 'is multicast (RFC 4291)'),
];

function inRange(bytes: number[], r: Range): boolean {
  let bits = r.bits;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((bytes[i] & mask) !== (r.net[i] & mask)) return false;
  }
  return true;
}

/**
 * Why an IP address is not a public unicast address, or undefined when it is.
 * Throws on something that is not an IP address.
 */
export function nonPublicReason(ip: string): string | undefined {
  const family = isIP(ip.replace(/^\[|\]$/g, '').split('%')[0]);
  if (family === 4) {
    const bytes = v4Bytes(ip);
    return V4_BLOCKED.find((r) => inRange(bytes, r))?.why;
  }
  if (family !== 6) throw new Error(`'${ip}' is not an IP address`);
  const bytes = v6Bytes(ip)!;
  for (const r of V6_RANGES) {
    if (!inRange(bytes, r)) continue;
    if (r.embedsV4At === undefined) return r.why;
    // A form carrying an IPv4 address reaches that address: judge it by it.
    const inner = bytes.slice(r.embedsV4At, r.embedsV4At + 4).join('.');
    const innerWhy = nonPublicReason(inner);
    return innerWhy && `${r.why} of ${inner}, which ${innerWhy}`;
  }
  return undefined;
}

export const MAX_URL_LENGTH = 2048;

/**
 * Checks a webhook URL as given; returns the normalised URL or the reason it
 * is refused (`nonPublic` when allowing private targets would accept it).
 * Host names are checked again on every delivery, after resolution.
 */
export function checkWebhookUrl(raw: string, allowPrivate: boolean): { ok: true; url: string } | { ok: false; reason: string; nonPublic?: true } {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return { ok: false, reason: 'is not an absolute URL' };
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return { ok: false, reason: 'must use http or https' };
  // Credentials in the URL would be logged and shown back in the API.
  if (u.username !== '' || u.password !== '') return { ok: false, reason: 'must not contain a user name or password' };
  if (u.hostname === '') return { ok: false, reason: 'has no host' };
  if (u.port === '0') return { ok: false, reason: 'has port 0, on which nothing can listen' };
  if (u.href.length > MAX_URL_LENGTH) return { ok: false, reason: `is longer than ${MAX_URL_LENGTH} characters` };
  if (!allowPrivate) {
    // A name written absolute ("localhost.") is the same name.
    const host = u.hostname.replace(/^\[|\]$/g, '').replace(/\.+$/, '');
    if (isIP(host)) {
      const why = nonPublicReason(host);
      if (why) return { ok: false, reason: `points at ${host}, which ${why}`, nonPublic: true };
    } else if (host === 'localhost' || host.endsWith('.localhost')) {
      // RFC 6761 §6.3: localhost names always resolve to loopback.
      return { ok: false, reason: 'points at localhost', nonPublic: true };
    }
  }
  u.hash = '';
  return { ok: true, url: u.href };
}

export type ResolveHost = (hostname: string) => Promise<LookupAddress[]>;

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http.request that resolves once, refuses when any answer is
 * not public (unless allowed), and hands the socket exactly the checked
 * addresses: the connection is pinned to what was checked.
 */
export function pinnedLookup(resolveHost: ResolveHost, allowPrivate: boolean) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolveHost(hostname).then((answers) => {
      const wanted = options.family === 4 || options.family === 6 ? answers.filter((a) => a.family === options.family) : answers;
      if (wanted.length === 0) throw Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' });
      if (!allowPrivate) {
        // Any non-public answer refuses the host: a name that mixes public and
        // private answers is either misconfigured or an attack.
        for (const a of answers) {
          const why = nonPublicReason(a.address);
          if (why) throw Object.assign(new Error(`${hostname} resolves to ${a.address}, which ${why}`), { code: 'EADDRNOTPUBLIC' });
        }
      }
      if (options.all) callback(null, wanted);
      else callback(null, wanted[0].address, wanted[0].family);
    }).catch((err: NodeJS.ErrnoException) => callback(err, ''));
  };
}

/** Resolves through a configured resolver (MAILROOM_DNS_SERVERS): A and AAAA, either may be missing. */
export function resolverLookup(resolver: { resolve4(h: string): Promise<string[]>; resolve6(h: string): Promise<string[]> }): ResolveHost {
  return async (hostname) => {
    const [a, aaaa] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
    const answers = [
      ...(a.status === 'fulfilled' ? a.value.map((address) => ({ address, family: 4 })) : []),
      ...(aaaa.status === 'fulfilled' ? aaaa.value.map((address) => ({ address, family: 6 })) : []),
    ];
    if (answers.length === 0 && a.status === 'rejected') throw a.reason;
    return answers;
  };
}
