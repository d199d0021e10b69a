// @ts-check
// Events: the workspace's timeline of sent and received mail, filtered by
// kind, domain, addresses, tag, time or one email, and the short line of what
// matters in an event that the emails' own timelines show too.
import { may } from '../access.js';
import { api } from '../api.js';
import { everyItem, filterForm, filterSelect, filterText, filterTime, pagedTable } from '../lists.js';
import { hashOf } from '../nav.js';
import { clipped, clippedList, errorBox, fill, formatTime, h, hrefTo, loading, none, time } from '../ui.js';

/** @typedef {import('../nav.js').Ctx} Ctx */
/** @typedef {import('../ui.js').Child} Child */
/** @typedef {import('../ui.js').Children} Children */
/**
 * @template T
 * @typedef {import('../ui.js').Column<T>} Column
 */
/** @typedef {{ id: string, type: string, email_id: string | null, created_at: string, data: Record<string, unknown> }} ApiEvent */

/** The kinds the list's event_type filter takes, in the order mail lives them: every kind the list returns. */
const EVENT_KINDS = ['scheduled', 'queued', 'sent', 'delivered', 'delayed', 'bounced', 'complained', 'opened', 'clicked', 'replied',
  'failed', 'cancelled', 'received'];

/** The Events list of one email's events, all of them, with the list's filters. @param {string} emailId */
export const eventsOfEmail = (emailId) => hashOf('/events', new URLSearchParams({ email_id: emailId }));

/** @type {Array<[RegExp, (ctx: Ctx) => void | Promise<void>]>} */
export const EVENT_ROUTES = [
  [/^\/events$/, showEvents],
];

/** Per-recipient events name one address; events about the whole email, the list. @param {ApiEvent} event */
export function eventRecipient(event) {
  const to = event.data.to;
  if (Array.isArray(to)) return clippedList(to.map(String));
  return typeof to === 'string' ? clipped(to) : '';
}

/**
 * A short line of what matters in the event's data; a reply links to the message received.
 * @param {ApiEvent} event
 * @returns {Children}
 */
export function eventDetail(event) {
  const get = (/** @type {string} */ name) => {
    const value = event.data[name];
    return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
  };
  const at = (/** @type {string} */ name) => {
    const iso = get(name);
    return iso && formatTime(iso, true);
  };
  /** The codes not already at the start of `reply`: a remote's reply usually opens with them, and they are said once. */
  const codesBefore = (/** @type {string | undefined} */ reply, /** @type {Array<string | undefined>} */ codes) => {
    const opening = reply?.split(/\s+/, 2) ?? [];
    return codes.filter((c) => c !== undefined && !opening.includes(c));
  };
  const machine = event.data.machine === true && `automated${get('machine_reason') ? ` (${get('machine_reason')})` : ''}`;
  /** @type {Record<string, () => Array<Child>>} */
  const describe = {
    'email.scheduled': () => [at('scheduled_at') && `for ${at('scheduled_at')}`],
    'email.queued': () => [at('send_at') && `sends at ${at('send_at')}`],
    'email.delivered': () => [get('smtp_code'), get('mx_host') && `via ${get('mx_host')}`],
    'email.delayed': () => [...codesBefore(get('reason'), [get('smtp_code')]), get('reason'), get('attempt') && `attempt ${get('attempt')}`,
      at('next_attempt_at') && `next try ${at('next_attempt_at')}`],
    'email.bounced': () => [get('bounce_type') && `${get('bounce_type')} bounce (${get('bounce_subtype')})`,
      ...codesBefore(get('original_error'), [get('smtp_code'), get('enhanced_status_code')]), get('original_error')],
    'email.complained': () => [get('feedback_type'), get('provider') !== 'unknown' && get('provider')],
    'email.opened': () => [machine, get('user_agent')],
    'email.clicked': () => [get('url'), machine],
    'email.failed': () => [get('reason'), get('suppression_reason') && `suppressed: ${get('suppression_reason')}`],
    'email.cancelled': () => [get('previous_status') && `was ${get('previous_status')}`],
    'email.replied': () => [get('reply_from') && `from ${get('reply_from')}`, replyLink(get('inbound_id'), get('reply_subject'))],
  };
  const parts = (describe[event.type]?.() ?? []).filter(Boolean);
  return parts.flatMap((part, i) => (i === 0 ? [part] : [' · ', part]));
}

/**
 * The reply received, by its subject, linked for a key that may read inbound mail.
 * @param {string | undefined} inboundId @param {string | undefined} subject
 */
function replyLink(inboundId, subject) {
  const text = `“${subject || '(no subject)'}”`;
  return inboundId && may('inbound:read') ? h('a', { href: hrefTo('inbound', inboundId) }, text) : text;
}

/**
 * Sent mail has its page, and so has received mail (email.received names an inbound id): the link says the subject
 * where the event carries it (opens and clicks do not), with the id below it.
 * @param {ApiEvent} event
 */
function eventEmailLink(event) {
  if (!event.email_id) return none();
  const subject = event.data.subject;
  return h('a', { href: hrefTo(event.type === 'email.received' ? 'inbound' : 'emails', event.email_id), class: 'event-email' },
    typeof subject === 'string' && h('span', { class: 'clip', title: subject }, subject || '(no subject)'),
    h('code', null, event.email_id));
}

/**
 * The email the list is narrowed to, named by its subject once it is read, its id beside it: by its id alone where the
 * key may not read it. A received message (in_…) has its page among inbound mail.
 * @param {string} emailId
 */
function narrowedTo(emailId) {
  const [section, scope] = emailId.startsWith('in_') ? /** @type {const} */ (['inbound', 'inbound:read']) : /** @type {const} */ (['emails', 'emails:read']);
  const link = h('a', { href: hrefTo(section, emailId) }, h('code', null, emailId));
  const id = h('span', { class: 'muted' });
  if (may(scope)) {
    api('GET', `/v1/${section}/${encodeURIComponent(emailId)}`).then((/** @type {{ subject: string }} */ email) => {
      fill(link, `“${email.subject || '(no subject)'}”`);
      fill(id, ' (', h('code', null, emailId), ')');
    }, () => {});
  }
  return [link, id];
}

/** @param {Ctx} ctx */
async function showEvents({ view, query }) {
  fill(view, loading());
  // A key that may not list domains filters by the rest.
  /** @type {Array<{ id: string, name: string }>} */
  let domains = [];
  /** @type {unknown} */
  let domainsError = null;
  if (may('domains:read')) {
    try {
      domains = await everyItem('/v1/domains');
    } catch (err) {
      domainsError = err;
    }
  }
  // Kept through a new search: the list stays the email's until "all events".
  const emailId = query.get('email_id');
  const filters = [
    filterSelect('Type', 'event_type', query, 'any', EVENT_KINDS.map((k) => [k, k])),
    ...(may('domains:read') || query.has('domain_id')
      ? [filterSelect('Domain', 'domain_id', query, 'any', domains.map((d) => [d.id, d.name]))] : []),
    filterText('To', 'to', query, 'part of an address'),
    filterText('From', 'from', query, 'part of the sender'),
    filterText('Tag', 'tags', query),
    filterTime('Created after', 'created_after', query),
    filterTime('Created before', 'created_before', query),
  ];
  const list = h('div');
  fill(view, h('h1', null, 'Events'),
    emailId && h('p', { class: 'filter-note' }, 'The events of the email ', narrowedTo(emailId), ' · ',
      h('a', { href: '#/events' }, 'all events')),
    domainsError !== null && errorBox(domainsError),
    filterForm('/events', filters, new URLSearchParams(emailId ? { email_id: emailId } : {})), list);
  /** @type {Column<ApiEvent>[]} */
  const columns = [
    { header: 'Time', cell: (e) => time(e.created_at, true), className: 'nowrap' },
    { header: 'Type', cell: (e) => e.type, className: 'nowrap', role: 'primary' },
    { header: 'Email', cell: eventEmailLink, minor: true },
    { header: 'Recipient', cell: eventRecipient },
    { header: 'Detail', cell: eventDetail, className: 'prose' },
  ];
  await pagedTable(list, { api: '/v1/events', route: '/events', query, columns, filters: [...filters, 'email_id'],
    empty: [...filters.map((f) => f.control.name), 'email_id'].some((name) => query.has(name))
      ? ['No events match these filters. ', h('a', { href: '#/events' }, 'Show all events')]
      : 'No events yet. They are recorded as emails are sent, delivered, opened and clicked, and as mail is received.' });
}
