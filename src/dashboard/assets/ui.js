// @ts-check
// The page's building blocks, written once for every view. Children go in
// as nodes or as text, never as markup: subjects, addresses and email HTML
// come from strangers.
import { ApiError, download } from './api.js';

/** @typedef {Node | string | number | null | undefined | false} Child */
/** @typedef {Child | Child[]} Children */
/** @typedef {Record<string, string | number | boolean | null | undefined | ((event: Event) => void)>} Attrs */

/**
 * Creates an element. Children go in as nodes or as text, never as markup;
 * an `on<event>` attribute given a function becomes a listener.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs | null} [attrs]
 * @param {...Children} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === 'function') {
      el.addEventListener(name.slice(2), value);
      continue;
    }
    // Links only lead to the app's own routes: API data never becomes a URL.
    if (name === 'href' && !String(value).startsWith('#/')) throw new Error(`Not an app route: ${value}`);
    el.setAttribute(name, value === true ? '' : String(value));
  }
  return fill(el, ...children);
}

/**
 * Replaces the children of `el`, with the same rules as h().
 * @template {Element} E
 * @param {E} el
 * @param {...Children} children
 * @returns {E}
 */
export function fill(el, ...children) {
  el.replaceChildren();
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** @param {string} id */
export function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`The page has no #${id}`);
  return el;
}

/** Local time on screen, the exact ISO value on hover. @param {string | null} iso */
export function time(iso, withSeconds = false) {
  if (!iso) return none();
  return h('time', { datetime: iso, title: iso }, formatTime(iso, withSeconds));
}

/** Within this of now a time is shown without its year, as `ls -l` does, which keeps list columns narrow. */
const YEAR_SHOWN_BEYOND_MS = 182 * 86_400_000;

/** @param {string} iso */
export function formatTime(iso, withSeconds = false) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const year = Math.abs(date.getTime() - Date.now()) > YEAR_SHOWN_BEYOND_MS ? 'numeric' : undefined;
  return date.toLocaleString(undefined, { year, month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', second: withSeconds ? '2-digit' : undefined });
}

/** The units a time from now is said in, largest first, with their length in milliseconds. */
const RELATIVE_UNITS = /** @type {Array<[Intl.RelativeTimeFormatUnit, number]>} */ ([
  ['day', 86_400_000], ['hour', 3_600_000], ['minute', 60_000],
]);

/** How far an instant is from now, in its largest whole unit: "in 3 days", "2 hours ago", "in 1 minute". @param {string} iso */
export function fromNow(iso) {
  const ms = Date.parse(iso) - Date.now();
  const [unit, length] = RELATIVE_UNITS.find(([, l]) => Math.abs(ms) >= l) ?? RELATIVE_UNITS[RELATIVE_UNITS.length - 1];
  return new Intl.RelativeTimeFormat(undefined, { numeric: 'always' }).format(Math.trunc(ms / length), unit);
}

/**
 * A date-time input's value (`2026-11-21T09:30`) for an instant, in the browser's zone.
 * @param {Date} date
 */
export function localInputValue(date) {
  const pad = (/** @type {number} */ n) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/**
 * An instant as ISO 8601 with the browser's offset (`2026-11-21T09:30:00+01:00`): the time the person chose, as
 * they read it.
 * @param {Date} date
 */
export function isoWithOffset(date) {
  const offset = -date.getTimezoneOffset();
  const sign = offset >= 0 ? '+' : '-';
  const hours = String(Math.floor(Math.abs(offset) / 60)).padStart(2, '0');
  const minutes = String(Math.abs(offset) % 60).padStart(2, '0');
  return `${localInputValue(date)}:${String(date.getSeconds()).padStart(2, '0')}${sign}${hours}:${minutes}`;
}

/** A count and its noun: "1 contact", "1,250 contacts". @param {number} n @param {string} one @param {string} many */
export const count = (n, one, many) => `${n.toLocaleString()} ${n === 1 ? one : many}`;

export function none() {
  return h('span', { class: 'muted' }, '—');
}

/** @param {string} status */
export function badge(status) {
  return h('span', { class: `badge badge-${status.toLowerCase().replace(/[^a-z_]/g, '')}` }, status);
}

/**
 * A long value in a list: one line, cut with an ellipsis, the whole of it in
 * its title. `wide` for the column that matters most (a subject).
 * @param {string} text
 * @param {{ href?: string, wide?: boolean }} [options]  `href`: an app route the value links to
 */
export function clipped(text, { href, wide = false } = {}) {
  const attrs = { class: wide ? 'clip wide' : 'clip', title: text };
  return href ? h('a', { ...attrs, href }, text) : h('span', attrs, text);
}

/**
 * An address read whole where it is too long for its line: it may break after its @ and its dots (and hyphens, as any
 * text), and anywhere only where a part is itself too long.
 * @param {string} text
 */
export function address(text) {
  return h('span', { class: 'address' }, text.split(/(?<=[@.])/).flatMap((part, i) => (i === 0 ? [part] : [h('wbr'), part])));
}

/** `Name <address>` as its parts, a quoted name unquoted; a bare address has no name. @param {string} mailbox */
export function mailboxParts(mailbox) {
  const angled = /^\s*(?:"((?:[^"\\]|\\.)*)"|([^<]*?))\s*<([^>]*)>\s*$/.exec(mailbox);
  if (!angled) return { name: '', address: mailbox.trim() };
  return { name: (angled[1]?.replace(/\\(.)/g, '$1') ?? angled[2] ?? '').trim(), address: angled[3] };
}

/**
 * An amber note of what holds something up (a record not found, a reply that defers mail), its first words in bold.
 * @param {string} kind  its own class, beside the note's look @param {string} lead @param {...Children} rest
 */
export function heldUpNote(kind, lead, ...rest) {
  return h('div', { class: `panel outcome-note ${kind}`, role: 'note' }, h('p', null, h('strong', null, lead), ...rest));
}

/** How long a Copy button says it copied. */
const COPIED_SHOWN_MS = 2000;

/**
 * A value to paste elsewhere (a DNS record's name or value, a new key) with a Copy button beside it. `cut`: on one line,
 * cut with an ellipsis when longer than its room and whole in its title (a DKIM key); otherwise wrapped, whole. A click
 * on the text selects all of it, as the button does when the browser gives no clipboard. `block`: lines kept as they
 * are, in a box of their own (a command to paste into a shell).
 * @param {string} value
 * @param {{ label: string, cut?: boolean, block?: boolean, className?: string, hostName?: boolean }} options  `label`: what
 *   the button copies, for screen readers ("value of the DKIM record"); `className`: the text's own look; `hostName`:
 *   wrapped after dots
 */
export function copyable(value, { label, cut = false, block = false, className, hostName = false }) {
  // A host name that must wrap breaks after a dot, between its labels.
  const shown = hostName ? value.split(/(?<=\.)/).flatMap((part, i) => (i ? [h('wbr'), part] : [part])) : value;
  const look = ['copy-text', block && 'copy-block', className].filter(Boolean).join(' ');
  const text = h(block ? 'pre' : 'code', { class: look, title: cut ? value : null }, shown);
  const button = h('button', { type: 'button', class: 'secondary copy-button', 'aria-label': `Copy the ${label}`,
    onclick: () => void copyText(value, text).then((done) => {
      fill(button, done ? 'Copied' : 'Selected');
      setTimeout(() => fill(button, 'Copy'), COPIED_SHOWN_MS);
    }) }, 'Copy');
  return h(block ? 'div' : 'span', { class: ['copy-field', cut && 'cut', block && 'block'].filter(Boolean).join(' ') }, text, button);
}

/**
 * Puts `value` on the clipboard; false when the browser would not, with `source` selected for the person to copy.
 * The Clipboard API needs a secure context: a dashboard reached over plain HTTP on a LAN address has none, and
 * copying the selection still works there.
 * @param {string} value @param {HTMLElement} source  the element showing it
 */
async function copyText(value, source) {
  try {
    await navigator.clipboard.writeText(value);
    return true;
  } catch {
    const selection = getSelection();
    selection?.selectAllChildren(source);
    return document.execCommand('copy');
  }
}

/**
 * A control with its label, kept together when a row of filters wraps.
 * @param {string} text @param {HTMLElement} control  with an id
 */
export function labelled(text, control) {
  return h('span', { class: 'field' }, h('label', { for: control.id }, text), control);
}

/** @param {string[]} list */
export function joined(list) {
  return list.length > 0 ? list.join(', ') : none();
}

/** Addresses in a list's cell, cut to one line. @param {string[]} list */
export function clippedList(list) {
  return list.length > 0 ? clipped(list.join(', ')) : none();
}

/**
 * A button that saves a file the API serves; its error shows beside it.
 * @param {string} path @param {string} filename
 */
export function downloadButton(path, filename) {
  const errors = errorSlot();
  const button = h('button', { type: 'button', class: 'secondary', onclick: () => void whileBusy(button, async () => {
    try {
      await download(path, filename);
    } catch (err) {
      errors.show(err);
    }
  }) }, 'Download');
  return [button, errors.node];
}

/** @param {string | null} value */
export function code(value) {
  return value ? h('code', null, value) : none();
}

/** @param {number} bytes */
export function formatBytes(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  return bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * Adds a script or stylesheet to the page, for a library only one view needs; resolves once it has loaded.
 * @param {HTMLScriptElement | HTMLLinkElement} el
 * @param {string} failure  the message when it cannot be loaded
 */
export function attach(el, failure) {
  return new Promise((resolve, reject) => {
    el.addEventListener('load', resolve);
    el.addEventListener('error', () => reject(new Error(failure)));
    document.head.append(el);
  });
}

/** What the view on the page holds outside it (a listener of the window's), each let go once the view is left. @type {Set<() => void>} */
const heldByView = new Set();

/** Has `release` called when the view on the page is replaced by another (see leaveView). @param {() => void} release */
export function whenViewLeft(release) {
  heldByView.add(release);
}

/** Lets go of what the view on the page held: called as the router replaces it. */
export function leaveView() {
  for (const release of heldByView) release();
  heldByView.clear();
}

/** A phone's width, as app.css lays the page out for one. */
const PHONE_WIDTH = '(max-width: 40rem)';

/**
 * A part of a view that a phone folds away under `summary`, so that its first screen shows what a person came for
 * (a list's rows, an email's body); a wider screen shows it open, without the summary (app.css). It follows the
 * window across that width while its view is on the page.
 * @param {Children} summary @param {...Children} children
 */
export function foldOnPhone(summary, ...children) {
  // Asked here, not when the module loads: the module's other pieces are also used where no window is (the unit tests).
  const phone = matchMedia(PHONE_WIDTH);
  const fold = h('details', { class: 'fold', open: !phone.matches }, h('summary', null, summary), ...children);
  const follow = () => {
    fold.open = !phone.matches;
  };
  phone.addEventListener('change', follow);
  whenViewLeft(() => phone.removeEventListener('change', follow));
  return fold;
}

/** @param {Array<[string, Children]>} rows */
export function details(rows) {
  return h('dl', { class: 'details' }, rows.flatMap(([term, value]) => [h('dt', null, term), h('dd', null, value)]));
}

/**
 * A list's column. On a phone a row becomes a card: the `primary` column (the first when none is) leads it in bold,
 * a `status` column sits beside it, and the others follow small, each named by its header. A `minor` column is left
 * out at tablet widths, where every column would not fit: what it says is on the record's own page, or can wait.
 * @template T
 * @typedef {{ header: string, cell: (item: T) => Children, className?: string, hideHeader?: boolean,
 *   role?: 'primary' | 'status', minor?: boolean }} Column
 */

/**
 * A column of per-row buttons; its header is read by screen readers only.
 * @template T
 * @param {(item: T) => Children} cell
 * @returns {Column<T>}
 */
export function actionsColumn(cell) {
  return { header: 'Actions', cell, className: 'row-actions', hideHeader: true };
}

/**
 * Checkboxes for picking rows of a list to act on several at once: one at the start of each row, named for screen
 * readers by `label` (an address), and one in the header for every row of the page. Given to one table(), for the
 * rows it draws: a list drawn again takes a new one.
 * @template T
 * @param {{ label: (item: T) => string, onChange: (picked: T[]) => void }} spec  `onChange` hears the rows picked
 *   after each change
 */
export function rowSelection(spec) {
  /** @type {Array<{ box: HTMLInputElement, item: T }>} */
  const rows = [];
  const all = h('input', { type: 'checkbox', class: 'select-box' });
  const picked = () => rows.filter((r) => r.box.checked).map((r) => r.item);
  const changed = () => {
    const now = picked();
    all.checked = now.length > 0 && now.length === rows.length;
    all.indeterminate = now.length > 0 && now.length < rows.length;
    for (const { box } of rows) box.closest('tr')?.classList.toggle('picked', box.checked);
    spec.onChange(now);
  };
  all.addEventListener('change', () => {
    for (const { box } of rows) box.checked = all.checked;
    changed();
  });
  return {
    picked,
    clear() {
      for (const { box } of rows) box.checked = false;
      changed();
    },
    /** The header's checkbox, its name written out where a phone shows no header. */
    header: () => h('label', { class: 'select-all' }, all, h('span', { class: 'visually-hidden' }, 'Select all on this page')),
    /** A row's checkbox. @param {T} item */
    box(item) {
      const box = h('input', { type: 'checkbox', class: 'select-box', 'aria-label': `Select ${spec.label(item)}`, onchange: changed });
      rows.push({ box, item });
      return box;
    },
  };
}
/**
 * @template T
 * @typedef {ReturnType<typeof rowSelection<T>>} RowSelection
 */

/**
 * @template T
 * @param {Column<T>[]} columns
 * @param {T[]} items
 * @param {RowSelection<T>} [selection]  checkboxes to pick rows with, in a first column
 */
export function table(columns, items, selection) {
  const primary = columns.find((c) => c.role === 'primary') ?? columns[0];
  /**
   * A column's classes, the same on its header and its cells (a `minor` column is left out whole); a body cell adds
   * its part in a phone's card.
   * @param {Column<T>} c @param {boolean} body
   */
  const cellClass = (c, body) => [c.className, c.minor && 'cell-minor', body && c === primary && 'cell-primary',
    body && c.role === 'status' && 'cell-status'].filter(Boolean).join(' ') || null;
  return h('div', { class: 'table-wrap' }, h('table', { class: selection ? 'cards selectable' : 'cards' },
    h('thead', null, h('tr', null,
      selection && h('th', { scope: 'col', class: 'cell-select' }, selection.header()),
      columns.map((c) => h('th', { scope: 'col', class: cellClass(c, false) },
        c.hideHeader ? h('span', { class: 'visually-hidden' }, c.header) : c.header)))),
    h('tbody', null, items.map((item) => h('tr', null,
      selection && h('td', { class: 'cell-select' }, selection.box(item)),
      columns.map((c) => h('td', { class: cellClass(c, true), 'data-label': c.hideHeader ? null : c.header }, c.cell(item))))))));
}

export function loading() {
  return h('p', { class: 'muted' }, 'Loading…');
}

/**
 * The API's message, as the alert; the request id beside it, for the server log.
 * @param {unknown} err
 * @param {{ lead?: string, then?: Children }} [context]  `lead` goes before the message (what was refused), `then`
 *   after it (the way out)
 */
export function errorBox(err, context = {}) {
  // The id finds the server's log of a failure of its own; a refusal of what was sent says all there is.
  const requestId = err instanceof ApiError && err.status >= 500 ? err.requestId : undefined;
  const problems = err instanceof ApiError ? problemsOf(err) : [];
  const message = err instanceof Error ? err.message : String(err);
  return h('div', { class: 'error-box' },
    problems.length > 1
      ? [context.lead && h('p', null, context.lead), ...problems.map((p) => h('p', { role: 'alert' }, p.message))]
      : h('p', { role: 'alert' }, context.lead ? `${context.lead} ${message}` : message),
    context.then && h('p', null, context.then),
    requestId && h('p', { class: 'muted small' }, `Request id: ${requestId}`));
}

/**
 * The problems an API error lists one by one (a template's every Liquid error), each with the field it names.
 * @param {ApiError} err @returns {Array<{ param?: string, message: string }>}
 */
function problemsOf(err) {
  const problems = err.body.problems;
  if (!Array.isArray(problems)) return [];
  return problems.filter((p) => p && typeof p.message === 'string')
    .map((p) => ({ message: p.message, ...(typeof p.param === 'string' && { param: p.param }) }));
}

/** A place beside a form or button for its errors. */
export function errorSlot() {
  const node = h('div');
  return { node, show: (/** @type {unknown} */ err) => fill(node, errorBox(err)) };
}

/**
 * What an action did ("Saved."), shown above the view. It is read out by the note's place (#note, app.js), a live
 * region kept from one view to the next: one inserted with its text already in it is not reliably read. A note the
 * form's next change would make untrue goes with that change; a `lasting` one says what the changes are made to (the
 * older version an editor holds), and stays.
 * @param {string} text
 * @param {{ lasting?: boolean }} [options]
 */
export function statusNote(text, { lasting = false } = {}) {
  return h('p', { class: 'flash', 'data-lasting': lasting }, text);
}

/**
 * Moves the focus to the heading of the view on the page, as a page load would start there; false when it has none.
 * The heading takes the focus from a script only, not from Tab.
 */
export function focusViewHeading() {
  const heading = document.querySelector('main h1');
  if (!(heading instanceof HTMLElement)) return false;
  heading.tabIndex = -1;
  heading.focus({ preventScroll: true });
  return true;
}

/**
 * Where the focus is, to find again once what holds it is drawn anew: the element, and its tag, text and rank among
 * the page's elements alike.
 * @typedef {{ el: HTMLElement, tag: string, text: string | null, rank: number }} FocusPlace
 */

/** @param {string} tag @param {string | null} text */
const alike = (tag, text) => [...document.body.getElementsByTagName(tag)].filter((el) => el.textContent === text);

/** @param {HTMLElement} el @returns {FocusPlace} */
function focusPlace(el) {
  return { el, tag: el.tagName, text: el.textContent, rank: alike(el.tagName, el.textContent).indexOf(el) };
}

/**
 * Puts the focus back where it was when it has been lost to the page's top (its element disabled, or drawn anew): on
 * the element, else on the one alike in its place, else on the view's heading.
 * @param {FocusPlace} place
 */
function refocus(place) {
  const lost = document.activeElement === null || document.activeElement === document.body;
  if (!lost || document.querySelector('dialog[open]')) return;
  const again = place.el.isConnected ? place.el : alike(place.tag, place.text)[place.rank];
  if (again instanceof HTMLElement) again.focus({ preventScroll: true });
  else focusViewHeading();
}

/**
 * Runs `redraw`, which may draw the element that has the focus anew (a list reloaded, a page that keeps itself up to
 * date): the focus goes on from the same place rather than from the top of the page.
 * @template T
 * @param {() => Promise<T>} redraw
 * @returns {Promise<T>}
 */
export async function keepingFocus(redraw) {
  const focused = document.activeElement;
  const place = focused instanceof HTMLElement && focused !== document.body ? focusPlace(focused) : undefined;
  try {
    return await redraw();
  } finally {
    if (place) refocus(place);
  }
}

/**
 * Runs `work` with `button` disabled, so a double click does not send twice. A disabled button loses the focus, as
 * does one its view draws anew: it goes back to the button, or to the one in its place (see refocus).
 * @param {HTMLButtonElement} button
 * @param {() => Promise<void>} work
 */
export async function whileBusy(button, work) {
  const place = document.activeElement === button ? focusPlace(button) : undefined;
  button.disabled = true;
  try {
    await work();
  } finally {
    button.disabled = false;
    if (place) refocus(place);
  }
}

/**
 * A form whose submit runs `action` with its submit button held busy.
 * @param {Attrs} attrs
 * @param {(errors: ReturnType<typeof errorSlot>) => Promise<void>} action
 * @param {...Children} children
 */
export function actionForm(attrs, action, ...children) {
  const errors = errorSlot();
  const form = h('form', { ...attrs, onsubmit: (event) => {
    event.preventDefault();
    const button = form.querySelector('button[type="submit"]');
    if (button instanceof HTMLButtonElement) void whileBusy(button, () => action(errors));
  } }, ...children);
  // A submit the browser stops (a field it cannot take) says why itself: an older refusal shown here would mislead.
  form.addEventListener('invalid', () => fill(errors.node), true);
  return [form, errors.node];
}

/** @param {'emails' | 'domains' | 'inbound'} section @param {string} id */
export function hrefTo(section, id) {
  return `#/${section}/${encodeURIComponent(id)}`;
}

/**
 * A button that asks `question` in the page (see confirmDialog), then runs
 * `action`, showing its error in `errors`. It looks dangerous when the question does; otherwise secondary, unless it is
 * the view's `primary` action (a template's Publish).
 * A question given as a function is put together when the button is pressed, to say what is so then.
 * @param {string} label
 * @param {Question | (() => Question)} question
 * @param {() => Promise<void>} action
 * @param {ReturnType<typeof errorSlot>} errors
 * @param {{ primary?: boolean }} [look]
 */
export function askingButton(label, question, action, errors, { primary = false } = {}) {
  const asked = typeof question === 'function' ? question : () => question;
  const button = h('button', { type: 'button', class: asked().danger ? 'danger' : primary ? null : 'secondary', onclick: async () => {
    // Held busy only once confirmed: the dialog gives the focus back to the button when it closes.
    if (!await confirmDialog(asked())) return;
    await whileBusy(button, async () => {
      fill(errors.node);
      try {
        await action();
      } catch (err) {
        errors.show(err);
      }
    });
  } }, label);
  return button;
}

/**
 * An asking button (see askingButton) with its error slot, for a table row.
 * @param {string} label
 * @param {Question | (() => Question)} question
 * @param {() => Promise<void>} action
 */
export function rowAction(label, question, action) {
  const errors = errorSlot();
  return [askingButton(label, question, action, errors), errors.node];
}

/** Numbers the error slots of the page, for their ids. */
let fieldErrorCount = 0;

/**
 * Adds `id` to the elements that describe `control`, or takes it away, keeping the others (a hint).
 * @param {Element} control @param {string} id @param {boolean} on
 */
export function describedBy(control, id, on) {
  const ids = (control.getAttribute('aria-describedby') ?? '').split(/\s+/).filter((i) => i && i !== id);
  if (on) ids.push(id);
  if (ids.length > 0) control.setAttribute('aria-describedby', ids.join(' '));
  else control.removeAttribute('aria-describedby');
}

/**
 * Error slots beside a form's fields: an API error is shown beside the field
 * its `param` names (`audience.tag_ids.0` beside `audience`); any other
 * error, or one whose field is hidden, in the `near` slot of the action.
 */
export function fieldErrors() {
  /** @type {Map<string, { node: HTMLElement, label: string, control?: HTMLElement }>} */
  const slots = new Map();
  /** The controls marked as refused, each with the slot that says why. @type {Map<HTMLElement, HTMLElement>} */
  const marked = new Map();
  /** @type {Set<HTMLElement>} */
  const shown = new Set();
  /** @type {WeakSet<HTMLFormElement>} */
  const watched = new WeakSet();
  /** A submit the browser stops (a field it cannot take) says why itself: a refusal shown in its form would mislead. @param {HTMLElement} node */
  const clearWhenStopped = (node) => {
    const form = node.closest('form');
    if (!form || watched.has(form)) return;
    watched.add(form);
    form.addEventListener('invalid', () => errors.clear(), true);
  };
  const errors = {
    /**
     * The slot for a field, to place beside it. `control`, the field's input, is marked invalid and described by the
     * slot while it shows an error, so that a screen reader on the field says what is wrong with it.
     * @param {string} field @param {string} label as the page names the field @param {HTMLElement} [control]
     */
    slot(field, label, control) {
      const node = h('div', { class: 'field-error', id: `field-error-${++fieldErrorCount}`, 'data-field': field });
      slots.set(field, { node, label, control });
      return node;
    },
    clear() {
      for (const node of shown) fill(node);
      shown.clear();
      for (const [control, node] of marked) {
        control.removeAttribute('aria-invalid');
        describedBy(control, node.id, false);
      }
      marked.clear();
    },
    /**
     * An error naming several problems (its `problems`) has each shown beside its own field.
     * @param {unknown} err @param {HTMLElement} near
     */
    show(err, near) {
      errors.clear();
      /** @param {string | undefined} param */
      const besideField = (param) => {
        const slot = param ? slots.get(param.split('.')[0]) : undefined;
        return slot && !slot.node.closest('[hidden]') ? slot : undefined;
      };
      const problems = err instanceof ApiError ? problemsOf(err) : [];
      /** What each slot shows: the one error's box, or its share of the problems. @type {Map<HTMLElement, Node[]>} */
      const placed = new Map();
      /** @type {Set<string>} */
      const labels = new Set();
      /** The fields an error names, shown beside them. @type {Set<HTMLElement>} */
      const refused = new Set();
      if (problems.length > 1) {
        for (const problem of problems) {
          const beside = besideField(problem.param);
          if (beside?.control) refused.add(beside.control);
          const node = beside?.node ?? near;
          if (beside && node !== near) labels.add(beside.label);
          placed.set(node, [...placed.get(node) ?? [], h('p', { role: 'alert' }, problem.message)]);
        }
      } else {
        const beside = besideField(err instanceof ApiError ? err.param : undefined);
        if (beside?.control) refused.add(beside.control);
        if (beside && beside.node !== near) labels.add(beside.label);
        placed.set(beside?.node ?? near, [errorBox(err)]);
      }
      for (const [node, content] of placed) {
        fill(node, problems.length > 1 ? h('div', { class: 'error-box' }, content) : content);
        shown.add(node);
        clearWhenStopped(node);
      }
      for (const control of refused) {
        const node = [...slots.values()].find((slot) => slot.control === control)?.node;
        if (!node) continue;
        control.setAttribute('aria-invalid', 'true');
        describedBy(control, node.id, true);
        marked.set(control, node);
      }
      if (labels.size > 0 && !placed.has(near)) {
        // Said where the person acted too: the field may be far up the page.
        const where = [...labels];
        fill(near, h('p', { class: 'error-pointer' },
          `Not done: see the problem${problems.length > 1 ? 's' : ''} beside ${where.slice(0, -1).join(', ')}${where.length > 1 ? ' and ' : ''}${where.at(-1)}.`));
        shown.add(near);
        clearWhenStopped(near);
      }
      [...placed.keys()][0].scrollIntoView({ block: 'nearest' });
    },
  };
  return errors;
}

/**
 * A bar of `done` out of `total`, with the count written beside it, and under it why it is held up, if it is.
 * @param {number} done
 * @param {number} total
 * @param {string} label  what is counted, for screen readers
 * @param {string} [held]  a sentence saying what it waits for
 */
export function progressBar(done, total, label, held) {
  const share = total > 0 ? Math.min(1, done / total) : 0;
  return h('div', { class: 'progress' },
    h('div', { class: 'progress-track', role: 'progressbar', 'aria-label': label, 'aria-valuemin': 0, 'aria-valuemax': total,
      'aria-valuenow': done },
    h('div', { class: `progress-fill${share === 1 ? ' complete' : ''}`, style: `width:${(share * 100).toFixed(1)}%` })),
    h('span', { class: 'progress-count' }, `${done.toLocaleString()} of ${total.toLocaleString()}`),
    held && h('p', { class: 'progress-held', role: 'status' }, held));
}

/**
 * What a dialog asks before an action: `confirm` labels the button that goes
 * ahead, named for the action; `danger` when the action destroys or stops something.
 * @typedef {{ title: string, message: Children, confirm: string, danger?: boolean }} Question
 */

/** Answers "no" to every question still open: what they asked about is gone, as when the session ends. */
export function dismissQuestions() {
  for (const dialog of document.querySelectorAll('dialog.confirm-dialog')) {
    if (dialog instanceof HTMLDialogElement) dialog.close();
  }
}

/**
 * Asks in a modal dialog on the page; resolves true when the person confirms.
 * Not the browser's own confirmation box: Chromium closes that unanswered (as
 * declined) while a frame of the page navigates, as a preview frame does when
 * its content loads, so a click on Delete then did nothing.
 * "Go back" has the focus, and Escape answers as it does. A page change under
 * the dialog answers it so too: the question was about what that page showed.
 * @param {Question} question
 * @returns {Promise<boolean>}
 */
export function confirmDialog(question) {
  return new Promise((resolve) => {
    const dialog = h('dialog', { class: 'confirm-dialog', 'aria-labelledby': 'confirm-dialog-title', 'aria-describedby': 'confirm-dialog-message' },
      h('form', { method: 'dialog' },
        h('h2', { id: 'confirm-dialog-title' }, question.title),
        h('div', { id: 'confirm-dialog-message', class: 'confirm-message' }, question.message),
        h('div', { class: 'dialog-actions' },
          h('button', { type: 'submit', value: 'cancel', class: 'secondary', autofocus: true }, 'Go back'),
          h('button', { type: 'submit', value: 'confirm', class: question.danger ? 'danger' : null }, question.confirm))));
    const goBack = () => dialog.close();
    // Tab goes round the dialog's controls, as it does in any dialog, rather than out of the page to the browser's.
    dialog.addEventListener('keydown', (event) => {
      if (event.key !== 'Tab') return;
      const controls = [...dialog.querySelectorAll('button, a[href], input, select, textarea')];
      const [first, last] = [controls[0], controls.at(-1)];
      const wrapTo = event.shiftKey ? document.activeElement === first && last : document.activeElement === last && first;
      if (!(wrapTo instanceof HTMLElement)) return;
      event.preventDefault();
      wrapTo.focus();
    });
    dialog.addEventListener('close', () => {
      window.removeEventListener('hashchange', goBack);
      resolve(dialog.returnValue === 'confirm');
      dialog.remove();
    });
    window.addEventListener('hashchange', goBack);
    document.body.append(dialog);
    dialog.showModal();
  });
}
