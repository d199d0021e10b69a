import { timingSafeEqual } from 'node:crypto';
import { AppError, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import type { Clock } from '../core/clock.js';
import { canGrant, expandScopes, FINE_SCOPES, isScope, type FineScope } from '../core/scopes.js';
import { writeInBatches, type Store } from '../store/db.js';
import { coalescedWrite } from '../store/coalesced-write.js';
import type { Page, PageQuery } from '../store/paging.js';
import {
  findApiKey, findKeyForAuth, insertActivity, insertApiKey, listActivity, listApiKeys, purgeActivityBefore, revokeApiKey, touchApiKey,
  type ApiKey, type ApiKeyActivity, type KeyForAuth,
} from './api-keys.repo.js';
import { hashToken, mintToken, parseToken, tokenMatches, type KeyMode } from './token.js';

/** Who is calling: resolved once per request by the auth middleware. */
export interface AuthContext {
  keyId: string;
  workspaceId: string;
  plan: string;
  mode: KeyMode;
  scopes: string[];
  granted: Set<FineScope>;
}

export interface CreateKeyInput {
  workspaceId: string;
  name: string;
  scopes?: string[];
  mode?: KeyMode;
  /** The calling key; absent for keys made by the CLI. */
  creator?: AuthContext;
}

/** The calling key as it may know itself: what it is and what it may do, never its token. */
export interface CurrentApiKey {
  id: string;
  object: 'current_api_key';
  name: string;
  mode: KeyMode;
  workspace_id: string;
  scopes: string[];
  /** The fine scopes `scopes` amount to, in FINE_SCOPES' order. */
  effective_scopes: FineScope[];
  created_at: string;
}

export interface ActivityEntry {
  operationId: string;
  method: string;
  path: string;
  status: number;
  resourceId: string | null;
  requestId: string;
  ip: string | null;
}

export interface ApiKeysService {
  authenticate(token: string): Promise<AuthContext | undefined>;
  create(input: CreateKeyInput): Promise<ApiKey & { token: string }>;
  list(workspaceId: string, filter: { mode?: KeyMode }, page: PageQuery): Promise<Page<ApiKey>>;
  get(workspaceId: string, id: string): Promise<ApiKey>;
  /** The key making the request, which every key may read (a dashboard offers only what its key may do). */
  current(auth: AuthContext): Promise<CurrentApiKey>;
  /**
   * Revokes a key. A calling key (`revoker`; absent for the CLI) may revoke
   * itself, and otherwise only a key whose scopes it could grant, and a test
   * key only test keys (403 forbidden).
   */
  revoke(workspaceId: string, id: string, revoker?: AuthContext): Promise<void>;
  activity(workspaceId: string, id: string, page: PageQuery): Promise<Page<ApiKeyActivity>>;
  /**
   * Adds an audit row. Rows are gathered for a few milliseconds and written
   * together in one statement, never delaying the response; the promise
   * settles when this row's commit does.
   */
  recordActivity(auth: AuthContext, entry: ActivityEntry): Promise<void>;
  /** Deletes activity older than ACTIVITY_RETENTION_MS, a bounded amount a call; returns how many rows went. */
  purgeOldActivity(): Promise<number>;
}

// last_used_at is a coarse "is this key alive" signal; writing it on every
// request would turn each GET into a write.
const LAST_USED_RESOLUTION_MS = 60_000;

// Verified keys are remembered briefly so a busy client does not cost a
// query per request. Revoking through this process drops the entry at once;
// a revocation made by another process takes effect within this time.
const AUTH_CACHE_MS = 5_000;
const AUTH_CACHE_MAX = 10_000;

// Audit rows wait this long for company, and go in this many per statement,
// one statement after another so that a key's trail lists its calls in order.
const ACTIVITY_GATHER_MS = 10;
const ACTIVITY_ROWS_PER_INSERT = 64;

/** How long a key's trail keeps a call: a row is written for every write request, so the table would otherwise grow with the traffic. */
export const ACTIVITY_RETENTION_MS = 90 * 86_400_000;
const PURGE_BATCH = 1_000;
const PURGE_MAX_BATCHES = 20;

interface CachedKey {
  key: KeyForAuth;
  until: number;
  /** What a request with this key may do; shared by the requests it serves, never changed. */
  auth: AuthContext;
  /** The token last verified against the key's digest, kept only as long as the entry. */
  token?: Buffer;
}

export function apiKeysService(deps: { store: Store; clock: Clock; pepper: Buffer }): ApiKeysService {
  const { store, clock, pepper } = deps;
  const lastTouched = new Map<string, number>();
  const verified = new Map<string, CachedKey>();
  const writeActivity = coalescedWrite(store, insertActivity, { maxRows: ACTIVITY_ROWS_PER_INSERT, gatherMs: ACTIVITY_GATHER_MS, inOrder: true });

  async function lookup(lookupPart: string, now: number): Promise<CachedKey | undefined> {
    const hit = verified.get(lookupPart);
    if (hit && hit.until > now) return hit;
    const key = await findKeyForAuth(store.db, lookupPart);
    if (!key) return undefined;
    if (verified.size >= AUTH_CACHE_MAX) verified.clear();
    const entry: CachedKey = {
      key, until: now + AUTH_CACHE_MS,
      auth: { keyId: key.id, workspaceId: key.workspace_id, plan: key.plan, mode: key.mode, scopes: key.scopes, granted: expandScopes(key.scopes) },
    };
    verified.set(lookupPart, entry);
    return entry;
  }

  return {
    async authenticate(token) {
      const parsed = parseToken(token);
      if (!parsed) return undefined;
      const now = clock.now();
      const entry = await lookup(parsed.lookup, now);
      if (!entry || entry.key.mode !== parsed.mode || entry.key.revoked_at !== null) return undefined;
      const { key } = entry;
      // A token already verified against the stored digest is compared with
      // that token directly (constant time); any other is hashed and checked.
      const given = Buffer.from(token);
      const seen = entry.token !== undefined && entry.token.length === given.length && timingSafeEqual(entry.token, given);
      if (!seen) {
        if (!tokenMatches(pepper, token, key.token_hash)) return undefined;
        entry.token = given;
      }
      const touched = lastTouched.get(key.id) ?? key.last_used_at ?? 0;
      if (now - touched >= LAST_USED_RESOLUTION_MS) {
        lastTouched.set(key.id, now);
        void store.write((tx) => touchApiKey(tx, key.id, now)).catch(() => lastTouched.delete(key.id));
      }
      return entry.auth;
    },

    async create({ workspaceId, name, scopes = ['full_access'], mode, creator }) {
      const unknown = scopes.find((s) => !isScope(s));
      if (unknown) throw new AppError('validation_error', `Unknown scope '${unknown}'.`, { param: 'scopes' });
      if (scopes.length === 0) throw new AppError('validation_error', 'A key needs at least one scope.', { param: 'scopes' });
      if (creator && !canGrant(creator.scopes, scopes)) {
        throw new AppError('forbidden', 'This key may not create a key with scopes it does not hold itself.', { param: 'scopes' });
      }
      const keyMode = mode ?? creator?.mode ?? 'live';
      // The live/test split is a security boundary: a test key never mints a key that sends real mail.
      if (creator?.mode === 'test' && keyMode === 'live') {
        throw new AppError('forbidden', 'A test key may only create test keys.', { param: 'mode' });
      }
      const minted = mintToken(keyMode);
      const row = {
        id: newId('key'), workspace_id: workspaceId, name: name.trim(), mode: keyMode, lookup: minted.lookup,
        token_hash: hashToken(pepper, minted.token), masked_token: minted.masked, scopes: JSON.stringify([...new Set(scopes)]),
        created_by_key_id: creator?.keyId ?? null, created_at: clock.now(), last_used_at: null, revoked_at: null,
      };
      const key = await store.write((tx) => insertApiKey(tx, row));
      return { ...key, token: minted.token };
    },

    list: (ws, filter, page) => listApiKeys(store.db, ws, filter, page),

    async get(ws, id) {
      const key = await findApiKey(store.db, ws, id);
      if (!key) throw notFound('API key', id);
      return key;
    },

    async current(auth) {
      const key = await findApiKey(store.db, auth.workspaceId, auth.keyId);
      if (!key) throw notFound('API key', auth.keyId);
      return {
        id: key.id, object: 'current_api_key', name: key.name, mode: key.mode, workspace_id: auth.workspaceId,
        scopes: key.scopes, effective_scopes: FINE_SCOPES.filter((s) => auth.granted.has(s)), created_at: key.created_at,
      };
    },

    async revoke(ws, id, revoker) {
      await store.write(async (tx) => {
        const key = await findApiKey(tx, ws, id);
        if (!key) throw notFound('API key', id);
        // The rule of create, applied to taking a key away: otherwise a key
        // trusted only with key management could lock out the owner's key.
        if (revoker && revoker.keyId !== id && !canGrant(revoker.scopes, key.scopes)) {
          throw new AppError('forbidden',
            `This key may not revoke '${key.name}': a key may revoke itself, and otherwise only keys whose scopes it holds itself (full_access for a full-access key).`,
            { param: 'key_id' });
        }
        // As with create: a test key has no say over the live keys that send real mail.
        if (revoker?.mode === 'test' && key.mode === 'live') {
          throw new AppError('forbidden', `A test key may only revoke test keys, and '${key.name}' is a live key.`, { param: 'key_id' });
        }
        await revokeApiKey(tx, ws, id, clock.now());
      });
      for (const [lookupPart, entry] of verified) if (entry.key.id === id) verified.delete(lookupPart);
    },

    async activity(ws, id, page) {
      if (!(await findApiKey(store.db, ws, id))) throw notFound('API key', id);
      return listActivity(store.db, ws, id, page);
    },

    recordActivity(auth, e) {
      return writeActivity([{
        id: newId('act'), workspace_id: auth.workspaceId, api_key_id: auth.keyId, operation_id: e.operationId,
        method: e.method, path: e.path, status: e.status, resource_id: e.resourceId, request_id: e.requestId,
        ip: e.ip, created_at: clock.now(),
      }]);
    },

    purgeOldActivity: () => writeInBatches(store, { size: PURGE_BATCH, maxBatches: PURGE_MAX_BATCHES },
      (tx, size) => purgeActivityBefore(tx, clock.now() - ACTIVITY_RETENTION_MS, size)),
  };
}
