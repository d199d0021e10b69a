// Each sending domain's records, looked up now as verification does (the same
// record list and comparison), without storing anything. SPF is evaluated for
// the server's own addresses, as a receiver would, rather than compared.
import { spf, type DNSResolver } from 'mailauth';
import type { Config } from '../config.js';
import type { DnsRecordSpec } from '../domains/dns-records.js';
import type { StoredDomain } from '../domains/domains.repo.js';
import { domainRecordSpecs } from '../domains/domains.service.js';
import { parseTagList } from '../domains/tag-list.js';
import { checkRecords, TEMPORARY_DNS_ERROR, type CheckedRecord, type DnsLookup } from '../domains/verify-records.js';
import { couldNotCheck, recordsAt } from './identity.js';
import { fail, ok, warn, type CheckResult, type CheckStatus } from './report.js';

export interface DomainCheckDeps {
  dns: DnsLookup;
  /** The same resolvers, in the form mailauth's SPF evaluation takes. */
  spfResolver: DNSResolver;
  hostname: string;
  trackingTarget: string;
  /** The host name's addresses, once known; undefined when they could not be looked up. */
  hostAddresses: Promise<string[] | undefined>;
  /** MAILROOM_DELIVERY: SPF is evaluated for this server's addresses only when they are the ones receivers see. */
  delivery: Config['delivery'];
}

/** A TXT record's character-strings hold at most 255 bytes each (RFC 1035 §3.3): a longer value is written as several. */
const TXT_STRING_MAX = 255;

/** A TXT value as a zone file takes it: quoted, cut into strings of at most 255 characters (an RSA key's value is longer). */
function quotedTxt(value: string): string {
  const strings = value.match(new RegExp(`[^]{1,${TXT_STRING_MAX}}`, 'g')) ?? [''];
  return strings.map((s) => `"${s}"`).join(' ');
}

/** The TXT or MX a user publishes for a record, as a zone file writes it. */
export function recordText(r: DnsRecordSpec): string {
  if (r.type === 'TXT') return `TXT ${r.name} ${quotedTxt(r.value)}`;
  if (r.type === 'MX') return `MX ${r.name} ${r.priority ?? 10} ${r.value}`;
  return `CNAME ${r.name} ${r.value}`;
}

export async function checkDomain(d: StoredDomain, deps: DomainCheckDeps): Promise<CheckResult[]> {
  const specs = domainRecordSpecs(d, { mxHost: deps.hostname, trackingTarget: deps.trackingTarget });
  const checked = await checkRecords(specs.filter((r) => r.record !== 'SPF'), deps.dns);
  return Promise.all(specs.map((spec) => (spec.record === 'SPF'
    ? checkSpf(spec, deps)
    : judge({ ...spec, record: spec.record }, checked.find((c) => c.name === spec.name && c.record === spec.record && c.value === spec.value)!, deps))));
}

/**
 * What a record's state means for mail. Required records (the active RSA
 * DKIM key, the return path's MX) fail; so do DMARC, which the large mailbox
 * providers require of bulk senders, and the domain's MX when inbound mail is
 * on. The rest only warn: mail still goes out without them.
 */
async function judge(spec: DnsRecordSpec & { record: Exclude<DnsRecordSpec['record'], 'SPF'> }, c: CheckedRecord, deps: DomainCheckDeps): Promise<CheckResult> {
  const check = `${spec.record} ${spec.name}`;
  const publish = `publish ${recordText(spec)}`;
  if (c.detail === TEMPORARY_DNS_ERROR) return warn('domain', check, `could not be checked: ${TEMPORARY_DNS_ERROR}`);
  const found = c.status === 'verified' ? 'published as asked' : (c.detail ?? 'no such record published');
  if (spec.record === 'DMARC' && c.status === 'verified') return dmarcPolicy(spec, deps.dns);
  if (spec.keyState === 'retiring') {
    return ok('domain', check, c.status === 'verified' ? 'retiring key, still published (it may be removed a week after it stopped signing)' : 'retiring key, record removed');
  }
  if (c.status === 'verified') {
    if (spec.keyState === 'pending') return ok('domain', check, 'the new key of a rotation is published: it signs once a verification sees it');
    return ok('domain', check, spec.record.startsWith('DKIM') ? 'matches the key Mailroom signs with' : found);
  }
  const severity: CheckStatus = spec.required || spec.record === 'DMARC' || spec.record === 'MX_INBOUND' ? 'fail' : 'warn';
  const why = WHY_MISSING[spec.keyState === 'pending' ? 'DKIM_PENDING' : spec.record];
  return severity === 'fail' ? fail('domain', check, `${found}; ${why}`, publish) : warn('domain', check, `${found}; ${why}`, publish);
}

/** What goes wrong without the record (SPF is evaluated, not judged here). */
const WHY_MISSING: Record<Exclude<DnsRecordSpec['record'], 'SPF'> | 'DKIM_PENDING', string> = {
  DKIM: 'receivers cannot verify the signatures, and DMARC fails',
  DKIM_ED25519: 'mail is signed with the RSA key only until it is published',
  DKIM_PENDING: 'the new key of a rotation signs once its record is seen',
  MX_BOUNCE: 'bounces to the return path do not come back to Mailroom',
  MX_INBOUND: 'inbound mail is on, but mail to the domain does not reach this server',
  DMARC: 'Gmail and Yahoo require a DMARC record of bulk senders',
  TRACKING: 'tracking links use MAILROOM_PUBLIC_URL instead of the domain\'s tracking host',
};

async function dmarcPolicy(spec: DnsRecordSpec, dns: DnsLookup): Promise<CheckResult> {
  const check = `${spec.record} ${spec.name}`;
  try {
    const texts = (await recordsAt(dns.resolveTxt(spec.name))).map((chunks) => chunks.join(''));
    const record = texts.find((t) => /^v=DMARC1\s*(?:;|$)/i.test(t.trim())) ?? '';
    const policy = parseTagList(record)?.get('p')?.toLowerCase();
    if (policy === 'none') {
      return warn('domain', check, `"${record}": p=none asks receivers to do nothing with mail that fails`,
        `once your mail passes DKIM and SPF, publish TXT ${spec.name} "v=DMARC1; p=quarantine;" (then p=reject)`);
    }
    return ok('domain', check, `"${record}"`);
  } catch (err) {
    return warn('domain', check, couldNotCheck(err));
  }
}

/** SPF at the return path (the MAIL FROM domain), evaluated for each of the server's addresses. */
async function checkSpf(spec: DnsRecordSpec, deps: DomainCheckDeps): Promise<CheckResult> {
  const check = `SPF ${spec.name}`;
  const publish = `publish ${recordText(spec)}, or add a:${deps.hostname} before the "all" of the record there`;
  if (deps.delivery === 'relay') {
    return ok('domain', check, 'not evaluated: mail leaves through the relay, so receivers check its addresses against this record (its provider names the include: to add)');
  }
  if (deps.delivery === 'sink') return ok('domain', check, 'not evaluated: nothing is sent (MAILROOM_DELIVERY=sink)');
  const addresses = await deps.hostAddresses;
  if (!addresses || addresses.length === 0) {
    return warn('domain', check, `could not be checked: MAILROOM_HOSTNAME ${deps.hostname} has no known address to evaluate it for (see the identity checks)`);
  }
  const results = await Promise.all(addresses.map(async (ip) => {
    const { status, rr } = await spf({ sender: `postmaster@${spec.name}`, ip, helo: deps.hostname, mta: deps.hostname, resolver: deps.spfResolver })
      .catch((err: unknown) => ({ status: { result: 'temperror' as const, comment: couldNotCheck(err) }, rr: undefined }));
    return { ip, result: status.result, rr };
  }));
  const record = results.find((r) => r.rr)?.rr;
  const published = record ? ` ("${record}")` : '';
  const failing = results.filter((r) => r.result !== 'pass');
  if (failing.length === 0) return ok('domain', check, `passes for ${addresses.join(', ')}${published}`);
  const said = failing.map((r) => `${r.result} for ${r.ip}`).join(', ');
  if (failing.every((r) => r.result === 'temperror' || r.result === 'temperr')) return warn('domain', check, `could not be checked: ${said}`);
  return fail('domain', check, `${said}${published}: receivers do not take mail from this server as the domain's`, publish);
}
