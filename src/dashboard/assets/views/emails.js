// @ts-check
// Sent mail: the list with its filters (a broadcast's emails among them), and
// an email's page: its details and outcome, recipients, attachments, replies,
// timeline, body and, on request, its source; a scheduled or pending email
// can be cancelled, a scheduled one moved to another time, and a sent one
// resent as a new email.
import { may, withheldNote } from '../access.js';
import { api } from '../api.js';
import { filterForm, filterSelect, filterText, loadRecord, pagedTable } from '../lists.js';
import { hashOf, navigate } from '../nav.js';
import { bodyParts, scrolledText } from '../preview.js';
import {
  actionsColumn, address, askingButton, badge, clipped, clippedList, code, copyable, count, details, downloadButton, errorBox, errorSlot, fieldErrors, fill,
  foldOnPhone, formatBytes, formatTime, h,
  hrefTo, isoWithOffset, joined, localInputValue, loading, mailboxParts, none, table, time, whileBusy,
} from '../ui.js';
import { broadcastLink } from './broadcasts.js';
import { domainLink } from './domains.js';
import { eventDetail, eventRecipient, eventsOfEmail } from './events.js';

/** @typedef {import('../ui.js').Children} Children */
/** @typedef {import('../nav.js').Ctx} Ctx */
/**
 * @template T
 * @typedef {import('../ui.js').Column<T>} Column
 */
/** @typedef {import('./events.js').ApiEvent} ApiEvent */
/**
 * @template T
 * @typedef {import('../lists.js').Page<T>} Page
 */
/**
 * @typedef {{ id: string, from: string, to: string[], cc: string[], bcc: string[], reply_to: string[],
 *   subject: string, tags: string[], status: string, mode: 'live' | 'test', domain_id: string | null,
 *   message_id: string, scheduled_at: string | null, sent_at: string | null, resent_from: string | null,
 *   broadcast_id: string | null, bounced_recipients: number, complained_recipients: number,
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
/** @typedef {import('./inbound.js').InboundSummary} InboundSummary */

/** An email's timeline is read in one call, the API's largest page; so are its replies. */
const TIMELINE_LIMIT = 100;
const REPLIES_LIMIT = 100;
const EMAIL_STATUSES = ['pending', 'scheduled', 'sent', 'delivered', 'failed', 'cancelled'];
/** The list's outcome filter: a recipient bounced (the whole email, or some recipients of a delivered one), or complained. */
const EMAIL_OUTCOMES = ['bounced', 'complained'];
/** The statuses cancelEmail acts on; from `sent` on a message may be on the wire. */
const CANCELLABLE = ['scheduled', 'pending'];
/** The statuses rescheduleEmail acts on: not yet handed to delivery. */
const RESCHEDULABLE = ['scheduled', 'pending'];
/** The scope of cancelling, rescheduling and resending, as of sending. */
const EMAILS_SEND = 'emails:send';

/** The statuses resendEmail acts on: the email has gone out, or will not. */
const RESENDABLE = ['sent', 'delivered', 'failed'];

/** @type {Array<[RegExp, (ctx: Ctx) => void | Promise<void>]>} */
export const EMAIL_ROUTES = [
  [/^\/emails$/, showEmails],
  [/^\/emails\/([^/]+)$/, showEmail],
];

/** @param {Ctx} ctx */
function showEmails({ view, query }) {
  // Kept through a new search: the list stays the broadcast's until "all emails".
  const broadcastId = query.get('broadcast_id');
  const filters = [
    filterSelect('Status', 'status', query, 'any', EMAIL_STATUSES.map((s) => [s, s])),
    filterSelect('Outcome', 'outcome', query, 'any', EMAIL_OUTCOMES.map((o) => [o, `a recipient ${o}`])),
    filterSelect('Mode', 'mode', query, 'live and test', [['live', 'live'], ['test', 'test']]),
    filterText('To', 'to', query),
    filterText('From', 'from', query, 'name or address'),
    filterText('Subject', 'subject', query, 'part of it'),
  ];
  const list = h('div');
  fill(view, h('h1', null, 'Emails'),
    broadcastId && h('p', { class: 'filter-note' }, 'The emails of the broadcast ', broadcastLink(broadcastId), ' · ',
      h('a', { href: '#/emails' }, 'all emails')),
    filterForm('/emails', filters, new URLSearchParams(broadcastId ? { broadcast_id: broadcastId } : {})), list);
  return pagedTable(list, {
    api: '/v1/emails', route: '/emails', query, filters: [...filters, 'broadcast_id'], columns: EMAIL_COLUMNS,
    empty: [...filters.map((f) => f.control.name), 'broadcast_id'].some((f) => query.has(f))
      ? ['No emails match these filters. ', h('a', { href: '#/emails' }, 'Show all emails')]
      : firstEmail(),
  });
}

/** The empty list's way to a first email: the request that sends one, to paste into a shell, and what each kind of key needs. */
function firstEmail() {
  const command = `curl ${location.origin}/v1/emails \\
  -H "Authorization: Bearer $MAILROOM_API_KEY" -H "Content-Type: application/json" \\
  -d '{"from": "Acme <hello@acme.example>", "to": "delivered@mailroom.test",
       "subject": "Hello from Mailroom", "text": "It works."}'`;
  return [
    'No emails yet. Send one through the API (', h('code', null, 'POST /v1/emails'), ') or SMTP submission, from a ',
    h('a', { href: '#/domains' }, 'domain'), ' of yours. For a first one:',
    copyable(command, { label: 'command that sends an email', block: true }),
    h('span', { class: 'muted small' }, 'With a test key any sender will do, and the email is kept here for you to read, never sent. '
      + 'A live key sends from a verified domain of its workspace.'),
  ];
}

/** @type {Column<EmailSummary>[]} */
const EMAIL_COLUMNS = [
  { header: 'Created', cell: (e) => time(e.created_at), className: 'nowrap' },
  { header: 'From', cell: (e) => senderName(e.from), minor: true },
  { header: 'To', cell: (e) => clippedList(e.to.map(bareAddress)) },
  { header: 'Subject', cell: (e) => clipped(e.subject || '(no subject)', { href: hrefTo('emails', e.id), wide: true }), role: 'primary' },
  { header: 'Status', cell: outcomeBadge, role: 'status' },
  { header: 'Mode', cell: (e) => badge(e.mode) },
];

/** A list's sender, as a mail client lists it: by its name, or its address when it has none; whole in the title. @param {string} from */
function senderName(from) {
  const { name, address } = mailboxParts(from);
  return h('span', { class: 'clip', title: from }, name || address);
}

/** A recipient by its address alone: the list is searched and read by address. @param {string} to */
const bareAddress = (to) => mailboxParts(to).address;

/**
 * What became of an email, in one badge. `delivered` says only that a recipient took it: one who then complained,
 * or others who bounced, are what a person needs to see. The counts are in the title.
 * @param {EmailSummary} e
 */
function outcomeBadge(e) {
  const shown = e.complained_recipients > 0 ? badge('complained')
    : e.status === 'delivered' && e.bounced_recipients > 0 ? badge('partly bounced')
      // Failed because it bounced, as against suppressed or refused before sending.
      : e.status === 'failed' && e.bounced_recipients > 0 ? badge('bounced') : badge(e.status);
  const counts = [
    e.bounced_recipients > 0 && `${count(e.bounced_recipients, 'recipient', 'recipients')} bounced`,
    e.complained_recipients > 0 && `${count(e.complained_recipients, 'recipient', 'recipients')} complained`,
  ].filter(Boolean);
  if (counts.length > 0) shown.title = `${e.status}: ${counts.join(', ')}`;
  return shown;
}

/**
 * The email's outcome in words, beside its badge: how many recipients took it and how many bounced, and who complained.
 * @param {Email} email
 */
function outcomeText(email) {
  const delivered = email.recipients.filter((r) => r.status === 'delivered').length;
  return [
    email.status === 'delivered' && email.bounced_recipients > 0
      && `delivered to ${delivered} of ${count(email.recipients.length, 'recipient', 'recipients')}, ${email.bounced_recipients} bounced`,
    email.complained_recipients > 0 && `${count(email.complained_recipients, 'recipient', 'recipients')} reported it as spam`,
  ].filter(Boolean).join('; ');
}
/** Recipient statuses that end without delivery. */
const REFUSED = ['bounced', 'suppressed', 'failed'];
/** Refused or delayed recipients named in the note atop an email; the Recipients table lists them all. */
const NOTED_RECIPIENTS = 3;

/**
 * Why the email did not reach everyone, first thing on its page: the recipients it did not reach, or not yet, each
 * with the last reply or the reason it was not sent. Nothing when every recipient took it or it has not gone yet.
 * @param {Email} email
 */
function outcomeNote(email) {
  const refused = email.recipients.filter((r) => REFUSED.includes(r.status));
  const delayed = email.recipients.filter((r) => r.status === 'deferred');
  /** @param {Recipient[]} rs */
  const lines = (rs) => [
    ...rs.slice(0, NOTED_RECIPIENTS).map((r) => h('li', { title: `${r.email} ${r.status}${r.detail ? `: ${r.detail}` : ''}` },
      h('strong', null, r.email), ` ${r.status}`, r.detail && `: ${r.detail}`)),
    rs.length > NOTED_RECIPIENTS && h('li', { class: 'muted' }, `and ${rs.length - NOTED_RECIPIENTS} more: see Recipients`),
  ];
  return [
    refused.length > 0 && h('div', { class: 'error-box outcome-note', role: 'note' },
      h('p', null, h('strong', null, refused.length === email.recipients.length ? 'Not delivered' : `Not delivered to ${refused.length} of ${email.recipients.length} recipients`)),
      h('ul', null, lines(refused))),
    delayed.length > 0 && h('div', { class: 'panel outcome-note', role: 'note' },
      h('p', null, h('strong', null, `Delayed for ${count(delayed.length, 'recipient', 'recipients')}`), ' · tried again later, on the retry schedule'),
      h('ul', null, lines(delayed))),
  ];
}

/** @param {Ctx} ctx */
async function showEmail({ view, id }) {
  const path = `/v1/emails/${encodeURIComponent(id)}`;
  // Asked for now, shown once the email is.
  /** @type {Promise<Page<ApiEvent>>} */
  const events = api('GET', `${path}/events`, { query: new URLSearchParams({ limit: String(TIMELINE_LIMIT) }) });
  events.catch(() => {});
  /** @type {Promise<Page<InboundSummary>> | null} */
  const replies = may('inbound:read')
    ? api('GET', '/v1/inbound', { query: new URLSearchParams({ in_reply_to_email_id: id, limit: String(REPLIES_LIMIT) }) }) : null;
  replies?.catch(() => {});
  /** @type {Email | undefined} */
  const email = await loadRecord(view, 'Email', path, { href: '#/emails', label: 'All emails' });
  if (!email) return;
  const timeline = h('div', null, loading());
  const scheduled = email.status === 'scheduled';
  const recipients = h('div', null, table(recipientColumns(new Set(), scheduled), email.recipients));
  const replyList = h('div');
  const eventsSummary = h('span', null, 'Events');
  // A phone folds the details, recipients, attachments and timeline under a line each, so that the body is near the top.
  fill(view,
    h('h1', null, email.subject || '(no subject)'),
    h('p', null, h('a', { href: '#/emails' }, '← All emails'), ' · id ', code(email.id)),
    outcomeNote(email),
    [CANCELLABLE, RESENDABLE, RESCHEDULABLE].some((statuses) => statuses.includes(email.status))
      && withheldNote(EMAILS_SEND, 'cancelling, rescheduling and resending emails'),
    may(EMAILS_SEND) && [
      CANCELLABLE.includes(email.status) && cancelButton(path, email),
      RESENDABLE.includes(email.status) && resendButton(path, email),
      RESCHEDULABLE.includes(email.status) && rescheduleForm(path, email.scheduled_at),
    ],
    foldOnPhone(['Details', outcomeBadge(email)], emailDetails(email)),
    foldOnPhone(`Recipients (${email.recipients.length})`, h('h2', null, 'Recipients'), recipients),
    email.attachments.length > 0 && foldOnPhone(`Attachments (${email.attachments.length})`, h('h2', null, 'Attachments'),
      table(attachmentColumns(path), email.attachments.map((a, index) => ({ ...a, index })))),
    replyList,
    foldOnPhone(eventsSummary, h('h2', null, 'Events'), timeline),
    bodyParts(email.html, email.text),
    sourceSection(path));
  void showReplies(replyList, replies);
  try {
    const page = await events;
    // A complaint leaves its recipient delivered: the timeline says who.
    const complainers = new Set(page.data.filter((e) => e.type === 'email.complained').map((e) => String(e.data.to)));
    if (complainers.size > 0) fill(recipients, table(recipientColumns(complainers, scheduled), email.recipients));
    fill(eventsSummary, `Events (${page.data.length}${page.has_more ? '+' : ''})`);
    fill(timeline,
      page.data.length > 0 ? table(TIMELINE_COLUMNS, page.data) : h('p', { class: 'empty' }, 'No events yet.'),
      page.has_more && h('p', { class: 'muted small' }, `The latest ${TIMELINE_LIMIT} events are shown.`),
      // The Events list pages through them all, and narrows them by kind, recipient or time.
      page.data.length > 0 && may('events:read') && h('p', { class: 'small' }, h('a', { href: eventsOfEmail(email.id) }, 'All events of this email')));
  } catch (err) {
    fill(timeline, errorBox(err));
  }
}

/**
 * The messages received in answer to the email, once read; nothing when there are none.
 * @param {HTMLElement} where @param {Promise<Page<InboundSummary>> | null} replies  null for a key that may not read inbound mail
 */
async function showReplies(where, replies) {
  if (!replies) return;
  try {
    const page = await replies;
    if (page.data.length === 0) return;
    fill(where, h('h2', null, 'Replies'), table(REPLY_COLUMNS, page.data),
      page.has_more && h('p', { class: 'muted small' }, `The latest ${REPLIES_LIMIT} replies are shown.`));
  } catch (err) {
    fill(where, h('h2', null, 'Replies'), errorBox(err));
  }
}

/** @type {Column<InboundSummary>[]} */
const REPLY_COLUMNS = [
  { header: 'Received', cell: (m) => time(m.received_at), className: 'nowrap' },
  { header: 'From', cell: (m) => clipped(m.from || m.envelope.mail_from || '(null sender)') },
  { header: 'Subject', cell: (m) => clipped(m.subject || '(no subject)', { href: hrefTo('inbound', m.id), wide: true }), role: 'primary' },
];

/**
 * A link to an email, named by its subject once read (by a key that may read it); the id stays, as the title, and as
 * the text if the subject cannot be read.
 * @param {string} id
 */
export function emailLink(id) {
  const link = h('a', { href: hrefTo('emails', id), title: id }, h('code', null, id));
  if (may('emails:read')) {
    api('GET', `/v1/emails/${encodeURIComponent(id)}`).then((/** @type {Email} */ e) => fill(link, e.subject || '(no subject)'), () => {});
  }
  return link;
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
      const source = scrolledText(await api('GET', `${path}/raw`, { text: true }), 'Source', 'body-text source');
      fill(body, source);
      // The button goes: the focus goes on to what it showed.
      show.remove();
      source.focus();
    } catch (err) {
      fill(body, errorBox(err));
    }
  }) }, 'Show the source');
  return [h('h2', null, 'Source'), show, body];
}

/** “Hello” to 3 recipients, as a question names an email. @param {Email} email */
const named = (email) => `“${email.subject || '(no subject)'}” to ${count(email.recipients.length, 'recipient', 'recipients')}`;

/** Cancel, after a question: what is cancelled cannot be sent again but by a resend. @param {string} path the email's @param {Email} email */
function cancelButton(path, email) {
  const errors = errorSlot();
  const button = askingButton('Cancel', { title: 'Cancel this email?', confirm: 'Cancel the email', danger: true,
    message: [h('p', null, `${named(email)} is not sent.`), h('p', { class: 'muted small' }, 'This cannot be undone; a resend would make a new email.')] },
  async () => {
    /** @type {EmailCancel} */
    const answer = await api('POST', `${path}/cancel`);
    navigate(location.hash, answer.cancelled ? 'The email was cancelled.'
      : `The email could not be cancelled: it is ${answer.status} already.`);
  }, errors);
  return h('div', { class: 'actions' }, button, errors.node);
}

/** Resend, after a question: each recipient gets the message again. @param {string} path the email's @param {Email} email */
function resendButton(path, email) {
  const errors = errorSlot();
  const button = askingButton('Resend', { title: 'Send this email again?', confirm: 'Resend',
    message: h('p', null, `${named(email)} goes out again, as a new email; each recipient gets it a second time.`) },
  async () => {
    /** @type {Email} */
    const copy = await api('POST', `${path}/resend`);
    navigate(hrefTo('emails', copy.id), `Resent: this is the new email, ${copy.status}. The original is linked under “Resent from”.`);
  }, errors);
  return h('div', { class: 'actions' }, button,
    h('span', { class: 'muted small' }, 'Sends the same message to the same recipients again, as a new email.'), errors.node);
}

/** A pending email is offered a time an hour from now to move it to. */
const RESCHEDULE_AHEAD_MS = 60 * 60 * 1000;

/**
 * Moves a scheduled email, or a pending one not yet handed to delivery, to another time, chosen in the browser's zone.
 * @param {string} path the email's
 * @param {string | null} scheduledAt  the current time of the schedule; null for a pending email
 */
function rescheduleForm(path, scheduledAt) {
  const errors = fieldErrors();
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const shown = localInputValue(scheduledAt ? new Date(scheduledAt) : new Date(Date.now() + RESCHEDULE_AHEAD_MS));
  const at = h('input', { id: 'reschedule-at', type: 'datetime-local', required: true, value: shown, 'aria-describedby': 'reschedule-hint' });
  // The form's one field: every refusal shows beside it.
  const near = errors.slot('scheduled_at', 'Send at', at);
  const submit = h('button', { type: 'submit', class: 'secondary' }, 'Reschedule');
  const form = h('form', { class: 'panel reschedule', novalidate: true, onsubmit: (event) => {
    event.preventDefault();
    void whileBusy(submit, async () => {
      try {
        // The input has no seconds: left as shown, the time keeps its own. An empty input goes as it is, for the
        // API's refusal to say what it takes.
        const chosen = scheduledAt && at.value === shown ? scheduledAt : at.value && isoWithOffset(new Date(at.value));
        /** @type {Email} */
        const moved = await api('PATCH', path, { body: { scheduled_at: chosen } });
        navigate(location.hash, moved.status === 'scheduled' ? `The email is rescheduled for ${formatTime(moved.scheduled_at ?? '')}.`
          : `The time has come already: the email is ${moved.status}.`);
      } catch (err) {
        errors.show(err, near);
      }
    });
  } },
  h('h2', null, 'Reschedule'),
  h('div', { class: 'inline-form' }, h('label', { for: 'reschedule-at' }, 'Send at'), at, submit),
  h('p', { id: 'reschedule-hint', class: 'muted small hint' }, `In your time zone (${zone}); at most 30 days ahead.`),
  near);
  return form;
}

/**
 * The email's fields; those it does not have (no Cc, never scheduled, not a resend) are left out, so that what it has
 * stays near the top.
 * @param {Email} email
 */
function emailDetails(email) {
  /** @type {Array<[string, Children] | false>} */
  const rows = [
    ['Status', [outcomeBadge(email), outcomeText(email) && h('span', { class: 'muted' }, ` ${outcomeText(email)}`)]],
    ['Mode', email.mode === 'test' ? 'test: kept in the sink, never sent' : 'live'],
    ['From', email.from],
    ['To', joined(email.to)],
    email.cc.length > 0 && ['Cc', joined(email.cc)],
    email.bcc.length > 0 && ['Bcc', joined(email.bcc)],
    email.reply_to.length > 0 && ['Reply-To', joined(email.reply_to)],
    email.tags.length > 0 && ['Tags', email.tags.map((t) => h('span', { class: 'tag' }, t))],
    ['Message-ID', code(email.message_id)],
    ['Domain', email.domain_id ? domainLink(email.domain_id) : none()],
    ['Created', time(email.created_at)],
    email.scheduled_at !== null && ['Scheduled for', time(email.scheduled_at)],
    ['Sent', time(email.sent_at)],
    ['Updated', time(email.updated_at)],
    email.resent_from !== null && ['Resent from', h('a', { href: hrefTo('emails', email.resent_from) }, email.resent_from)],
    email.broadcast_id !== null && ['Broadcast', broadcastLink(email.broadcast_id)],
    ...Object.entries(email.headers).map(([name, value]) => /** @type {[string, Children]} */ ([name, value])),
  ];
  return details(rows.filter((row) => row !== false));
}

/**
 * An address wraps whole: it is what a person looks for here. At tablet widths the type and code are left out: the
 * details above list the To, Cc and Bcc, and a reply opens with its code. A recipient of an email not yet due is
 * queued to the API, and scheduled as the email is, to a person.
 * @param {Set<string>} complainers  the addresses that reported the email as spam
 * @param {boolean} scheduled  whether the email waits for its time
 * @returns {Column<Recipient>[]}
 */
const recipientColumns = (complainers, scheduled) => [
  { header: 'Address', cell: (r) => address(r.email), className: 'address-cell' },
  { header: 'Type', cell: (r) => r.type, minor: true },
  { header: 'Status', cell: (r) => {
    const status = badge(scheduled && r.status === 'queued' ? 'scheduled' : r.status);
    return complainers.has(r.email) ? [status, ' ', badge('complained')] : status;
  }, role: 'status' },
  { header: 'SMTP code', cell: (r) => r.smtp_code, minor: true },
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
/** @type {Column<ApiEvent>[]} */
const TIMELINE_COLUMNS = [
  { header: 'Time', cell: (e) => time(e.created_at, true), className: 'nowrap' },
  { header: 'Type', cell: (e) => e.type, className: 'nowrap', role: 'primary' },
  { header: 'Recipient', cell: eventRecipient },
  { header: 'Detail', cell: eventDetail, className: 'prose' },
];
