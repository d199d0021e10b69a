import type { Kysely } from 'kysely';

// The API key that took an Idempotency-Key. Keys are per workspace, and a
// stored answer is replayed only to the key that made the request: another
// key of the workspace, with fewer scopes, must not be handed a new key's
// raw token or an answer it could not have had itself. Rows written before
// this column existed have none, and expire within the day.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('idempotency_keys').addColumn('api_key_id', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('idempotency_keys').dropColumn('api_key_id').execute();
}
