// @ts-check
import { api } from './api.js';
import { hashOf, navigate } from './nav.js';
import { errorBox, fill, h, loading, table } from './ui.js';

/**
 * @template T
 * @typedef {{ data: T[], has_more: boolean, next_cursor?: string }} Page
 */
/**
 * @template T
 * @typedef {import('./ui.js').Column<T>} Column
 */

/** Rows a list page asks for. */
const PAGE_SIZE = 25;
/** The API's largest page. */
const MAX_PAGE_SIZE = '100';
/** The most choices a picker offers: past that, a select is no help. */
const PICKER_MAX = 1000;

/**
 * Every item of a list, newest first, for a picker (the tags, domains or
 * templates to choose from): its pages walked through, PICKER_MAX items at most.
 * @param {string} path
 * @param {Record<string, string>} [filters]
 * @returns {Promise<any[]>}
 */
export async function everyItem(path, filters = {}) {
  const items = [];
  /** @type {string | undefined} */
  let cursor;
  do {
    const query = new URLSearchParams({ ...filters, limit: MAX_PAGE_SIZE, ...(cursor && { starting_after: cursor }) });
    /** @type {Page<unknown>} */
    const page = await api('GET', path, { query });
    items.push(...page.data);
    cursor = page.has_more ? page.next_cursor : undefined;
  } while (cursor && items.length < PICKER_MAX);
  return items.slice(0, PICKER_MAX);
}

// Paged lists. The API gives one cursor per page, pointing at the next older
// page, so the dashboard keeps the trail of starting_after cursors walked so
// far in the route's query (`after`, repeated): "Newer" is the page before in
// the trail, exact, with nothing skipped or shown twice, and Back agrees.

/**
 * @template T
 * @param {HTMLElement} where
 * @param {{ api: string, route: string, query: URLSearchParams, filters?: string[], fixed?: Record<string, string>,
 *   columns: Column<T>[], empty: import('./ui.js').Children, selection?: import('./ui.js').RowSelection<T> }} spec  `api`
 *   is the list's path, `route` the page's; `filters` are passed on to the API from the page's query, `fixed` always;
 *   `empty` is said when there are none, and what to do about it; `selection` puts a checkbox on each row
 */
export async function pagedTable(where, spec) {
  const trail = spec.query.getAll('after');
  const params = new URLSearchParams({ ...spec.fixed, limit: String(PAGE_SIZE) });
  for (const name of spec.filters ?? []) {
    const value = spec.query.get(name);
    if (value) params.set(name, value);
  }
  const cursor = trail.at(-1);
  if (cursor) params.set('starting_after', cursor);
  fill(where, loading());
  /** @param {string[]} cursors */
  const pageAt = (cursors) => {
    const q = new URLSearchParams(spec.query);
    q.delete('after');
    for (const c of cursors) q.append('after', c);
    return hashOf(spec.route, q);
  };
  try {
    /** @type {Page<T>} */
    const page = await api('GET', spec.api, { query: params });
    const older = page.has_more ? page.next_cursor : undefined;
    fill(where,
      page.data.length > 0 ? table(spec.columns, page.data, spec.selection) : h('p', { class: 'empty' }, spec.empty),
      // Only when there is another page to go to: two greyed buttons under a short list are noise.
      (older || trail.length > 0) && h('div', { class: 'pager' },
        h('button', { type: 'button', class: 'secondary', disabled: trail.length === 0,
          onclick: () => navigate(pageAt(trail.slice(0, -1))) }, 'Newer'),
        h('button', { type: 'button', class: 'secondary', disabled: !older,
          onclick: () => older && navigate(pageAt([...trail, older])) }, 'Older')));
  } catch (err) {
    fill(where, errorBox(err));
  }
}

/**
 * Loads one record into `view`; on failure the view shows `title`, the reason,
 * and the way back to the list the record belongs to.
 * @template T
 * @param {HTMLElement} view
 * @param {string} title
 * @param {string} path
 * @param {{ href: string, label: string }} list  the app route of the list, and its name
 * @returns {Promise<T | undefined>}
 */
export async function loadRecord(view, title, path, list) {
  fill(view, loading());
  try {
    return await api('GET', path);
  } catch (err) {
    fill(view, h('h1', null, title), errorBox(err), h('p', null, h('a', { href: list.href }, `← ${list.label}`)));
    return undefined;
  }
}
