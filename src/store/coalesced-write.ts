import type { Store, Tx } from './db.js';

// Many callers often finish at about the same moment (SMTP sessions ending
// DATA, deliveries ending, requests leaving an audit row). Each caller's rows
// must be committed before its promise resolves, but nothing says each needs
// a statement or a unit of its own: the rows of every caller that arrives
// before the store gets to the write go in together, through one call of
// `write`, in one unit of the store's group commit. Should that shared write
// fail, each caller's rows are written again on their own, so one bad row
// costs only its caller.

/** Rows per shared write by default: at about 30 columns a row, some 15,000 bound parameters, under SQLite's 32,766 and PostgreSQL's 65,535. */
export const MAX_COALESCED_ROWS = 500;

export interface CoalescedWriteOptions {
  /** Most rows one shared write takes (default MAX_COALESCED_ROWS). */
  maxRows?: number;
  /** How long the shared write may wait for company (store.write's gatherMs): only for work no one waits on. */
  gatherMs?: number;
  /** store.write's `durable`: false for rows whose loss in a crash does no harm. */
  durable?: boolean;
  /**
   * Start each shared write only once the one before it has settled, so rows
   * are positioned in the order they were given even where the store runs
   * units side by side (PostgreSQL); the next group gathers meanwhile.
   */
  inOrder?: boolean;
}

interface Waiting<R> {
  rows: R[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * A write that callers use as if it were their own `store.write`: the rows
 * of concurrent calls share one call of `write` and one commit.
 */
export function coalescedWrite<R>(store: Pick<Store, 'write'>, write: (tx: Tx, rows: R[]) => Promise<void>,
  { maxRows = MAX_COALESCED_ROWS, gatherMs, durable, inOrder = false }: CoalescedWriteOptions = {}) {
  const durability = durable === false ? { durable } : {};
  let open: { waiting: Array<Waiting<R>>; rows: number } | undefined;
  let previous: Promise<void> = Promise.resolve();

  async function writeTogether(group: { waiting: Array<Waiting<R>> }): Promise<void> {
    try {
      await store.write((tx) => {
        // The group takes callers until the store runs this unit.
        if (open === group) open = undefined;
        return write(tx, group.waiting.flatMap((w) => w.rows));
      }, { ...durability, ...(gatherMs && { gatherMs }) });
    } catch (err) {
      if (open === group) open = undefined;
      if (group.waiting.length === 1) return group.waiting[0].reject(err);
      // One at a time, in order: this is the rare path, and it keeps the callers' order.
      for (const w of group.waiting) await store.write((tx) => write(tx, w.rows), durability).then(w.resolve, w.reject);
      return;
    }
    for (const w of group.waiting) w.resolve();
  }

  return (rows: R[]): Promise<void> => new Promise<void>((resolve, reject) => {
    if (open && open.rows + rows.length > maxRows) open = undefined;
    if (open) {
      open.waiting.push({ rows, resolve, reject });
      open.rows += rows.length;
      return;
    }
    const group = { waiting: [{ rows, resolve, reject }], rows: rows.length };
    open = group;
    if (inOrder) previous = previous.then(() => writeTogether(group));
    else void writeTogether(group);
  });
}
