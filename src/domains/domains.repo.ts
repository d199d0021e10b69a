import type { Selectable } from 'kysely';
import type { Db, Tx } from '../store/db.js';
import type { DomainStatus, DomainsTable } from './domains.tables.js';
import { fetchPage, type Page, type PageQuery } from '../store/paging.js';
import { lockedForUpdate } from '../store/lease.js';
import type { DkimAlgorithm } from './dkim-keys.js';
import type { RecordKind } from './dns-records.js';
import type { RecordState } from './verify-records.js';

// Rows become StoredDomain here and nowhere else: booleans from 0/1, JSON
// columns parsed. The API shape needs the records computed from the server's
// configuration, so the service builds it from a StoredDomain.

/**
 * A key's place in a rotation: `pending` until its record is seen in DNS
 * (nothing is signed with it), `active` while mail is signed with it,
 * `retiring` once a newer key took over (its record stays published a while,
 * for mail still in flight and for verifiers with cached records).
 */
export type DkimKeyState = 'pending' | 'active' | 'retiring';

export interface StoredDkimKey {
  selector: string;
  algorithm: DkimAlgorithm;
  publicTxt: string;
  /** Sealed with the keyring's seal key (core/seal.ts). */
  sealedPrivateKey: string;
  state: DkimKeyState;
  /** When it stopped signing, for a retiring key. */
  retiredAt?: number;
}

/** The outcome of the last look-up of one record, for the record as it was then. */
export interface RecordCheck {
  record: RecordKind;
  name: string;
  value: string;
  status: RecordState;
  detail?: string;
}

export interface StoredDomain {
  pos: number;
  id: string;
  workspaceId: string;
  name: string;
  status: DomainStatus;
  statusReason: string | null;
  region: string;
  returnPathSubdomain: string;
  openTracking: boolean;
  clickTracking: boolean;
  trackingSubdomain: string;
  inboundEnabled: boolean;
  dkim: StoredDkimKey[];
  checks: RecordCheck[];
  lastCheckedAt: number | null;
  nextCheckAt: number | null;
  verifyingSince: number | null;
  checkAttempts: number;
  createdAt: number;
}

export interface DomainSettingsPatch {
  openTracking?: boolean;
  clickTracking?: boolean;
  trackingSubdomain?: string;
  inboundEnabled?: boolean;
}

/** What a DNS check (or giving up on one) changes. */
export interface DomainCheckUpdate {
  status: DomainStatus;
  statusReason: string | null;
  checks: RecordCheck[];
  lastCheckedAt: number | null;
  nextCheckAt: number | null;
  verifyingSince: number | null;
  checkAttempts: number;
}

interface DkimKeyJson {
  selector: string;
  algorithm: DkimAlgorithm;
  public_txt: string;
  private_key: string;
  /** Absent on keys stored before rotation existed: they are active. */
  state?: DkimKeyState;
  retired_at?: number;
}

const toDkimJson = (k: StoredDkimKey): DkimKeyJson => ({
  selector: k.selector, algorithm: k.algorithm, public_txt: k.publicTxt, private_key: k.sealedPrivateKey, state: k.state,
  ...(k.retiredAt !== undefined && { retired_at: k.retiredAt }),
});

const toStored = (r: Selectable<DomainsTable>): StoredDomain => ({
  pos: r.pos,
  id: r.id,
  workspaceId: r.workspace_id,
  name: r.name,
  status: r.status,
  statusReason: r.status_reason,
  region: r.region,
  returnPathSubdomain: r.return_path_subdomain,
  openTracking: r.open_tracking === 1,
  clickTracking: r.click_tracking === 1,
  trackingSubdomain: r.tracking_subdomain,
  inboundEnabled: r.inbound_enabled === 1,
  dkim: (JSON.parse(r.dkim_keys) as DkimKeyJson[]).map((k) => ({
    selector: k.selector, algorithm: k.algorithm, publicTxt: k.public_txt, sealedPrivateKey: k.private_key, state: k.state ?? 'active',
    ...(k.retired_at !== undefined && { retiredAt: k.retired_at }),
  })),
  checks: JSON.parse(r.record_checks) as RecordCheck[],
  lastCheckedAt: r.last_checked_at,
  nextCheckAt: r.next_check_at,
  verifyingSince: r.verifying_since,
  checkAttempts: r.check_attempts,
  createdAt: r.created_at,
});

const flag = (b: boolean): number => (b ? 1 : 0);

/** Inserts the domain unless the workspace has one of that name; undefined when it has. */
export async function insertDomain(tx: Tx, d: Omit<StoredDomain, 'pos'>): Promise<StoredDomain | undefined> {
  const row = {
    id: d.id,
    workspace_id: d.workspaceId,
    name: d.name,
    status: d.status,
    status_reason: d.statusReason,
    region: d.region,
    return_path_subdomain: d.returnPathSubdomain,
    open_tracking: flag(d.openTracking),
    click_tracking: flag(d.clickTracking),
    tracking_subdomain: d.trackingSubdomain,
    inbound_enabled: flag(d.inboundEnabled),
    dkim_keys: JSON.stringify(d.dkim.map(toDkimJson)),
    record_checks: JSON.stringify(d.checks),
    last_checked_at: d.lastCheckedAt,
    next_check_at: d.nextCheckAt,
    verifying_since: d.verifyingSince,
    check_attempts: d.checkAttempts,
    created_at: d.createdAt,
    updated_at: d.createdAt,
  };
  const inserted = await tx.insertInto('domains').values(row)
    .onConflict((oc) => oc.columns(['workspace_id', 'name']).doNothing()).returning('pos').executeTakeFirst();
  return inserted && { ...d, pos: inserted.pos };
}

export async function findDomain(db: Db | Tx, ws: string, id: string): Promise<StoredDomain | undefined> {
  const row = await db.selectFrom('domains').selectAll().where('workspace_id', '=', ws).where('id', '=', id).executeTakeFirst();
  return row && toStored(row);
}

/** The domain, read to change it: its row stays locked until the transaction ends. */
export async function findDomainForUpdate(tx: Tx, ws: string, id: string): Promise<StoredDomain | undefined> {
  const row = await lockedForUpdate(tx, tx.selectFrom('domains').selectAll().where('workspace_id', '=', ws).where('id', '=', id)).executeTakeFirst();
  return row && toStored(row);
}

export async function findDomainByName(db: Db | Tx, ws: string, name: string): Promise<StoredDomain | undefined> {
  const row = await db.selectFrom('domains').selectAll().where('workspace_id', '=', ws).where('name', '=', name).executeTakeFirst();
  return row && toStored(row);
}

export async function listDomains(db: Db, ws: string, filter: { status?: DomainStatus }, page: PageQuery): Promise<Page<StoredDomain>> {
  return fetchPage(page, (bound, order, take) => db.selectFrom('domains').selectAll()
    .where('workspace_id', '=', ws)
    .$if(filter.status !== undefined, (q) => q.where('status', '=', filter.status!))
    .$if(bound !== undefined, (q) => q.where('pos', bound!.op, bound!.pos))
    .orderBy('pos', order).limit(take).execute(), toStored);
}

export async function updateDomainSettings(tx: Tx, ws: string, id: string, patch: DomainSettingsPatch, now: number): Promise<void> {
  await tx.updateTable('domains')
    .set({
      ...(patch.openTracking !== undefined && { open_tracking: flag(patch.openTracking) }),
      ...(patch.clickTracking !== undefined && { click_tracking: flag(patch.clickTracking) }),
      ...(patch.trackingSubdomain !== undefined && { tracking_subdomain: patch.trackingSubdomain }),
      ...(patch.inboundEnabled !== undefined && { inbound_enabled: flag(patch.inboundEnabled) }),
      updated_at: now,
    })
    .where('workspace_id', '=', ws).where('id', '=', id).execute();
}

export async function saveDomainCheck(tx: Tx, ws: string, id: string, u: DomainCheckUpdate, now: number): Promise<void> {
  await tx.updateTable('domains')
    .set({
      status: u.status,
      status_reason: u.statusReason,
      record_checks: JSON.stringify(u.checks),
      last_checked_at: u.lastCheckedAt,
      next_check_at: u.nextCheckAt,
      verifying_since: u.verifyingSince,
      check_attempts: u.checkAttempts,
      updated_at: now,
    })
    .where('workspace_id', '=', ws).where('id', '=', id).execute();
}

/** Replaces the domain's DKIM keys (a rotation started, or a new key took over). */
export async function saveDkimKeys(tx: Tx, ws: string, id: string, keys: readonly StoredDkimKey[], now: number): Promise<void> {
  await tx.updateTable('domains').set({ dkim_keys: JSON.stringify(keys.map(toDkimJson)), updated_at: now })
    .where('workspace_id', '=', ws).where('id', '=', id).execute();
}

/**
 * Marks a domain active without looking at DNS, and plans no re-check: for
 * test set-ups that need a sending domain but no DNS server.
 */
export async function markDomainActive(tx: Tx, ws: string, id: string, now: number): Promise<void> {
  await tx.updateTable('domains')
    .set({ status: 'active', status_reason: null, next_check_at: null, verifying_since: null, check_attempts: 0, updated_at: now })
    .where('workspace_id', '=', ws).where('id', '=', id).execute();
}

export async function deleteDomain(tx: Tx, ws: string, id: string): Promise<void> {
  await tx.deleteFrom('domains').where('workspace_id', '=', ws).where('id', '=', id).execute();
}

/**
 * The workspace's active domains, locked until the transaction ends (in id
 * order): two deletions at once then count them one after the other.
 */
export async function lockActiveDomains(tx: Tx, ws: string): Promise<string[]> {
  const rows = await lockedForUpdate(tx, tx.selectFrom('domains').select('id')
    .where('workspace_id', '=', ws).where('status', '=', 'active').orderBy('id')).execute();
  return rows.map((r) => r.id);
}

/**
 * Every domain of every workspace, or those of one name, in the order they
 * were added. It spans workspaces for `mailroom doctor`, which checks them all.
 */
export async function allDomains(db: Db, name?: string): Promise<StoredDomain[]> {
  const rows = await db.selectFrom('domains').selectAll()
    .$if(name !== undefined, (q) => q.where('name', '=', name!))
    .orderBy('pos', 'asc').execute();
  return rows.map(toStored);
}

/**
 * Domains whose planned check is due, oldest plan first. This one query spans
 * workspaces: it serves the re-check task, which works for all of them.
 */
export async function domainsDueForCheck(db: Db, now: number, limit: number): Promise<StoredDomain[]> {
  const rows = await db.selectFrom('domains').selectAll()
    .where('next_check_at', 'is not', null).where('next_check_at', '<=', now)
    .orderBy('next_check_at', 'asc').limit(limit).execute();
  return rows.map(toStored);
}

/**
 * Whether the workspace has emails from the domain still to be sent (pending
 * or scheduled). It reads the emails table; main.ts hands it to the domains
 * service as its hasPendingEmails port.
 */
export async function domainHasUnsentEmails(db: Db, ws: string, domainId: string): Promise<boolean> {
  const row = await db.selectFrom('emails').select('id')
    .where('workspace_id', '=', ws).where('domain_id', '=', domainId).where('status', 'in', ['pending', 'scheduled'])
    .limit(1).executeTakeFirst();
  return row !== undefined;
}
