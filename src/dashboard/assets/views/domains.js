// @ts-check
// Domains: the list, adding one, and a domain's page with the DNS records to
// publish and their status, a Verify button that checks them now, its
// tracking and inbound settings, DKIM key rotation, and deleting it.
import { fixedUnless, may, withheldNote } from '../access.js';
import { api } from '../api.js';
import { loadRecord, pagedTable } from '../lists.js';
import { navigate, showNote } from '../nav.js';
import {
  actionForm, address, askingButton, badge, code, copyable, details, errorSlot, fieldErrors, fill, h, heldUpNote, hrefTo, table, time, whileBusy,
} from '../ui.js';

/** @typedef {import('../nav.js').Ctx} Ctx */
/** @typedef {import('../ui.js').Children} Children */
/**
 * @template T
 * @typedef {import('../ui.js').Column<T>} Column
 */
/**
 * @typedef {{ record: string, type: string, name: string, value: string, priority?: number, required: boolean,
 *   status: string, detail?: string, key_state?: 'pending' | 'active' | 'retiring', removable_after?: string }} DomainRecord
 */
/**
 * @typedef {{ id: string, name: string, status: string, status_reason: string | null, region: string,
 *   return_path: string, open_tracking: boolean, click_tracking: boolean, tracking_subdomain: string,
 *   inbound_enabled: boolean, records: DomainRecord[], last_checked_at: string | null, created_at: string }} Domain
 */

/** The scope every change of a domain needs. */
const DOMAINS_WRITE = 'domains:write';

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
  fill(view, h('h1', null, 'Domains'), withheldNote(DOMAINS_WRITE, 'adding, verifying, changing and deleting domains'), list,
    may(DOMAINS_WRITE) && h('h2', null, 'Add a domain'),
    may(DOMAINS_WRITE) && actionForm({ class: 'inline-form' }, async (errors) => {
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
    { header: 'Name', cell: (d) => h('a', { href: hrefTo('domains', d.id) }, address(d.name)) },
    { header: 'Status', cell: (d) => badge(d.status), role: 'status' },
    { header: 'DNS records', cell: recordsFound, className: 'prose' },
    { header: 'Last checked', cell: (d) => (d.last_checked_at ? time(d.last_checked_at) : h('span', { class: 'muted' }, 'never')), className: 'nowrap', minor: true },
    { header: 'Created', cell: (d) => time(d.created_at), className: 'nowrap', minor: true },
  ];
  return pagedTable(list, { api: '/v1/domains', route: '/domains', query, columns,
    empty: may(DOMAINS_WRITE) ? 'No domains yet. Add the domain you send from below; its page then lists the DNS records to publish.' : 'No domains yet.' });
}

/**
 * What the domain's DNS still lacks, read from the list: the records sending needs first (named as its page names
 * them), then the optional ones, so a domain stuck verifying says why without being opened.
 * @param {Domain} d
 */
function recordsFound(d) {
  const current = d.records.filter((r) => r.key_state !== 'retiring');
  const needed = current.filter((r) => r.required);
  const missing = needed.filter((r) => r.status !== 'verified');
  const optionalMissing = current.filter((r) => !r.required && r.status !== 'verified');
  const optional = optionalMissing.length > 0 && h('div', { class: 'muted small' }, `Optional, not found: ${optionalMissing.map(recordLabel).join(', ')}`);
  // One block, so that a phone's card puts the optional line under the needed one, not beside it.
  return h('div', null, missing.length === 0 ? h('div', null, `All ${needed.length} needed found`)
    : h('div', { class: 'records-missing' }, `Needs ${missing.map(recordLabel).join(', ')}`,
      h('span', { class: 'muted' }, ` (${needed.length - missing.length} of ${needed.length} found)`)), optional);
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
  // Verify asks nothing: it only reads DNS.
  const verify = h('button', { type: 'button', onclick: () => void whileBusy(verify, async () => {
    fill(errors.node);
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
  const rotate = askingButton('Rotate DKIM key', rotateQuestion(domain), async () => {
    /** @type {Domain} */
    const rotated = await api('POST', `${path}/dkim/rotate`);
    renderDomain(view, rotated, path);
    showNote('A new DKIM key pair was made: publish its two records, marked “new key” below, beside the current ones, then press Verify. '
      + 'Mail stays signed with the current key until the new one is seen in DNS.');
  }, errors);
  const remove = askingButton('Delete', deleteQuestion(domain), async () => {
    await api('DELETE', path);
    navigate('#/domains', `${domain.name} was deleted.`);
  }, errors);
  fill(view,
    h('h1', null, domain.name),
    h('p', { class: 'clamped', title: domain.status_reason }, badge(domain.status),
      domain.status_reason && h('span', { class: 'reason' }, domain.status_reason)),
    withheldNote(DOMAINS_WRITE, 'verifying, changing and deleting this domain'),
    may(DOMAINS_WRITE) && h('div', { class: 'actions' }, verify, rotate, remove),
    errors.node,
    details([
      ['ID', code(domain.id)],
      ['Return path', code(domain.return_path)],
      ['Last checked', domain.last_checked_at ? time(domain.last_checked_at) : h('span', { class: 'muted' }, 'never')],
      ['Created', time(domain.created_at)],
    ]),
    h('h2', null, 'DNS records'),
    unqualifiedHostNote(domain),
    h('p', { class: 'muted small' }, 'Publish these at your DNS provider. Optional records are not needed to send.'),
    table(DNS_COLUMNS, domain.records),
    h('h2', null, 'Settings'),
    settingsForm(view, domain, path));
}

/**
 * The records name this server by its host name (MAILROOM_HOSTNAME): a name without a dot (a laptop's `vm`) is one no
 * receiver can look up, so records naming it could never verify. Said above them, before anyone publishes them.
 * @param {Domain} domain
 */
function unqualifiedHostNote(domain) {
  const host = domain.records.find((r) => r.record === 'MX_BOUNCE')?.value;
  if (!host || host.includes('.')) return null;
  return heldUpNote('host-note', 'These records cannot verify yet: ', 'they name this server as ', h('code', null, host),
    ', which is not a full host name, so no receiver can look it up. Start the server with ', h('code', null, 'MAILROOM_HOSTNAME'),
    ' set to its public name (such as ', h('code', null, 'mail.example.com'), ', with an A record pointing at it); the records follow it.');
}

/** @param {Domain} domain */
function rotateQuestion(domain) {
  return {
    title: `Rotate the DKIM key of ${domain.name}?`, confirm: 'Make a new key',
    message: [
      h('p', null, 'A new key pair (RSA and Ed25519) is made under new selectors, with two new TXT records to publish beside the current ones.'),
      h('p', null, 'Nothing changes for mail until the new RSA record is seen in DNS: the current key signs it until then. '
        + 'From then on the new key signs, and the old records may be deleted from DNS a week later (the list says when).'),
      h('p', { class: 'muted small' }, 'A rotation cannot start while a new key is still waiting for its records.'),
    ],
  };
}

/** @param {Domain} domain */
function deleteQuestion(domain) {
  return {
    title: `Delete ${domain.name}?`, confirm: 'Delete the domain', danger: true,
    message: [
      h('p', null, `Email from addresses at ${domain.name} can no longer be sent with a live key, through the API or SMTP.`),
      h('p', null, 'Its DKIM keys are destroyed: adding the domain again makes new keys, with new records to publish.'),
      domain.inbound_enabled && h('p', null, `Mail to ${domain.name} is no longer received here.`),
      h('p', { class: 'muted small' }, 'The emails already sent from it stay listed.'),
    ],
  };
}

/**
 * The settings PATCH changes, with what each does; what the change adds to the records is said after saving.
 * @param {HTMLElement} view
 * @param {Domain} domain
 * @param {string} path
 */
function settingsForm(view, domain, path) {
  const errors = fieldErrors();
  const near = h('div');
  const mxHost = domain.records.find((r) => r.record === 'MX_BOUNCE')?.value ?? 'this server';
  /** @param {string} id @param {boolean} checked */
  const box = (id, checked) => h('input', { id, type: 'checkbox', checked });
  const open = box('domain-open-tracking', domain.open_tracking);
  const click = box('domain-click-tracking', domain.click_tracking);
  const inbound = box('domain-inbound', domain.inbound_enabled);
  const subdomain = h('input', { id: 'domain-tracking-subdomain', type: 'text', required: true, autocomplete: 'off',
    value: domain.tracking_subdomain, 'aria-describedby': 'domain-tracking-subdomain-hint' });
  const save = h('button', { type: 'submit' }, 'Save settings');
  /** A checkbox, its name and what it does. @param {HTMLInputElement} input @param {string} label @param {Children} hint */
  const setting = (input, label, hint) => {
    input.setAttribute('aria-describedby', `${input.id}-hint`);
    return h('div', { class: 'setting' },
      h('label', { for: input.id, class: 'choice plain' }, input, label), h('p', { id: `${input.id}-hint`, class: 'muted small hint' }, hint));
  };
  return fixedUnless(DOMAINS_WRITE, h('form', { class: 'panel domain-settings', novalidate: true, onsubmit: (event) => {
    event.preventDefault();
    void whileBusy(save, async () => {
      try {
        /** @type {Domain} */
        const updated = await api('PATCH', path, { body: {
          open_tracking: open.checked, click_tracking: click.checked, inbound_enabled: inbound.checked, tracking_subdomain: subdomain.value.trim(),
        } });
        renderDomain(view, updated, path);
        showNote(['The settings were saved.', ...recordChanges(domain, updated)].join(' '));
      } catch (err) {
        errors.show(err, near);
      }
    });
  } },
  setting(open, 'Open tracking', 'A tiny image in each HTML email records when it is opened (email.opened).'),
  setting(click, 'Click tracking', 'Links in HTML emails pass through the tracking host, which records each click (email.clicked).'),
  h('div', { class: 'setting' },
    h('label', { for: 'domain-tracking-subdomain' }, 'Tracking subdomain'),
    h('div', { class: 'subdomain-field' }, subdomain, h('span', { class: 'muted' }, `.${domain.name}`)),
    h('p', { id: 'domain-tracking-subdomain-hint', class: 'muted small hint' }, 'With either tracking on, a CNAME record for it is listed to publish (optional). '
      + 'Tracking links use this host once that record is verified, and this server\'s own address until then.'),
    errors.slot('tracking_subdomain', 'Tracking subdomain', subdomain)),
  setting(inbound, 'Inbound mail', [`Mailroom receives mail sent to addresses at ${domain.name}. Turning it on adds an MX record for `,
    code(domain.name), ' pointing at ', code(mxHost), ' (optional). Publishing it sends all of the domain\'s incoming mail here, instead of to the mail service it uses now.']),
  near, save));
}

/**
 * What a change of settings did to the records to publish.
 * @param {Domain} before
 * @param {Domain} after
 */
function recordChanges(before, after) {
  const had = new Set(before.records.map((r) => `${r.record} ${r.name}`));
  const has = new Set(after.records.map((r) => `${r.record} ${r.name}`));
  const added = after.records.filter((r) => !had.has(`${r.record} ${r.name}`));
  const removed = before.records.filter((r) => !has.has(`${r.record} ${r.name}`));
  return [
    ...added.map((r) => `${r.type === 'MX' ? 'An' : 'A'} ${r.type} record for ${r.name} was added below.`),
    added.length > 0 && `Publish ${added.length === 1 ? 'it' : 'them'} at your DNS provider, then press Verify.`,
    ...removed.map((r) => `The ${r.type} record for ${r.name} is no longer needed.`),
  ].filter((s) => typeof s === 'string');
}

/**
 * What to publish, the record's name over its value as a DNS provider's form asks for them, each with its Copy button:
 * the name wraps whole (it is read, and typed by some); the value, a 400-character DKIM key among them, keeps to one line
 * of the row's width, whole in its title and its Copy button. Side by side, the two squeezed each other into a few
 * characters at tablet widths. An MX record's priority goes under its type, as zone files write it, rather than in a
 * column empty on every other row. Why a record failed may quote what DNS holds: three lines of it, the rest in its title.
 * @type {Column<DomainRecord>[]}
 */
const DNS_COLUMNS = [
  { header: 'Record', cell: (r) => [recordName(r), keyState(r) ?? (!r.required && h('div', { class: 'muted small' }, 'optional'))], className: 'nowrap' },
  { header: 'Type', cell: (r) => [r.type, r.priority !== undefined && h('div', { class: 'muted small' }, `priority ${r.priority}`)], className: 'nowrap' },
  { header: 'Name and value', cell: (r) => h('dl', { class: 'dns-entry' },
    h('dt', null, 'Name'), h('dd', null, copyable(r.name, { label: `name of the ${recordLabel(r)} record`, hostName: true })),
    h('dt', null, 'Value'), h('dd', null, copyable(r.value, { label: `value of the ${recordLabel(r)} record`, cut: true }))),
  className: 'dns-entry-cell fills' },
  { header: 'Status', cell: (r) => [badge(r.status), r.detail && h('div', { class: 'muted small clamped', title: r.detail }, r.detail)],
    role: 'status' },
];

/** The records by the names DNS guides give them; the API's own codes (MX_BOUNCE) say little to a person. */
const RECORD_NAMES = /** @type {Record<string, string>} */ ({
  DKIM: 'DKIM', DKIM_ED25519: 'DKIM (Ed25519)', SPF: 'SPF', MX_BOUNCE: 'Return-path MX', MX_INBOUND: 'Inbound MX', DMARC: 'DMARC',
  TRACKING: 'Tracking CNAME',
});
/** @param {DomainRecord} r */
const recordName = (r) => RECORD_NAMES[r.record] ?? r.record;

/** A record as its Copy buttons name it: the new key's DKIM records apart from the current ones. @param {DomainRecord} r */
const recordLabel = (r) => (r.key_state === 'pending' ? `new ${recordName(r)}` : r.key_state === 'retiring' ? `retiring ${recordName(r)}` : recordName(r));

/** Where a DKIM record is in a rotation; nothing for the key that signs. @param {DomainRecord} r */
function keyState(r) {
  if (r.key_state === 'pending') return h('div', { class: 'key-state' }, badge('new key'), h('div', { class: 'muted small' }, 'not signing until seen in DNS'));
  if (r.key_state === 'retiring') {
    return h('div', { class: 'key-state' }, badge('retiring'), h('div', { class: 'muted small' }, 'replaced; may be deleted from DNS after ',
      r.removable_after ? time(r.removable_after) : 'a week'));
  }
  return undefined;
}
