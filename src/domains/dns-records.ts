// The DNS records a user publishes for a sending domain. Names are absolute
// (no trailing dot) because DNS panels differ on whether they append the zone;
// showing the full name lets the user see exactly where each record belongs.
import { normaliseDomainName } from './domain-name.js';
import { parseTagList } from './tag-list.js';

export type RecordKind = 'DKIM' | 'DKIM_ED25519' | 'SPF' | 'MX_BOUNCE' | 'MX_INBOUND' | 'DMARC' | 'TRACKING';

export interface DnsRecordSpec {
  record: RecordKind;
  type: 'TXT' | 'MX' | 'CNAME';
  name: string;
  value: string;
  priority?: number;
  ttl: 'Auto';
  required: boolean;
  /** DKIM records: the key's place in a rotation. */
  keyState?: 'pending' | 'active' | 'retiring';
}

export interface RecordSettings {
  /** Public halves of the domain's DKIM keys; the algorithm is read from `k=`. Only the active RSA key is required. */
  dkim: readonly { selector: string; publicTxt: string; state: 'pending' | 'active' | 'retiring' }[];
  /** Label(s) under the domain used as the envelope sender (MAIL FROM). */
  returnPathSubdomain?: string;
  /** The Mailroom server's public host name (MAILROOM_HOSTNAME). */
  mxHost: string;
  inboundEnabled: boolean;
  trackingSubdomain?: string;
  trackingEnabled: boolean;
  /** The host the tracking CNAME points at. */
  trackingTarget: string;
}

export const DEFAULT_RETURN_PATH_SUBDOMAIN = 'bounces';
export const DEFAULT_TRACKING_SUBDOMAIN = 'track';

// Any value works for MX preference; 10 leaves room on both sides for users
// who add their own hosts.
const MX_PREFERENCE = 10;

/**
 * Which records make a domain `active`: those without which mail from it is
 * not authenticated or its bounces are lost.
 * - DKIM (RSA): the signature DMARC aligns on for the From domain; every
 *   receiver verifies RSA.
 * - SPF on the return path: MAIL FROM is `…@<returnPath>.<domain>`, so this is
 *   the record receivers check (RFC 7208 §2.4); it aligns with the From domain
 *   under relaxed DMARC alignment (RFC 7489 §3.1.2).
 * - MX on the return path: bounces (DSNs) go to the MAIL FROM domain
 *   (RFC 5321 §3.3), so without it Mailroom never learns of them.
 * Optional: Ed25519 DKIM (RFC 8463 verifiers are still rare, RSA covers
 * everyone), DMARC (a policy the owner chooses; p=none is only a starting
 * point), the domain's own MX (only wanted when Mailroom receives its mail, and
 * the owner may keep another provider) and the tracking CNAME (an opt-in
 * extra that sending does not depend on).
 */
export function recordsFor(domain: string, settings: RecordSettings): DnsRecordSpec[] {
  const mxHost = settings.mxHost.toLowerCase().replace(/\.$/, '');
  const returnPath = subdomainOf(domain, settings.returnPathSubdomain ?? DEFAULT_RETURN_PATH_SUBDOMAIN);
  const records: DnsRecordSpec[] = [];

  for (const key of settings.dkim) {
    const isEd25519 = parseTagList(key.publicTxt)?.get('k')?.toLowerCase() === 'ed25519';
    records.push({
      record: isEd25519 ? 'DKIM_ED25519' : 'DKIM',
      type: 'TXT',
      name: `${key.selector}._domainkey.${domain}`,
      value: key.publicTxt,
      ttl: 'Auto',
      required: !isEd25519 && key.state === 'active',
      keyState: key.state,
    });
  }

  if (!records.some((r) => r.record === 'DKIM' && r.keyState === 'active')) {
    throw new Error(`No RSA DKIM key given for ${domain}: it is the one every receiver verifies`);
  }

  // `a:<mxHost>` authorises whatever addresses the server's own name has, v4
  // and v6, so the record survives a change of IP without the user editing it,
  // at one DNS lookup of the ten allowed (RFC 7208 §4.6.4). The subdomain is
  // Mailroom's alone, so nothing else needs listing. `~all` rather than `-all`:
  // a soft fail keeps mail flowing while a moved server's new address
  // propagates or when delivery goes through a relay not listed here, and the
  // owner's DMARC policy, not this record, decides what happens to mail that
  // fails both SPF and DKIM (RFC 7489 §6.6.2).
  records.push({
    record: 'SPF',
    type: 'TXT',
    name: returnPath,
    value: `v=spf1 a:${mxHost} ~all`,
    ttl: 'Auto',
    required: true,
  });
  records.push({
    record: 'MX_BOUNCE',
    type: 'MX',
    name: returnPath,
    value: mxHost,
    priority: MX_PREFERENCE,
    ttl: 'Auto',
    required: true,
  });
  if (settings.inboundEnabled) {
    records.push({
      record: 'MX_INBOUND',
      type: 'MX',
      name: domain,
      value: mxHost,
      priority: MX_PREFERENCE,
      ttl: 'Auto',
      required: false,
    });
  }
  // p=none asks receivers for nothing but lets the owner add reporting and
  // tighten the policy once they trust their setup (RFC 7489 §6.3).
  records.push({
    record: 'DMARC',
    type: 'TXT',
    name: `_dmarc.${domain}`,
    value: 'v=DMARC1; p=none;',
    ttl: 'Auto',
    required: false,
  });
  if (settings.trackingEnabled) {
    records.push({
      record: 'TRACKING',
      type: 'CNAME',
      name: subdomainOf(domain, settings.trackingSubdomain ?? DEFAULT_TRACKING_SUBDOMAIN),
      value: settings.trackingTarget.toLowerCase().replace(/\.$/, ''),
      ttl: 'Auto',
      required: false,
    });
  }
  return records;
}

function subdomainOf(domain: string, sub: string): string {
  const result = normaliseDomainName(`${sub}.${domain}`);
  if (!result.ok) throw new Error(`Invalid subdomain "${sub}" of ${domain}: ${result.reason}`);
  return result.name;
}
