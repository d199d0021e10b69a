// @ts-check
// Suppressions: the addresses no email of the workspace is sent to, and why;
// one can be removed.
import { api } from '../api.js';
import { pagedTable } from '../lists.js';
import { navigate } from '../nav.js';
import { actionsColumn, clipped, fill, h, rowAction, time } from '../ui.js';

/** @typedef {import('../nav.js').Ctx} Ctx */
/**
 * @template T
 * @typedef {import('../ui.js').Column<T>} Column
 */
/** @typedef {{ id: string, email: string, reason: string, created_at: string }} Suppression */

/** @type {Array<[RegExp, (ctx: Ctx) => void | Promise<void>]>} */
export const SUPPRESSION_ROUTES = [
  [/^\/suppressions$/, showSuppressions],
];

/** @param {Ctx} ctx */
function showSuppressions({ view, query }) {
  const list = h('div');
  fill(view, h('h1', null, 'Suppressions'), h('p', { class: 'muted' }, 'No email of this workspace is sent to these addresses.'), list);
  /** @type {Column<Suppression>[]} */
  const columns = [
    { header: 'Email', cell: (s) => clipped(s.email) },
    { header: 'Reason', cell: (s) => s.reason },
    { header: 'Created', cell: (s) => time(s.created_at), className: 'nowrap' },
    actionsColumn((s) => rowAction('Remove', 'secondary',
      `Remove ${s.email} from the suppression list? Email to it will be sent again.`, async () => {
        await api('DELETE', `/v1/suppressions/${encodeURIComponent(s.id)}`);
        navigate(location.hash, `${s.email} is no longer suppressed.`);
      })),
  ];
  return pagedTable(list, { api: '/v1/suppressions', route: '/suppressions', query, columns,
    empty: 'No suppressed addresses. An address is added when it bounces hard, complains or unsubscribes, or through the API.' });
}
