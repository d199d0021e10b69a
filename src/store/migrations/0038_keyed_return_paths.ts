import { sql, type Kysely } from 'kysely';

// Return paths name their single recipient with a keyed tag from now on.
// Emails already sent carry the unkeyed tags of before, and their bounces may
// come days later: those tags stay good for the emails that were there when
// this ran, and for no other. The store keeps the first creation time that
// is not one of theirs (the newest one plus a millisecond; 0 in a store with
// no email yet), shared by every node, and copied with the store.

const KEYED_RETURN_PATHS_SINCE = 'keyed_return_paths_since';

export async function up(db: Kysely<unknown>): Promise<void> {
  // Worked out by the database, so it is the same text on SQLite and PostgreSQL (no bigint through a driver).
  await sql`INSERT INTO store_settings (name, value)
    SELECT ${KEYED_RETURN_PATHS_SINCE}, CAST(COALESCE(MAX(created_at) + 1, 0) AS TEXT) FROM emails`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DELETE FROM store_settings WHERE name = ${KEYED_RETURN_PATHS_SINCE}`.execute(db);
}
