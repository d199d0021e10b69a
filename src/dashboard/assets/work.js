// @ts-check
// Work of many requests (an action on many contacts, an import) goes on when
// the person opens another page: the view that started it shows its progress
// and summary while it is on the page; elsewhere a notice above every view
// does, with a link back, until dismissed. Closing the tab stops the
// requests, so the browser asks first while any are still going; signing out
// stops them too, and puts the notices away.
import { byId, fill, h, progressBar } from './ui.js';

/** @typedef {import('./ui.js').Children} Children */
/**
 * @typedef {{ title: string, kind: string, back: { href: string, label: string }, origin: HTMLElement, total: number, counted: string,
 *   done: number, held?: string, summary?: Children, stopped?: boolean, failed?: boolean, cancelled?: boolean }} Work
 */

/** @type {Set<Work>} */
const works = new Set();
/** Controls held while work of a kind runs, each answering false once its view has gone for good. @type {Set<() => boolean>} */
const holds = new Set();

/** Whether the page shows the route of `href` ("#/contacts?tag=…"), whatever its query. @param {string} href */
const onRoute = (href) => location.hash.split('?')[0] === href.split('?')[0];

/** A work's notice: while it runs, its progress; once ended, its summary and a way to put it away. @param {Work} work */
function notice(work) {
  const ended = work.summary !== undefined;
  const heading = ended ? `${work.title}: ${work.stopped ? 'stopped' : 'finished'}` : `${work.title}…`;
  return h('section', { class: `work-notice${ended ? ' ended' : ''}${work.stopped || work.failed ? ' warn' : ''}`, 'aria-label': heading },
    h('div', { class: 'work-head' },
      h('strong', { class: 'work-title' }, heading),
      // Already there, the link would lead nowhere.
      !onRoute(work.back.href) && h('a', { href: work.back.href, class: 'work-back' }, work.back.label),
      ended && h('button', { type: 'button', class: 'secondary work-dismiss', onclick: () => {
        works.delete(work);
        render();
      } }, 'Dismiss')),
    ended
      ? h('div', { class: 'work-summary' }, work.summary)
      : [progressBar(work.done, work.total, work.counted, work.held),
        h('p', { class: 'muted small' }, 'It goes on while you use other pages; closing or reloading this tab stops it.')]);
}

/** Draws the notices of work whose view is gone: a view on the page shows its own. */
function render() {
  const shown = [...works].filter((w) => w.summary !== undefined || !w.origin.isConnected);
  fill(byId('work'), shown.map(notice));
  for (const hold of holds) if (!hold()) holds.delete(hold);
}

/**
 * Keeps `controls` disabled while work of `kind` runs, which they would start a second time, with the reason and a
 * link to its progress in `reason`; enabled again once it has ended.
 * @param {string} kind @param {HTMLButtonElement[]} controls @param {HTMLElement} reason  on the same view as the controls
 */
export function holdWhileRunning(kind, controls, reason) {
  let shown = false;
  const hold = () => {
    if (shown && !reason.isConnected) return false;
    shown ||= reason.isConnected;
    const running = [...works].find((w) => w.kind === kind && w.summary === undefined);
    for (const control of controls) control.disabled = running !== undefined;
    fill(reason, running && h('p', { class: 'work-held muted small', role: 'note' }, `${running.title} is still under way: `,
      // Not a route: its notice is above every view.
      h('button', { type: 'button', class: 'work-show', onclick: () => byId('work').scrollIntoView() }, 'see its progress'),
      '. Start again once it has ended.'));
    return true;
  };
  hold();
  holds.add(hold);
}

/**
 * Starts the notice of a work; the view that starts it keeps showing it too while on the page.
 * @param {{ title: string, kind: string, back: { href: string, label: string }, origin: HTMLElement, total: number, counted: string }} spec
 *   `title`: what is done, as a heading ("Tagging 24 contacts"); `kind`: which controls start it (see holdWhileRunning); `back`: the view to return to; `origin`: an element of
 *   the starting view, gone from the page once the person leaves it; `counted`: what the progress bar counts
 */
export function startWork(spec) {
  /** @type {Work} */
  const work = { ...spec, done: 0 };
  works.add(work);
  return {
    /** Whether the session ended under it: no further request is to be made, nor anything shown. */
    cancelled() {
      return work.cancelled === true;
    },
    /** @param {number} done @param {string} [held]  why it is waiting, if it is */
    progress(done, held) {
      Object.assign(work, { done, held });
      render();
    },
    /**
     * Ends the work. Its summary stays in a notice when its view is gone; answers true when the view is still on the
     * page, to show the summary itself.
     * @param {Children} summary
     * @param {{ stopped?: boolean, failed?: boolean }} [how]  stopped before the end; failed for some of what it did
     */
    finish(summary, { stopped = false, failed = false } = {}) {
      if (work.cancelled) return false;
      fill(byId('work-said'), `${work.title}: ${stopped ? 'stopped' : 'finished'}.`);
      if (work.origin.isConnected) works.delete(work);
      else Object.assign(work, { summary, stopped, failed });
      render();
      return work.origin.isConnected;
    },
  };
}

/** Whether any work is still making requests. */
export function workRunning() {
  return [...works].some((w) => w.summary === undefined);
}

/** The session ended: work under way makes no further request (a key signed in next must not carry it on), and every notice goes. */
export function cancelAllWork() {
  for (const work of works) work.cancelled = true;
  works.clear();
  render();
}

// A route draws its view after the hashchange listeners run: the notices are drawn again once it has.
window.addEventListener('hashchange', () => setTimeout(render));
window.addEventListener('beforeunload', (event) => {
  if (workRunning()) event.preventDefault();
});
