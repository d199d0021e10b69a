
// The rows of the tables this area writes (times are epoch milliseconds, JSON
// columns TEXT holding JSON, `pos` the internal position behind order and
// cursors), added to the store's Database type.

declare module '../store/tables.js' {
  interface Database {
    scheduled_tasks: ScheduledTasksTable;
  }
}

export interface ScheduledTasksTable {
  name: string;
  next_run_at: number;
  locked_until: number;
  /** Who holds the lease while the task runs (core/lease-owner.ts). */
  lease_owner: string | null;
  last_run_at: number | null;
  last_error: string | null;
}
