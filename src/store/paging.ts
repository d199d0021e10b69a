// Keyset pagination by position, shared by every list. Lists run newest
// first: `after` (from starting_after) walks to older rows, `before` (from
// ending_before) walks back to newer ones. Rows inserted during a walk get
// higher positions, so they never shift a page: no duplicates, no omissions.

export interface PageQuery {
  limit: number;
  after?: number;
  before?: number;
  /** Encodes a position as this list's opaque cursor. */
  cursor(position: number): string;
}

export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor?: string;
}

export interface PageBound {
  op: '<' | '>';
  pos: number;
}

/**
 * `fetch` must apply the bound (when given), order by pos in the given
 * direction and return at most `take` rows.
 */
export async function fetchPage<R extends { pos: number }, T>(
  page: PageQuery,
  fetch: (bound: PageBound | undefined, order: 'asc' | 'desc', take: number) => Promise<R[]>,
  map: (row: R) => T,
): Promise<Page<T>> {
  const backward = page.before !== undefined;
  const bound: PageBound | undefined = backward
    ? { op: '>', pos: page.before! }
    : page.after !== undefined ? { op: '<', pos: page.after } : undefined;
  const rows = await fetch(bound, backward ? 'asc' : 'desc', page.limit + 1);  // one extra says whether more follow
  const more = rows.length > page.limit;
  const kept = more ? rows.slice(0, page.limit) : rows;
  if (backward) kept.reverse();
  // Walking back, the cursor to continue with is the newest row of the page.
  const edge = backward ? kept[0] : kept.at(-1);
  return {
    data: kept.map(map),
    has_more: more,
    ...(more && edge && { next_cursor: page.cursor(edge.pos) }),
  };
}
