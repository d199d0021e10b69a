import type { Store, Tx } from '../store/db.js';

// Many SMTP sessions finish DATA at about the same time. Each message must be
// committed before its 250 (RFC 5321 §6.1: the server takes responsibility
// for the message once it answers), but nothing says each needs a statement
// of its own: the rows of every message that arrives before the store gets
// to the write (while earlier commits are under way) go in together, in one
// multi-row INSERT, in one unit of the store's group commit. Every caller's
// promise still resolves only after that commit. Should the shared statement
// fail, each caller's rows are written again on their own, so one bad message
// costs only itself.

/** Rows per statement: at about 30 columns a row, some 15,000 bound parameters, under SQLite's 32,766 and PostgreSQL's 65,535. */
export const MAX_COALESCED_ROWS = 500;

interface Waiting<R> {
  rows: R[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * An insert that callers use as if it were their own `store.write`: the rows
 * of concurrent calls share one statement and one commit.
 */
export function coalescedInsert<R>(store: Pick<Store, 'write'>, insert: (tx: Tx, rows: R[]) => Promise<void>, maxRows = MAX_COALESCED_ROWS) {
  let open: { waiting: Array<Waiting<R>>; rows: number } | undefined;

  async function writeTogether(group: { waiting: Array<Waiting<R>> }): Promise<void> {
    try {
      await store.write((tx) => {
        // The group takes callers until the store runs this unit.
        if (open === group) open = undefined;
        return insert(tx, group.waiting.flatMap((w) => w.rows));
      });
    } catch (err) {
      if (open === group) open = undefined;
      if (group.waiting.length === 1) return group.waiting[0].reject(err);
      await Promise.all(group.waiting.map((w) => store.write((tx) => insert(tx, w.rows)).then(w.resolve, w.reject)));
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
    void writeTogether(group);
  });
}
