// `mailroom doctor`: whether this server is ready to send and receive mail.
// Operators of self-hosted mail fail on DNS and identity far more than on
// code, so this looks at what receivers look at: the server's name and
// reverse DNS, each domain's records, the certificate, the public URL, and the
// store. It only reads: no stored status changes.
import { promises as dnsPromises } from 'node:dns';
import type { Config } from '../config.js';
import type { Db } from '../store/db.js';
import { allDomains, type StoredDomain } from '../domains/domains.repo.js';
import { trackingTargetFor } from '../domains/domains.service.js';
import { normaliseDomainName } from '../domains/domain-name.js';
import { mailauthResolver } from '../domains/mailauth-resolver.js';
import { checkDelivery, sendsFromOwnAddresses } from './delivery.js';
import { checkDomain } from './domains.js';
import { checkIdentity, couldNotCheck } from './identity.js';
import { fail, reportOf, warn, type CheckResult, type DoctorReport } from './report.js';
import { checkPublicUrl, checkTls } from './settings.js';
import { checkStore, hasMailroomSchema, openStoreToCheck } from './store.js';

/**
 * How long one check may take. The resolver gives up on a query after its
 * own tries (DNS_TIMEOUT_MS each); this bounds a check of many queries, or a
 * store that does not answer.
 */
export const CHECK_TIMEOUT_MS = 10_000;
const DNS_TIMEOUT_MS = 2_000;

export interface DoctorOptions {
  /** Check this domain only (in every workspace that has it). */
  domain?: string;
}

export async function runDoctor(config: Config, options: DoctorOptions = {}): Promise<DoctorReport> {
  const dns = new dnsPromises.Resolver({ timeout: DNS_TIMEOUT_MS, tries: 2 });
  if (config.dnsServers.length > 0) dns.setServers(config.dnsServers);
  const opened = openStoreToCheck(config);
  try {
    const identity = bounded(() => checkIdentity(config.hostname, dns, sendsFromOwnAddresses(config)),
      (reason) => ({ checks: [warn('identity', 'host name', reason)], addresses: undefined }));
    const hostAddresses = identity.then((i) => i.addresses);
    const store = opened.store;
    const [identityChecks, deliveryChecks, domainChecks, tlsChecks, urlChecks, storeChecks] = await Promise.all([
      identity.then((i) => i.checks),
      bounded(() => checkDelivery(config), (reason) => [warn('delivery', 'relay', reason)]),
      store ? bounded(async () => (await hasMailroomSchema(store)
        ? domainsChecks(store.db, config, dns, hostAddresses, options.domain)
        // Its tables are not there to read: the store's checks say what to run.
        : [warn('domain', 'domains', 'could not be checked: the database has no Mailroom schema yet')]), (reason) => [warn('domain', 'domains', reason)])
        : [warn('domain', 'domains', 'could not be checked: there is no database')],
      bounded(() => checkTls(config, Date.now()), (reason) => [warn('tls', 'certificate', reason)]),
      checkPublicUrl(config),
      store ? bounded(() => checkStore(store, config), (reason) => [warn('store', 'database', reason)]) : opened.checks,
    ]);
    return reportOf([...identityChecks, ...deliveryChecks, ...domainChecks, ...tlsChecks, ...urlChecks, ...storeChecks]);
  } finally {
    // Queries still out (a dead resolver) would keep the process waiting for their timeouts.
    dns.cancel();
    await opened.store?.close();
  }
}

async function domainsChecks(db: Db, config: Config, dns: dnsPromises.Resolver,
  hostAddresses: Promise<string[] | undefined>, only: string | undefined): Promise<CheckResult[]> {
  let name: string | undefined;
  if (only !== undefined) {
    const normalised = normaliseDomainName(only);
    if (!normalised.ok) return [fail('domain', 'domains', `'${only}' is not a domain name: ${normalised.reason}`, 'give --domain a domain name, e.g. example.com')];
    name = normalised.name;
  }
  const domains = await bounded<StoredDomain[] | string>(() => allDomains(db, name), (reason) => reason);
  if (typeof domains === 'string') return [warn('domain', 'domains', domains)];
  if (domains.length === 0) {
    return name === undefined
      ? [warn('domain', 'domains', 'no sending domain in any workspace yet', 'add one: POST /v1/domains, or the dashboard\'s Domains view')]
      : [fail('domain', 'domains', `no workspace has the domain ${name}`, 'add it (POST /v1/domains), or check the name')];
  }
  const deps = {
    dns, spfResolver: mailauthResolver(dns), hostname: config.hostname.toLowerCase().replace(/\.$/, ''),
    trackingTarget: trackingTargetFor(config.publicUrl, config.hostname), hostAddresses, delivery: config.delivery,
  };
  const perDomain = await Promise.all(domains.map((d) => bounded(() => checkDomain(d, deps), (reason) => [warn('domain', 'records', reason)])
    .then((checks) => checks.map((c) => ({ ...c, domain: d.name, workspace_id: d.workspaceId })))));
  return perDomain.flat();
}

/**
 * The check's outcome, or what `instead` makes of the reason it has none: it
 * took longer than CHECK_TIMEOUT_MS, or failed for a reason of its own (a
 * resolver or a store that does not answer). A check that cannot be made
 * warns; it is not a failure of the setup.
 */
async function bounded<T>(work: () => Promise<T>, instead: (reason: string) => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(instead(`could not be checked: no answer within ${CHECK_TIMEOUT_MS / 1000} s`)), CHECK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([work().catch((err: unknown) => instead(couldNotCheck(err))), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
