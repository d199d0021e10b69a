// @ts-check
// Edits not yet saved (a template, a broadcast) are not lost without asking:
// going to another page of the app, reloading or closing the tab, or an action
// of the view itself that loads other content first asks whether to discard
// them. A view says what its edits are by a function that answers whether
// they differ from what was saved.
import { confirmDialog, h } from './ui.js';

/** @typedef {{ view: HTMLElement, what: string, dirty: () => boolean }} Guard */

/** @type {Set<Guard>} */
const guards = new Set();

/** The guard whose view is on the page with edits not saved, if any. */
function unsavedGuard() {
  for (const guard of guards) {
    if (!guard.view.isConnected) guards.delete(guard);
    else if (guard.dirty()) return guard;
  }
  return undefined;
}

/**
 * Guards the edits of the view on the page until it is gone or released.
 * @param {HTMLElement} view
 * @param {string} what  the thing edited, as a question names it ("this template")
 * @param {() => boolean} dirty  whether the form holds edits not saved
 */
export function guardEdits(view, what, dirty) {
  /** @type {Guard} */
  const guard = { view, what, dirty };
  guards.add(guard);
  return {
    /** The edits were saved, or are to be dropped on purpose: leaving asks no more. */
    release() {
      guards.delete(guard);
    },
  };
}

/**
 * Asks before something that replaces the form's content; true when there is nothing unsaved or the person agrees.
 * @param {string} action  what happens, as a button says it ("Open version 2")
 * @param {Node} [consequence]  a sentence on what else the action does
 */
export async function discardAsked(action, consequence) {
  const guard = unsavedGuard();
  if (!guard) return true;
  const discarded = await confirmDialog({ title: `Discard your changes to ${guard.what}?`, confirm: action, danger: true,
    message: [h('p', null, 'Your changes are not saved and will be lost.'), consequence ?? null] });
  if (discarded) guard.dirty = () => false;
  return discarded;
}

/** Set while the address steps back to the view the person chose to stay on: that step is not a leaving. */
let steppingBack = false;

/** Marks the history entry of a view drawn, to tell a new entry (a link followed) from one gone back or forward to. */
export function markDrawn() {
  if (history.state?.drawn !== true) history.replaceState({ ...history.state, drawn: true }, '');
}

/**
 * Asks before leaving a view with unsaved edits for the hash the person went to, already in the address bar: true
 * when the route is to be drawn now. When they stay, the address goes back to `from`: a link's new entry is stepped
 * back from, an entry gone back or forward to is rewritten. When they leave, the address is set again, which draws
 * the route.
 * @param {string} from  the hash of the view still shown
 */
export async function leaveAsked(from) {
  if (steppingBack) {
    steppingBack = false;
    return false;
  }
  const guard = unsavedGuard();
  if (!guard) return true;
  const target = location.hash;
  // The same route drawn again (after an action of the view) has no address to put back, nor to go to.
  const again = target === from;
  if (!again) {
    if (history.state?.drawn === true) {
      history.replaceState(history.state, '', from);
    } else {
      // Asked once back: a change of page under a question answers it.
      const back = new Promise((resolve) => window.addEventListener('hashchange', resolve, { once: true }));
      steppingBack = true;
      history.back();
      await back;
    }
  }
  if (!await discardAsked('Leave without saving')) return false;
  guards.delete(guard);
  if (again) return true;
  location.hash = target;
  return false;
}

window.addEventListener('beforeunload', (event) => {
  if (unsavedGuard()) event.preventDefault();
});
