// @ts-check
// The Mailroom dashboard: a single page over the public /v1 API of its own
// origin. It signs in with an API key and sees exactly what that key may see.
// Every element is built with createElement and text nodes: subjects,
// addresses and email HTML come from strangers and are never parsed as markup
// here; email HTML is only ever shown inside a sandboxed frame.
//
// This module signs in and routes; shared pieces live in ui.js, api.js,
// nav.js, lists.js, preview.js and work.js, and views in views/<area>.js.
import { forgetAccess, loadAccess, may, readAccess } from './access.js';
import { ApiError, forgetKey, keyMode, request, storedKey, storeKey, whenSessionEnds } from './api.js';
import { takePendingNote } from './nav.js';
import { byId, confirmDialog, dismissQuestions, errorSlot, fill, focusViewHeading, h, leaveView, whileBusy } from './ui.js';
import { discardAsked, leaveAsked, markDrawn } from './unsaved.js';
import { cancelAllWork, workRunning } from './work.js';
import { EMAIL_ROUTES } from './views/emails.js';
import { DOMAIN_ROUTES } from './views/domains.js';
import { EVENT_ROUTES } from './views/events.js';
import { INBOUND_ROUTES } from './views/inbound.js';
import { SUPPRESSION_ROUTES } from './views/suppressions.js';
import { API_KEY_ROUTES } from './views/api-keys.js';
import { TEMPLATE_ROUTES } from './views/templates.js';
import { WEBHOOK_ROUTES } from './views/webhooks.js';
import { ANALYTICS_ROUTES } from './views/analytics.js';
import { QUEUE_ROUTES } from './views/queue.js';
import { BROADCAST_ROUTES } from './views/broadcasts.js';
import { CONTACT_ROUTES } from './views/contacts.js';

/** @typedef {import('./nav.js').Ctx} Ctx */

// ---------------------------------------------------------------------------
// Session

/** @param {string} [message] why the session ended, shown in the sign-in form */
function signOut(message) {
  forgetKey();
  forgetAccess();
  cancelAllWork();
  dismissQuestions();
  showSignIn(message);
}

/** @param {string} [message] */
function showSignIn(message) {
  leaveView();
  fill(byId('session'));
  const errors = errorSlot();
  if (message) errors.show(new Error(message));
  const input = h('input', { id: 'api-key', name: 'api-key', type: 'password', required: true,
    autocomplete: 'off', spellcheck: 'false', placeholder: 'svc_live_…' });
  fill(byId('app'), h('form', { class: 'card signin', onsubmit: (event) => void signIn(event, input, errors) },
    h('h1', null, 'Mailroom dashboard'),
    h('p', null, 'Paste an API key. It is kept in this tab only and forgotten when the tab closes.'),
    h('label', { for: 'api-key' }, 'API key'), input,
    errors.node,
    h('button', { type: 'submit' }, 'Sign in'),
    h('p', { class: 'muted small' }, 'No key yet? Run this on the server:',
      h('code', { class: 'command copyable' }, 'npx mailroom keys create --name dashboard'),
      'Add ', h('code', null, '--test'), ' for a key whose email is kept here for you to read and never sent: the key to try Mailroom with.')));
  input.focus();
  // The form was the page loaded: the view a sign-in opens is arrived at, its heading taking the focus.
  firstView = false;
}

/**
 * Throws unless `key` is one the server takes and it may read some section: it is shown those it may read.
 * A server without GET /v1/api-keys/current checks it by its list of emails, as before.
 * @param {string} key
 */
async function checkKey(key) {
  let current;
  try {
    current = await readAccess(key);
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 404)) throw err;
    await request(key, 'GET', '/v1/emails', { query: new URLSearchParams({ limit: '1' }) });
    return;
  }
  if (!NAV.some(([, , scope]) => current.effective_scopes.includes(scope))) {
    throw new Error(`This key can read no section of the dashboard (its scopes: ${current.scopes.join(', ')}). `
      + 'Sign in with a key that has a read scope, such as emails:read.');
  }
}

/**
 * @param {Event} event
 * @param {HTMLInputElement} input
 * @param {ReturnType<typeof errorSlot>} errors
 */
async function signIn(event, input, errors) {
  event.preventDefault();
  const button = /** @type {HTMLFormElement} */ (event.currentTarget).querySelector('button');
  const key = input.value.trim();
  // A header value must be printable ASCII; fetch would fail with a cryptic error.
  if (!button || !/^[\x21-\x7E]+$/.test(key)) {
    errors.show(new Error('An API key is one word, starting svc_live_ or svc_test_.'));
    return;
  }
  await whileBusy(button, async () => {
    try {
      await checkKey(key);
    } catch (err) {
      errors.show(err);
      input.focus();
      return;
    }
    storeKey(key);
    // What the key may do was read by the check.
    await showApp(false);
  });
}

/** @param {boolean} [readingAccess] false when what the key may do is known already */
async function showApp(readingAccess = true) {
  const key = storedKey() ?? '';
  if (readingAccess) await loadAccess(key);
  const mode = keyMode();
  fill(byId('session'),
    sectionsNav(NAV.filter(([, , scope]) => may(scope)).map(([section, label]) => h('a', { href: `#/${section}`, 'data-section': section }, label))),
    h('span', { class: `badge mode-${mode}`, title: mode === 'test' ? 'Test keys never send real mail.' : null },
      `${mode} mode`),
    h('button', { type: 'button', class: 'secondary', onclick: async () => {
      // Asked as closing the tab is: signing out stops the work under way.
      if (workRunning() && !await confirmDialog({ title: 'Sign out while work is under way?', confirm: 'Sign out', danger: true,
        message: h('p', null, 'Work is still under way in this tab. Signing out stops it where it is.') })) return;
      if (!await discardAsked('Sign out')) return;
      signOut();
    } }, 'Sign out'));
  route();
}

// ---------------------------------------------------------------------------
// Routing: #/<section>[/<id>][?<query>]


/** @type {Array<[string, string, string]>} route section, link text, the scope that reads it (a key without it is not shown the link) */
const NAV = [['emails', 'Emails', 'emails:read'], ['domains', 'Domains', 'domains:read'], ['events', 'Events', 'events:read'],
  ['analytics', 'Analytics', 'analytics:read'], ['queue', 'Queue', 'queue:read'], ['inbound', 'Inbound', 'inbound:read'],
  ['templates', 'Templates', 'templates:read'], ['broadcasts', 'Broadcasts', 'broadcasts:read'], ['contacts', 'Contacts', 'contacts:read'],
  ['suppressions', 'Suppressions', 'suppressions:read'], ['webhooks', 'Webhooks', 'webhooks:read'], ['api-keys', 'API keys', 'api_keys:read']];

/** @type {Array<[RegExp, (ctx: Ctx) => void | Promise<void>]>} */
const ROUTES = [
  ...EMAIL_ROUTES,
  ...DOMAIN_ROUTES,
  ...EVENT_ROUTES,
  ...INBOUND_ROUTES,
  ...SUPPRESSION_ROUTES,
  ...API_KEY_ROUTES,
  ...TEMPLATE_ROUTES,
  ...WEBHOOK_ROUTES,
  ...ANALYTICS_ROUTES,
  ...QUEUE_ROUTES,
  ...BROADCAST_ROUTES,
  ...CONTACT_ROUTES,
];


/** The hash of the view on the page, to go back to when the person chooses to stay with unsaved edits. */
let shownHash = location.hash;

function route() {
  shownHash = location.hash;
  markDrawn();
  if (!storedKey()) return showSignIn();
  const [path = '', search = ''] = location.hash.replace(/^#/, '').split(/\?(.*)/s);
  const home = NAV.find(([, , scope]) => may(scope));
  if (path === '' || path === '/') return location.replace(`#/${home?.[0] ?? 'emails'}`);
  const view = h('section', { class: 'view' });
  leaveView();
  // The note's place stays on the page from one view to the next: a live region reads out a note put into it, where
  // one that comes with its text may go unsaid.
  const app = byId('app');
  const note = document.getElementById('note') ?? h('div', { id: 'note', role: 'status' });
  fill(note, takePendingNote());
  if (note.isConnected) {
    for (const child of [...app.childNodes]) if (child !== note) child.remove();
  } else {
    app.replaceChildren(note);
  }
  app.append(view);
  const section = path.split('/')[1];
  for (const link of document.querySelectorAll('nav a[data-section]')) {
    if (link.getAttribute('data-section') === section) {
      link.setAttribute('aria-current', 'page');
      inSight(link);
    } else {
      link.removeAttribute('aria-current');
    }
  }
  // A section the key may not read is said so here, rather than by the API's 403 inside its view.
  const unreadable = NAV.find(([s, , scope]) => s === section && !may(scope));
  if (unreadable) {
    fill(view, ...closedSection(unreadable, home));
    arrived(view);
    return;
  }
  for (const [pattern, render] of ROUTES) {
    const match = pattern.exec(path.replace(/\/$/, ''));
    if (!match) continue;
    const ids = match.slice(1).map(safeDecode);
    if (ids.includes(null)) continue;
    const decoded = /** @type {string[]} */ (ids);
    void Promise.resolve(render({ view, id: decoded[0] ?? '', ids: decoded, query: new URLSearchParams(search) }))
      .then(() => arrived(view), () => {});
    return;
  }
  fill(view, h('h1', null, 'Page not found'), home && h('p', null, h('a', { href: `#/${home[0]}` }, `Go to ${home[1]}`)));
  arrived(view);
}

let firstView = true;

/**
 * Says which page is shown, as a page load would: the tab's title names it, and the focus moves to its heading
 * (unless the view put it on a field of its own), so a screen reader reads where the person arrived and the
 * keyboard goes on from there.
 * @param {HTMLElement} view
 */
function arrived(view) {
  if (!view.isConnected) return;
  const heading = view.querySelector('h1');
  document.title = heading?.textContent ? `${heading.textContent} · Mailroom` : 'Mailroom';
  // A page just loaded starts the keyboard at its top, the skip link first, as any page does.
  const loaded = firstView;
  firstView = false;
  if (loaded || !heading || view.contains(document.activeElement) || document.querySelector('dialog[open]')) return;
  focusViewHeading();
}

/** The skip link goes to the view's heading without changing the route, which a link to #app would. @param {Event} event */
function skipToContent(event) {
  event.preventDefault();
  const target = byId('app').querySelector('h1') ?? byId('app');
  target.tabIndex = -1;
  target.focus();
}

/**
 * The row of sections, which scrolls sideways where the window is too narrow for all of them (a tablet, a phone): at
 * each end where sections are out of sight, the row fades under an arrow, so that it plainly goes on. Tab scrolls
 * each section into sight, clear of the arrows (app.css); the arrows are for a pointer, a click scrolling the row by
 * most of its width, and screen readers, which read every link whether in sight or not, are not given them.
 * @param {HTMLElement[]} links
 */
function sectionsNav(links) {
  const row = h('div', { class: 'section-row' }, links);
  /** @param {'before' | 'after'} side */
  const arrow = (side) => h('span', { class: `section-more ${side}`, 'aria-hidden': 'true', onclick: () => {
    const still = matchMedia('(prefers-reduced-motion: reduce)').matches;
    row.scrollBy({ left: (side === 'after' ? 0.8 : -0.8) * row.clientWidth, behavior: still ? 'auto' : 'smooth' });
  } }, side === 'after' ? '›' : '‹');
  const nav = h('nav', { 'aria-label': 'Main' }, row, arrow('before'), arrow('after'));
  const markHidden = () => {
    nav.classList.toggle('more-before', row.scrollLeft > 1);
    nav.classList.toggle('more-after', row.scrollLeft < row.scrollWidth - row.clientWidth - 1);
  };
  row.addEventListener('scroll', markHidden, { passive: true });
  // The browser scrolls a link the focus comes to only into the row's sight, where an arrow may lie over it; its
  // scroll-padding (app.css) keeps it clear of them.
  row.addEventListener('focusin', (event) => {
    if (event.target instanceof Element) event.target.scrollIntoView({ block: 'nearest', inline: 'nearest' });
  });
  new ResizeObserver(markHidden).observe(row);
  return nav;
}

/**
 * Scrolls a phone's row of sections, which runs past the screen, so that the current one is in its middle.
 * The page itself is not scrolled, as scrollIntoView would.
 * @param {Element} link
 */
function inSight(link) {
  const nav = link.parentElement;
  if (!nav || nav.scrollWidth <= nav.clientWidth) return;
  const [row, shown] = [nav.getBoundingClientRect(), link.getBoundingClientRect()];
  nav.scrollLeft += shown.left - row.left - (row.width - shown.width) / 2;
}

/**
 * What a section the key may not read shows: which scope it lacks, and where the key may go instead.
 * @param {[string, string, string]} section @param {[string, string, string] | undefined} home the first section the key may read
 */
function closedSection([, label, scope], home) {
  return [
    h('h1', null, label),
    h('p', { class: 'withheld' }, 'This key cannot read this section: it lacks ', h('code', null, scope), '.'),
    home && h('p', null, h('a', { href: `#/${home[0]}` }, `Go to ${home[1]}`)),
  ];
}

/** @param {string} segment @returns {string | null} null for a malformed %-escape */
function safeDecode(segment) {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------

document.querySelector('.skip-link')?.addEventListener('click', skipToContent);
// A note says what the last action did ("Saved."): once the person changes the form again, it would tell of edits it
// does not cover. A lasting one says what the edits are made to, and stays.
byId('app').addEventListener('input', (event) => {
  const note = document.getElementById('note');
  if (note && event.target instanceof Node && !note.contains(event.target) && !note.querySelector('[data-lasting]')) fill(note);
});
whenSessionEnds((message) => signOut(message));
window.addEventListener('hashchange', async () => {
  if (await leaveAsked(shownHash)) route();
});
if (storedKey()) void showApp();
else showSignIn();
