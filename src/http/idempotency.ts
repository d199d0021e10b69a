import { createHash } from 'node:crypto';
import { AppError } from '../core/errors.js';
import type { Clock } from '../core/clock.js';
import type { Store } from '../store/db.js';
import { seal, unseal } from '../core/seal.js';

// Idempotency-Key: the first response to a key is kept for 24 h and replayed
// for the same request; a different request under the same key, or a repeat
// while the first is still being processed, is a 409. Keys are per workspace.

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

export interface Replay {
  status: number;
  body: unknown;
}

export interface Idempotency {
  /** A replay of the stored response, or undefined when the caller should proceed (and later call finish). */
  begin(workspaceId: string, key: string, operationId: string, requestHash: string): Promise<Replay | undefined>;
  finish(workspaceId: string, key: string, operationId: string, requestHash: string, response: Replay | undefined): Promise<void>;
  purgeExpired(): Promise<number>;
}

export function requestHash(operationId: string, params: unknown, body: unknown): string {
  return createHash('sha256').update(JSON.stringify([operationId, params, body ?? null])).digest('base64url');
}

// Stored responses are sealed: a replayed createApiKey response holds a raw
// token, which must not sit readable in the database for a day.
export function idempotency(deps: { store: Store; clock: Clock; sealKey: Buffer }): Idempotency {
  const { store, clock, sealKey } = deps;
  // In flight on this process; the stored row covers completed requests.
  const inFlight = new Set<string>();
  const conflict = (message: string) => new AppError('idempotency_conflict', message, { param: 'Idempotency-Key' });

  return {
    async begin(ws, key, operationId, hash) {
      const slot = `${ws}\n${key}`;
      if (inFlight.has(slot)) throw conflict('A request with this Idempotency-Key is still being processed.');
      const row = await store.db.selectFrom('idempotency_keys').selectAll()
        .where('workspace_id', '=', ws).where('idem_key', '=', key).where('expires_at', '>', clock.now())
        .executeTakeFirst();
      if (row) {
        if (row.operation_id !== operationId || row.request_hash !== hash) {
          throw conflict('This Idempotency-Key was already used with a different request.');
        }
        const text = unseal(row.response_body, sealKey).toString('utf8');
        return { status: row.status, body: text === '' ? undefined : JSON.parse(text) };
      }
      if (inFlight.has(slot)) throw conflict('A request with this Idempotency-Key is still being processed.');
      inFlight.add(slot);
      return undefined;
    },

    async finish(ws, key, operationId, hash, response) {
      const slot = `${ws}\n${key}`;
      try {
        // Server errors are not kept, so the client's retry can still succeed.
        if (!response || response.status >= 500) return;
        const now = clock.now();
        const values = {
          workspace_id: ws, idem_key: key, operation_id: operationId, request_hash: hash, status: response.status,
          response_body: seal(response.body === undefined ? '' : JSON.stringify(response.body), sealKey), created_at: now,
          expires_at: now + IDEMPOTENCY_TTL_MS,
        };
        await store.write((tx) => tx.insertInto('idempotency_keys').values(values)
          .onConflict((oc) => oc.columns(['workspace_id', 'idem_key']).doUpdateSet({
            operation_id: values.operation_id, request_hash: values.request_hash, status: values.status,
            response_body: values.response_body, created_at: values.created_at, expires_at: values.expires_at,
          }))
          .execute());
      } finally {
        inFlight.delete(slot);
      }
    },

    async purgeExpired() {
      const res = await store.write((tx) => tx.deleteFrom('idempotency_keys').where('expires_at', '<=', clock.now()).executeTakeFirst());
      return Number(res.numDeletedRows);
    },
  };
}
