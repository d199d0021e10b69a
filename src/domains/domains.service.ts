import { isIP } from 'node:net';
import type { Logger } from 'pino';
import { AppError, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { toIso, toIsoOrNull, type Clock } from '../core/clock.js';
import { seal, unseal } from '../core/seal.js';
import type { Store } from '../store/db.js';
import type { Page, PageQuery } from '../store/paging.js';
import type { DomainStatus } from './domains.tables.js';
import { generateDkimKeys } from './dkim-keys.js';
import { normaliseDomainName } from './domain-name.js';
import { DEFAULT_RETURN_PATH_SUBDOMAIN, DEFAULT_TRACKING_SUBDOMAIN, recordsFor, type DnsRecordSpec } from './dns-records.js';
import { checkRecords, domainStatus, TEMPORARY_DNS_ERROR, type CheckedRecord, type DnsLookup, type RecordState } from './verify-records.js';
import {
  deleteDomain, domainsDueForCheck, findDomain, findDomainByName, findDomainForUpdate, insertDomain, listDomains, lockActiveDomains,
  saveDkimKeys, saveDomainCheck, updateDomainSettings, type DomainCheckUpdate, type RecordCheck, type StoredDkimKey, type StoredDomain,
} from './domains.repo.js';

// The rules of the Domains area: what a new domain gets, when it becomes
// active, how often DNS is looked at again, and when it may be deleted.

export interface DomainRecord extends Omit<DnsRecordSpec, 'keyState'> {
  status: RecordState;
  detail?: string;
  /** DKIM records: pending (published ahead of a rotation), active (signing) or retiring. */
  key_state?: 'pending' | 'active' | 'retiring';
  /** A retiring DKIM record may be deleted from DNS after this time. */
  removable_after?: string;
}

export interface Domain {
  id: string;
  object: 'domain';
  name: string;
  status: DomainStatus;
  status_reason: string | null;
  region: string;
  return_path: string;
  open_tracking: boolean;
  click_tracking: boolean;
  tracking_subdomain: string;
  inbound_enabled: boolean;
  records: DomainRecord[];
  last_checked_at: string | null;
  created_at: string;
}

export interface CreateDomainInput {
  name: string;
  region?: string;
  returnPath?: string;
  trackingSubdomain?: string;
  openTracking?: boolean;
  clickTracking?: boolean;
  inboundEnabled?: boolean;
}

export interface UpdateDomainInput {
  openTracking?: boolean;
  clickTracking?: boolean;
  trackingSubdomain?: string;
  inboundEnabled?: boolean;
}

/** What the emails area needs to accept a sender address and DKIM-sign its mail. */
export interface SendingDomain {
  id: string;
  name: string;
  status: DomainStatus;
  /** The MAIL FROM domain, `<return path subdomain>.<name>`. */
  returnPathDomain: string;
  /** RSA always; Ed25519 once its record is seen published, so receivers never meet a signature they cannot check. */
  dkim: Array<{ selector: string; algorithm: 'rsa' | 'ed25519'; privateKeyPem: string }>;
  openTracking: boolean;
  clickTracking: boolean;
  /** `<tracking subdomain>.<name>` once its CNAME is verified and tracking is on; else null (links use the public URL). */
  trackingHost: string | null;
  /** Whether the last DNS check found the DMARC record; unknown when DNS was never checked. */
  dmarc: 'published' | 'missing' | 'unknown';
}

export interface DomainSenders {
  /** The workspace's domain of that name (any case, IDN or A-label), or undefined. */
  find(workspaceId: string, domainName: string): Promise<SendingDomain | undefined>;
}

export interface DomainsService {
  create(workspaceId: string, input: CreateDomainInput): Promise<Domain>;
  list(workspaceId: string, filter: { status?: DomainStatus }, page: PageQuery): Promise<Page<Domain>>;
  get(workspaceId: string, id: string): Promise<Domain>;
  update(workspaceId: string, id: string, input: UpdateDomainInput): Promise<Domain>;
  remove(workspaceId: string, id: string): Promise<void>;
  /** Looks every record up now and moves the domain's status; answers after the result is stored. */
  verify(workspaceId: string, id: string): Promise<Domain>;
  /** Makes the next DKIM key pair, pending until verification sees its records; signing switches then. */
  rotateDkim(workspaceId: string, id: string): Promise<Domain>;
  /** One run of the re-check task: checks the domains whose planned check is due. Returns how many it looked at. */
  recheckDue(): Promise<number>;
  senders(): DomainSenders;
}

export interface DomainsDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Seals DKIM private keys at rest (the keyring's seal key). */
  sealKey: Buffer;
  /** A resolver on MAILROOM_DNS_SERVERS (or the system's). */
  dns: DnsLookup;
  /** The server's public host name (MAILROOM_HOSTNAME): the MX target and the SPF `a:`. */
  mxHost: string;
  /** Where tracking CNAMEs point: the host that serves the tracking links. */
  trackingTarget: string;
  /** Whether the domain has emails not yet sent (pending or scheduled). */
  hasPendingEmails(workspaceId: string, domainId: string): Promise<boolean>;
}

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

/**
 * Delays between the automatic checks of a `verifying` domain, counted from
 * the check before; the last step repeats. Records usually appear within
 * minutes of being saved, but a zone with a long negative-caching TTL
 * (RFC 2308 §5) can hide them for hours, hence the long tail.
 */
export const VERIFY_RETRY_SCHEDULE_MS: readonly number[] = [
  1 * MINUTE_MS, //  1 min after the check that found records missing
  5 * MINUTE_MS, //  6 min
  15 * MINUTE_MS, // 21 min
  1 * HOUR_MS, //    1 h 21 min
  6 * HOUR_MS, //    7 h 21 min, then every 6 h
];
/** A domain still `verifying` this long after checks began goes back to `unverified`, and checks stop. */
export const VERIFY_GIVE_UP_AFTER_MS = 72 * HOUR_MS;
/** How often an `active` domain's records are looked at again, to notice one removed. */
export const ACTIVE_RECHECK_MS = 24 * HOUR_MS;
/** Run interval of the re-check task: the shortest step of the schedule. */
export const RECHECK_TASK_EVERY_MS = VERIFY_RETRY_SCHEDULE_MS[0];

// Bounds one run of the re-check task: domains looked at, and at once. Each
// check is a handful of parallel DNS queries; the rest wait for the next run.
const RECHECK_BATCH = 50;
const RECHECK_CONCURRENCY = 5;

const DEFAULT_REGION = 'local';

const recordKey = (r: { record: string; name: string; value: string }): string => `${r.record} ${r.name} ${r.value}`;

/** A retiring DKIM record stays published this long after its key stopped signing: mail in queues and verifiers' caches still need it. */
export const DKIM_RETIRE_AFTER_MS = 7 * 24 * HOUR_MS;

/**
 * The keys after a check: when the pending RSA key's record is verified, the
 * pending pair takes over and the active pair retires. Undefined when
 * nothing changes.
 */
function promoteVerifiedKeys(keys: readonly StoredDkimKey[], verifiedNames: ReadonlySet<string>, domain: string, now: number): StoredDkimKey[] | undefined {
  const ready = keys.some((k) => k.state === 'pending' && k.algorithm === 'rsa-sha256' && verifiedNames.has(`${k.selector}._domainkey.${domain}`));
  if (!ready) return undefined;
  return keys.map((k): StoredDkimKey => {
    if (k.state === 'pending') return { ...k, state: 'active' };
    if (k.state === 'active') return { ...k, state: 'retiring', retiredAt: now };
    return k;
  });
}

/** The records a stored domain needs on a server with this host name and tracking target: the list its API page shows. */
export function domainRecordSpecs(d: StoredDomain, server: { mxHost: string; trackingTarget: string }): DnsRecordSpec[] {
  return recordsFor(d.name, {
    dkim: d.dkim,
    returnPathSubdomain: d.returnPathSubdomain,
    mxHost: server.mxHost,
    inboundEnabled: d.inboundEnabled,
    trackingSubdomain: d.trackingSubdomain,
    trackingEnabled: d.openTracking || d.clickTracking,
    trackingTarget: server.trackingTarget,
  });
}

export function domainsService(deps: DomainsDeps): DomainsService {
  const { store, clock, logger, sealKey, dns } = deps;

  const specsFor = (d: StoredDomain): DnsRecordSpec[] => domainRecordSpecs(d, deps);

  /**
   * The records the domain needs now, each with the outcome of its last
   * check. A record whose name or value changed since (another tracking
   * subdomain, another server host name) has not been checked: pending.
   */
  function recordsOf(d: StoredDomain): DomainRecord[] {
    const checks = new Map(d.checks.map((c) => [recordKey(c), c]));
    const retiredAt = new Map(d.dkim.map((k) => [`${k.selector}._domainkey.${d.name}`, k.retiredAt ?? d.createdAt]));
    return specsFor(d).map((spec) => {
      const check = checks.get(recordKey(spec));
      return {
        record: spec.record,
        type: spec.type,
        name: spec.name,
        value: spec.value,
        ...(spec.priority !== undefined && { priority: spec.priority }),
        ttl: spec.ttl,
        required: spec.required,
        status: check?.status ?? 'pending',
        ...(check?.detail !== undefined && { detail: check.detail }),
        ...(spec.keyState !== undefined && { key_state: spec.keyState }),
        ...(spec.keyState === 'retiring' && { removable_after: toIso(retiredAt.get(spec.name)! + DKIM_RETIRE_AFTER_MS) }),
      };
    });
  }

  function toDomain(d: StoredDomain): Domain {
    return {
      id: d.id,
      object: 'domain',
      name: d.name,
      status: d.status,
      status_reason: d.statusReason,
      region: d.region,
      return_path: d.returnPathSubdomain,
      open_tracking: d.openTracking,
      click_tracking: d.clickTracking,
      tracking_subdomain: d.trackingSubdomain,
      inbound_enabled: d.inboundEnabled,
      records: recordsOf(d),
      last_checked_at: toIsoOrNull(d.lastCheckedAt),
      created_at: toIso(d.createdAt),
    };
  }

  async function mustFind(ws: string, id: string): Promise<StoredDomain> {
    const d = await findDomain(store.db, ws, id);
    if (!d) throw notFound('domain', id);
    return d;
  }

  /**
   * Folds a fresh look-up into the stored one: a record whose look-up failed
   * for a temporary reason keeps the status it had, so a DNS outage neither
   * activates nor demotes a domain.
   */
  function mergeChecks(previous: readonly RecordCheck[], checked: readonly CheckedRecord[]): RecordCheck[] {
    const before = new Map(previous.map((c) => [recordKey(c), c]));
    return checked.map((c) => {
      const status = c.detail === TEMPORARY_DNS_ERROR ? (before.get(recordKey(c))?.status ?? 'pending') : c.status;
      return { record: c.record, name: c.name, value: c.value, status, ...(c.detail !== undefined && { detail: c.detail }) };
    });
  }

  /** One line naming the required records that do not match, for status_reason and the log. */
  function missingSummary(records: readonly DomainRecord[]): string {
    return records
      .filter((r) => r.required && r.status !== 'verified')
      .map((r) => `${r.record} ${r.type} at ${r.name}: ${r.detail ?? r.status}`)
      .join('; ');
  }

  type Trigger = 'request' | 'schedule';

  /** The domain's next state after a look-up. */
  function nextState(current: StoredDomain, checked: readonly CheckedRecord[], now: number, trigger: Trigger): DomainCheckUpdate {
    const checks = mergeChecks(current.checks, checked);
    // Judged on the records the domain needs now, in case its settings
    // changed while the look-up ran.
    const records = recordsOf({ ...current, checks });
    if (domainStatus(records) === 'active') {
      return {
        status: 'active', statusReason: null, checks, lastCheckedAt: now,
        nextCheckAt: now + ACTIVE_RECHECK_MS, verifyingSince: null, checkAttempts: 0,
      };
    }
    const missing = missingSummary(records);
    // A request (the user has just published something) or an active domain
    // losing a record starts a fresh run of checks; otherwise the run goes on.
    if (trigger === 'request' || current.status !== 'verifying' || current.verifyingSince === null) {
      return {
        status: 'verifying', statusReason: `Waiting for ${missing}`, checks, lastCheckedAt: now,
        nextCheckAt: now + VERIFY_RETRY_SCHEDULE_MS[0], verifyingSince: now, checkAttempts: 0,
      };
    }
    const giveUpAt = current.verifyingSince + VERIFY_GIVE_UP_AFTER_MS;
    if (now >= giveUpAt) {
      return {
        status: 'unverified',
        statusReason: `Checks stopped after ${VERIFY_GIVE_UP_AFTER_MS / HOUR_MS} h without the required records; still missing: ${missing}. Verify again once they are published.`,
        checks, lastCheckedAt: now, nextCheckAt: null, verifyingSince: null, checkAttempts: 0,
      };
    }
    const attempts = current.checkAttempts + 1;
    const step = VERIFY_RETRY_SCHEDULE_MS[Math.min(attempts, VERIFY_RETRY_SCHEDULE_MS.length - 1)];
    return {
      status: 'verifying', statusReason: `Waiting for ${missing}`, checks, lastCheckedAt: now,
      // The last check falls on the deadline itself, not up to a step after it.
      nextCheckAt: Math.min(now + step, giveUpAt), verifyingSince: current.verifyingSince, checkAttempts: attempts,
    };
  }

  function logTransition(before: StoredDomain, after: DomainCheckUpdate, trigger: Trigger): void {
    if (before.status === after.status) return;
    const fields = { domain_id: before.id, workspace_id: before.workspaceId, domain: before.name, from: before.status, to: after.status, trigger };
    if (after.status === 'active') logger.info(fields, 'domain is active: every required DNS record matches');
    else if (before.status === 'active') logger.warn({ ...fields, reason: after.statusReason }, 'domain is no longer active: a required DNS record stopped matching');
    else if (after.status === 'unverified') logger.warn({ ...fields, reason: after.statusReason }, 'domain verification stopped');
  }

  /**
   * Looks the domain's records up (outside any transaction: DNS is network
   * I/O) and stores the outcome. Returns undefined when the domain was deleted
   * meanwhile, or, for a scheduled check, when another check was stored first.
   */
  async function check(d: StoredDomain, trigger: Trigger): Promise<StoredDomain | undefined> {
    const checked = await checkRecords(specsFor(d), dns);
    const now = clock.now();
    const outcome = await store.write(async (tx) => {
      const current = await findDomainForUpdate(tx, d.workspaceId, d.id);
      if (!current) return undefined;
      if (trigger === 'schedule' && current.lastCheckedAt !== d.lastCheckedAt) return undefined;
      const next = nextState(current, checked, now, trigger);
      await saveDomainCheck(tx, d.workspaceId, d.id, next, now);
      const verifiedNames = new Set(next.checks.filter((c) => c.status === 'verified').map((c) => c.name));
      const keys = promoteVerifiedKeys(current.dkim, verifiedNames, current.name, now);
      if (keys) {
        await saveDkimKeys(tx, d.workspaceId, d.id, keys, now);
        logger.info({ domain_id: d.id, workspace_id: d.workspaceId, domain: d.name, selectors: keys.filter((k) => k.state === 'active').map((k) => k.selector) },
          'DKIM rotation: the new key is published and signs from now on');
      }
      return { before: current, after: { ...current, ...next, ...(keys && { dkim: keys }) } };
    });
    if (!outcome) return undefined;
    logTransition(outcome.before, outcome.after, trigger);
    return outcome.after;
  }

  const senders: DomainSenders = {
    async find(ws, domainName) {
      const normalised = normaliseDomainName(domainName);
      if (!normalised.ok) return undefined;
      const d = await findDomainByName(store.db, ws, normalised.name);
      if (!d) return undefined;
      const verified = new Set(recordsOf(d).filter((r) => r.status === 'verified').map((r) => r.name));
      const trackingHost = `${d.trackingSubdomain}.${d.name}`;
      return {
        id: d.id,
        name: d.name,
        status: d.status,
        returnPathDomain: `${d.returnPathSubdomain}.${d.name}`,
        dkim: d.dkim
          .filter((k) => k.state === 'active' && (k.algorithm === 'rsa-sha256' || verified.has(`${k.selector}._domainkey.${d.name}`)))
          .map((k) => ({
            selector: k.selector,
            algorithm: k.algorithm === 'rsa-sha256' ? 'rsa' : 'ed25519',
            privateKeyPem: unseal(k.sealedPrivateKey, sealKey).toString('utf8'),
          })),
        openTracking: d.openTracking,
        clickTracking: d.clickTracking,
        trackingHost: (d.openTracking || d.clickTracking) && verified.has(trackingHost) ? trackingHost : null,
        dmarc: d.lastCheckedAt === null ? 'unknown' : verified.has(`_dmarc.${d.name}`) ? 'published' : 'missing',
      };
    },
  };

  return {
    async create(ws, input) {
      const normalised = normaliseDomainName(input.name);
      if (!normalised.ok) throw new AppError('validation_error', normalised.reason, { param: 'name' });
      const name = normalised.name;
      const returnPath = subdomain(name, input.returnPath ?? DEFAULT_RETURN_PATH_SUBDOMAIN, 'return_path');
      const tracking = subdomain(name, input.trackingSubdomain ?? DEFAULT_TRACKING_SUBDOMAIN, 'tracking_subdomain');
      distinctSubdomains(returnPath, tracking);

      const duplicate = () => new AppError('already_exists', `The domain '${name}' is already in this workspace.`, { param: 'name' });
      if (await findDomainByName(store.db, ws, name)) throw duplicate();
      const now = clock.now();
      // Key generation takes tens of milliseconds of CPU: done before the
      // write, so the shared transaction never waits for it.
      const keys = await generateDkimKeys(now);
      const domain = {
        id: newId('dom', now),
        workspaceId: ws,
        name,
        status: 'unverified' as const,
        statusReason: null,
        region: input.region ?? DEFAULT_REGION,
        returnPathSubdomain: returnPath,
        openTracking: input.openTracking ?? false,
        clickTracking: input.clickTracking ?? false,
        trackingSubdomain: tracking,
        inboundEnabled: input.inboundEnabled ?? false,
        dkim: [keys.rsa, keys.ed25519].map((k): StoredDkimKey => ({
          selector: k.selector, algorithm: k.algorithm, publicTxt: k.publicTxt, sealedPrivateKey: seal(k.privateKeyPem, sealKey), state: 'active',
        })),
        checks: [],
        lastCheckedAt: null,
        nextCheckAt: null,
        verifyingSince: null,
        checkAttempts: 0,
        createdAt: now,
      };
      // A concurrent request (on this node or another) may have added it meanwhile.
      const stored = await store.write((tx) => insertDomain(tx, domain));
      if (!stored) throw duplicate();
      return toDomain(stored);
    },

    async list(ws, filter, page) {
      const result = await listDomains(store.db, ws, filter, page);
      return { ...result, data: result.data.map(toDomain) };
    },

    async get(ws, id) {
      return toDomain(await mustFind(ws, id));
    },

    async update(ws, id, input) {
      const existing = await mustFind(ws, id);
      const trackingSubdomain = input.trackingSubdomain === undefined
        ? undefined
        : subdomain(existing.name, input.trackingSubdomain, 'tracking_subdomain');
      if (trackingSubdomain !== undefined) distinctSubdomains(existing.returnPathSubdomain, trackingSubdomain);
      const updated = await store.write(async (tx) => {
        if (!(await findDomain(tx, ws, id))) throw notFound('domain', id);
        await updateDomainSettings(tx, ws, id, { ...input, trackingSubdomain }, clock.now());
        return findDomain(tx, ws, id);
      });
      return toDomain(updated!);
    },

    async remove(ws, id) {
      await mustFind(ws, id);
      if (await deps.hasPendingEmails(ws, id)) {
        throw new AppError('domain_in_use', 'The domain has emails waiting to be sent (pending or scheduled); cancel them or let them go out first.');
      }
      await store.write(async (tx) => {
        const active = await lockActiveDomains(tx, ws);
        const current = await findDomainForUpdate(tx, ws, id);
        if (!current) throw notFound('domain', id);
        if (current.status === 'active' && active.length <= 1) {
          throw new AppError('last_active_domain', 'This is the only active domain of the workspace; add and verify another before deleting it.');
        }
        await deleteDomain(tx, ws, id);
      });
    },

    async verify(ws, id) {
      const checked = await check(await mustFind(ws, id), 'request');
      if (!checked) throw notFound('domain', id);
      return toDomain(checked);
    },

    async rotateDkim(ws, id) {
      const existing = await mustFind(ws, id);
      const inProgress = () => new AppError('dkim_rotation_in_progress',
        'A new DKIM key is already waiting for its DNS record; publish it and verify the domain, then rotate again.');
      if (existing.dkim.some((k) => k.state === 'pending')) throw inProgress();
      const now = clock.now();
      const keys = await generateDkimKeys(now, new Set(existing.dkim.map((k) => k.selector)));
      const updated = await store.write(async (tx) => {
        const current = await findDomainForUpdate(tx, ws, id);
        if (!current) throw notFound('domain', id);
        if (current.dkim.some((k) => k.state === 'pending')) throw inProgress();
        // Keys that retired long enough ago were reported removable; a new rotation forgets them.
        const kept = current.dkim.filter((k) => k.state !== 'retiring' || (k.retiredAt ?? 0) + DKIM_RETIRE_AFTER_MS > now);
        const next = [...kept, ...[keys.rsa, keys.ed25519].map((k): StoredDkimKey => ({
          selector: k.selector, algorithm: k.algorithm, publicTxt: k.publicTxt, sealedPrivateKey: seal(k.privateKeyPem, sealKey), state: 'pending',
        }))];
        await saveDkimKeys(tx, ws, id, next, now);
        return { ...current, dkim: next };
      });
      return toDomain(updated);
    },

    async recheckDue() {
      const due = await domainsDueForCheck(store.db, clock.now(), RECHECK_BATCH);
      for (let i = 0; i < due.length; i += RECHECK_CONCURRENCY) {
        await Promise.all(due.slice(i, i + RECHECK_CONCURRENCY).map((d) => check(d, 'schedule').catch((err: unknown) => {
          logger.error({ err, domain_id: d.id, workspace_id: d.workspaceId }, 'scheduled domain check failed');
        })));
      }
      return due.length;
    },

    senders: () => senders,
  };
}

/**
 * A subdomain setting as stored: the label(s) under the domain, lower-case
 * A-labels. Given as the full name ("bounces.example.com") it is refused
 * rather than guessed at, since "bounces.example.com.example.com" is a name too.
 */
function subdomain(domain: string, input: string, param: string): string {
  const sub = input.trim().toLowerCase().replace(/\.$/, '');
  if (sub === domain || sub.endsWith(`.${domain}`)) {
    throw new AppError('validation_error', `Give only the part under ${domain}, such as '${sub.slice(0, -domain.length - 1) || 'bounces'}'.`, { param });
  }
  const full = normaliseDomainName(`${sub}.${domain}`);
  if (sub === '' || !full.ok) {
    const reason = full.ok ? 'The subdomain is empty.' : full.reason;
    throw new AppError('validation_error', `'${input}' is not a valid subdomain of ${domain}: ${reason}`, { param });
  }
  return full.name.slice(0, -domain.length - 1);
}

/**
 * The tracking host is a CNAME, and a CNAME cannot share its name with the
 * return path's SPF and MX records (RFC 1034 §3.6.2).
 */
function distinctSubdomains(returnPath: string, tracking: string): void {
  if (returnPath === tracking) {
    throw new AppError('validation_error', `The tracking subdomain must differ from the return path ('${returnPath}'): a CNAME cannot share a name with other records.`, { param: 'tracking_subdomain' });
  }
}

/**
 * Where tracking CNAMEs point: the host of the public URL, which serves the
 * tracking links, unless that is an IP address or a single label such as
 * "localhost" (a CNAME target is a host name); then the server's host name.
 */
export function trackingTargetFor(publicUrl: string, hostname: string): string {
  const host = new URL(publicUrl).hostname.replace(/^\[(.*)\]$/, '$1');
  return isIP(host) === 0 && host.includes('.') ? host : hostname;
}
