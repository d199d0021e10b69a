// @ts-check
// The Mailroom dashboard: a single page over the public /v1 API of its own
// origin. It signs in with an API key and sees exactly what that key may see.
// Every element is built with createElement and text nodes: subjects,
// addresses and email HTML come from strangers and are never parsed as markup
// here; email HTML is only ever shown inside a sandboxed frame.
//
// This module signs in and routes; shared pieces live in ui.js, api.js,
// nav.js, lists.js and preview.js, and views in views/<area>.js.
import { api, ApiError, download, forgetKey, request, storedKey, storeKey, whenUnauthorized } from './api.js';
import { loadRecord, pagedTable } from './lists.js';
import { hashOf, navigate, showNote, takePendingNote } from './nav.js';
import { bodyParts } from './preview.js';
import {
  actionForm, actionsColumn, badge, byId, clipped, code, details, errorBox, errorSlot, fill, formatBytes, formatTime, h, hrefTo, joined,
  labelled, loading, none, rowAction, statusNote, table, time, whileBusy,
} from './ui.js';
import { TEMPLATE_ROUTES } from './views/templates.js';
import { WEBHOOK_ROUTES } from './views/webhooks.js';
import { ANALYTICS_ROUTES } from './views/analytics.js';
import { QUEUE_ROUTES } from './views/queue.js';
import { BROADCAST_ROUTES } from './views/broadcasts.js';
import { CONTACT_ROUTES } from './views/contacts.js';

/** @typedef {import('./ui.js').Children} Children */
/** @typedef {import('./nav.js').Ctx} Ctx */
/**
 * @template T
 * @typedef {import('./ui.js').Column<T>} Column
 */


/** An email's timeline is read in one call, the API's largest page. */
const TIMELINE_LIMIT = 100;
const EMAIL_STATUSES = ['pending', 'scheduled', 'sent', 'delivered', 'failed', 'cancelled'];
/** The statuses cancelEmail acts on; from `sent` on a message may be on the wire. */
const CANCELLABLE = ['scheduled', 'pending'];

// ---------------------------------------------------------------------------
// API shapes, as in schema/openapi.yaml and schema/paths/*.yaml

/**
 * @template T
 * @typedef {{ data: T[], has_more: boolean, next_cursor?: string }} Page
 */
/**
 * @typedef {{ id: string, from: string, to: string[], cc: string[], bcc: string[], reply_to: string[],
 *   subject: string, tags: string[], status: string, mode: 'live' | 'test', domain_id: string | null,
 *   message_id: string, scheduled_at: string | null, sent_at: string | null, resent_from: string | null,
 *   created_at: string, updated_at: string }} EmailSummary
 */
/**
 * @typedef {{ email: string, type: 'to' | 'cc' | 'bcc', status: string, smtp_code: number | null,
 *   detail: string | null, updated_at: string }} Recipient
 */
/** @typedef {{ filename: string, content_type: string, size: number, content_id: string | null }} Attachment */
/**
 * @typedef {EmailSummary & { html: string | null, text: string | null, headers: Record<string, string>,
 *   attachments: Attachment[], recipients: Recipient[] }} Email
 */
/** @typedef {{ id: string, cancelled: boolean, status: string }} EmailCancel */
/** @typedef {{ id: string, type: string, email_id: string | null, created_at: string, data: Record<string, unknown> }} ApiEvent */
/**
 * @typedef {{ record: string, type: string, name: string, value: string, priority?: number, required: boolean,
 *   status: string, detail?: string }} DomainRecord
 */
/**
 * @typedef {{ id: string, name: string, status: string, status_reason: string | null, region: string,
 *   return_path: string, open_tracking: boolean, click_tracking: boolean, tracking_subdomain: string,
 *   inbound_enabled: boolean, records: DomainRecord[], last_checked_at: string | null, created_at: string }} Domain
 */
/**
 * @typedef {{ id: string, status: 'received' | 'processed' | 'failed', failure_reason: string | null,
 *   domain_id: string, from: string, to: string[], cc: string[], subject: string,
 *   message_id: string | null, envelope: { mail_from: string, rcpt_to: string[] }, size: number,
 *   attachment_count: number, received_at: string }} InboundSummary
 */
/**
 * @typedef {{ spf: { result: string, domain: string | null },
 *   dkim: { result: string, domain: string, selector: string | null, aligned: boolean }[],
 *   dmarc: { result: string, policy: string | null, domain: string | null } }} InboundAuth
 */
/**
 * @typedef {{ index: number, filename: string | null, content_type: string, size: number,
 *   disposition: 'attachment' | 'inline' }} InboundAttachment
 */
/** @typedef {{ name: string, value: string }} HeaderField */
/**
 * @typedef {InboundSummary & { reply_to: string[], text: string | null, html: string | null,
 *   headers: HeaderField[], attachments: InboundAttachment[], auth: InboundAuth | null, tls: boolean }} InboundEmail
 */
/** @typedef {{ id: string, email: string, reason: string, created_at: string }} Suppression */
/**
 * `token` is masked, except in the answer to createApiKey.
 * @typedef {{ id: string, name: string, mode: 'live' | 'test', token: string, scopes: string[],
 *   created_at: string, last_used_at: string | null, revoked_at: string | null }} ApiKey
 */

// ---------------------------------------------------------------------------
// Session

/** The key as GET /v1/api-keys lists it: svc_<mode>_<first 4 of the lookup part>…<last 4>. @param {string} key */
function maskedKey(key) {
  const prefix = /^svc_(live|test)_/.exec(key)?.[0] ?? '';
  return `${prefix}${key.slice(prefix.length, prefix.length + 4)}…${key.slice(-4)}`;
}

/** @param {string} [message] why the session ended, shown in the sign-in form */
function signOut(message) {
  forgetKey();
  showSignIn(message);
}

/** @param {string} [message] */
function showSignIn(message) {
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
      h('code', { class: 'command copyable' }, 'npx mailroom keys create --name dashboard'))));
  input.focus();
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
      // The list of emails is the first page: a key that may not read it (403) is refused too.
      await request(key, 'GET', '/v1/emails', { query: new URLSearchParams({ limit: '1' }) });
    } catch (err) {
      errors.show(err);
      input.focus();
      return;
    }
    storeKey(key);
    showApp();
  });
}

function showApp() {
  const key = storedKey() ?? '';
  const mode = key.startsWith('svc_test_') ? 'test' : key.startsWith('svc_live_') ? 'live' : 'unknown';
  fill(byId('session'),
    h('nav', { 'aria-label': 'Main' },
      NAV.map(([section, label]) => h('a', { href: `#/${section}`, 'data-section': section }, label))),
    h('span', { class: `badge mode-${mode}`, title: mode === 'test' ? 'Test keys never send real mail.' : null },
      `${mode} mode`),
    h('button', { type: 'button', class: 'secondary', onclick: () => signOut() }, 'Sign out'));
  route();
}

// ---------------------------------------------------------------------------
// Routing: #/<section>[/<id>][?<query>]


/** @type {Array<[string, string]>} route section, link text */
const NAV = [['emails', 'Emails'], ['domains', 'Domains'], ['events', 'Events'], ['analytics', 'Analytics'], ['queue', 'Queue'],
  ['inbound', 'Inbound'], ['templates', 'Templates'], ['broadcasts', 'Broadcasts'], ['contacts', 'Contacts'], ['suppressions', 'Suppressions'],
  ['webhooks', 'Webhooks'], ['api-keys', 'API keys']];

/** @type {Array<[RegExp, (ctx: Ctx) => void | Promise<void>]>} */
const ROUTES = [
  [/^\/emails$/, showEmails],
  [/^\/emails\/([^/]+)$/, showEmail],
  [/^\/domains$/, showDomains],
  [/^\/domains\/([^/]+)$/, showDomain],
  [/^\/events$/, showEvents],
  [/^\/inbound$/, showInbound],
  [/^\/inbound\/([^/]+)$/, showInboundEmail],
  [/^\/suppressions$/, showSuppressions],
  [/^\/api-keys$/, showApiKeys],
  ...TEMPLATE_ROUTES,
  ...WEBHOOK_ROUTES,
  ...ANALYTICS_ROUTES,
  ...QUEUE_ROUTES,
  ...BROADCAST_ROUTES,
  ...CONTACT_ROUTES,
];


function route() {
  if (!storedKey()) return showSignIn();
  const [path = '', search = ''] = location.hash.replace(/^#/, '').split(/\?(.*)/s);
  if (path === '' || path === '/') return location.replace('#/emails');
  const view = h('section', { class: 'view' });
  fill(byId('app'), h('div', { id: 'note' }, takePendingNote()), view);
  const section = path.split('/')[1];
  for (const link of document.querySelectorAll('nav a[data-section]')) {
    if (link.getAttribute('data-section') === section) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  for (const [pattern, render] of ROUTES) {
    const match = pattern.exec(path.replace(/\/$/, ''));
    const id = match && safeDecode(match[1] ?? '');
    if (id === null) continue;
    void render({ view, id, query: new URLSearchParams(search) });
    return;
  }
  fill(view, h('h1', null, 'Page not found'), h('p', null, h('a', { href: '#/emails' }, 'Go to the email list')));
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
// Emails

/** @param {Ctx} ctx */
function showEmails({ view, query }) {
  // Kept through a new search: the list stays the broadcast's until "all emails".
  const broadcastId = query.get('broadcast_id');
  const status = h('select', { id: 'filter-status', name: 'status' }, h('option', { value: '' }, 'any'),
    EMAIL_STATUSES.map((s) => h('option', { value: s, selected: query.get('status') === s }, s)));
  const to = h('input', { id: 'filter-to', name: 'to', type: 'text', value: query.get('to') ?? '', autocomplete: 'off' });
  const mode = h('select', { id: 'filter-mode', name: 'mode' }, h('option', { value: '' }, 'live and test'),
    ['live', 'test'].map((m) => h('option', { value: m, selected: query.get('mode') === m }, m)));
  const filters = h('form', { class: 'filters', role: 'search', onsubmit: (event) => {
    event.preventDefault();
    const q = new URLSearchParams();
    if (status.value) q.set('status', status.value);
    if (to.value.trim()) q.set('to', to.value.trim());
    if (mode.value) q.set('mode', mode.value);
    if (broadcastId) q.set('broadcast_id', broadcastId);
    navigate(hashOf('/emails', q));
  } },
  labelled('Status', status), labelled('Mode', mode), labelled('To', to),
  h('button', { type: 'submit' }, 'Search'));
  const list = h('div');
  fill(view, h('h1', null, 'Emails'),
    broadcastId && h('p', { class: 'filter-note' }, 'The emails of the broadcast ',
      h('a', { href: `#/broadcasts/${encodeURIComponent(broadcastId)}` }, h('code', null, broadcastId)), ' · ',
      h('a', { href: '#/emails' }, 'all emails')),
    filters, list);
  return pagedTable(list, {
    api: '/v1/emails', route: '/emails', query, filters: ['status', 'to', 'mode', 'broadcast_id'], columns: EMAIL_COLUMNS,
    empty: ['status', 'to', 'mode', 'broadcast_id'].some((f) => query.has(f))
      ? ['No emails match these filters. ', h('a', { href: '#/emails' }, 'Show all emails')]
      : ['No emails yet. Send one through the API (', h('code', null, 'POST /v1/emails'), ') or SMTP submission, from a ',
        h('a', { href: '#/domains' }, 'domain'), ' of yours.'],
  });
}

/** @type {Column<EmailSummary>[]} */
const EMAIL_COLUMNS = [
  { header: 'Created', cell: (e) => time(e.created_at), className: 'nowrap' },
  { header: 'From', cell: (e) => clipped(e.from) },
  { header: 'To', cell: (e) => clippedList(e.to) },
  { header: 'Subject', cell: (e) => clipped(e.subject || '(no subject)', { href: hrefTo('emails', e.id), wide: true }), role: 'primary' },
  { header: 'Status', cell: (e) => badge(e.status), role: 'status' },
  { header: 'Mode', cell: (e) => badge(e.mode) },
];

/** Addresses in a list's cell, cut to one line. @param {string[]} list */
function clippedList(list) {
  return list.length > 0 ? clipped(list.join(', ')) : none();
}

/** @param {Ctx} ctx */
async function showEmail({ view, id }) {
  const path = `/v1/emails/${encodeURIComponent(id)}`;
  // Asked for now, shown once the email is.
  /** @type {Promise<Page<ApiEvent>>} */
  const events = api('GET', `${path}/events`, { query: new URLSearchParams({ limit: String(TIMELINE_LIMIT) }) });
  events.catch(() => {});
  /** @type {Email | undefined} */
  const email = await loadRecord(view, 'Email', path, { href: '#/emails', label: 'All emails' });
  if (!email) return;
  const timeline = h('div', null, loading());
  fill(view,
    h('h1', null, email.subject || '(no subject)'),
    CANCELLABLE.includes(email.status) && cancelButton(path),
    emailDetails(email),
    h('h2', null, 'Recipients'),
    table(RECIPIENT_COLUMNS, email.recipients),
    email.attachments.length > 0 && [h('h2', null, 'Attachments'), table(attachmentColumns(path), email.attachments.map((a, index) => ({ ...a, index })))],
    h('h2', null, 'Events'),
    timeline,
    bodyParts(email.html, email.text),
    sourceSection(path));
  try {
    const page = await events;
    fill(timeline,
      page.data.length > 0 ? table(TIMELINE_COLUMNS, page.data) : h('p', { class: 'empty' }, 'No events yet.'),
      page.has_more && h('p', { class: 'muted small' }, `The latest ${TIMELINE_LIMIT} events are shown.`));
  } catch (err) {
    fill(timeline, errorBox(err));
  }
}

/**
 * The message as it went out, headers and all, on request: the sink keeps it
 * (test keys, MAILROOM_DELIVERY=sink); for other mail the API says why not.
 * @param {string} path the email's
 */
function sourceSection(path) {
  const body = h('div');
  const show = h('button', { type: 'button', class: 'secondary', onclick: () => void whileBusy(show, async () => {
    try {
      fill(body, h('pre', { class: 'body-text source' }, await api('GET', `${path}/raw`, { text: true })));
      show.remove();
    } catch (err) {
      fill(body, errorBox(err));
    }
  }) }, 'Show the source');
  return [h('h2', null, 'Source'), show, body];
}

/** @param {string} path the email's */
function cancelButton(path) {
  const errors = errorSlot();
  const button = h('button', { type: 'button', class: 'danger', onclick: () => void whileBusy(button, async () => {
    try {
      /** @type {EmailCancel} */
      const answer = await api('POST', `${path}/cancel`);
      navigate(location.hash, answer.cancelled ? 'The email was cancelled.'
        : `The email could not be cancelled: it is ${answer.status} already.`);
    } catch (err) {
      errors.show(err);
    }
  }) }, 'Cancel');
  return h('div', { class: 'actions' }, button, errors.node);
}

/** @param {Email} email */
function emailDetails(email) {
  return details([
    ['ID', code(email.id)],
    ['Status', badge(email.status)],
    ['Mode', email.mode === 'test' ? 'test: kept in the sink, never sent' : 'live'],
    ['From', email.from],
    ['To', joined(email.to)],
    ['Cc', joined(email.cc)],
    ['Bcc', joined(email.bcc)],
    ['Reply-To', joined(email.reply_to)],
    ['Tags', email.tags.length > 0 ? email.tags.map((t) => h('span', { class: 'tag' }, t)) : none()],
    ['Message-ID', code(email.message_id)],
    ['Domain', email.domain_id ? domainLink(email.domain_id) : none()],
    ['Created', time(email.created_at)],
    ['Scheduled for', time(email.scheduled_at)],
    ['Sent', time(email.sent_at)],
    ['Updated', time(email.updated_at)],
    ['Resent from', email.resent_from ? h('a', { href: hrefTo('emails', email.resent_from) }, email.resent_from) : none()],
    ...Object.entries(email.headers).map(([name, value]) => /** @type {[string, Children]} */ ([name, value])),
  ]);
}

/** @type {Column<Recipient>[]} */
const RECIPIENT_COLUMNS = [
  { header: 'Address', cell: (r) => r.email },
  { header: 'Type', cell: (r) => r.type },
  { header: 'Status', cell: (r) => badge(r.status), role: 'status' },
  { header: 'SMTP code', cell: (r) => r.smtp_code },
  { header: 'Detail', cell: (r) => r.detail, className: 'prose' },
  { header: 'Updated', cell: (r) => time(r.updated_at), className: 'nowrap' },
];

/** @param {string} emailPath @returns {Column<Attachment & { index: number }>[]} */
const attachmentColumns = (emailPath) => [
  { header: 'File', cell: (a) => a.filename },
  { header: 'Type', cell: (a) => a.content_type },
  { header: 'Size', cell: (a) => formatBytes(a.size) },
  { header: 'Content-ID', cell: (a) => a.content_id },
  actionsColumn((a) => downloadButton(`${emailPath}/attachments/${a.index}`, a.filename)),
];

/**
 * A button that saves a file the API serves; its error shows beside it.
 * @param {string} path @param {string} filename
 */
function downloadButton(path, filename) {
  const errors = errorSlot();
  const button = h('button', { type: 'button', class: 'secondary', onclick: () => void whileBusy(button, async () => {
    try {
      await download(path, filename);
    } catch (err) {
      errors.show(err);
    }
  }) }, 'Download');
  return [button, errors.node];
}

/** @type {Column<ApiEvent>[]} */
const TIMELINE_COLUMNS = [
  { header: 'Time', cell: (e) => time(e.created_at, true), className: 'nowrap' },
  { header: 'Type', cell: (e) => e.type, className: 'nowrap', role: 'primary' },
  { header: 'Recipient', cell: eventRecipient },
  { header: 'Detail', cell: eventDetail, className: 'prose' },
];

// ---------------------------------------------------------------------------
// Events

/** Per-recipient events name one address; events about the whole email, the list. @param {ApiEvent} event */
function eventRecipient(event) {
  const to = event.data.to;
  if (Array.isArray(to)) return clippedList(to.map(String));
  return typeof to === 'string' ? clipped(to) : '';
}

/** A short line of what matters in the event's data. @param {ApiEvent} event */
function eventDetail(event) {
  const get = (/** @type {string} */ name) => {
    const value = event.data[name];
    return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
  };
  const at = (/** @type {string} */ name) => {
    const iso = get(name);
    return iso && formatTime(iso, true);
  };
  const machine = event.data.machine === true && `automated${get('machine_reason') ? ` (${get('machine_reason')})` : ''}`;
  /** @type {Record<string, () => Array<string | undefined | false>>} */
  const describe = {
    'email.scheduled': () => [at('scheduled_at') && `for ${at('scheduled_at')}`],
    'email.queued': () => [at('send_at') && `sends at ${at('send_at')}`],
    'email.delivered': () => [get('smtp_code'), get('mx_host') && `via ${get('mx_host')}`],
    'email.delayed': () => [get('smtp_code'), get('reason'), get('attempt') && `attempt ${get('attempt')}`,
      at('next_attempt_at') && `next try ${at('next_attempt_at')}`],
    'email.bounced': () => [get('bounce_type') && `${get('bounce_type')} bounce (${get('bounce_subtype')})`,
      get('smtp_code'), get('enhanced_status_code'), get('original_error')],
    'email.complained': () => [get('feedback_type'), get('provider') !== 'unknown' && get('provider')],
    'email.opened': () => [machine, get('user_agent')],
    'email.clicked': () => [get('url'), machine],
    'email.failed': () => [get('reason'), get('suppression_reason') && `suppressed: ${get('suppression_reason')}`],
    'email.cancelled': () => [get('previous_status') && `was ${get('previous_status')}`],
  };
  return (describe[event.type]?.() ?? []).filter(Boolean).join(' · ');
}

/** Sent mail has its page, and so has received mail (email.received names an inbound id). @param {ApiEvent} event */
function eventEmailLink(event) {
  if (!event.email_id) return none();
  return h('a', { href: hrefTo(event.type === 'email.received' ? 'inbound' : 'emails', event.email_id) },
    h('code', null, event.email_id));
}

/** @param {Ctx} ctx */
function showEvents({ view, query }) {
  const list = h('div');
  fill(view, h('h1', null, 'Events'), list);
  /** @type {Column<ApiEvent>[]} */
  const columns = [
    { header: 'Time', cell: (e) => time(e.created_at, true), className: 'nowrap' },
    { header: 'Type', cell: (e) => e.type, className: 'nowrap', role: 'primary' },
    { header: 'Email', cell: eventEmailLink },
    { header: 'Recipient', cell: eventRecipient },
    { header: 'Detail', cell: eventDetail, className: 'prose' },
  ];
  return pagedTable(list, { api: '/v1/events', route: '/events', query, columns,
    empty: 'No events yet. They are recorded as emails are sent, delivered, opened and clicked, and as mail is received.' });
}

// ---------------------------------------------------------------------------
// Domains

/**
 * A link to a domain, named once its record is read: an id means little to a
 * person. The id stays, as the title, and as the text if the name cannot be read.
 * @param {string} id
 */
function domainLink(id) {
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

// ---------------------------------------------------------------------------
// Inbound

/** @param {Ctx} ctx */
function showInbound({ view, query }) {
  const list = h('div');
  fill(view, h('h1', null, 'Inbound'), list);
  /** @type {Column<InboundSummary>[]} */
  const columns = [
    { header: 'Received', cell: (m) => time(m.received_at), className: 'nowrap' },
    { header: 'Status', cell: (m) => badge(m.status), role: 'status' },
    { header: 'From', cell: (m) => clipped(m.from || m.envelope.mail_from || '(null sender)') },
    { header: 'To', cell: (m) => clippedList(m.to.length > 0 ? m.to : m.envelope.rcpt_to) },
    { header: 'Subject', cell: (m) => clipped(m.subject || '(no subject)', { href: hrefTo('inbound', m.id), wide: true }), role: 'primary' },
  ];
  return pagedTable(list, { api: '/v1/inbound', route: '/inbound', query, columns,
    empty: ['No inbound mail yet. Mail is received for a ', h('a', { href: '#/domains' }, 'domain'),
      ' with inbound mail on, once its MX record points at this server.'] });
}

/** @param {Ctx} ctx */
async function showInboundEmail({ view, id }) {
  /** @type {InboundEmail | undefined} */
  const message = await loadRecord(view, 'Inbound email', `/v1/inbound/${encodeURIComponent(id)}`,
    { href: '#/inbound', label: 'All inbound mail' });
  if (!message) return;
  const { auth } = message;
  fill(view,
    h('h1', null, message.subject || '(no subject)'),
    details([
      ['ID', code(message.id)],
      ['From', message.from || none()],
      ['To', joined(message.to)],
      ['Cc', joined(message.cc)],
      ['Reply-To', joined(message.reply_to)],
      ['Envelope sender', message.envelope.mail_from || '(null sender)'],
      ['Envelope recipients', joined(message.envelope.rcpt_to)],
      ['Message-ID', code(message.message_id)],
      ['Received', time(message.received_at)],
      ['Size', formatBytes(message.size)],
      ['TLS', message.tls ? 'yes' : 'no'],
      ['Domain', domainLink(message.domain_id)],
      ['Status', [badge(message.status), message.failure_reason ? ` ${message.failure_reason}` : '']],
      ...(auth ? authRows(auth) : []),
    ]),
    message.attachments.length > 0 && [h('h2', null, 'Attachments'), table(inboundAttachmentColumns(`/v1/inbound/${encodeURIComponent(id)}`), message.attachments)],
    h('details', { class: 'headers' }, h('summary', null, `All headers (${message.headers.length})`),
      table(HEADER_COLUMNS, message.headers)),
    bodyParts(message.html, message.text));
}

/** The SPF, DKIM and DMARC results of a processed message. @param {InboundAuth} auth */
function authRows({ spf, dkim, dmarc }) {
  return /** @type {Array<[string, Children]>} */ ([
    ['SPF', [badge(spf.result), ` ${spf.domain ?? ''}`]],
    ['DKIM', dkim.length === 0 ? 'not signed' : dkim.map((d) => h('div', null, badge(d.result),
      ` ${d.domain}${d.selector ? ` s=${d.selector}` : ''}${d.aligned ? ', aligned' : ''}`))],
    ['DMARC', [badge(dmarc.result), ` ${[dmarc.domain, dmarc.policy && `policy ${dmarc.policy}`].filter(Boolean).join(', ')}`]],
  ]);
}

/** @param {string} messagePath @returns {Column<InboundAttachment>[]} */
const inboundAttachmentColumns = (messagePath) => [
  { header: 'File', cell: (a) => a.filename ?? `attachment-${a.index}` },
  { header: 'Type', cell: (a) => a.content_type },
  { header: 'Size', cell: (a) => formatBytes(a.size) },
  { header: 'Disposition', cell: (a) => a.disposition },
  actionsColumn((a) => downloadButton(`${messagePath}/attachments/${a.index}`, a.filename ?? `attachment-${a.index}`)),
];

/** @type {Column<HeaderField>[]} */
const HEADER_COLUMNS = [
  { header: 'Name', cell: (f) => f.name, className: 'nowrap' },
  { header: 'Value', cell: (f) => f.value },
];

// ---------------------------------------------------------------------------
// Suppressions

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


// ---------------------------------------------------------------------------
// API keys

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
    if (isCurrent) signOut('You revoked the key you were signed in with.');
    else navigate(location.hash, `“${key.name}” was revoked.`);
  });
}

// ---------------------------------------------------------------------------

whenUnauthorized((message) => signOut(message));
window.addEventListener('hashchange', () => route());
if (storedKey()) showApp();
else showSignIn();
