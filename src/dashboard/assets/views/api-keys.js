// @ts-check
// API keys: the workspace's keys (masked), creating one (its token shown
// once) and revoking one; revoking the key this tab uses signs it out.
import { api, endSession, storedKey } from '../api.js';
import { pagedTable } from '../lists.js';
import { navigate } from '../nav.js';
import { actionForm, actionsColumn, badge, fill, h, rowAction, time } from '../ui.js';

/** @typedef {import('../nav.js').Ctx} Ctx */
/**
 * @template T
 * @typedef {import('../ui.js').Column<T>} Column
 */
/**
 * `token` is masked, except in the answer to createApiKey.
 * @typedef {{ id: string, name: string, mode: 'live' | 'test', token: string, scopes: string[],
 *   created_at: string, last_used_at: string | null, revoked_at: string | null }} ApiKey
 */

/** @type {Array<[RegExp, (ctx: Ctx) => void | Promise<void>]>} */
export const API_KEY_ROUTES = [
  [/^\/api-keys$/, showApiKeys],
];

/** The key as GET /v1/api-keys lists it: svc_<mode>_<first 4 of the lookup part>…<last 4>. @param {string} key */
function maskedKey(key) {
  const prefix = /^svc_(live|test)_/.exec(key)?.[0] ?? '';
  return `${prefix}${key.slice(prefix.length, prefix.length + 4)}…${key.slice(-4)}`;
}

/** @param {Ctx} ctx */
function showApiKeys({ view, query }) {
  const name = h('input', { id: 'key-name', name: 'name', type: 'text', required: true, maxlength: 100, autocomplete: 'off' });
  const list = h('div');
  fill(view, h('h1', null, 'API keys'), list, h('h2', null, 'Create a key'),
    h('p', { class: 'muted small' }, 'The new key has full access, in the mode of the key you are signed in with.'),
    actionForm({ class: 'inline-form' }, async (errors) => {
      try {
        /** @type {ApiKey} */
        const created = await api('POST', '/v1/api-keys', { body: { name: name.value.trim() } });
        navigate('#/api-keys', newKeyNote(created));
      } catch (err) {
        errors.show(err);
      }
    },
    h('label', { for: 'key-name' }, 'Key name'), name,
    h('button', { type: 'submit' }, 'Create key')));
  const current = maskedKey(storedKey() ?? '');
  /** @type {Column<ApiKey>[]} */
  const columns = [
    { header: 'Name', cell: (k) => k.name },
    { header: 'Mode', cell: (k) => badge(k.mode), role: 'status' },
    { header: 'Scopes', cell: (k) => k.scopes.join(', ') },
    { header: 'Created', cell: (k) => time(k.created_at), className: 'nowrap' },
    { header: 'Last used', cell: (k) => time(k.last_used_at), className: 'nowrap' },
    { header: 'Token', cell: (k) => [h('code', null, k.token), k.token === current && h('span', { class: 'muted small' }, ' this key')] },
    actionsColumn((k) => revokeButton(k, k.token === current)),
  ];
  return pagedTable(list, { api: '/v1/api-keys', route: '/api-keys', query, columns, empty: 'No API keys.' });
}

/** The raw token is in the answer to createApiKey only. @param {ApiKey} key */
function newKeyNote(key) {
  const copy = h('button', { type: 'button', class: 'secondary', onclick: () => {
    navigator.clipboard.writeText(key.token).then(() => fill(copy, 'Copied'), () => fill(copy, 'Select the key to copy it'));
  } }, 'Copy');
  return h('div', { role: 'status', class: 'flash' },
    h('p', null, `Key “${key.name}” created. Copy this key now; it is not shown again.`),
    h('p', null, h('code', { class: 'copyable token' }, key.token), ' ', copy));
}

/**
 * @param {ApiKey} key
 * @param {boolean} isCurrent  the key this tab is signed in with
 */
function revokeButton(key, isCurrent) {
  if (key.revoked_at) return ['revoked ', time(key.revoked_at)];
  const question = isCurrent
    ? `Revoke “${key.name}”? It is the key you are signed in with: you will be signed out.`
    : `Revoke “${key.name}”? Anything using it stops working at once.`;
  return rowAction('Revoke', 'danger', question, async () => {
    await api('DELETE', `/v1/api-keys/${encodeURIComponent(key.id)}`);
    if (isCurrent) endSession('You revoked the key you were signed in with.');
    else navigate(location.hash, `“${key.name}” was revoked.`);
  });
}
