// @ts-check
import { api, ApiError } from './api.js';
import { hashOf, navigate } from './nav.js';
import { count, describedBy, errorBox, fill, foldOnPhone, h, isoWithOffset, labelled, loading, localInputValue, table } from './ui.js';

/**
 * @template T
 * @typedef {{ data: T[], has_more: boolean, next_cursor?: string }} Page
 */
/**
 * @template T
 * @typedef {import('./ui.js').Column<T>} Column
 */
/**
 * A list's filter: its control, named as the API names the parameter, and the value it puts in the route's query
 * ('' for none).
 * @typedef {{ label: string, control: HTMLInputElement | HTMLSelectElement, value: () => string }} Filter
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

// Filters. A list's filters live in the route's query under the API's names,
// so a filtered list can be linked, reloaded and paged, and pagedTable passes
// the same names on to the API with every page.

/**
 * Text to match: part of an address, a tag.
 * @param {string} label @param {string} name @param {URLSearchParams} query @param {string} [placeholder]
 * @returns {Filter}
 */
export function filterText(label, name, query, placeholder) {
  const control = h('input', { id: `filter-${name}`, name, type: 'search', value: query.get(name) ?? '', autocomplete: 'off', placeholder });
  return { label, control, value: () => control.value.trim() };
}

/**
 * One of `options` ([value, label]), or `any`. A value the query asks for that is not among them (a status the API
 * refuses, a domain since deleted) is shown as asked, chosen, rather than as `any`: the form says what the list was
 * asked for, and the API's answer says what came of it.
 * @param {string} label @param {string} name @param {URLSearchParams} query @param {string} any
 * @param {Array<[string, string]>} options
 * @returns {Filter}
 */
export function filterSelect(label, name, query, any, options) {
  const asked = query.get(name) ?? '';
  const offered = asked === '' || options.some(([value]) => value === asked) ? options : [...options, [asked, asked]];
  const control = h('select', { id: `filter-${name}`, name }, h('option', { value: '' }, any),
    offered.map(([value, text]) => h('option', { value, selected: value === asked }, text)));
  return { label, control, value: () => control.value };
}

/**
 * An instant, chosen in the browser's zone and kept as ISO 8601 with its offset; left as shown, the query's own
 * value is kept (the input has no seconds).
 * @param {string} label @param {string} name @param {URLSearchParams} query
 * @returns {Filter}
 */
export function filterTime(label, name, query) {
  const asked = query.get(name) ?? '';
  const date = new Date(asked);
  const shown = asked && !Number.isNaN(date.getTime()) ? localInputValue(date) : '';
  const control = h('input', { id: `filter-${name}`, name, type: 'datetime-local', value: shown });
  return { label, control, value: () => (control.value === shown && shown ? asked : control.value && isoWithOffset(new Date(control.value))) };
}

/**
 * The form of a list's filters: a search goes to `route` with their values, and with `kept` (a scope the list
 * stays in through a new search, such as a broadcast's emails). A phone folds it under a line that says how many
 * are in use, leaving its first screen to the list.
 * @param {string} route @param {Filter[]} filters @param {URLSearchParams} [kept]
 */
export function filterForm(route, filters, kept) {
  const inUse = filters.filter((f) => f.value()).length;
  return foldOnPhone(['Filters', inUse > 0 && h('span', { class: 'muted' }, ` · ${inUse} in use`)], h('form', { class: 'filters', role: 'search', onsubmit: (event) => {
    event.preventDefault();
    const q = new URLSearchParams(kept);
    for (const f of filters) {
      const value = f.value();
      if (value) q.set(f.control.name, value);
    }
    navigate(hashOf(route, q));
  } }, filters.map((f) => labelled(f.label, f.control)), h('button', { type: 'submit' }, 'Search')));
}

/**
 * The API's refusal of a filter (a 400 naming it), said as such, with the field marked and the way back to the
 * whole list; undefined for any other error.
 * @param {unknown} err @param {string} route @param {Filter[]} filters
 */
function refusedFilter(err, route, filters) {
  if (!(err instanceof ApiError && err.status === 400 && err.param)) return undefined;
  const filter = filters.find((f) => f.control.name === err.param);
  if (!filter) return undefined;
  const refusal = errorBox(err, { lead: `The ${filter.label} filter was refused:`, then: h('a', { href: hashOf(route) }, 'Show the list without filters') });
  refusal.id = 'filter-refusal';
  filter.control.setAttribute('aria-invalid', 'true');
  describedBy(filter.control, refusal.id, true);
  // Shown, on a phone too: the error points at it.
  filter.control.closest('details')?.setAttribute('open', '');
  return refusal;
}

// Paged lists. The API gives one cursor per page, pointing at the next older
// page, so the dashboard keeps the trail of starting_after cursors walked so
// far in the route's query (`after`, repeated): "Newer" is the page before in
// the trail, exact, with nothing skipped or shown twice, and Back agrees.

/**
 * @template T
 * @param {HTMLElement} where
 * @param {{ api: string, route: string, query: URLSearchParams, filters?: Array<string | Filter>, fixed?: Record<string, string>,
 *   columns: Column<T>[], empty: import('./ui.js').Children, selection?: import('./ui.js').RowSelection<T>,
 *   counted?: [string, string] }} spec  `api` is the list's path, `route` the page's; `filters` (their names, or the
 *   filters of the form) are passed on to the API from the page's query, `fixed` always; `empty` is said when there
 *   are none, and what to do about it; `selection` puts a checkbox on each row; `counted` (the noun, one and many)
 *   says above the rows how many there are
 */
export async function pagedTable(where, spec) {
  const trail = spec.query.getAll('after');
  const params = new URLSearchParams({ ...spec.fixed, limit: String(PAGE_SIZE) });
  const formFilters = (spec.filters ?? []).filter((f) => typeof f !== 'string');
  for (const f of spec.filters ?? []) {
    const name = typeof f === 'string' ? f : f.control.name;
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
      spec.counted && page.data.length > 0 && h('p', { class: 'list-count muted small' },
        shownCount(page.data.length, trail.length + 1, Boolean(older), formFilters.some((f) => f.value()), spec.counted)),
      page.data.length > 0 ? table(spec.columns, page.data, spec.selection) : h('p', { class: 'empty' }, spec.empty),
      // Only when there is another page to go to: two greyed buttons under a short list are noise.
      (older || trail.length > 0) && h('div', { class: 'pager' },
        h('button', { type: 'button', class: 'secondary', disabled: trail.length === 0,
          onclick: () => navigate(pageAt(trail.slice(0, -1))) }, 'Newer'),
        h('button', { type: 'button', class: 'secondary', disabled: !older,
          onclick: () => older && navigate(pageAt([...trail, older])) }, 'Older')));
  } catch (err) {
    fill(where, refusedFilter(err, spec.route, formFilters) ?? errorBox(err));
  }
}

/**
 * How many rows a page shows, said as far as it is known: the API pages by cursor and counts no total, so a list of
 * one page has a count, and a longer one says which page this is and whether more follow.
 * @param {number} shown @param {number} pageNumber @param {boolean} more @param {boolean} filtered @param {[string, string]} noun
 */
function shownCount(shown, pageNumber, more, filtered, [one, many]) {
  if (pageNumber === 1 && !more) return filtered ? `${count(shown, one, many)} found` : count(shown, one, many);
  return `Page ${pageNumber}: ${count(shown, one, many)}${more ? '; older ones on the next page' : ', the oldest'}`;
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
