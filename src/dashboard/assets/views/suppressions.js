// @ts-check
// Suppressions: the addresses no email of the workspace is sent to, and why;
// found by address or reason, added by hand, and removed.
import { may, withheldNote } from '../access.js';
import { api, ApiError } from '../api.js';
import { filterForm, filterSelect, filterText, pagedTable } from '../lists.js';
import { hashOf, navigate } from '../nav.js';
import { actionsColumn, clipped, fieldErrors, fill, h, rowAction, time, whileBusy } from '../ui.js';

/** @typedef {import('../nav.js').Ctx} Ctx */
/**
 * @template T
 * @typedef {import('../ui.js').Column<T>} Column
 */
/** @typedef {'hard_bounce' | 'complaint' | 'unsubscribe' | 'manual'} Reason */
/** @typedef {{ id: string, email: string, reason: Reason, created_at: string }} Suppression */

/** The reasons, as the list's filter offers them. */
const REASONS = /** @type {Array<[Reason, string]>} */ ([['hard_bounce', 'Hard bounce'], ['complaint', 'Complaint'],
  ['unsubscribe', 'Unsubscribe'], ['manual', 'Added by hand']]);

/** A reason as a person reads it. @param {Reason} reason */
export const reasonLabel = (reason) => REASONS.find(([r]) => r === reason)?.[1] ?? reason;

/** The scope of adding and removing suppressions. */
const SUPPRESSIONS_WRITE = 'suppressions:write';

/** @type {Array<[RegExp, (ctx: Ctx) => void | Promise<void>]>} */
export const SUPPRESSION_ROUTES = [
  [/^\/suppressions$/, showSuppressions],
];

/** @param {Ctx} ctx */
function showSuppressions({ view, query }) {
  const filters = [
    filterText('Address', 'email', query, 'the whole address'),
    filterSelect('Reason', 'reason', query, 'any', REASONS),
  ];
  const list = h('div');
  fill(view, h('h1', null, 'Suppressions'), h('p', { class: 'muted' }, 'No email of this workspace is sent to these addresses.'),
    withheldNote(SUPPRESSIONS_WRITE, 'adding and removing suppressions'), filterForm('/suppressions', filters), list, may(SUPPRESSIONS_WRITE) && addForm());
  /** @type {Column<Suppression>[]} */
  const columns = [
    // The address leads to the mail sent to it, where what made it suppressed (a bounce, a complaint) is read.
    { header: 'Email', cell: (s) => (may('emails:read') ? clipped(s.email, { href: hashOf('/emails', new URLSearchParams({ to: s.email })) }) : clipped(s.email)),
      role: 'primary' },
    { header: 'Reason', cell: (s) => reasonLabel(s.reason) },
    { header: 'Created', cell: (s) => time(s.created_at), className: 'nowrap' },
    ...(may(SUPPRESSIONS_WRITE) ? [actionsColumn((/** @type {Suppression} */ s) => rowAction('Remove', {
      title: `Remove ${s.email} from the suppressions?`, confirm: 'Remove',
      message: h('p', null, 'Email to it will be sent again.') }, async () => {
        await api('DELETE', `/v1/suppressions/${encodeURIComponent(s.id)}`);
        navigate(location.hash, `${s.email} is no longer suppressed.`);
      }))] : []),
  ];
  return pagedTable(list, { api: '/v1/suppressions', route: '/suppressions', query, filters, columns,
    empty: filters.some((f) => query.has(f.control.name))
      ? ['No suppression matches. The address is matched whole. ', h('a', { href: '#/suppressions' }, 'Show all suppressions')]
      : `No suppressed addresses. An address is added when it bounces hard, complains or unsubscribes, or through the API${may(SUPPRESSIONS_WRITE) ? ', or below' : ''}.` });
}

/** Suppresses an address by hand; the API's refusal shows beside the address. */
function addForm() {
  const errors = fieldErrors();
  const email = h('input', { id: 'new-suppression', type: 'email', required: true, autocomplete: 'off',
    placeholder: 'someone@example.com' });
  // The form's one field: every refusal shows beside it.
  const near = errors.slot('email', 'Email address', email);
  const submit = h('button', { type: 'submit' }, 'Suppress');
  return h('form', { class: 'panel suppression-form', novalidate: true, onsubmit: (event) => {
    event.preventDefault();
    void whileBusy(submit, async () => {
      try {
        /** @type {Suppression} */
        const added = await api('POST', '/v1/suppressions', { body: { email: email.value.trim() } });
        navigate(hashOf('/suppressions', new URLSearchParams({ email: added.email })), `${added.email} is suppressed: no email of this workspace goes to it.`);
      } catch (err) {
        errors.show(err, near);
        // Already there: the refusal leads to it.
        if (err instanceof ApiError && err.code === 'already_exists') {
          near.append(h('p', null, h('a', { href: hashOf('/suppressions', new URLSearchParams({ email: email.value.trim() })) }, 'Show it in the list')));
        }
      }
    });
  } },
  h('h2', null, 'Suppress an address'),
  h('p', { class: 'muted small' }, 'Email to it is skipped, as after a hard bounce; the reason is recorded as added by hand. Its contact, if any, keeps its status.'),
  h('div', { class: 'inline-form' }, h('label', { for: 'new-suppression' }, 'Email address'), email, submit),
  near);
}
