import { AppError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { systemClock, type Clock } from '../core/clock.js';
import type { Store, Tx } from '../store/db.js';
import type { Page, PageQuery } from '../store/paging.js';
import type { SuppressionReason } from './suppressions.tables.js';
import { cleanContactsWithAddress, isValidAddress, normaliseAddress } from '../contacts/index.js';
import {
  deleteSuppression, findSuppressionByEmail, findSuppressionById, insertSuppression, listSuppressions, suppressedAmong,
  type SuppressedAddress, type Suppression, type SuppressionFilter,
} from './suppressions.repo.js';

// Suppressions are workspace-wide: an address suppressed in a workspace is
// skipped by every send of that workspace, whatever the domain, template or
// broadcast. There is one suppression per address; the first reason recorded
// is kept (a later bounce of an address already suppressed by an unsubscribe
// changes nothing), so the list says why the address was first blocked.

/** What the sending side needs: ask before sending, record after a hard bounce or complaint. */
export interface SuppressionsPort {
  /** The suppressed ones among `addresses`, keyed by normalised address, with the reason. */
  check(workspaceId: string, addresses: string[]): Promise<Map<string, SuppressionReason>>;
  /**
   * Inside the caller's transaction (the one that records the bounce or
   * complaint event): suppresses the address and marks its contact cleaned.
   */
  addFromBounce(tx: Tx, workspaceId: string, address: string, reason: 'hard_bounce' | 'complaint'): Promise<void>;
}

export interface SuppressionsService extends SuppressionsPort {
  list(workspaceId: string, filter: SuppressionFilter, page: PageQuery): Promise<Page<Suppression>>;
  /** A manual suppression; 422 when the address is already suppressed. */
  create(workspaceId: string, email: string): Promise<Suppression>;
  /** By id or by address. */
  remove(workspaceId: string, idOrEmail: string): Promise<void>;
  /** Inside the caller's transaction: suppresses the address unless it already is. */
  addInTx(tx: Tx, workspaceId: string, email: string, reason: SuppressionReason): Promise<void>;
  /** The suppressions among normalised `emails`, with reason and time. */
  suppressedAmong(tx: Tx, workspaceId: string, emails: string[]): Promise<Map<string, SuppressedAddress>>;
}

export function suppressionsService(deps: { store: Store; clock: Clock }): SuppressionsService {
  const { store, clock } = deps;

  const addInTx = async (tx: Tx, ws: string, email: string, reason: SuppressionReason) => {
    await insertSuppression(tx, { id: newId('sup', clock.now()), workspace_id: ws, email, reason, created_at: clock.now() });
  };

  const lookUp = batchedLookUp((ws, emails) => suppressedAmong(store.db, ws, emails));

  return {
    async check(ws, addresses) {
      const emails = addresses.map(normaliseAddress);
      const found = await lookUp(ws, emails);
      const out = new Map<string, SuppressionReason>();
      for (const email of emails) {
        const s = found.get(email);
        if (s) out.set(email, s.reason);
      }
      return out;
    },

    async addFromBounce(tx, ws, address, reason) {
      const email = normaliseAddress(address);
      await addInTx(tx, ws, email, reason);
      await cleanContactsWithAddress(tx, ws, email, clock.now());
    },

    addInTx,
    suppressedAmong: (tx, ws, emails) => suppressedAmong(tx, ws, emails),

    list(ws, filter, page) {
      return listSuppressions(store.db, ws, { ...filter, email: filter.email === undefined ? undefined : normaliseAddress(filter.email) }, page);
    },

    async create(ws, raw) {
      const email = normaliseAddress(raw);
      if (!isValidAddress(email)) throw new AppError('validation_error', `'${raw}' is not a valid email address.`, { param: 'email' });
      const alreadySuppressed = (existing: Suppression) => new AppError('already_exists', `${email} is already suppressed (reason: ${existing.reason}).`, {
        param: 'email', details: { suppression_id: existing.id },
      });
      return store.write(async (tx) => {
        const existing = await findSuppressionByEmail(tx, ws, email);
        if (existing) throw alreadySuppressed(existing);
        // Another node may add the address meanwhile: the insert that finds its row in place says so.
        if (!(await insertSuppression(tx, { id: newId('sup', clock.now()), workspace_id: ws, email, reason: 'manual', created_at: clock.now() }))) {
          throw alreadySuppressed((await findSuppressionByEmail(tx, ws, email))!);
        }
        return (await findSuppressionByEmail(tx, ws, email))!;
      });
    },

    async remove(ws, idOrEmail) {
      await store.write(async (tx) => {
        // Ids never contain '@'; addresses always do.
        const found = idOrEmail.includes('@')
          ? await findSuppressionByEmail(tx, ws, normaliseAddress(idOrEmail))
          : await findSuppressionById(tx, ws, idOrEmail);
        // Removed by another request meanwhile: not there to remove.
        if (!found || !(await deleteSuppression(tx, ws, found.id))) throw new AppError('not_found', `No suppression '${idOrEmail}' in this workspace.`);
      });
    },
  };
}

/**
 * `read`, with the look-ups asked for in the same turn of the event loop
 * (the sends of one moment, each checking its recipients) made together: one
 * read per workspace for all their addresses. Each caller gets what was
 * found, a map that may hold other callers' addresses too.
 */
function batchedLookUp(read: (ws: string, emails: string[]) => Promise<Map<string, SuppressedAddress>>) {
  let waiting: Map<string, Array<{ emails: string[]; resolve(found: Map<string, SuppressedAddress>): void; reject(err: unknown): void }>> | undefined;

  function readAll(): void {
    const byWorkspace = waiting!;
    waiting = undefined;
    for (const [ws, callers] of byWorkspace) {
      read(ws, [...new Set(callers.flatMap((c) => c.emails))]).then(
        (found) => callers.forEach((c) => c.resolve(found)),
        (err) => callers.forEach((c) => c.reject(err)));
    }
  }

  return (ws: string, emails: string[]) => new Promise<Map<string, SuppressedAddress>>((resolve, reject) => {
    if (emails.length === 0) return resolve(new Map());
    if (!waiting) {
      waiting = new Map();
      setImmediate(readAll);
    }
    const callers = waiting.get(ws) ?? [];
    callers.push({ emails, resolve, reject });
    waiting.set(ws, callers);
  });
}

/** The sending side's view of suppressions, for engines wired with only a store. */
export function suppressionsPort(store: Store, clock: Clock = systemClock): SuppressionsPort {
  const { check, addFromBounce } = suppressionsService({ store, clock });
  return { check, addFromBounce };
}
