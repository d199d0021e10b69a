// @ts-check
// What the signed-in key may do, read once per sign-in from GET
// /v1/api-keys/current, so that views offer only the actions it may take.
// An action the key may not take is not shown; the view says in one line
// which scope it lacks, so that nothing seems simply missing. When the scopes
// cannot be read (an older server, a network error) everything is offered,
// and the API's 403 says what is missing, as before.
import { request } from './api.js';
import { h } from './ui.js';

/**
 * The key's scopes as granted (`full_access` among them for a full-access key, the one kind that may grant it) and the
 * fine scopes they amount to; null while unknown, which offers everything.
 * @type {Set<string> | null}
 */
let granted = null;

/**
 * Reads and keeps what `key` may do; throws what the request throws, the scopes then unknown.
 * @param {string} key
 * @returns {Promise<{ scopes: string[], effective_scopes: string[] }>}
 */
export async function readAccess(key) {
  granted = null;
  const current = await request(key, 'GET', '/v1/api-keys/current');
  granted = new Set([...current.scopes, ...current.effective_scopes]);
  return current;
}

/** Reads the scopes of `key`; never throws, a failure leaves them unknown. @param {string} key */
export async function loadAccess(key) {
  await readAccess(key).catch(() => undefined);
}

export function forgetAccess() {
  granted = null;
}

/** Whether the signed-in key holds `scope`, a fine scope or `full_access` (or its scopes are unknown). @param {string} scope */
export function may(scope) {
  return granted === null || granted.has(scope);
}

/**
 * The line that stands in for the actions a key lacking `scope` is not offered, `what` naming them
 * ("adding, verifying and deleting domains"); nothing when the key holds it.
 * @param {string} scope
 * @param {string} what
 */
export function withheldNote(scope, what) {
  if (may(scope)) return null;
  return h('p', { class: 'withheld' }, 'Read only here: this key lacks ', h('code', null, scope), `, needed for ${what}.`);
}

/**
 * `form` as a key lacking `scope` may see it: its values still read, its fields fixed and its buttons gone.
 * @template {HTMLElement} F
 * @param {string} scope
 * @param {F} form
 * @returns {F}
 */
export function fixedUnless(scope, form) {
  if (may(scope)) return form;
  for (const field of form.querySelectorAll('input, select, textarea')) field.setAttribute('disabled', '');
  // A source editor (code-editor.js) is fixed through its property; it is not a form control.
  for (const code of form.querySelectorAll('.code-field')) /** @type {import('./code-editor.js').CodeField} */ (code).disabled = true;
  for (const button of form.querySelectorAll('button')) button.remove();
  return form;
}
