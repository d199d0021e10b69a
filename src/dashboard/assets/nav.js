// @ts-check
// Moving between the app's routes (#/<section>[/<id>][?<query>]), with a note
// that the next render shows above its view: the outcome of the action that
// caused it.
import { byId, fill, keepingFocus, statusNote } from './ui.js';

/**
 * What a route's view is given: where to render, the id in the path, the ids of a nested route's path (an endpoint's,
 * then its delivery's), and the query.
 * @typedef {{ view: HTMLElement, id: string, ids: string[], query: URLSearchParams }} Ctx
 */

/** @type {Node | null} */
let pendingNote = null;

/** @param {string} path @param {URLSearchParams} [query] */
export function hashOf(path, query) {
  const search = query?.toString();
  return search ? `#${path}?${search}` : `#${path}`;
}

/**
 * Replaces the note above the current view; returns the note, for the view to take away once it is no longer so.
 * @param {string} text @param {{ lasting?: boolean }} [options]  as statusNote's
 */
export function showNote(text, options) {
  const note = statusNote(text, options);
  fill(byId('note'), note);
  return note;
}

/**
 * Goes to a route, rendering it anew when it is the current one already.
 * @param {string} hash
 * @param {Node | string} [note]
 */
export function navigate(hash, note) {
  pendingNote = typeof note === 'string' ? statusNote(note) : note ?? null;
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent('hashchange'));
  else location.hash = hash;
}

/** The note for this render, once. */
export function takePendingNote() {
  const note = pendingNote;
  pendingNote = null;
  return note;
}

/**
 * Calls `tick` every `intervalMs` while `view` is on the page, and stops once
 * another route has replaced it or `tick` answers false. The focus, on an element that `tick` draws anew, stays in
 * its place.
 * @param {HTMLElement} view
 * @param {number} intervalMs
 * @param {() => Promise<boolean>} tick
 */
export function refreshWhileShown(view, intervalMs, tick) {
  const next = () => setTimeout(async () => {
    if (!view.isConnected) return;
    if (await keepingFocus(tick).catch(() => true)) next();
  }, intervalMs);
  next();
}
