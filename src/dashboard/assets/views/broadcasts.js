// @ts-check
// Broadcasts: the list with each one's progress; a composer for drafts and
// scheduled ones (sender, with a word when its domain is not an active one;
// content written here or taken from a template; an audience by tags and
// engagement with its live count), a preview as one contact that follows each
// save, says when the form has moved on from it and which contact fields it
// writes empty for that contact, test sends, and sending now or at a time;
// and, once sending has started, its progress and counts, refreshed while it
// runs, with pause, resume and cancel.
import { fixedUnless, may, withheldNote } from '../access.js';
import { api, keyMode } from '../api.js';
import { codeEditor } from '../code-editor.js';
import { everyItem, loadRecord, pagedTable } from '../lists.js';
import { hashOf, navigate, refreshWhileShown, showNote } from '../nav.js';
import { previewFrame, scrolledText } from '../preview.js';
import {
  actionForm, badge, clipped, code, confirmDialog, count, describedBy, details, errorBox, fieldErrors, fill, formatTime, h, hrefTo, loading,
  fromNow, localInputValue, mailboxParts, none, progressBar, rowAction, table, time, whileBusy,
} from '../ui.js';
import { guardEdits } from '../unsaved.js';
import { TIERS, tierLabel } from './contacts.js';

/** @typedef {import('../nav.js').Ctx} Ctx */
/** @typedef {import('../ui.js').Children} Children */
/** @typedef {'draft' | 'scheduled' | 'sending' | 'paused' | 'sent' | 'cancelled'} BroadcastStatus */
/** @typedef {import('./contacts.js').Tier} Tier */
/**
 * @typedef {{ audience_size: number, emails_created: number, sent: number, delivered: number, bounced: number,
 *   complained: number, opened: number, clicked: number, unsubscribed: number, failed: number, suppressed: number, skipped: number }} Stats
 */
/**
 * @typedef {{ contact_id: string, email: string, code: SkipCode, message: string, created_at: string }} Skip
 * @typedef {'render_failed' | 'invalid_address' | 'invalid_subject' | 'message_too_large'} SkipCode
 */
/** @typedef {{ tag_ids: string[], exclude_tag_ids: string[], engagement_tiers: Tier[] | null }} AudienceFilter */
/**
 * @typedef {{ id: string, name: string, from: string | null, reply_to: string[], subject: string | null,
 *   preview_text: string | null, html: string | null, text: string | null, template: { id: string, version: number | null } | null,
 *   audience: AudienceFilter, send_rate_per_minute: number | null, status: BroadcastStatus, status_reason: string | null,
 *   mode: 'live' | 'test' | null, scheduled_at: string | null, created_at: string, updated_at: string, started_at: string | null,
 *   sent_at: string | null, cancelled_at: string | null, stats: Stats }} Broadcast
 */
/** @typedef {{ id: string, email: string, name: string | null, engagement_tier: Tier }} AudienceContact */
/** @typedef {{ contact_id: string, to: string, subject: string, html: string | null, text: string, empty_fields: string[] }} BroadcastRender */
/** @typedef {{ count: number, data: AudienceContact[] }} Audience */
/** @typedef {{ id: string, name: string }} Tag */
/** @typedef {{ id: string, name: string, status: string }} Domain */
/** @typedef {{ id: string, name: string, alias: string | null, published_version: number | null, latest_version: number }} TemplateSummary */

const STATUSES = /** @type {BroadcastStatus[]} */ (['draft', 'scheduled', 'sending', 'paused', 'sent', 'cancelled']);
/** The statuses in which the content and audience may still change (updateBroadcast). */
const EDITABLE = ['draft', 'scheduled'];
/** The statuses in which a broadcast moves by itself, so its page keeps itself current. */
const MOVING = ['scheduled', 'sending', 'paused'];
const REFRESH_MS = 2_000;
/** The live count is asked for again this long after the last change to the audience. */
const COUNT_DELAY_MS = 300;
/** Contacts of the audience listed beside the count; the preview may choose among all the API gives. */
const SAMPLE_ROWS = 8;
/** sendBroadcastTest takes at most this many addresses. */
const MAX_TEST_ADDRESSES = 5;
/** sendBroadcast schedules at most this far ahead (checkScheduleTime). */
const MAX_SCHEDULE_AHEAD_MS = 30 * 24 * 60 * 60 * 1000;
/** The statuses in which emails are still being made: the bar counts contacts done, not yet what became of the emails. */
const MAKING = ['sending', 'paused'];
/** How wide a phone lays a message out (an iPhone's 375 CSS pixels); the phone preview's box in app.css is as wide. */
const PHONE_WIDTH_PX = 375;
/** Fallbacks suggested for a contact field that renders empty; any other field gets an ellipsis, to replace. */
const SUGGESTED_FALLBACKS = /** @type {Record<string, string>} */ ({ first_name: 'there', name: 'there' });

/** @type {Array<[RegExp, (ctx: Ctx) => void | Promise<void>]>} */
export const BROADCAST_ROUTES = [
  [/^\/broadcasts$/, showBroadcasts],
  [/^\/broadcasts\/new$/, showNewBroadcast],
  [/^\/broadcasts\/([^/]+)$/, showBroadcast],
];

/** What sending from a domain not verified means, for the key signed in (the API refuses it to a live key). */
const UNVERIFIED_SENDER = {
  test: 'this test key may send from it (its mail is kept here, never sent).',
  live: 'a live key sends only from a verified domain, so sending this would be refused. Verify it under Domains first.',
  unknown: 'a test key may send from it (its mail is kept, never sent); a live send will be refused.',
};

/** The scope of writing, sending, pausing and cancelling; counting and previewing need only broadcasts:read. */
const BROADCASTS_WRITE = 'broadcasts:write';
// The lists the composer offers choices from, each read only by a key that may.
const DOMAINS_READ = 'domains:read';
const TAGS_READ = 'contacts:read';
const TEMPLATES_READ = 'templates:read';

/**
 * Every item of a list a key may read; none without its scope.
 * @template T @param {string} scope @param {string} path @param {Record<string, string>} [filters] @returns {Promise<T[]>}
 */
const everyReadable = (scope, path, filters) => (may(scope) ? everyItem(path, filters) : Promise.resolve([]));

/** @param {string} id */
const broadcastHref = (id) => `#/broadcasts/${encodeURIComponent(id)}`;
/** @param {string} id */
const broadcastPath = (id) => `/v1/broadcasts/${encodeURIComponent(id)}`;

/**
 * A link to a broadcast, named once its record is read (by a key that may read it). The id stays, as the title, and
 * as the text if the name cannot be read.
 * @param {string} id
 */
export function broadcastLink(id) {
  const link = h('a', { href: broadcastHref(id), title: id }, h('code', null, id));
  if (may('broadcasts:read')) api('GET', broadcastPath(id)).then((/** @type {Broadcast} */ b) => fill(link, b.name), () => {});
  return link;
}

// ---------------------------------------------------------------------------
// The list

/** @param {Ctx} ctx */
function showBroadcasts({ view, query }) {
  const status = h('select', { id: 'filter-status', onchange: () => {
    const q = new URLSearchParams(status.value ? { status: status.value } : {});
    navigate(hashOf('/broadcasts', q));
  } }, h('option', { value: '' }, 'any'), STATUSES.map((s) => h('option', { value: s, selected: query.get('status') === s }, s)));
  const list = h('div');
  fill(view,
    h('div', { class: 'title-row' }, h('h1', null, 'Broadcasts'), h('span', { class: 'spacer' }),
      may(BROADCASTS_WRITE) && h('a', { href: '#/broadcasts/new', class: 'button-link' }, 'New broadcast')),
    withheldNote(BROADCASTS_WRITE, 'writing and sending broadcasts'),
    h('div', { class: 'filters' }, h('label', { for: 'filter-status' }, 'Status'), status),
    list);
  /** @type {import('../ui.js').Column<Broadcast>[]} */
  const columns = [
    // One block, the subject under the name: a phone's card would set them side by side, each in half its width.
    { header: 'Name', cell: (b) => h('div', { class: 'name-and-subject' }, h('a', { href: broadcastHref(b.id) }, b.name),
      h('div', { class: 'muted small' }, b.subject !== null ? readableSubject(b.subject) : b.template ? 'the template’s subject' : 'no subject yet')) },
    { header: 'Status', cell: (b) => badge(b.status), role: 'status' },
    { header: 'Audience', cell: (b) => b.stats.audience_size.toLocaleString(), className: 'num', minor: true },
    { header: 'Progress', cell: (b) => (!b.started_at ? notYet()
      : MAKING.includes(b.status) ? progressBar(contactsDone(b.stats), b.stats.audience_size, 'Contacts done') : outcomeBar(b.stats)),
    className: 'progress-cell' },
    // Left out on a tablet: once a broadcast has made its emails, its bar says how many were delivered.
    { header: 'Delivered', cell: (b) => madeCount(b, 'delivered'), className: 'num', minor: true },
    // A tablet leaves the Complained column out: there the Bounced cell says the complaints under the bounces.
    { header: 'Bounced', cell: (b) => [madeCount(b, 'bounced'), b.stats.complained > 0
      && h('strong', { class: 'alarming-count folded-complaints' }, count(b.stats.complained, 'complaint', 'complaints'))], className: 'num' },
    { header: 'Complained', cell: (b) => madeCount(b, 'complained'), className: 'num', minor: true },
    { header: 'Opened', cell: (b) => madeCount(b, 'opened'), className: 'num', minor: true },
    { header: 'Clicked', cell: (b) => madeCount(b, 'clicked'), className: 'num', minor: true },
    { header: 'When', cell: when, className: 'nowrap' },
  ];
  return pagedTable(list, {
    api: '/v1/broadcasts', route: '/broadcasts', query, filters: ['status'], columns,
    empty: query.has('status') ? `No ${query.get('status')} broadcasts.` : 'No broadcasts yet. Press New broadcast to write one.',
  });
}

/** A Liquid output, `{{ … }}`, and what is inside it. */
const LIQUID_OUTPUT = /\{\{-?\s*([\s\S]*?)\s*-?\}\}/g;

/**
 * A subject as a list shows it: each Liquid output as the name of the field it writes, in a pill
 * (`{{ contact.first_name | default: "you" }}` as first_name), the output itself in the pill's title.
 * @param {string} subject
 */
function readableSubject(subject) {
  /** @type {Array<string | HTMLElement>} */
  const parts = [];
  let rest = 0;
  for (const output of subject.matchAll(LIQUID_OUTPUT)) {
    const field = output[1].split('|')[0].trim().replace(/^contact\.(properties\.)?/, '');
    parts.push(subject.slice(rest, output.index), h('span', { class: 'liquid-field', title: output[0] }, field || '…'));
    rest = output.index + output[0].length;
  }
  parts.push(subject.slice(rest));
  return parts;
}

/** The moment that matters most for its status. @param {Broadcast} b */
function when(b) {
  if (b.sent_at) return ['Sent ', time(b.sent_at)];
  if (b.cancelled_at) return ['Cancelled ', time(b.cancelled_at)];
  if (b.started_at) return ['Started ', time(b.started_at)];
  if (b.scheduled_at) return ['For ', time(b.scheduled_at)];
  return ['Created ', time(b.created_at)];
}

/** @param {Ctx} ctx */
function showNewBroadcast({ view }) {
  if (!may(BROADCASTS_WRITE)) {
    fill(view, h('h1', null, 'New broadcast'), withheldNote(BROADCASTS_WRITE, 'writing broadcasts'),
      h('p', null, h('a', { href: '#/broadcasts' }, '← All broadcasts')));
    return;
  }
  const name = h('input', { id: 'broadcast-name', type: 'text', required: true, autocomplete: 'off',
    placeholder: 'November newsletter' });
  fill(view, h('h1', null, 'New broadcast'),
    h('p', { class: 'muted' }, 'Name it for yourself; recipients never see the name. Then write it, choose its audience, preview, test and send.'),
    actionForm({ class: 'inline-form' }, async (errors) => {
      try {
        /** @type {Broadcast} */
        const created = await api('POST', '/v1/broadcasts', { body: { name: name.value.trim() } });
        navigate(broadcastHref(created.id), `The draft “${created.name}” was created.`);
      } catch (err) {
        errors.show(err);
      }
    },
    h('label', { for: 'broadcast-name' }, 'Name'), name,
    h('button', { type: 'submit' }, 'Create draft')),
    h('p', null, h('a', { href: '#/broadcasts' }, '← All broadcasts')));
  name.focus();
}

/** @param {Ctx} ctx */
async function showBroadcast({ view, id }) {
  /** @type {Broadcast | undefined} */
  const broadcast = await loadRecord(view, 'Broadcast', broadcastPath(id), { href: '#/broadcasts', label: 'All broadcasts' });
  if (!broadcast) return;
  if (EDITABLE.includes(broadcast.status)) await showComposer(view, broadcast);
  else showProgress(view, broadcast);
}

// ---------------------------------------------------------------------------
// The composer

/**
 * What a draft lacks to be sent: a sender, a subject and content, written here or a template's. A template may bring
 * its own sender and subject; the API says when sending whether it does.
 * @param {{ from: string | null, subject: string | null, html?: string | null, text?: string | null, template?: object | null }} b
 */
function missingToSend(b) {
  return [
    !b.template && !b.from && { what: 'a From address', noun: 'From address' },
    !b.template && !b.subject && { what: 'a subject', noun: 'subject' },
    !b.template && !b.html && !b.text && { what: 'content', noun: 'content' },
  ].filter((m) => m !== false);
}

/**
 * Whether the API can render the draft (compile): content, and a subject unless a template brings one.
 * @param {Broadcast} b
 */
const previewable = (b) => b.template !== null || (b.subject !== null && (b.html !== null || b.text !== null));

/** "a, b and c". @param {string[]} words @param {'and' | 'or'} joiner */
const listed = (words, joiner) => (words.length > 1 ? `${words.slice(0, -1).join(', ')} ${joiner} ${words.at(-1)}` : words[0]);

/** A from line's name and its address's local part ('' unless the address reads as one). @param {string} from */
function splitFrom(from) {
  const { name, address } = mailboxParts(from);
  return { name, local: /^([^@\s<>]+)@\S*$/.exec(address)?.[1] ?? '' };
}

/** The domain of a from line's address, as typed; '' when it has none. @param {string} from */
function domainOf(from) {
  const { address } = mailboxParts(from);
  return address.includes('@') ? address.slice(address.lastIndexOf('@') + 1).trim() : '';
}

/** The from line for a picked domain, keeping the name and mailbox already typed. @param {string} current @param {string} domain */
function fromFor(current, domain) {
  const { name, local } = splitFrom(current);
  const label = domain.split('.')[0];
  const display = name || label.charAt(0).toUpperCase() + label.slice(1);
  return `${display} <${local || 'hello'}@${domain}>`;
}

/**
 * A labelled group of checkboxes.
 * @param {string} idPrefix
 * @param {string} legend
 * @param {Array<[string, string]>} options  value, label
 * @param {string[]} checked
 * @param {() => Children} [empty]  shown instead when there are no options
 */
function checkboxGroup(idPrefix, legend, options, checked, empty) {
  const boxes = options.map(([value]) => h('input', { type: 'checkbox', id: `${idPrefix}-${value}`, value, checked: checked.includes(value) }));
  const node = h('fieldset', { class: 'event-choices' }, h('legend', null, legend),
    options.length === 0 ? h('span', { class: 'muted small' }, empty?.() ?? 'None.') : options.map(([value, label], i) =>
      h('label', { for: `${idPrefix}-${value}`, class: 'choice plain' }, boxes[i], label)));
  return { node, boxes, selected: () => boxes.filter((b) => b.checked).map((b) => b.value) };
}

/**
 * @param {HTMLElement} view
 * @param {Broadcast} broadcast
 */
async function showComposer(view, broadcast) {
  fill(view, loading());
  const id = broadcast.id;
  const path = broadcastPath(id);
  /** @type {Domain[]} */
  let domains;
  /** @type {Tag[]} */
  let tags;
  /** @type {TemplateSummary[]} */
  let templates;
  try {
    [domains, tags, templates] = await Promise.all([
      everyReadable(DOMAINS_READ, '/v1/domains', { status: 'active' }),
      everyReadable(TAGS_READ, '/v1/tags'),
      everyReadable(TEMPLATES_READ, '/v1/templates'),
    ]);
  } catch (err) {
    fill(view, h('h1', null, broadcast.name), errorBox(err));
    return;
  }
  let current = broadcast;
  let dirty = false;
  const errors = fieldErrors();

  // Sender and subject.
  const name = h('input', { id: 'broadcast-name', type: 'text', required: true, value: broadcast.name });
  const from = h('input', { id: 'broadcast-from', type: 'text', value: broadcast.from ?? '',
    placeholder: 'Acme <hello@acme.com>', autocomplete: 'off' });
  const fromDomain = h('select', { id: 'broadcast-from-domain', 'aria-label': 'Pick an active domain', onchange: () => {
    if (!fromDomain.value) return;
    from.value = fromFor(from.value, fromDomain.value);
    fromDomain.value = '';
    from.dispatchEvent(new Event('input', { bubbles: true }));
  } }, h('option', { value: '' }, domains.length > 0 ? 'Pick a domain…' : 'No active domain'),
  domains.map((d) => h('option', { value: d.name }, d.name)));
  // A key that may not list domains types the address whole.
  fromDomain.hidden = !may(DOMAINS_READ);
  // Whether a send would go is said as the address is typed, not first when sending is refused; unsaid when the key
  // may not list domains, as it cannot be known.
  const activeDomains = new Set(domains.map((d) => d.name));
  const fromNote = h('p', { id: 'broadcast-from-note', class: 'muted small hint', 'aria-live': 'polite' });
  const showFromNote = () => {
    const domain = domainOf(from.value);
    const unverified = may(DOMAINS_READ) && domain !== '' && !activeDomains.has(domain.toLowerCase());
    fill(fromNote, unverified && `${domain} is not a verified domain: ${UNVERIFIED_SENDER[keyMode()]}`);
    fromNote.hidden = !unverified;
    describedBy(from, fromNote.id, unverified);
  };
  from.addEventListener('input', showFromNote);
  showFromNote();
  const replyTo = h('input', { id: 'broadcast-reply-to', type: 'text', value: broadcast.reply_to.join(', '),
    placeholder: 'optional', autocomplete: 'off' });
  const subject = h('input', { id: 'broadcast-subject', type: 'text', value: broadcast.subject ?? '',
    placeholder: broadcast.template ? "the template's subject" : 'News for {{ contact.first_name | default: "you" }}' });
  const previewText = h('input', { id: 'broadcast-preview-text', type: 'text', value: broadcast.preview_text ?? '',
    placeholder: 'optional: shown beside the subject in the inbox' });

  // Content: sources written here, or a template.
  const writeMode = h('input', { type: 'radio', name: 'content-mode', id: 'content-write', value: 'write', checked: broadcast.template === null });
  const templateMode = h('input', { type: 'radio', name: 'content-mode', id: 'content-template', value: 'template', checked: broadcast.template !== null });
  const html = await codeEditor({ id: 'broadcast-html', label: 'HTML', language: 'html', rows: 12, value: broadcast.html ?? '' });
  const text = await codeEditor({ id: 'broadcast-text', label: 'Text', language: 'text', rows: 5, value: broadcast.text ?? '',
    placeholder: 'Made from the HTML when empty.' });
  // The template chosen already stays a choice when the key may not list templates (saving keeps it).
  const chosenRef = broadcast.template;
  if (chosenRef && !templates.some((t) => t.id === chosenRef.id || t.alias === chosenRef.id)) {
    templates = [...templates, { id: chosenRef.id, name: chosenRef.id, alias: null, latest_version: chosenRef.version ?? 0, published_version: null }];
  }
  const noTemplates = may(TEMPLATES_READ) ? 'No templates yet' : `Listing templates needs ${TEMPLATES_READ}`;
  const template = h('select', { id: 'broadcast-template' }, h('option', { value: '' }, templates.length > 0 ? 'Choose a template…' : noTemplates),
    templates.map((t) => h('option', { value: t.id, selected: broadcast.template?.id === t.id || broadcast.template?.id === t.alias },
      t.alias ? `${t.name} (${t.alias})` : t.name)));
  const version = h('select', { id: 'broadcast-template-version' });
  const fillVersions = () => {
    const chosen = templates.find((t) => t.id === template.value);
    const saved = broadcast.template?.version ?? null;
    fill(version, h('option', { value: '' }, chosen?.published_version ? `Published (now version ${chosen.published_version})` : 'Published when sending starts'),
      chosen && Array.from({ length: chosen.latest_version }, (_, i) => chosen.latest_version - i)
        .map((v) => h('option', { value: String(v), selected: v === saved }, `Version ${v}`)));
  };
  // A broadcast gives a template only contact.* and unsubscribe_url: a required variable without a fallback fails for every contact.
  const templateHint = h('div', { class: 'template-hint', 'aria-live': 'polite' });
  let hinting = 0;
  const hintTemplate = async () => {
    const turn = ++hinting;
    fill(templateHint);
    const chosen = templates.find((t) => t.id === template.value);
    if (!chosen || !may(TEMPLATES_READ)) return;
    const number = version.value ? Number(version.value) : chosen.published_version ?? chosen.latest_version;
    try {
      /** @type {{ variables: Array<{ key: string, required: boolean, fallback: unknown }> }} */
      const used = await api('GET', `/v1/templates/${encodeURIComponent(chosen.id)}/versions/${number}`);
      if (turn !== hinting) return;
      const unmet = used.variables.filter((v) => v.required && v.fallback === null).map((v) => `“${v.key}”`);
      fill(templateHint, unmet.length > 0 && h('p', { class: 'flash warn' },
        `Version ${number} needs ${unmet.join(', ')}, which a broadcast cannot give: it gives each contact only `, code('contact.*'),
        ' and ', code('unsubscribe_url'), `, so every contact would fail to render. In the template, give ${unmet.length === 1 ? 'it' : 'each'} a fallback or make ${unmet.length === 1 ? 'it' : 'them'} optional, and publish it.`));
    } catch (err) {
      if (turn === hinting) fill(templateHint, errorBox(err));
    }
  };
  template.addEventListener('change', fillVersions);
  template.addEventListener('change', () => void hintTemplate());
  version.addEventListener('change', () => void hintTemplate());
  fillVersions();
  void hintTemplate();
  const writePanel = h('div', { class: 'content-panel' },
    html, errors.slot('html', 'HTML'),
    text, errors.slot('text', 'Text'),
    h('p', { class: 'muted small hint' }, 'Liquid: ', code('{{ contact.first_name }}'), ', ', code('{{ contact.name }}'), ', ',
      code('{{ contact.properties.company }}'), ', ', code('{{ unsubscribe_url }}'),
      '. Without an unsubscribe link of your own, one is added at the end.'));
  const templatePanel = h('div', { class: 'content-panel' }, h('div', { class: 'form-grid' },
    h('label', { for: 'broadcast-template' }, 'Template'), template,
    h('label', { for: 'broadcast-template-version' }, 'Version'), version,
    !may(TEMPLATES_READ) && [h('span'), h('p', { class: 'muted small' }, `Templates shown by id: listing them needs ${TEMPLATES_READ}.`)],
    h('span'), errors.slot('template', 'Template')),
  templateHint);
  const showContentMode = () => {
    writePanel.hidden = !writeMode.checked;
    templatePanel.hidden = !templateMode.checked;
  };
  for (const radio of [writeMode, templateMode]) radio.addEventListener('change', showContentMode);
  showContentMode();

  // Audience.
  // Tags the audience names that the list lacks (a key that may not list tags) stay choices, by id, so saving keeps them.
  const named = [...broadcast.audience.tag_ids, ...broadcast.audience.exclude_tag_ids];
  const unlisted = [...new Set(named)].filter((tagId) => !tags.some((t) => t.id === tagId));
  const tagOptions = /** @type {Array<[string, string]>} */ ([...tags.map((t) => [t.id, t.name]), ...unlisted.map((tagId) => [tagId, tagId])]);
  const noTags = () => (may(TAGS_READ)
    ? ['No tags yet: ', h('a', { href: '#/contacts/tags' }, 'tag contacts'), ' to narrow an audience.']
    : [`Listing tags needs ${TAGS_READ}.`]);
  const include = checkboxGroup('include-tag', 'Contacts with any of these tags', tagOptions, broadcast.audience.tag_ids, noTags);
  const exclude = checkboxGroup('exclude-tag', 'But not those with any of these', tagOptions, broadcast.audience.exclude_tag_ids, noTags);
  const tiers = checkboxGroup('tier', 'Engagement', TIERS, broadcast.audience.engagement_tiers ?? []);
  const rate = h('input', { id: 'broadcast-rate', type: 'number', min: 1, max: 1000000, step: 1, placeholder: 'as fast as possible',
    value: broadcast.send_rate_per_minute ?? '' });

  const audienceBody = () => {
    const chosenTiers = /** @type {Tier[]} */ (tiers.selected());
    return { tag_ids: include.selected(), exclude_tag_ids: exclude.selected(), ...(chosenTiers.length > 0 && { engagement_tiers: chosenTiers }) };
  };

  /** The PATCH body: everything in the form, an empty field as null. */
  const formBody = () => {
    const rateValue = rate.value.trim();
    return {
      name: name.value.trim(),
      from: from.value.trim() || null,
      reply_to: replyTo.value.trim() ? replyTo.value.split(',').map((a) => a.trim()).filter(Boolean) : null,
      subject: subject.value || null,
      preview_text: previewText.value.trim() || null,
      ...(templateMode.checked
        ? { template: template.value ? { id: template.value, ...(version.value && { version: Number(version.value) }) } : null }
        : { html: html.value || null, text: text.value || null }),
      audience: audienceBody(),
      send_rate_per_minute: rateValue ? Number(rateValue) : null,
    };
  };

  /** What of the form a preview shows: the subject, the preview text and the content. @param {ReturnType<typeof formBody>} body */
  const contentOf = (body) => JSON.stringify([body.subject, body.preview_text, 'template' in body ? body.template : [body.html, body.text]]);
  /** The form's content as the draft last saved (or opened) has it: what a preview renders. */
  let savedContent = contentOf(formBody());

  const audienceCount = h('p', { class: 'audience-count', 'aria-live': 'polite' }, '…');
  const audienceSample = h('div', { class: 'audience-sample' });
  const previewContact = h('select', { id: 'preview-contact' });

  const title = h('h1', null, broadcast.name);
  const unsaved = h('span', { class: 'muted small', hidden: true }, 'Unsaved changes. Preview, test and send save them first.');
  const formErrors = h('div');
  /** Saves the form; false when the API refused it (the error is shown). @param {HTMLElement} near */
  const save = async (near) => {
    try {
      const body = formBody();
      current = await api('PATCH', path, { body });
      dirty = false;
      unsaved.hidden = true;
      fill(title, current.name);
      showSendable();
      errors.clear();
      savedContent = contentOf(body);
      void refreshPreview();
      return true;
    } catch (err) {
      errors.show(err, near);
      return false;
    }
  };
  /** Preview, test and send act on what is stored: the form is saved first when it has changed. @param {HTMLElement} near */
  const saved = async (near) => !dirty || !may(BROADCASTS_WRITE) || save(near);

  const saveButton = h('button', { type: 'submit' }, 'Save');
  const form = fixedUnless(BROADCASTS_WRITE, h('form', { class: 'composer', novalidate: true, onsubmit: (event) => {
    event.preventDefault();
    void whileBusy(saveButton, async () => {
      if (await save(formErrors)) showNote('Saved.');
    });
  } },
  h('fieldset', { class: 'panel' }, h('legend', null, 'Message'),
    h('div', { class: 'form-grid' },
      h('label', { for: 'broadcast-name' }, 'Name'), h('div', null, name, errors.slot('name', 'Name', name)),
      h('label', { for: 'broadcast-from' }, 'From'),
      h('div', null, h('div', { class: 'from-row' }, from, fromDomain), fromNote, errors.slot('from', 'From', from)),
      h('label', { for: 'broadcast-reply-to' }, 'Reply-To'), h('div', null, replyTo, errors.slot('reply_to', 'Reply-To', replyTo)),
      h('label', { for: 'broadcast-subject' }, 'Subject'), h('div', null, subject, errors.slot('subject', 'Subject', subject)),
      h('label', { for: 'broadcast-preview-text' }, 'Preview text'), h('div', null, previewText, errors.slot('preview_text', 'Preview text', previewText)))),
  h('fieldset', { class: 'panel' }, h('legend', null, 'Audience'),
    h('p', { class: 'muted small' }, 'Subscribed contacts that are not deleted or suppressed. Nothing checked in a group means no limit by it.'),
    include.node, exclude.node, unlisted.length > 0 && !may(TAGS_READ) && h('p', { class: 'muted small' }, `Tags shown by id: naming them needs ${TAGS_READ}.`),
    tiers.node, errors.slot('audience', 'Audience'),
    // Counted as the boxes are checked, beside them.
    h('div', { class: 'audience-now' }, h('h3', null, 'Audience now'), audienceCount, audienceSample),
    h('div', { class: 'form-grid pace' }, h('label', { for: 'broadcast-rate' }, 'Pace (emails a minute)'), h('div', null, rate, errors.slot('send_rate_per_minute', 'Pace', rate)))),
  h('fieldset', { class: 'panel' }, h('legend', null, 'Content'),
    h('div', { class: 'mode-choice' },
      h('label', { for: 'content-write', class: 'choice plain' }, writeMode, 'Write it here'),
      h('label', { for: 'content-template', class: 'choice plain' }, templateMode, 'Use a template')),
    writePanel, templatePanel),
  formErrors,
  h('div', { class: 'form-actions save-bar' }, saveButton, unsaved)));
  const changed = () => {
    dirty = true;
    unsaved.hidden = false;
    showSendable();
    showFreshness();
  };
  const edits = guardEdits(view, `“${broadcast.name}”`, () => dirty && may(BROADCASTS_WRITE));
  form.addEventListener('input', changed);
  form.addEventListener('change', changed);

  // The live count of the audience as it is in the form, saved or not.
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let countTimer;
  let counting = 0;
  const recount = async () => {
    const turn = ++counting;
    try {
      /** @type {Audience} */
      const audience = await api('POST', `${path}/audience`, { body: { audience: audienceBody() } });
      if (turn !== counting) return;
      fill(audienceCount, h('span', { class: 'audience-number' }, audience.count.toLocaleString()), ` ${audience.count === 1 ? 'contact' : 'contacts'}`);
      fill(audienceSample, audience.data.length === 0 ? h('p', { class: 'muted small' }, 'No contact matches.') : [
        table([
          // A long address is cut (whole in its title) rather than pushing the engagement out of the panel.
          { header: 'Email', cell: (c) => clipped(c.email), className: 'fills' },
          { header: 'Name', cell: (c) => c.name ?? none(), className: 'audience-name' },
          { header: 'Engagement', cell: (c) => tierLabel(c.engagement_tier), className: 'nowrap' },
        ], audience.data.slice(0, SAMPLE_ROWS)),
        audience.count > SAMPLE_ROWS && h('p', { class: 'muted small' }, `The first ${Math.min(SAMPLE_ROWS, audience.data.length)} are shown.`)]);
      const chosen = previewContact.value;
      fill(previewContact, audience.data.map((c) => h('option', { value: c.id, selected: c.id === chosen }, c.name ? `${c.name} <${c.email}>` : c.email)));
      // On opening, and when the contact previewed leaves the audience, the preview follows the first contact.
      if (previewContact.value !== previewedContact) void refreshPreview();
    } catch (err) {
      if (turn === counting) fill(audienceSample, errorBox(err));
    }
  };
  for (const box of [...include.boxes, ...exclude.boxes, ...tiers.boxes]) {
    box.addEventListener('change', () => {
      clearTimeout(countTimer);
      countTimer = setTimeout(() => void recount(), COUNT_DELAY_MS);
    });
  }

  // Preview as a contact of the audience: the saved draft, rendered on opening and again after each save; while the
  // form's content differs from what it shows, it says so.
  const previewErrors = h('div');
  const staleNote = h('p', { class: 'stale-note', hidden: true },
    'Out of date: the draft has changed since this preview. Preview again saves and re-renders.');
  const previewed = h('div', { class: 'template-preview broadcast-preview' }, loading());
  /** The rendering shown, laid out again when the width changes. @type {BroadcastRender | undefined} */
  let shown;
  /** The form's content (contentOf) the preview shown was rendered from; null while none is shown. @type {string | null} */
  let previewedContent = null;
  /** The contact the preview shown is for. @type {string | null} */
  let previewedContact = null;
  /** @type {'desktop' | 'phone'} A phone's screen starts with the phone's width: a desktop's would be scaled to a blur. */
  let previewWidth = matchMedia('(max-width: 40rem)').matches ? 'phone' : 'desktop';
  const widthButtons = /** @type {Array<['desktop' | 'phone', string]>} */ ([['desktop', 'Desktop'], ['phone', 'Phone']])
    .map(([value, label]) => h('button', { type: 'button', class: 'secondary', 'data-width': value, onclick: () => {
      previewWidth = value;
      showPreview();
    } }, label));
  const widthChoice = h('div', { class: 'width-choice', role: 'group', 'aria-label': 'Preview width' }, widthButtons);

  const showFreshness = () => {
    const stale = previewedContent !== null && contentOf(formBody()) !== previewedContent;
    staleNote.hidden = !stale;
    previewed.classList.toggle('stale', stale);
  };
  const showPreview = () => {
    for (const button of widthButtons) button.setAttribute('aria-pressed', String(button.dataset.width === previewWidth));
    previewed.classList.toggle('phone', previewWidth === 'phone');
    if (shown) fill(previewed, emptyFieldsNote(shown), renderedMessage(shown, previewWidth === 'phone' ? PHONE_WIDTH_PX : undefined));
  };
  /** @param {string} note  said in place of a preview */
  const showNoPreview = (note) => {
    shown = undefined;
    previewedContent = null;
    fill(previewed, h('p', { class: 'muted' }, note));
  };
  let previewing = 0;
  /** The saved draft for the contact chosen; a failure is said in the preview's place. */
  const renderPreview = async () => {
    const turn = ++previewing;
    const contactId = previewContact.value;
    previewedContact = contactId;
    if (!contactId) {
      showNoPreview('No contact is in the audience to preview as.');
    } else if (!previewable(current)) {
      showNoPreview('Nothing to preview yet: write a subject and content, or choose a template, and save.');
    } else {
      const content = savedContent;
      try {
        /** @type {BroadcastRender} */
        const rendered = await api('POST', `${path}/preview`, { body: { contact_id: contactId } });
        if (turn !== previewing) return;
        shown = rendered;
        showPreview();
      } catch (err) {
        if (turn !== previewing) return;
        shown = undefined;
        fill(previewed, errorBox(err, { lead: 'The preview failed:' }));
      }
      previewedContent = content;
    }
    showFreshness();
  };
  /** The preview under way, so that a preview asked for with a save waits for the render the save starts. */
  let rendering = Promise.resolve();
  const refreshPreview = () => (rendering = renderPreview());
  /** Preview and a change of contact act on what is stored: the form is saved first when it has changed, which renders it. */
  const previewNow = async () => {
    if (!previewContact.value) {
      errors.show(new Error('Choose a contact of the audience to preview as.'), previewErrors);
      return;
    }
    const saving = dirty && may(BROADCASTS_WRITE);
    if (!await saved(previewErrors)) return;
    fill(previewErrors);
    await (saving ? rendering : refreshPreview());
  };
  const previewButton = h('button', { type: 'button', class: 'secondary', onclick: () => void whileBusy(previewButton, previewNow) }, 'Preview');
  previewContact.addEventListener('change', () => void whileBusy(previewButton, previewNow));
  showPreview();

  // Test sends.
  const testTo = h('input', { id: 'broadcast-test-to', type: 'text', autocomplete: 'off', placeholder: 'you@example.com' });
  const testErrors = errors.slot('to', 'the test addresses', testTo);
  const testResult = h('div');
  const testButton = h('button', { type: 'button', class: 'secondary', onclick: () => void whileBusy(testButton, async () => {
    const to = testTo.value.split(',').map((a) => a.trim()).filter(Boolean);
    if (to.length === 0 || to.length > MAX_TEST_ADDRESSES) {
      errors.show(new Error(`Give one to ${MAX_TEST_ADDRESSES} addresses, separated by commas.`), testErrors);
      return;
    }
    if (!await saved(testErrors)) return;
    try {
      /** @type {{ data: Array<{ to: string, email_id: string }> }} */
      const sent = await api('POST', `${path}/test`, { body: { to } });
      errors.clear();
      fill(testResult, h('ul', { class: 'test-sends' }, sent.data.map((d) => h('li', null, `Sent to ${d.to} · `,
        h('a', { href: hrefTo('emails', d.email_id) }, 'View the test email')))));
    } catch (err) {
      errors.show(err, testErrors);
    }
  }) }, 'Send test');

  // Sending now or at a time.
  const sendNow = h('input', { type: 'radio', name: 'send-when', id: 'send-now', value: 'now', checked: true });
  const sendLater = h('input', { type: 'radio', name: 'send-when', id: 'send-later', value: 'later' });
  const at = h('input', { id: 'send-at', type: 'datetime-local', 'aria-label': 'Date and time', 'aria-describedby': 'send-at-hint' });
  const atWords = h('input', { id: 'send-at-words', type: 'text', 'aria-label': 'Or in words', placeholder: 'or: in 2 hours', autocomplete: 'off' });
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const atErrors = errors.slot('scheduled_at', 'the time', at);
  const laterFields = h('div', { class: 'later-fields' }, at, atWords,
    h('p', { id: 'send-at-hint', class: 'muted small hint' }, `In your time zone (${zone}); at most 30 days ahead.`), atErrors);
  const sendErrors = h('div');
  const sendButton = h('button', { type: 'button', 'aria-describedby': 'send-blocked',
    onclick: () => void whileBusy(sendButton, () => send()).then(showSendable) });
  const sendBlocked = h('p', { id: 'send-blocked', class: 'muted small' });
  const showSendMode = () => {
    laterFields.hidden = !sendLater.checked;
    fill(sendButton, sendLater.checked ? 'Schedule…' : 'Send now…');
    // The picker offers only the times the API takes, counted from when it is shown.
    at.min = localInputValue(new Date());
    at.max = localInputValue(new Date(Date.now() + MAX_SCHEDULE_AHEAD_MS));
  };
  for (const radio of [sendNow, sendLater]) radio.addEventListener('change', showSendMode);
  showSendMode();

  /**
   * Sending acts on the saved draft: until it has a sender, a subject and content, the buttons are off and the
   * note beside them says what to add, or, when the form has it all already, to save.
   */
  function showSendable() {
    const missing = missingToSend(current);
    sendButton.disabled = missing.length > 0;
    const stillMissing = missingToSend(formBody());
    fill(sendBlocked, missing.length === 0 ? null
      : stillMissing.length > 0 ? `Add ${listed(stillMissing.map((m) => m.what), 'and')} before sending.`
        : `Save to send: the saved draft has no ${listed(missing.map((m) => m.noun), 'or')} yet.`);
    sendBlocked.hidden = missing.length === 0;
  }

  async function send() {
    const later = sendLater.checked;
    const words = atWords.value.trim();
    const atTime = at.value ? new Date(at.value) : null;
    // Checked before the question, as the API would check it; a time in words only the API reads.
    const timeProblem = !later || words ? null
      : !atTime ? 'Give a date and time, or a time in words such as “in 2 hours”.'
        : atTime.getTime() <= Date.now() ? `${formatTime(atTime.toISOString())} has passed: pick a time ahead, or send now.`
          : atTime.getTime() > Date.now() + MAX_SCHEDULE_AHEAD_MS ? 'Pick a time within the next 30 days.' : null;
    if (timeProblem) {
      errors.show(new Error(timeProblem), atErrors);
      return;
    }
    if (!await saved(sendErrors)) return;
    // Saved just now, the draft may have lost what sending needs: the note beside the button says what.
    if (missingToSend(current).length > 0) return;
    /** @type {Audience} */
    let audience;
    try {
      audience = await api('POST', `${path}/audience`, { body: {} });
    } catch (err) {
      errors.show(err, sendErrors);
      return;
    }
    if (!later && audience.count === 0) {
      errors.show(new Error('No contact is in the audience now, so sending would make no email: change the audience, or add contacts first.'), sendErrors);
      return;
    }
    const whom = count(audience.count, 'contact', 'contacts');
    const moment = words || (atTime ? formatTime(atTime.toISOString()) : '');
    const confirmed = await confirmDialog(later
      ? { title: 'Schedule this broadcast?', confirm: 'Schedule',
        message: [h('p', null, `Send “${current.name}” to ${whom} ${words ? words : `on ${moment}`}?`),
          h('p', { class: 'muted small' }, audience.count === 0
            ? 'No contact is in the audience now. It is counted again when sending starts; if it is still empty then, nothing is sent.'
            : 'The audience is counted again when sending starts.')] }
      : { title: 'Send this broadcast?', confirm: `Send to ${whom}`,
        message: [h('p', null, `Send to ${whom} now?`),
          h('p', { class: 'muted small' }, `“${current.name}”, from ${current.from ?? 'the template’s sender'}. It cannot be taken back once an email is made, only paused or cancelled.`)] });
    if (!confirmed) return;
    try {
      /** @type {Broadcast} */
      const started = await api('POST', `${path}/send`, { body: later ? { scheduled_at: words || /** @type {Date} */ (atTime).toISOString() } : {} });
      navigate(broadcastHref(id), started.status === 'scheduled'
        ? `Scheduled for ${formatTime(started.scheduled_at ?? '')}.` : `Sending to ${whom}.`);
    } catch (err) {
      errors.show(err, sendErrors);
    }
  }

  const scheduled = broadcast.status === 'scheduled';
  const statusLine = h('div');
  const renderStatus = (/** @type {Broadcast} */ b) => fill(statusLine, b.status === 'scheduled' && h('p', { class: 'flash' },
    'Scheduled for ', time(b.scheduled_at), ` (${fromNow(b.scheduled_at ?? '')}; in your time zone, ${zone}). `,
    'It can still change: pick another time under “Send now or at another time” to move it, or send it now.'));
  renderStatus(broadcast);

  fill(view,
    h('div', { class: 'title-row' }, title, badge(broadcast.status), h('span', { class: 'spacer' }),
      may(BROADCASTS_WRITE) && (scheduled ? cancelButton(current, (b) => {
        edits.release();
        navigate(broadcastHref(b.id), 'The broadcast was cancelled.');
      }) : deleteButton(broadcast, () => edits.release()))),
    h('p', null, h('a', { href: '#/broadcasts' }, '← All broadcasts'), ' · id ', code(id)),
    withheldNote(BROADCASTS_WRITE, 'changing, testing, sending and deleting this broadcast'),
    statusLine,
    h('div', { class: 'composer-layout' },
      form,
      h('aside', { class: 'composer-side' },
        h('section', { class: 'panel preview-panel' },
          h('div', { class: 'preview-head' }, h('h2', null, 'Preview'), widthChoice),
          h('div', { class: 'inline-form' }, h('label', { for: 'preview-contact' }, 'As'), previewContact, previewButton),
          previewErrors, staleNote, previewed),
        may(BROADCASTS_WRITE) && h('section', { class: 'panel' }, h('h2', null, 'Send a test'),
          h('div', { class: 'inline-form' }, h('label', { for: 'broadcast-test-to' }, 'To'), testTo, testButton),
          h('p', { class: 'muted small' }, `Up to ${MAX_TEST_ADDRESSES} addresses. The subject starts with [Test]; tests are not in the counts.`),
          testErrors, testResult),
        may(BROADCASTS_WRITE) && h('section', { class: 'panel' }, h('h2', null, scheduled ? 'Send now or at another time' : 'Send'),
          h('div', { class: 'mode-choice' },
            h('label', { for: 'send-now', class: 'choice plain' }, sendNow, 'Now'),
            h('label', { for: 'send-later', class: 'choice plain' }, sendLater, 'At a time')),
          laterFields, h('div', { class: 'actions send-actions' }, sendButton, sendBlocked), sendErrors))));
  showSendable();
  await recount();
  // A scheduled broadcast starts by itself: when it does, its page becomes the progress page.
  if (scheduled) {
    refreshWhileShown(view, REFRESH_MS, async () => {
      /** @type {Broadcast} */
      const now = await api('GET', path);
      if (now.status !== 'scheduled') {
        // Its content can change no more.
        edits.release();
        navigate(broadcastHref(id));
        return false;
      }
      renderStatus(now);
      return true;
    });
  }
}

/**
 * A broadcast's message as rendered for one contact.
 * @param {BroadcastRender} rendered
 * @param {number} [layoutWidth]  laid out as wide as a phone, when given; as a desktop client does, when not
 */
function renderedMessage(rendered, layoutWidth) {
  return [
    h('p', { class: 'preview-subject' }, h('span', { class: 'muted' }, 'Subject: '), rendered.subject),
    h('p', { class: 'muted small' }, `To ${rendered.to}. Remote images are not loaded.`),
    rendered.html === null ? h('p', { class: 'muted' }, 'No HTML part.')
      : h('div', { class: 'preview-stage' }, previewFrame(rendered.html, layoutWidth ? { layoutWidth } : {})),
    h('details', { class: 'headers' }, h('summary', null, 'Text part'), scrolledText(rendered.text, 'Text part')),
  ];
}

/**
 * The contact fields the content writes that the contact previewed lacks: each renders as nothing, and a fallback
 * mends it.
 * @param {BroadcastRender} rendered
 */
function emptyFieldsNote(rendered) {
  if (rendered.empty_fields.length === 0) return null;
  return h('div', { class: 'flash warn empty-fields' }, h('ul', null, rendered.empty_fields.map((field) => {
    const name = field.replace(/^contact\./, '');
    const fallback = SUGGESTED_FALLBACKS[name] ?? '…';
    return h('li', null, 'This contact has no ', code(name), ': it renders empty. Add a fallback: ',
      code(`{{ ${field} | default: "${fallback}" }}`));
  })));
}

/**
 * The audience in words: "contacts tagged news or vip, but not tagged vip; engaged or at risk".
 * @param {AudienceFilter} audience @param {Map<string, string>} tagNames  id to name, for the tags the key may list
 */
function audienceWords(audience, tagNames) {
  /** @param {string[]} ids */
  const named = (ids) => ids.map((id) => `“${tagNames.get(id) ?? id}”`).join(' or ');
  const parts = [audience.tag_ids.length > 0 ? `Subscribed contacts tagged ${named(audience.tag_ids)}` : 'Every subscribed contact'];
  if (audience.exclude_tag_ids.length > 0) parts.push(`but not those tagged ${named(audience.exclude_tag_ids)}`);
  if (audience.engagement_tiers) parts.push(`engagement ${audience.engagement_tiers.map(tierLabel).join(' or ').toLowerCase()}`);
  return `${parts.join(', ')}.`;
}

/**
 * Duplicate: a new draft with this one's content, sender and audience, to send again or to another audience.
 * @param {Broadcast} b
 */
function duplicateButton(b) {
  const errorsNode = h('div');
  const button = h('button', { type: 'button', class: 'secondary', onclick: () => void whileBusy(button, async () => {
    try {
      const fields = {
        name: `${b.name} (copy)`, from: b.from, reply_to: b.reply_to.length > 0 ? b.reply_to : null, subject: b.subject, preview_text: b.preview_text,
        ...(b.template ? { template: { id: b.template.id, ...(b.template.version !== null && { version: b.template.version }) } } : { html: b.html, text: b.text }),
        audience: { tag_ids: b.audience.tag_ids, exclude_tag_ids: b.audience.exclude_tag_ids, ...(b.audience.engagement_tiers && { engagement_tiers: b.audience.engagement_tiers }) },
        send_rate_per_minute: b.send_rate_per_minute,
      };
      // A new broadcast leaves out what it does not have, where an update sets it to null.
      /** @type {Broadcast} */
      const copy = await api('POST', '/v1/broadcasts', { body: Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== null)) });
      navigate(broadcastHref(copy.id), `“${copy.name}” is a new draft with the content and audience of “${b.name}”.`);
    } catch (err) {
      fill(errorsNode, errorBox(err, { lead: 'Not duplicated:' }));
    }
  }) }, 'Duplicate');
  return [button, errorsNode];
}

/** @param {Broadcast} b @param {() => void} deleted  called before leaving the deleted draft's page */
function deleteButton(b, deleted) {
  return rowAction('Delete', { title: 'Delete this draft?', message: h('p', null, `Delete “${b.name}”? This cannot be undone.`), confirm: 'Delete',
    danger: true }, async () => {
    await api('DELETE', broadcastPath(b.id));
    deleted();
    navigate('#/broadcasts', `“${b.name}” was deleted.`);
  });
}

/**
 * Cancel, after a question that says what stops and what goes on.
 * @param {Broadcast} b
 * @param {(cancelled: Broadcast) => void} done
 */
function cancelButton(b, done) {
  // Named in full: beside a form, a bare "Cancel" reads as leaving the form.
  return rowAction('Cancel broadcast', () => {
    const made = b.stats.emails_created;
    const message = made > 0
      ? `${count(made, 'email', 'emails')} of ${b.stats.audience_size.toLocaleString()} are made; no more will be. Emails already handed to delivery still go.`
      : 'No email of it has been made; none will be.';
    return { title: `Cancel “${b.name}”?`, confirm: 'Cancel the broadcast', danger: true,
      message: [h('p', null, message),
        b.status === 'scheduled' && h('p', { class: 'muted small' }, 'Cancelled, it can never be sent: to send it later instead, pick another time under “Send now or at another time”.')] };
  }, async () => done(await api('POST', `${broadcastPath(b.id)}/cancel`)));
}

// ---------------------------------------------------------------------------
// Sending and sent

/**
 * The counts, in the order a reader follows them, five to a row: how far the mail got and what its readers did, then
 * what went wrong or was refused.
 */
const STATS = /** @type {Array<[keyof Stats, string]>} */ ([['sent', 'Sent'], ['delivered', 'Delivered'], ['opened', 'Opened'],
  ['clicked', 'Clicked'], ['unsubscribed', 'Unsubscribed'], ['bounced', 'Bounced'], ['complained', 'Complained'], ['failed', 'Failed'],
  ['suppressed', 'Suppressed']]);
/** Counts of mail that did not arrive or that its recipient reported as spam, shown in red when there are any. */
const ALARMING_STATS = ['bounced', 'complained', 'failed'];

/**
 * Contacts a broadcast is through with: those it made an email for and those
 * it skipped. A finished broadcast's bar is full even when some were skipped.
 * @param {Stats} stats
 */
const contactsDone = (stats) => stats.emails_created + stats.skipped;

/**
 * Emails made and not yet delivered, bounced, failed or suppressed: queued, handed over, or deferred for a retry.
 * @param {Stats} stats
 */
const inFlight = (stats) => Math.max(0, stats.emails_created - stats.delivered - stats.bounced - stats.failed - stats.suppressed);

/**
 * What became of the emails made, each in one part: a recipient's outcome, or none yet. Failed and suppressed are
 * named only when some are.
 * @param {Stats} stats @returns {Array<{ key: string, label: string, n: number }>}
 */
function outcomes(stats) {
  return [
    { key: 'delivered', label: 'Delivered', n: stats.delivered },
    { key: 'bounced', label: 'Bounced', n: stats.bounced },
    { key: 'failed', label: 'Failed', n: stats.failed },
    { key: 'suppressed', label: 'Suppressed', n: stats.suppressed },
    { key: 'in-flight', label: 'In flight', n: inFlight(stats) },
  ].filter((part) => part.n > 0 || ['delivered', 'bounced', 'in-flight'].includes(part.key));
}

/**
 * The emails made, split by outcome: a bar that is green only as far as mail was delivered, and red for bounces.
 * @param {Stats} stats
 */
function outcomeBar(stats) {
  const made = stats.emails_created;
  const parts = outcomes(stats);
  return h('div', { class: 'outcome' },
    h('div', { class: 'outcome-track', role: 'img',
      'aria-label': `Of ${count(made, 'email', 'emails')}: ${parts.map((p) => `${p.n.toLocaleString()} ${p.label.toLowerCase()}`).join(', ')}` },
    made > 0 && parts.map((p) => p.n > 0 && h('span', { class: `outcome-part outcome-${p.key}`, style: `width:${(p.n / made * 100).toFixed(1)}%` }))),
    // Not red for a bounce: beside a bounce or two, most of the mail went; the bar's part and the bounce count say it.
    h('span', { class: 'outcome-count' }, `${stats.delivered.toLocaleString()} of ${made.toLocaleString()} delivered`));
}

/** A figure a broadcast has no emails for yet: a dash in a list's row, left out of a phone's card, where it says nothing. */
const notYet = () => h('span', { class: 'muted not-yet' }, '—');

/**
 * A list's count of what became of a broadcast's emails: a dash until it has made any, and red when there are
 * bounces or complaints.
 * @param {Broadcast} b @param {'delivered' | 'bounced' | 'complained' | 'opened' | 'clicked'} key
 */
function madeCount(b, key) {
  if (b.stats.emails_created === 0) return notYet();
  const n = b.stats[key];
  return n > 0 && ALARMING_STATS.includes(key) ? h('strong', { class: 'alarming-count' }, n.toLocaleString()) : n.toLocaleString();
}

/** Shown beside the others only when some contact got no email. */
const SKIPPED_STAT = /** @type {[keyof Stats, string]} */ (['skipped', 'Skipped']);
/** Skipped contacts a page of their table shows. */
const SKIPS_PAGE = 10;
/** @type {Record<SkipCode, string>} */
const SKIP_REASONS = {
  render_failed: 'Did not render', invalid_address: 'Address refused', invalid_subject: 'Subject refused', message_too_large: 'Too large',
};

/** @param {Stats} stats @param {Array<[keyof Stats, string]>} which */
const statCards = (stats, which) => h('div', { class: 'stat-cards broadcast-stats' }, which.map(([key, label]) =>
  h('div', { class: stats[key] > 0 && ALARMING_STATS.includes(key) ? 'stat alarming' : 'stat', 'data-stat': key },
    h('span', { class: 'stat-label' }, label), h('span', { class: 'stat-value' }, stats[key].toLocaleString()))));

/**
 * @param {HTMLElement} view
 * @param {Broadcast} broadcast
 */
function showProgress(view, broadcast) {
  const live = h('div');
  const actionErrors = h('div');
  // Read once: what was sent and to whom does not change once sending has started.
  const audienceLine = h('span', null, audienceWords(broadcast.audience, new Map()));
  void everyReadable(TAGS_READ, '/v1/tags').then((/** @type {Tag[]} */ tags) =>
    fill(audienceLine, audienceWords(broadcast.audience, new Map(tags.map((t) => [t.id, t.name]))))).catch(() => {});
  const content = h('div', { class: 'template-preview broadcast-preview' }, loading());
  void sentContent(broadcast, content);
  const contentLine = contentWords(broadcast);
  const duplicate = may(BROADCASTS_WRITE) && duplicateButton(broadcast);
  /** @param {Broadcast} b @param {string} note */
  const acted = (b, note) => {
    render(b);
    showNote(note);
  };
  /** @param {string} label @param {string} action @param {string} note */
  const statusAction = (label, action, note) => {
    const button = h('button', { type: 'button', class: 'secondary', onclick: () => void whileBusy(button, async () => {
      try {
        acted(await api('POST', `${broadcastPath(broadcast.id)}/${action}`), note);
        fill(actionErrors);
      } catch (err) {
        fill(actionErrors, errorBox(err));
      }
    }) }, label);
    return button;
  };
  /** The skipped contacts' panel, kept across refreshes: loaded again only when their count changes. */
  let skips = { shown: -1, panel: /** @type {HTMLElement | false} */ (false) };
  /** @param {Broadcast} b */
  const skipsPanel = (b) => {
    if (b.stats.skipped === 0) return false;
    if (skips.shown !== b.stats.skipped) skips = { shown: b.stats.skipped, panel: skippedContacts(b) };
    return skips.panel;
  };
  /** @param {Broadcast} b */
  const render = (b) => {
    const { stats } = b;
    // Sent, its emails still settle: their outcomes come in after the last one is made.
    const changing = MOVING.includes(b.status) || inFlight(stats) > 0;
    fill(live,
      h('div', { class: 'title-row' }, h('h1', null, b.name), badge(b.status), h('span', { class: 'spacer' }),
        may(BROADCASTS_WRITE) && b.status === 'sending' && statusAction('Pause', 'pause', 'Paused: no more emails are made until it is resumed.'),
        may(BROADCASTS_WRITE) && b.status === 'paused' && statusAction('Resume', 'resume', 'Resumed: sending goes on where it stopped.'),
        may(BROADCASTS_WRITE) && MOVING.includes(b.status) && cancelButton(b, (cancelled) => acted(cancelled, 'The broadcast was cancelled.')),
        duplicate),
      actionErrors,
      MOVING.includes(b.status) && withheldNote(BROADCASTS_WRITE, 'pausing, resuming and cancelling this broadcast'),
      h('p', null, h('a', { href: '#/broadcasts' }, '← All broadcasts'), ' · id ', code(b.id)),
      b.status_reason && h('p', { class: 'flash warn' }, b.status_reason),
      h('section', { class: 'panel progress-panel' },
        h('h2', null, 'Progress'),
        // While emails are still made, two bars: each is named, as their counts alone do not say which is which.
        MAKING.includes(b.status) && [h('p', { class: 'muted small' }, 'Contacts done'),
          progressBar(contactsDone(stats), stats.audience_size, 'Contacts done'),
          stats.emails_created > 0 && h('p', { class: 'muted small' }, 'Their emails, by outcome')],
        stats.emails_created > 0 && outcomeSummary(b),
        h('p', { class: 'muted small' }, `${count(stats.emails_created, 'email', 'emails')} made`,
          stats.skipped > 0 ? ` and ${count(stats.skipped, 'contact', 'contacts')} skipped` : '',
          ` for an audience of ${count(stats.audience_size, 'contact', 'contacts')}`,
          b.send_rate_per_minute ? `, at most ${b.send_rate_per_minute.toLocaleString()} a minute.` : '.',
          changing ? ' This page keeps itself up to date.' : '')),
      statCards(stats, stats.skipped > 0 ? [...STATS, SKIPPED_STAT] : STATS),
      h('p', null, h('a', { href: hashOf('/emails', new URLSearchParams({ broadcast_id: b.id })) }, 'Its emails, one per contact →')),
      skipsPanel(b),
      details(/** @type {Array<[string, Children]>} */ ([
        ['Audience', audienceLine],
        ['From', b.from ?? 'the template’s sender'],
        ['Subject', b.subject ?? 'the template’s subject'],
        ['Content', contentLine],
        ['Mode', b.mode === 'test' ? 'test: kept in the sink, never sent' : (b.mode ?? none())],
        ...[['Scheduled for', b.scheduled_at], ['Started', b.started_at], ['Sent', b.sent_at], ['Cancelled', b.cancelled_at]]
          .filter(([, at]) => at).map(([label, at]) => [label, time(at)]),
      ])));
    return changing;
  };
  // Outside what each refresh draws again, which would load the message's frame anew.
  fill(view, live, h('section', { class: 'panel' }, h('h2', null, 'Content'), content));
  if (render(broadcast)) {
    refreshWhileShown(view, REFRESH_MS, async () => {
      try {
        return render(await api('GET', broadcastPath(broadcast.id)));
      } catch (err) {
        fill(actionErrors, errorBox(err));
        return true;
      }
    });
  }
}

/**
 * Where a sent broadcast's content came from: the composer, or a template by its name (once read, by a key that may)
 * and the version sending fixed.
 * @param {Broadcast} b
 */
function contentWords(b) {
  const ref = b.template;
  if (!ref) return h('span', null, 'written in the composer');
  const link = h('a', { href: `#/templates/${encodeURIComponent(ref.id)}` }, ref.id);
  if (may(TEMPLATES_READ)) {
    api('GET', `/v1/templates/${encodeURIComponent(ref.id)}`).then((/** @type {TemplateSummary} */ t) => fill(link, t.name), () => {});
  }
  // No version is fixed when sending never started (a scheduled broadcast cancelled).
  return h('span', null, 'template ', link, ref.version !== null ? `, version ${ref.version}` : ', its published version');
}

/**
 * What became of a broadcast's emails: the bar split by outcome, each part's count, and the bounces said in red with
 * the way to them.
 * @param {Broadcast} b
 */
function outcomeSummary(b) {
  const { stats } = b;
  const bouncedEmails = hashOf('/emails', new URLSearchParams({ broadcast_id: b.id, outcome: 'bounced' }));
  return h('div', { class: 'outcome-summary' },
    outcomeBar(stats),
    h('ul', { class: 'outcome-legend' }, outcomes(stats).map((p) => h('li', { 'data-outcome': p.key },
      h('span', { class: `outcome-swatch outcome-${p.key}` }), `${p.label} `, h('strong', null, p.n.toLocaleString())))),
    stats.bounced > 0 && h('p', { class: 'outcome-alert' },
      `${stats.bounced.toLocaleString()} of ${count(stats.emails_created, 'email', 'emails')} bounced. `,
      h('a', { href: bouncedEmails }, 'See which →')));
}

/**
 * The message as the first contact of its audience got it, or why it cannot be shown.
 * @param {Broadcast} b @param {HTMLElement} into
 */
async function sentContent(b, into) {
  try {
    /** @type {Audience} */
    const audience = await api('POST', `${broadcastPath(b.id)}/audience`, { body: {} });
    const [first] = audience.data;
    if (!first) {
      fill(into, h('p', { class: 'muted' }, 'No contact is left in its audience to show the message as.'));
      return;
    }
    fill(into, renderedMessage(await api('POST', `${broadcastPath(b.id)}/preview`, { body: { contact_id: first.id } })));
  } catch (err) {
    fill(into, errorBox(err, { lead: 'The content cannot be shown:' }));
  }
}

/**
 * The contacts that got no email and why, newest first: a page, and a
 * button that adds the next.
 * @param {Broadcast} b
 */
function skippedContacts(b) {
  const rows = h('div', null, loading());
  const more = h('div', { class: 'pager' });
  /** @type {Skip[]} */
  const shown = [];
  /** @param {string} [after] */
  const load = async (after) => {
    try {
      /** @type {import('../lists.js').Page<Skip>} */
      const page = await api('GET', `${broadcastPath(b.id)}/skipped`,
        { query: new URLSearchParams({ limit: String(SKIPS_PAGE), ...(after && { starting_after: after }) }) });
      shown.push(...page.data);
      fill(rows, table(/** @type {import('../ui.js').Column<Skip>[]} */ ([
        { header: 'Contact', role: 'primary', cell: (s) => clipped(s.email, { href: `#/contacts/${encodeURIComponent(s.contact_id)}`, wide: true }) },
        { header: 'Reason', cell: (s) => SKIP_REASONS[s.code] ?? s.code },
        { header: 'What failed', className: 'prose', cell: (s) => s.message },
        { header: 'When', cell: (s) => time(s.created_at) },
      ]), shown));
      const next = page.has_more ? page.next_cursor : undefined;
      const button = h('button', { type: 'button', class: 'secondary', onclick: () => void whileBusy(button, () => load(next)) }, 'Show more');
      fill(more, next && button);
    } catch (err) {
      fill(more, errorBox(err));
    }
  };
  void load();
  return h('section', { class: 'panel skipped-panel' },
    h('h2', null, `Skipped: ${count(b.stats.skipped, 'contact', 'contacts')} got no email`),
    h('p', { class: 'muted small' }, 'Their message could not be made: fix the content or the contact, then send them a new broadcast.'),
    rows, more);
}
