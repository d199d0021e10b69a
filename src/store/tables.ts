// The store's Database type: the rows of every table. Each area declares the
// tables it writes in its own `<area>.tables.ts`, which adds them to this
// interface (TypeScript's module augmentation), so a table's type lives next
// to the one folder that writes it. Times are epoch milliseconds; JSON
// columns are TEXT holding JSON; `pos` is the internal monotonic position
// used for order and cursors, never shown to clients.

/** Where each follower of the events table has read to, by position (store/event-log.ts). */
export interface EventWatermarksTable {
  name: string;
  last_event_pos: number;
}

/** Settings of the store itself (store/secret-check.ts). */
export interface StoreSettingsTable {
  name: string;
  value: string;
}

export interface Database {
  event_watermarks: EventWatermarksTable;
  store_settings: StoreSettingsTable;
}
