import { createHash } from 'node:crypto';
import type { ExpressionBuilder } from 'kysely';
import { AppError } from '../core/errors.js';
import type { Clock } from '../core/clock.js';
import type { Store } from '../store/db.js';
import type { Database } from '../store/tables.js';
import { seal, unseal } from '../core/seal.js';

// Idempotency-Key: the first response to a key is kept for 24 h and replayed
// for the same request (see RequestIdentity) from the same API key; a different request under the same key,
// the same one from another API key, or a repeat while the first is still being processed, is a 409.
// Keys are per workspace.
//
// A request takes its key in the database before it runs (a row marked in
// flight), in one statement that only one request can win, so two nodes
// given the same key at once never both run it. Its answer then replaces
// the mark; a server error or a 429 gives the key up, so the client's retry can run.

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
/** How long a request in progress holds its key: past it, a node that died mid-request no longer blocks the retry. */
export const IN_FLIGHT_TTL_MS = 5 * 60_000;
/** The status of a key whose request is still in progress. */
const IN_FLIGHT = 0;

export interface Replay {
  status: number;
  body: unknown;
}

export interface Idempotency {
  /** A replay of the stored response, or undefined when the caller should proceed (and later call finish). */
  begin(workspaceId: string, key: string, operationId: string, requestHash: string, apiKeyId: string): Promise<Replay | undefined>;
  finish(workspaceId: string, key: string, operationId: string, requestHash: string, response: Replay | undefined): Promise<void>;
  purgeExpired(): Promise<number>;
}

/**
 * What makes two requests under one Idempotency-Key the same request: the
 * operation, the key's mode (a test key's send goes to the sink, a live
 * key's does not), the path, the headers that change what the operation
 * does (strict or partial batch validation), and the body.
 */
export interface RequestIdentity {
  operationId: string;
  mode: 'live' | 'test';
  params: unknown;
  /** The operation's headers given with a value other than their default. */
  headers: Record<string, string>;
  body: unknown;
}

export function requestHash({ operationId, mode, params, headers, body }: RequestIdentity): string {
  // The mode and headers go in only when they are not the defaults, so a live
  // request without them hashes as it did before they counted: a retry that
  // straddles an upgrade is still the same request, and is replayed.
  const variant = { ...(mode !== 'live' && { mode }), ...headers };
  let text: string;
  try {
    const identity = [operationId, params, body ?? null];
    text = JSON.stringify(Object.keys(variant).length === 0 ? identity : [...identity, variant]);
  } catch (err) {
    // JSON.parse reads nesting deeper than JSON.stringify can write back (it recurses); no operation's body nests so.
    if (err instanceof RangeError) throw new AppError('bad_request', 'The request body is nested too deeply.');
    throw err;
  }
  return createHash('sha256').update(text).digest('base64url');
}

// Stored responses are sealed: a replayed createApiKey response holds a raw
// token, which must not sit readable in the database for a day.
export function idempotency(deps: { store: Store; clock: Clock; sealKey: Buffer }): Idempotency {
  const { store, clock, sealKey } = deps;
  const conflict = (message: string) => new AppError('idempotency_conflict', message, { param: 'Idempotency-Key' });
  /** The key's row while the request that took it (this `hash`) is in progress. */
  const inFlightClaim = (ws: string, key: string, hash: string) => (eb: ExpressionBuilder<Database, 'idempotency_keys'>) => eb.and([
    eb('workspace_id', '=', ws), eb('idem_key', '=', key), eb('status', '=', IN_FLIGHT), eb('request_hash', '=', hash),
  ]);

  return {
    async begin(ws, key, operationId, hash, apiKeyId) {
      const now = clock.now();
      const claim = {
        operation_id: operationId, request_hash: hash, api_key_id: apiKeyId, status: IN_FLIGHT, response_body: '', created_at: now, expires_at: now + IN_FLIGHT_TTL_MS,
      };
      // Taken when no row holds the key, or only an expired one. The take need
      // not wait for the disk: what the request writes commits after it, so a
      // crash that loses the take lost the request's writes too.
      const taken = await store.write((tx) => tx.insertInto('idempotency_keys').values({ workspace_id: ws, idem_key: key, ...claim })
        .onConflict((oc) => oc.columns(['workspace_id', 'idem_key']).doUpdateSet(claim).where('idempotency_keys.expires_at', '<=', now))
        .returning('idem_key').executeTakeFirst(), { durable: false });
      if (taken) return undefined;
      const row = await store.db.selectFrom('idempotency_keys').selectAll()
        .where('workspace_id', '=', ws).where('idem_key', '=', key).executeTakeFirst();
      // No row: the request holding the key failed a moment ago and gave it up; a retry will run.
      if (!row || row.status === IN_FLIGHT) throw conflict('A request with this Idempotency-Key is still being processed.');
      if (row.operation_id !== operationId || row.request_hash !== hash) {
        throw conflict('This Idempotency-Key was already used with a different request.');
      }
      // The answer may hold what only that key could have (a new key's token): never replayed to another.
      if (row.api_key_id !== null && row.api_key_id !== apiKeyId) {
        throw conflict('This Idempotency-Key was already used by another API key of the workspace.');
      }
      const text = unseal(row.response_body, sealKey).toString('utf8');
      return { status: row.status, body: text === '' ? undefined : JSON.parse(text) };
    },

    async finish(ws, key, operationId, hash, response) {
      // Server errors are not kept, so the client's retry can still succeed;
      // nor is a 429 (a send quota used up): nothing ran, and its Retry-After
      // tells the client to repeat the request later, which must then run.
      if (!response || response.status >= 500 || response.status === 429) {
        await store.write((tx) => tx.deleteFrom('idempotency_keys').where(inFlightClaim(ws, key, hash)).execute());
        return;
      }
      const now = clock.now();
      await store.write((tx) => tx.updateTable('idempotency_keys').set({
        operation_id: operationId, status: response.status,
        response_body: seal(response.body === undefined ? '' : JSON.stringify(response.body), sealKey),
        created_at: now, expires_at: now + IDEMPOTENCY_TTL_MS,
      }).where(inFlightClaim(ws, key, hash)).execute());
    },

    async purgeExpired() {
      const res = await store.write((tx) => tx.deleteFrom('idempotency_keys').where('expires_at', '<=', clock.now()).executeTakeFirst());
      return Number(res.numDeletedRows);
    },
  };
}
