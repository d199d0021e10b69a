import type { Db, Tx } from './db.js';

// Named values the store keeps for the processes that share it (store_settings):
// the master secret's check value, the latest queue retry's mark, since when
// return paths carry only keyed recipient tags (migration 0038).

export async function readSetting(db: Db | Tx, name: string): Promise<string | undefined> {
  return (await db.selectFrom('store_settings').select('value').where('name', '=', name).executeTakeFirst())?.value;
}

/** Sets `name` to `value`; with `keep`, a value already there stays (the first writer's). */
export async function writeSetting(tx: Tx, name: string, value: string, o: { keep?: boolean } = {}): Promise<void> {
  await tx.insertInto('store_settings').values({ name, value })
    .onConflict((oc) => (o.keep ? oc.column('name').doNothing() : oc.column('name').doUpdateSet({ value }))).execute();
}
