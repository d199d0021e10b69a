// A second process holding a SQLite database's write lock: opens the file of
// argv[2], takes the lock (BEGIN IMMEDIATE), says "locked", and keeps it
// argv[3] ms (or until it is killed), as a long write of another process would.
import Sqlite from 'better-sqlite3';

const conn = new Sqlite(process.argv[2]);
conn.exec('BEGIN IMMEDIATE');
process.send!('locked');
setTimeout(() => {
  conn.exec('ROLLBACK');
  conn.close();
  process.disconnect();
}, Number(process.argv[3]));
