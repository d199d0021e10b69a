// @ts-check
// The outbound queue: what the workspace's mail waits for, per destination
// domain (stuck longest first), with each domain's waiting emails, and the
// operator's three levers: retry now, hold, release.
import { may, withheldNote } from '../access.js';
import { api } from '../api.js';
import { pagedTable } from '../lists.js';
import { hashOf, navigate } from '../nav.js';
import { actionForm, actionsColumn, badge, clipped, fill, formatTime, h, heldUpNote, hrefTo, none, rowAction, time } from '../ui.js';

/** @typedef {import('../nav.js').Ctx} Ctx */
/** @typedef {{ code: number | null, text: string } | null} LastReply */
/**
 * @typedef {{ domain: string, queued: number, deferred: number, leased: number, lease_ends_at: string | null, emails: number, held: boolean, held_at: string | null,
 *   oldest_at: string, next_attempt_at: string | null, last_reply: LastReply }} Destination
 */
/**
 * @typedef {{ email_id: string, domain: string, subject: string, recipients: string[], state: string, attempts: number,
 *   next_attempt_at: string | null, expires_at: string, last_reply: LastReply, created_at: string }} Item
 */

const STATES = ['queued', 'deferred', 'sending', 'held'];

/** The scope of the three levers. */
const QUEUE_WRITE = 'queue:write';
/** What a key lacking it is not offered. */
const LEVERS = 'retrying, holding and releasing mail';

/** @type {Array<[RegExp, (ctx: Ctx) => void | Promise<void>]>} */
export const QUEUE_ROUTES = [
  [/^\/queue$/, showQueue],
  [/^\/queue\/([^/]+)$/, showDestination],
];

/** @param {string} domain */
const destinationHref = (domain) => `#/queue/${encodeURIComponent(domain)}`;

/**
 * The reply of the latest failed attempt cut to one line, whole in its title: both lists keep a row one line high,
 * and their columns, buttons included, within a laptop's width.
 * @param {LastReply} reply
 */
function lastReply(reply) {
  if (!reply) return none();
  const text = reply.code === null ? `no answer: ${reply.text}` : reply.text;
  return h('span', { class: 'clip reply', title: text }, text);
}

/**
 * What the destination last answered, whole: the lists keep it to a line, and it is what says why mail waits.
 * @param {string} domain @param {NonNullable<Destination['last_reply']>} reply
 */
function lastReplyNote(domain, reply) {
  return heldUpNote('last-reply-note', reply.code === null ? `No answer from ${domain}'s servers: ` : `The last reply from ${domain}'s servers: `,
    h('span', { class: 'reply-text' }, reply.text));
}

/** @param {string} domain */
async function retry(domain) {
  /** @type {{ retried: number }} */
  const done = await api('POST', '/v1/queue/retry', { body: { domain } });
  navigate(location.hash, `${done.retried} email${done.retried === 1 ? '' : 's'} to ${domain} will be tried now.`);
}

/** @param {string} domain */
async function hold(domain) {
  await api('POST', '/v1/queue/hold', { body: { domain } });
  navigate(location.hash, `Mail to ${domain} is held: nothing is sent there until it is released.`);
}

/** @param {string} domain */
async function release(domain) {
  await api('POST', '/v1/queue/release', { body: { domain } });
  navigate(location.hash, `Mail to ${domain} is released and goes out as it falls due.`);
}

/**
 * The buttons a destination has, as its state allows (none for a key that may not pull them): a domain nothing waits
 * for may be held ahead of its mail, but has nothing to retry.
 * @param {string} domain @param {boolean} held @param {boolean} waiting
 */
function levers(domain, held, waiting) {
  if (!may(QUEUE_WRITE)) return [];
  return held
    ? rowAction('Release', { title: `Release ${domain}?`, confirm: 'Release',
      message: h('p', null, 'Its held mail goes out as it falls due.') }, () => release(domain))
    : [
      ...(!waiting ? [] : rowAction('Retry now', { title: `Try the mail waiting for ${domain} now?`, confirm: 'Retry now',
        message: h('p', null, 'It is tried at once rather than at its next attempt.') },
      () => retry(domain))),
      ...rowAction('Hold', { title: `Hold all mail to ${domain}?`, confirm: 'Hold', danger: true,
        message: [h('p', null, 'Nothing is sent there until you release it.'),
          h('p', { class: 'muted small' }, 'Held time does not count against the 5 days mail is tried.')] }, () => hold(domain)),
    ];
}

/**
 * When mail is tried next; a time gone by says "due now": the mail waits its turn, behind the mail before it and the
 * connections the destination allows at once. The time is in the title.
 * @param {string | null} at
 */
function attemptAt(at) {
  if (!at) return none();
  return Date.parse(at) <= Date.now() ? h('time', { datetime: at, title: `due since ${formatTime(at, true)}` }, 'due now') : time(at);
}

/** @param {Destination} d */
function nextAttempt(d) {
  if (d.held) return [badge('held'), h('span', { class: 'reason' }, 'since ', time(d.held_at ?? d.oldest_at))];
  return attemptAt(d.next_attempt_at);
}

/** The form that holds a domain by its name, whether mail waits for it yet or not. */
function holdForm() {
  const domain = h('input', { id: 'hold-domain', type: 'text', required: true, placeholder: 'example.com', autocomplete: 'off' });
  return [
    h('h2', null, 'Hold a domain'),
    h('p', { class: 'muted small' }, 'Stops delivery to a domain (a provider blocking you, a mistake found) until you release it. Held time does not count against the 5 days mail is tried.'),
    ...actionForm({ class: 'filters' }, async (errors) => {
      try {
        await hold(domain.value.trim());
      } catch (err) {
        errors.show(err);
      }
    }, h('label', { for: 'hold-domain' }, 'Domain'), domain, h('button', { type: 'submit', class: 'danger' }, 'Hold')),
  ];
}

/** @param {Ctx} ctx */
async function showQueue({ view, query }) {
  const list = h('div');
  fill(view,
    h('div', { class: 'title-row' }, h('h1', null, 'Queue'), h('span', { class: 'spacer' }),
      may(QUEUE_WRITE) && rowAction('Retry all now', { title: 'Try every email waiting in the queue now?', confirm: 'Retry all now',
        message: h('p', null, 'Each is tried at once rather than at its next attempt.') },
      async () => {
        /** @type {{ retried: number }} */
        const done = await api('POST', '/v1/queue/retry', { body: {} });
        navigate(location.hash, `${done.retried} waiting email${done.retried === 1 ? '' : 's'} will be tried now.`);
      })),
    h('p', { class: 'muted' }, 'Mail waiting for its first attempt or for a retry, by destination domain, what waits longest first.'),
    withheldNote(QUEUE_WRITE, LEVERS),
    list,
    may(QUEUE_WRITE) && holdForm());

  /** @type {import('../ui.js').Column<Destination>[]} */
  const columns = [
    { header: 'Domain', cell: (d) => h('a', { href: destinationHref(d.domain) }, d.domain), className: 'nowrap' },
    { header: 'Queued', cell: (d) => String(d.queued), className: 'num', minor: true },
    { header: 'Deferred', cell: (d) => String(d.deferred), className: 'num', minor: true },
    // Under an attempt now (leased), or its node stopped: a retry leaves it until the lease ends.
    { header: 'Sending now', cell: (d) => (d.lease_ends_at ? h('span', { title: `lease ends ${d.lease_ends_at}` }, String(d.leased)) : String(d.leased)), className: 'num', minor: true },
    { header: 'Emails', cell: (d) => String(d.emails), className: 'num' },
    { header: 'Oldest', cell: (d) => time(d.oldest_at), className: 'nowrap', minor: true },
    { header: 'Next attempt', cell: nextAttempt, className: 'nowrap' },
    { header: 'Last reply', cell: (d) => lastReply(d.last_reply), className: 'fills' },
    ...(may(QUEUE_WRITE) ? [actionsColumn((/** @type {Destination} */ d) => levers(d.domain, d.held, true))] : []),
  ];
  await pagedTable(list, { api: '/v1/queue', route: '/queue', query, columns, empty: 'Nothing is waiting: every email has been handed over.' });
}

/** @param {Ctx} ctx */
async function showDestination({ view, id: domain, query }) {
  const state = h('select', { id: 'filter-state', name: 'state' }, h('option', { value: '' }, 'any'),
    STATES.map((s) => h('option', { value: s, selected: query.get('state') === s }, s)));
  const list = h('div');
  /** @type {{ data: Destination[] }} */
  const all = await api('GET', '/v1/queue', { query: new URLSearchParams({ limit: '100' }) }).catch(() => ({ data: [] }));
  const summary = all.data.find((d) => d.domain === domain);
  const held = summary?.held ?? (query.get('state') === 'held');
  fill(view,
    h('div', { class: 'title-row' }, h('h1', null, domain), held ? badge('held') : null, h('span', { class: 'spacer' }), levers(domain, held, summary !== undefined)),
    h('p', null, h('a', { href: '#/queue' }, '← The whole queue'),
      summary ? ` · ${summary.queued} waiting for a first attempt, ${summary.deferred} deferred, the oldest since ` : null,
      summary ? time(summary.oldest_at) : null),
    summary?.last_reply ? lastReplyNote(domain, summary.last_reply) : null,
    withheldNote(QUEUE_WRITE, LEVERS),
    h('form', { class: 'filters', role: 'search', onsubmit: (/** @type {Event} */ event) => {
      event.preventDefault();
      const q = new URLSearchParams();
      if (state.value) q.set('state', state.value);
      navigate(hashOf(`/queue/${encodeURIComponent(domain)}`, q));
    } }, h('label', { for: 'filter-state' }, 'State'), state, h('button', { type: 'submit' }, 'Filter')),
    list);

  /** @type {import('../ui.js').Column<Item>[]} */
  const columns = [
    { header: 'Email', cell: (i) => clipped(i.subject || i.email_id, { href: hrefTo('emails', i.email_id), wide: true }) },
    { header: 'Recipients', cell: (i) => clipped(i.recipients.join(', ')) },
    { header: 'State', cell: (i) => badge(i.state), role: 'status' },
    { header: 'Attempts', cell: (i) => String(i.attempts), className: 'num' },
    { header: 'Next attempt', cell: (i) => attemptAt(i.next_attempt_at) },
    { header: 'Gives up', cell: (i) => time(i.expires_at) },
    { header: 'Last reply', cell: (i) => lastReply(i.last_reply), className: 'fills' },
  ];
  await pagedTable(list, {
    api: '/v1/queue/items', route: `/queue/${encodeURIComponent(domain)}`, query, filters: ['state'], fixed: { domain }, columns,
    empty: 'No email waits for this domain.',
  });
}
