import type { Kysely } from 'kysely';
import { createRowTrigger, dropRowTrigger, withPosition } from '../schema-helpers.js';
import { addToSlot, slotOf } from './0036_broadcast_stats_slots.js';

// The contacts of a broadcast that got no email, and why: their message did
// not render with their data, or it was refused as an email (its address,
// its subject, its size). Each is written in the transaction that records
// the chunk it was in, so a skip has its row exactly once, whatever a crash
// or a retried chunk does; the unique key says so too.
//
// The broadcast's `skipped` counter is kept by a trigger in its stats slots,
// as the counters of its emails are since 0036: a read sums the slots.

const SKIP_MADE = { name: 'broadcast_stats_skip_made', on: 'AFTER INSERT ON broadcast_skips', when: 'true' };

export async function up(db: Kysely<unknown>): Promise<void> {
  await withPosition(db, db.schema.createTable('broadcast_skips'))
    .addColumn('broadcast_id', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('contact_id', 'text', (c) => c.notNull())
    // The contact's address when the chunk was made: it may change, or the contact be deleted, later.
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('code', 'text', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('broadcast_skips_contact').on('broadcast_skips').columns(['broadcast_id', 'contact_id']).unique().execute();
  await db.schema.createIndex('broadcast_skips_broadcast_pos').on('broadcast_skips').columns(['broadcast_id', 'pos']).execute();
  await db.schema.alterTable('broadcast_stats').addColumn('skipped', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await createRowTrigger(db, SKIP_MADE.name, SKIP_MADE.on, SKIP_MADE.when, [addToSlot(slotOf(db), 'NEW.broadcast_id', { skipped: '1' })]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await dropRowTrigger(db, SKIP_MADE.name, SKIP_MADE.on);
  await db.schema.alterTable('broadcast_stats').dropColumn('skipped').execute();
  await db.schema.dropTable('broadcast_skips').execute();
}
