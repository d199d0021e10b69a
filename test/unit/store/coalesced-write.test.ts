import { describe, expect, it } from 'vitest';
import type { Store, Tx } from '../../../src/store/db.js';
import { coalescedWrite } from '../../../src/store/coalesced-write.js';

/**
 * A store that runs each write's work on a later turn of the event loop, like
 * the group commit, and records which rows each statement carried and when
 * each write's promise settled.
 */
function fakeStore(failWhen: (rows: string[]) => boolean = () => false) {
  const statements: string[][] = [];
  const store: Pick<Store, 'write'> = {
    write: <T>(work: (tx: Tx) => Promise<T>) => new Promise<T>((resolve, reject) => {
      setImmediate(() => void work({} as Tx).then(resolve, reject));
    }),
  };
  const insert = async (_tx: Tx, rows: string[]) => {
    statements.push(rows);
    if (failWhen(rows)) throw new Error(`cannot insert ${rows.join(',')}`);
  };
  return { store, insert, statements };
}

describe('inserts of concurrent callers coalesced into one statement', () => {
  it('puts the rows of callers that arrive before the write runs in one statement, and resolves each after it', async () => {
    const { store, insert, statements } = fakeStore();
    const write = coalescedWrite(store, insert);
    await Promise.all([write(['a']), write(['b', 'c']), write(['d'])]);
    expect(statements).toEqual([['a', 'b', 'c', 'd']]);
    // A caller after that write ran starts a statement of its own.
    await write(['e']);
    expect(statements).toEqual([['a', 'b', 'c', 'd'], ['e']]);
  });

  it('starts another statement once one holds the row limit', async () => {
    const { store, insert, statements } = fakeStore();
    const write = coalescedWrite(store, insert, { maxRows: 3 });
    await Promise.all([write(['a', 'b']), write(['c']), write(['d']), write(['e', 'f', 'g'])]);
    expect(statements).toEqual([['a', 'b', 'c'], ['d'], ['e', 'f', 'g']]);
  });

  it('writes each caller alone when the shared statement fails, so only the bad one is refused', async () => {
    const { store, insert, statements } = fakeStore((rows) => rows.includes('bad'));
    const write = coalescedWrite(store, insert);
    const results = await Promise.allSettled([write(['a']), write(['bad']), write(['b'])]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason.message).toBe('cannot insert bad');
    expect(statements).toEqual([['a', 'bad', 'b'], ['a'], ['bad'], ['b']]);
  });

  it('with inOrder, starts a shared write only after the one before it, so a store running units side by side keeps the callers\' order', async () => {
    // Like PostgreSQL's pool: each unit runs at once on a connection of its own, and the first one given is the slowest.
    const statements: string[][] = [];
    let delay = 30;
    const store: Pick<Store, 'write'> = {
      write: <T>(work: (tx: Tx) => Promise<T>) => new Promise<T>((resolve, reject) => {
        setTimeout(() => void work({} as Tx).then(resolve, reject), delay);
        delay = Math.max(0, delay - 20);
      }),
    };
    const insert = async (_tx: Tx, rows: string[]) => { statements.push(rows); };

    const sideBySide = coalescedWrite(store, insert, { maxRows: 1 });
    await Promise.all([sideBySide(['a']), sideBySide(['b'])]);
    expect(statements).toEqual([['b'], ['a']]);

    statements.length = 0;
    delay = 30;
    const ordered = coalescedWrite(store, insert, { maxRows: 1, inOrder: true });
    await Promise.all([ordered(['a']), ordered(['b']), ordered(['c'])]);
    expect(statements).toEqual([['a'], ['b'], ['c']]);
  });

  it('with inOrder, gathers the callers that come while the write before is committing into the next one', async () => {
    const statements: string[][] = [];
    const store: Pick<Store, 'write'> = {
      // The work runs at once; the commit takes 20 ms.
      write: async <T>(work: (tx: Tx) => Promise<T>) => {
        const result = await work({} as Tx);
        await new Promise((r) => setTimeout(r, 20));
        return result;
      },
    };
    const write = coalescedWrite(store, async (_tx: Tx, rows: string[]) => { statements.push(rows); }, { inOrder: true });
    const first = write(['a']);
    await new Promise((r) => setTimeout(r, 5));
    expect(statements).toEqual([['a']]);
    await Promise.all([first, write(['b']), write(['c'])]);
    expect(statements).toEqual([['a'], ['b', 'c']]);
  });

  it('passes a lone caller\'s failure straight through, without a second try', async () => {
    const { store, insert, statements } = fakeStore(() => true);
    const write = coalescedWrite(store, insert);
    await expect(write(['x'])).rejects.toThrow('cannot insert x');
    expect(statements).toEqual([['x']]);
  });
});
