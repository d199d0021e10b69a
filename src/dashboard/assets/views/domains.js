// @ts-check
// Domains: the list, adding one, and a domain's page with the DNS records to
// publish, their status, and a Verify button that checks them now.
import { api } from '../api.js';
import { loadRecord, pagedTable } from '../lists.js';
import { navigate, showNote } from '../nav.js';
import { actionForm, badge, code, details, errorSlot, fill, h, hrefTo, table, time, whileBusy } from '../ui.js';

/** @typedef {import('../nav.js').Ctx} Ctx */
/**
 * @template T
 * @typedef {import('../ui.js').Column<T>} Column
 */
/**
 * @typedef {{ record: string, type: string, name: string, value: string, priority?: number, required: boolean,
 *   status: string, detail?: string }} DomainRecord
 */
/**
 * @typedef {{ id: string, name: string, status: string, status_reason: string | null, region: string,
 *   return_path: string, open_tracking: boolean, click_tracking: boolean, tracking_subdomain: string,
 *   inbound_enabled: boolean, records: DomainRecord[], last_checked_at: string | null, created_at: string }} Domain
 */

/** @type {Array<[RegExp, (ctx: Ctx) => void | Promise<void>]>} */
export const DOMAIN_ROUTES = [
  [/^\/domains$/, showDomains],
  [/^\/domains\/([^/]+)$/, showDomain],
];

/**
 * A link to a domain, named once its record is read: an id means little to a
 * person. The id stays, as the title, and as the text if the name cannot be read.
 * @param {string} id
 */
export function domainLink(id) {
  const link = h('a', { href: hrefTo('domains', id), title: id }, id);
  api('GET', `/v1/domains/${encodeURIComponent(id)}`).then((/** @type {Domain} */ domain) => fill(link, domain.name), () => {});
  return link;
}

/** @param {Ctx} ctx */
function showDomains({ view, query }) {
  const name = h('input', { id: 'domain-name', name: 'name', type: 'text', required: true,
    placeholder: 'example.com', autocomplete: 'off' });
  const list = h('div');
  fill(view, h('h1', null, 'Domains'), list, h('h2', null, 'Add a domain'),
    actionForm({ class: 'inline-form' }, async (errors) => {
      try {
        /** @type {Domain} */
        const domain = await api('POST', '/v1/domains', { body: { name: name.value.trim() } });
        navigate('#/domains', `${domain.name} was added. Open it for the DNS records to publish, then press Verify there.`);
      } catch (err) {
        errors.show(err);
      }
    },
    h('label', { for: 'domain-name' }, 'Domain name'), name,
    h('button', { type: 'submit' }, 'Add domain')));
  /** @type {Column<Domain>[]} */
  const columns = [
    { header: 'Name', cell: (d) => h('a', { href: hrefTo('domains', d.id) }, d.name) },
    { header: 'Status', cell: (d) => badge(d.status), role: 'status' },
    { header: 'Created', cell: (d) => time(d.created_at), className: 'nowrap' },
  ];
  return pagedTable(list, { api: '/v1/domains', route: '/domains', query, columns,
    empty: 'No domains yet. Add the domain you send from below; its page then lists the DNS records to publish.' });
}

/** @param {Ctx} ctx */
async function showDomain({ view, id }) {
  const path = `/v1/domains/${encodeURIComponent(id)}`;
  /** @type {Domain | undefined} */
  const domain = await loadRecord(view, 'Domain', path, { href: '#/domains', label: 'All domains' });
  if (domain) renderDomain(view, domain, path);
}

/**
 * @param {HTMLElement} view
 * @param {Domain} domain
 * @param {string} path
 */
function renderDomain(view, domain, path) {
  const errors = errorSlot();
  const verify = h('button', { type: 'button', onclick: () => void whileBusy(verify, async () => {
    try {
      // The answer is the domain after the check: show it as it is.
      /** @type {Domain} */
      const checked = await api('POST', `${path}/verify`);
      renderDomain(view, checked, path);
      showNote(`DNS checked: the domain is ${checked.status}.`);
    } catch (err) {
      errors.show(err);
    }
  }) }, 'Verify');
  fill(view,
    h('h1', null, domain.name),
    h('p', null, badge(domain.status), domain.status_reason && h('span', { class: 'reason' }, domain.status_reason)),
    h('div', { class: 'actions' }, verify, errors.node),
    h('h2', null, 'DNS records'),
    h('p', { class: 'muted small' }, 'Publish these at your DNS provider. Optional records are not needed to send.'),
    table(DNS_COLUMNS, domain.records),
    h('h2', null, 'Settings'),
    details([
      ['ID', code(domain.id)],
      ['Region', domain.region],
      ['Return path', code(domain.return_path)],
      ['Tracking subdomain', code(domain.tracking_subdomain)],
      ['Open tracking', domain.open_tracking ? 'on' : 'off'],
      ['Click tracking', domain.click_tracking ? 'on' : 'off'],
      ['Inbound mail', domain.inbound_enabled ? 'on' : 'off'],
      ['Last checked', time(domain.last_checked_at)],
      ['Created', time(domain.created_at)],
    ]));
}

/** @type {Column<DomainRecord>[]} */
const DNS_COLUMNS = [
  { header: 'Record', cell: (r) => [r.record, !r.required && h('div', { class: 'muted small' }, 'optional')], className: 'nowrap' },
  { header: 'Type', cell: (r) => r.type },
  { header: 'Name', cell: (r) => h('code', { class: 'copyable' }, r.name), className: 'dns-name' },
  { header: 'Value', cell: (r) => h('code', { class: 'copyable' }, r.value), className: 'dns-value' },
  { header: 'Priority', cell: (r) => r.priority },
  { header: 'Status', cell: (r) => [badge(r.status), r.detail && h('div', { class: 'muted small' }, r.detail)], role: 'status' },
];
