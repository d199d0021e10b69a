import pg from 'pg';

// The connection pool of a store on PostgreSQL, set up so that rows read the
// same as on SQLite: the repos map them without knowing the database.

/** Whether a MAILROOM_DATABASE_URL names a PostgreSQL database. */
export const isPostgresUrl = (url: string): boolean => /^postgres(ql)?:\/\//.test(url);

const INT8_OID = 20;
const NUMERIC_OID = 1700;

/**
 * Epoch-ms times, positions and counts are bigint columns, and count(*) is a
 * bigint too; pg reads int8 as a string by default (it may exceed 2^53).
 * Ours stay far below that, and SQLite gives numbers, so int8 reads as a
 * number. sum() over a bigint column is numeric, read as a number likewise
 * (only counts are summed). Set on this pool's clients only, not on pg's
 * global table.
 */
function typeParsers(): pg.CustomTypesConfig {
  const asNumber = (text: string) => Number(text);
  return {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
      if (oid === INT8_OID || oid === NUMERIC_OID) return asNumber;
      return pg.types.getTypeParser(oid, format);
    }) as pg.CustomTypesConfig['getTypeParser'],
  };
}

export function postgresPool(url: string, poolSize: number): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: poolSize, types: typeParsers() });
  // An idle connection the server closes (a restart, an administrator) is
  // dropped by the pool, which opens another for the next query; without a
  // listener the 'error' event would end the process.
  pool.on('error', () => undefined);
  return pool;
}
