// A second process writing to a SQLite store, as the CLI does beside a
// running server: opens the store of argv[2], begins a write unit, reads,
// says "read", lets half a second pass (the server writes meanwhile), then
// writes a row of probe and says "done" (or "failed: …").
import { sql } from 'kysely';
import { openStore } from '../../src/store/db.js';

const store = openStore(`sqlite:${process.argv[2]}`);
try {
  await store.write(async (tx) => {
    await sql`SELECT count(*) FROM probe`.execute(tx);
    process.send!('read');
    await new Promise((resolve) => setTimeout(resolve, 500));
    await sql`INSERT INTO probe (who) VALUES ('second')`.execute(tx);
  });
  process.send!('done');
} catch (err) {
  process.send!(`failed: ${(err as Error).message}`);
} finally {
  await store.close();
  process.disconnect();
}
