// @ts-check
// API keys: the workspace's keys (masked), creating one with its scopes (its
// token shown once), a key's page with the trail of writes it made, and
// revoking one; revoking the key this tab uses signs it out.
import { may, withheldNote } from '../access.js';
import { api, endSession, storedKey } from '../api.js';
import { loadRecord, pagedTable } from '../lists.js';
import { navigate } from '../nav.js';
import { actionsColumn, badge, clipped, code, copyable, details, fieldErrors, fill, h, none, rowAction, time, whileBusy } from '../ui.js';

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
/**
 * @typedef {{ id: string, operation_id: string, method: string, path: string, status: number, resource_id: string | null,
 *   request_id: string, ip: string | null, created_at: string }} Activity
 */

/** The fine scopes a key may hold (the contract's ApiKeyCreate), each with what it allows, each area's together. */
const SCOPES = /** @type {Array<[string, string]>} */ ([
  ['emails:send', 'Send emails and attachments; reschedule, cancel and resend them.'],
  ['emails:read', 'Read emails, their timelines, attachments and sources. The dashboard signs in with it.'],
  ['domains:read', 'Read domains and their DNS records.'],
  ['domains:write', 'Add, verify, change and delete domains; rotate their DKIM keys.'],
  ['events:read', 'Read the event log.'],
  ['contacts:read', 'Read contacts and tags.'],
  ['contacts:write', 'Add, import, change, tag, unsubscribe and delete contacts; make and delete tags.'],
  ['suppressions:read', 'Read the suppression list.'],
  ['suppressions:write', 'Suppress addresses and lift suppressions.'],
  ['webhooks:read', 'Read webhook endpoints and their deliveries.'],
  ['webhooks:write', 'Add, change and delete endpoints; test, replay, rotate secrets.'],
  ['inbound:read', 'Read received mail and its attachments.'],
  ['analytics:read', 'Read sending statistics.'],
  ['templates:read', 'Read templates, their versions and previews.'],
  ['templates:write', 'Create, edit, publish, duplicate and delete templates.'],
  ['broadcasts:read', 'Read broadcasts, their previews and audiences.'],
  ['broadcasts:write', 'Create, edit, send, pause, resume, cancel and delete broadcasts.'],
  ['queue:read', 'Read the delivery queue.'],
  ['queue:write', 'Hold, release and retry queued mail.'],
  ['api_keys:read', 'Read API keys and their activity.'],
  ['api_keys:write', 'Create and revoke API keys.'],
]);

/**
 * The access a new key may be given, as Resend and Postmark offer it: one of the API's two bundles, or fine scopes
 * chosen one by one. `needs` is what the signed-in key must hold to grant the bundle: `full_access` itself, since a
 * key holding every fine scope still may not grant it (canGrant in core/scopes.ts).
 * @typedef {{ id: string, label: string, what: string, scope?: string, needs?: string }} Access
 * @type {Access[]}
 */
const ACCESS = [
  { id: 'full', label: 'Full access', what: 'Everything, creating and revoking API keys included.', scope: 'full_access', needs: 'full_access' },
  { id: 'sending', label: 'Sending access', what: 'Sending email only (emails:send): it can read nothing back.', scope: 'sending_access',
    needs: 'emails:send' },
  { id: 'custom', label: 'Custom', what: 'The scopes you choose, area by area.' },
];

/** The scope of creating and revoking keys. */
const API_KEYS_WRITE = 'api_keys:write';

/** The dashboard page of a resource an activity row names, by its id's prefix. */
const RESOURCE_ROUTES = /** @type {Record<string, string>} */ ({
  em: 'emails', dom: 'domains', in: 'inbound', wh: 'webhooks', ct: 'contacts', bc: 'broadcasts', tpl: 'templates', key: 'api-keys',
});

/** @type {Array<[RegExp, (ctx: Ctx) => void | Promise<void>]>} */
export const API_KEY_ROUTES = [
  [/^\/api-keys$/, showApiKeys],
  [/^\/api-keys\/([^/]+)$/, showApiKey],
];

/** @param {string} id */
const keyHref = (id) => `#/api-keys/${encodeURIComponent(id)}`;
/** @param {string} id */
const keyPath = (id) => `/v1/api-keys/${encodeURIComponent(id)}`;

/** The key as GET /v1/api-keys lists it: svc_<mode>_<first 4 of the lookup part>…<last 4>. @param {string} key */
function maskedKey(key) {
  const prefix = /^svc_(live|test)_/.exec(key)?.[0] ?? '';
  return `${prefix}${key.slice(prefix.length, prefix.length + 4)}…${key.slice(-4)}`;
}

/** @param {Ctx} ctx */
function showApiKeys({ view, query }) {
  const list = h('div');
  fill(view, h('h1', null, 'API keys'), withheldNote(API_KEYS_WRITE, 'creating and revoking keys'), list, may(API_KEYS_WRITE) && createForm());
  const current = maskedKey(storedKey() ?? '');
  /** @type {Column<ApiKey>[]} */
  const columns = [
    { header: 'Name', cell: (k) => h('a', { href: keyHref(k.id) }, k.name), role: 'primary' },
    { header: 'Mode', cell: (k) => badge(k.mode), role: 'status' },
    { header: 'Scopes', cell: (k) => k.scopes.join(', ') },
    { header: 'Created', cell: (k) => time(k.created_at), className: 'nowrap', minor: true },
    { header: 'Last used', cell: (k) => time(k.last_used_at), className: 'nowrap' },
    { header: 'Token', cell: (k) => [h('code', null, k.token), k.token === current && h('span', { class: 'muted small' }, ' this key')] },
    actionsColumn((k) => revokeButton(k, k.token === current)),
  ];
  return pagedTable(list, { api: '/v1/api-keys', route: '/api-keys', query, columns, empty: 'No API keys.' });
}

/**
 * The form that creates a key: full, sending or custom access, the fine scopes shown for custom only. What the signed-in
 * key cannot grant (the API's 403) is left out, and a line says so; the API's refusals show beside the field they name.
 */
function createForm() {
  const errors = fieldErrors();
  const near = h('div');
  const name = h('input', { id: 'key-name', name: 'name', type: 'text', required: true, autocomplete: 'off' });
  const offered = ACCESS.filter((access) => !access.needs || may(access.needs));
  const radios = offered.map((access, i) => h('input', { type: 'radio', name: 'access', id: `access-${access.id}`, value: access.id,
    checked: i === 0, 'aria-describedby': `access-${access.id}-what` }));
  const options = offered.map((access, i) => h('div', { class: 'scope-choice scope-option' }, radios[i],
    h('span', null, h('label', { for: `access-${access.id}` }, access.label),
      h('span', { id: `access-${access.id}-what`, class: 'muted small' }, access.what))));
  const withheld = ACCESS.filter((access) => !offered.includes(access)).map((access) => h('p', { class: 'muted small key-lacks' },
    `${access.label} is not offered: your key lacks `, h('code', null, access.needs), '.'));
  const grantable = SCOPES.filter(([scope]) => may(scope));
  const lacking = SCOPES.filter(([scope]) => !may(scope)).map(([scope]) => scope);
  const boxes = grantable.map(([scope]) => h('input', { type: 'checkbox', id: `scope-${scope}`, value: scope, 'aria-describedby': `scope-${scope}-what` }));
  // Named by the scope alone, what it allows read out after it.
  const choices = grantable.map(([scope, what], i) => h('div', { class: 'scope-choice' }, boxes[i],
    h('span', null, h('label', { for: `scope-${scope}` }, h('code', null, scope)), h('span', { id: `scope-${scope}-what`, class: 'muted small' }, what))));
  const custom = h('fieldset', { class: 'scope-custom' }, h('legend', null, 'Scopes'),
    h('div', { class: 'scope-list' }, byArea(grantable.map(([scope]) => scope), choices)),
    lacking.length > 0 && h('p', { class: 'muted small key-lacks' }, 'Not listed, as your key lacks them: ',
      lacking.flatMap((scope, i) => [i > 0 && ', ', h('code', null, scope)]), '.'));
  const chosen = () => offered[radios.findIndex((radio) => radio.checked)];
  const showCustom = () => {
    custom.hidden = chosen().id !== 'custom';
  };
  for (const radio of radios) radio.addEventListener('change', showCustom);
  showCustom();
  const scopesError = errors.slot('scopes', 'Access');
  const submit = h('button', { type: 'submit' }, 'Create key');
  return h('form', { class: 'panel key-form', novalidate: true, onsubmit: (event) => {
    event.preventDefault();
    const access = chosen();
    const scopes = access.scope ? [access.scope] : boxes.filter((box) => box.checked).map((box) => box.value);
    if (scopes.length === 0) {
      errors.show(new Error('Choose at least one scope.'), scopesError);
      return;
    }
    void whileBusy(submit, async () => {
      try {
        /** @type {ApiKey} */
        const created = await api('POST', '/v1/api-keys', { body: { name: name.value.trim(), scopes } });
        navigate('#/api-keys', newKeyNote(created));
      } catch (err) {
        errors.show(err, near);
      }
    });
  } },
  h('h2', null, 'Create a key'),
  h('p', { class: 'muted small' }, 'In the mode of the key you are signed in with, and with no more than it holds.'),
  h('div', { class: 'form-grid' }, h('label', { for: 'key-name' }, 'Key name'), h('div', null, name, errors.slot('name', 'Key name', name))),
  // Custom, always offered, comes last, its scopes under it.
  h('fieldset', { class: 'scope-choices' }, h('legend', null, 'Access'), options.slice(0, -1), withheld, options.at(-1), custom),
  scopesError,
  near, submit);
}

/**
 * The choices of fine scopes, each area's together (`emails:send` with `emails:read`), so that a column does not part them.
 * @param {string[]} scopes @param {HTMLElement[]} choices  in the same order
 */
function byArea(scopes, choices) {
  /** @type {Map<string, HTMLElement[]>} */
  const areas = new Map();
  scopes.forEach((scope, i) => {
    const area = scope.split(':')[0];
    areas.set(area, [...areas.get(area) ?? [], choices[i]]);
  });
  return [...areas.values()].map((group) => h('div', { class: 'scope-area' }, group));
}

/** @param {Ctx} ctx */
async function showApiKey({ view, id, query }) {
  /** @type {ApiKey | undefined} */
  const key = await loadRecord(view, 'API key', keyPath(id), { href: '#/api-keys', label: 'All API keys' });
  if (!key) return;
  const isCurrent = key.token === maskedKey(storedKey() ?? '');
  const activity = h('div');
  fill(view,
    h('div', { class: 'title-row' }, h('h1', null, key.name), badge(key.mode), key.revoked_at && badge('revoked'),
      h('span', { class: 'spacer' }), !key.revoked_at && revokeButton(key, isCurrent)),
    h('p', null, h('a', { href: '#/api-keys' }, '← All API keys'), ' · id ', code(key.id)),
    details([
      ['Token', [code(key.token), isCurrent && h('span', { class: 'muted small' }, ' the key you are signed in with')]],
      ['Scopes', key.scopes.map((s) => h('span', { class: 'tag' }, s))],
      ['Created', time(key.created_at)],
      ['Last used', time(key.last_used_at)],
      ['Revoked', time(key.revoked_at)],
    ]),
    h('h2', null, 'Activity'),
    h('p', { class: 'muted small' }, 'Every write the key made, newest first; reads are not recorded.'),
    activity);
  await pagedTable(activity, {
    api: `${keyPath(id)}/activity`, route: `/api-keys/${encodeURIComponent(id)}`, query, columns: ACTIVITY_COLUMNS,
    empty: 'No writes yet.',
  });
}

/** The resource a write acted on: a link where it has a page here. @param {string | null} id */
function resourceLink(id) {
  if (!id) return none();
  const section = RESOURCE_ROUTES[/^([a-z]+)_/.exec(id)?.[1] ?? ''];
  return section ? h('a', { href: `#/${section}/${encodeURIComponent(id)}`, class: 'clip', title: id }, id) : clipped(id);
}

/**
 * At tablet widths the request line and the address are left out: the operation names the request, the resource links
 * to what it made; a phone's cards show both.
 * @type {Column<Activity>[]}
 */
const ACTIVITY_COLUMNS = [
  { header: 'Time', cell: (a) => time(a.created_at, true), className: 'nowrap' },
  { header: 'Operation', cell: (a) => a.operation_id, role: 'primary' },
  { header: 'Request', cell: (a) => clipped(`${a.method} ${a.path}`), minor: true },
  { header: 'Status', cell: (a) => h('code', { class: a.status >= 400 ? 'http-refused' : null, title: `Request id ${a.request_id}` }, String(a.status)),
    role: 'status' },
  { header: 'Resource', cell: (a) => resourceLink(a.resource_id) },
  { header: 'IP', cell: (a) => code(a.ip), minor: true },
];

/** The raw token is in the answer to createApiKey only. @param {ApiKey} key */
function newKeyNote(key) {
  return h('div', { class: 'flash' },
    h('p', null, `Key “${key.name}” created. Copy this key now; it is not shown again.`),
    h('p', null, copyable(key.token, { label: 'new key', className: 'token' })));
}

/**
 * When the key was revoked, or the button that revokes it (none for a key that may not).
 * @param {ApiKey} key
 * @param {boolean} isCurrent  the key this tab is signed in with
 */
function revokeButton(key, isCurrent) {
  if (key.revoked_at) return ['revoked ', time(key.revoked_at)];
  if (!may(API_KEYS_WRITE)) return null;
  return rowAction('Revoke', { title: `Revoke “${key.name}”?`, confirm: 'Revoke', danger: true,
    message: [h('p', null, 'Anything using it stops working at once.'),
      isCurrent && h('p', null, 'It is the key you are signed in with: you will be signed out.')] }, async () => {
    await api('DELETE', `/v1/api-keys/${encodeURIComponent(key.id)}`);
    if (isCurrent) endSession('You revoked the key you were signed in with.');
    else navigate(location.hash, `“${key.name}” was revoked.`);
  });
}
