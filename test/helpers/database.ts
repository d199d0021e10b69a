// Which database the tests run on. With MAILROOM_TEST_DATABASE_URL set (a
// postgres:// URL of a role that may create databases; `npm run
// test:postgres` starts a private cluster and sets it), each store a test
// opens is on a fresh PostgreSQL database of its own, dropped afterwards;
// without it, on a SQLite file in a temp dir, as Mailroom runs by default.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const testDatabaseUrl = process.env.MAILROOM_TEST_DATABASE_URL || undefined;

/** Whether this run of the tests is on PostgreSQL: for `it.skipIf(onPostgres)` on tests of SQLite's own files. */
export const onPostgres = testDatabaseUrl !== undefined;

export interface TestDatabase {
  /** The URL to give openStore / MAILROOM_DATABASE_URL. */
  url: string;
  /** Drops the database; the stores on it must be closed first. */
  drop(): Promise<void>;
}

async function onAdmin<T>(clusterUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: clusterUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A new, empty PostgreSQL database on the cluster of MAILROOM_TEST_DATABASE_URL (or of `clusterUrl`: the bench's). */
export async function createTestDatabase(clusterUrl = testDatabaseUrl): Promise<TestDatabase> {
  if (!clusterUrl) throw new Error('createTestDatabase needs MAILROOM_TEST_DATABASE_URL');
  const name = `t_${randomBytes(8).toString('hex')}`;
  await onAdmin(clusterUrl, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(clusterUrl);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    url: url.toString(),
    async drop() {
      if (dropped) return;
      dropped = true;
      // FORCE: a connection a failed test left open must not keep the database.
      await onAdmin(clusterUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}
