// @ts-check
// Received mail: the list, and a message's page with its envelope, the email
// of ours it answers, SPF, DKIM and DMARC results, attachments, every header
// and its body.
import { loadRecord, pagedTable } from '../lists.js';
import { bodyParts } from '../preview.js';
import { actionsColumn, badge, clipped, clippedList, code, details, downloadButton, fill, formatBytes, h, hrefTo, joined, none, table, time } from '../ui.js';
import { domainLink } from './domains.js';
import { emailLink } from './emails.js';

/** @typedef {import('../ui.js').Children} Children */
/** @typedef {import('../nav.js').Ctx} Ctx */
/**
 * @template T
 * @typedef {import('../ui.js').Column<T>} Column
 */
/**
 * @typedef {{ id: string, status: 'received' | 'processed' | 'failed', failure_reason: string | null,
 *   domain_id: string, from: string, to: string[], cc: string[], subject: string,
 *   message_id: string | null, in_reply_to_email_id: string | null, envelope: { mail_from: string, rcpt_to: string[] }, size: number,
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

/** @type {Array<[RegExp, (ctx: Ctx) => void | Promise<void>]>} */
export const INBOUND_ROUTES = [
  [/^\/inbound$/, showInbound],
  [/^\/inbound\/([^/]+)$/, showInboundEmail],
];

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
    h('p', null, h('a', { href: '#/inbound' }, '← All inbound mail'), ' · id ', code(message.id)),
    details([
      ['From', message.from || none()],
      ['To', joined(message.to)],
      ['Cc', joined(message.cc)],
      ['Reply-To', joined(message.reply_to)],
      ['Envelope sender', message.envelope.mail_from || '(null sender)'],
      ['Envelope recipients', joined(message.envelope.rcpt_to)],
      ['Message-ID', code(message.message_id)],
      // The email of ours it answers, found by its In-Reply-To or References.
      ...(message.in_reply_to_email_id ? [/** @type {[string, Children]} */ (['In reply to', emailLink(message.in_reply_to_email_id)])] : []),
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

/**
 * A value may hold a signature or a tracking URL hundreds of characters long with no space in it: it is broken
 * anywhere, in the width the name leaves, rather than widening the page.
 * @type {Column<HeaderField>[]}
 */
const HEADER_COLUMNS = [
  { header: 'Name', cell: (f) => f.name, className: 'nowrap' },
  { header: 'Value', cell: (f) => f.value, className: 'header-value fills' },
];
