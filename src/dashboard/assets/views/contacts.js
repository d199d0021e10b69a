// @ts-check
// Contacts, the audience of broadcasts: the list with its filters (address,
// status, engagement, tag), a form to add one, and each contact's page (its
// name, properties and tags, unsubscribe and delete); and the tags, on a page
// of their own. Importing a CSV file is views/contact-import.js.
import { fixedUnless, may, withheldNote } from '../access.js';
import { api, ApiError, limitReached, waitingOutRateLimit } from '../api.js';
import { everyItem, filterForm, filterSelect, filterText, filterTime, loadRecord, pagedTable } from '../lists.js';
import { hashOf, navigate } from '../nav.js';
import {
  actionsColumn, askingButton, badge, clipped, code, confirmDialog, count, details, errorBox, errorSlot, fieldErrors, fill, h, heldUpNote, loading, none, progressBar, rowAction,
  rowSelection, table, time, whileBusy,
} from '../ui.js';
import { holdWhileRunning, startWork } from '../work.js';
import { CONTACT_IMPORT_ROUTES } from './contact-import.js';
import { reasonLabel } from './suppressions.js';

/** @typedef {import('../nav.js').Ctx} Ctx */
/** @typedef {import('../ui.js').Children} Children */
/** @typedef {'subscribed' | 'unsubscribed' | 'cleaned'} ContactStatus */
/** @typedef {import('./suppressions.js').Reason} Reason */
/** @typedef {'no_data' | 'new' | 'engaged' | 'at_risk' | 'inactive' | 'cold'} Tier */
/** @typedef {{ id: string, name: string }} TagRef */
/** @typedef {TagRef & { created_at: string }} Tag */
/**
 * @typedef {{ id: string, email: string, name: string | null, status: ContactStatus, engagement_tier: Tier, tags: TagRef[],
 *   properties: Record<string, string | number | boolean>, unsubscribed_at: string | null, unsubscribe_reason: string | null,
 *   created_at: string, updated_at: string }} Contact
 */

const STATUSES = /** @type {ContactStatus[]} */ (['subscribed', 'unsubscribed', 'cleaned']);
/** The engagement tiers and how they read, here and in a broadcast's audience. */
export const TIERS = /** @type {Array<[Tier, string]>} */ ([['no_data', 'No data yet'], ['new', 'New'], ['engaged', 'Engaged'],
  ['at_risk', 'At risk'], ['inactive', 'Inactive'], ['cold', 'Cold']]);
/** Tags shown in a row of the list; the rest are counted. */
const ROW_TAGS = 3;
/** Contacts acted on at once by an action on several: quicker than one by one, gentler on the rate limit than all. */
const AT_ONCE = 4;
/** The scope of every change to contacts and tags. */
const CONTACTS_WRITE = 'contacts:write';
/** The kind of work of an action on many contacts. */
const BULK_WORK = 'contacts-bulk';

/** @type {Array<[RegExp, (ctx: Ctx) => void | Promise<void>]>} */
export const CONTACT_ROUTES = [
  [/^\/contacts$/, showContacts],
  [/^\/contacts\/tags$/, showTags],
  ...CONTACT_IMPORT_ROUTES,
  [/^\/contacts\/([^/]+)$/, showContact],
];

/** @param {string} id */
const contactHref = (id) => `#/contacts/${encodeURIComponent(id)}`;
/** @param {string} id */
const contactPath = (id) => `/v1/contacts/${encodeURIComponent(id)}`;
/** @param {Tier} tier */
export const tierLabel = (tier) => TIERS.find(([t]) => t === tier)?.[1] ?? tier;

/** The workspace's tags, newest first. @returns {Promise<Tag[]>} */
const loadTags = () => everyItem('/v1/tags');

/** A contact's tags as chips. @param {TagRef[]} tags @param {number} [max] */
function tagChips(tags, max = Infinity) {
  if (tags.length === 0) return none();
  const shown = tags.slice(0, max);
  return h('span', { class: 'tag-list', title: tags.map((t) => t.name).join(', ') },
    shown.map((t) => h('span', { class: 'tag' }, t.name)),
    tags.length > shown.length && h('span', { class: 'muted small' }, `+${tags.length - shown.length}`));
}

/**
 * The name, one field as the API keeps it, and beneath it what templates read of it as it is typed: its first word
 * as contact.first_name and its last as contact.last_name, as the server splits it.
 */
function nameField(/** @type {string} */ idPrefix, /** @type {string | null} */ name = null) {
  const input = h('input', { id: `${idPrefix}-name`, type: 'text', autocomplete: 'off', value: name ?? '', placeholder: 'Ann Lee',
    'aria-describedby': `${idPrefix}-name-parts` });
  const parts = h('p', { id: `${idPrefix}-name-parts`, class: 'muted small hint' });
  const showParts = () => {
    const words = input.value.split(/\s+/).filter(Boolean);
    /** @param {string} word */
    const shown = (word) => (word ? `“${word}”` : 'empty');
    fill(parts, 'In a message, ', code('{{ contact.first_name }}'), ` is ${shown(words[0] ?? '')} and `,
      code('{{ contact.last_name }}'), ` is ${shown(words.length > 1 ? /** @type {string} */ (words.at(-1)) : '')}.`);
  };
  input.addEventListener('input', showParts);
  showParts();
  const value = () => input.value.trim().replace(/\s+/g, ' ') || null;
  return { input, parts, value };
}

// ---------------------------------------------------------------------------
// The list

/** @param {Ctx} ctx */
async function showContacts({ view, query }) {
  fill(view, loading());
  /** @type {Tag[]} */
  let tags = [];
  /** @type {unknown} */
  let tagsError = null;
  try {
    tags = await loadTags();
  } catch (err) {
    tagsError = err;
  }
  const filters = [
    filterText('Address', 'email', query, 'part of an address'),
    filterSelect('Status', 'status', query, 'any', STATUSES.map((s) => [s, s])),
    filterSelect('Engagement', 'engagement_tier', query, 'any', TIERS),
    filterSelect('Tag', 'tag_id', query, tags.length > 0 ? 'any' : 'no tags yet', tags.map((t) => [t.id, t.name])),
    filterTime('Created after', 'created_after', query),
    filterTime('Created before', 'created_before', query),
  ];
  const list = h('div');
  const bar = selectionBar(tags, () => selection?.picked() ?? [], () => selection?.clear(), list);
  const writable = may(CONTACTS_WRITE);
  // Rows are picked only to act on them.
  const selection = writable ? rowSelection({ label: (/** @type {Contact} */ c) => c.email, onChange: bar.update }) : undefined;
  const addForm = addContactForm();
  const filtered = filters.some((f) => query.has(f.control.name));
  fill(view,
    h('div', { class: 'title-row contacts-title' }, h('h1', null, 'Contacts'), h('span', { class: 'spacer' }),
      h('a', { href: '#/contacts/tags', class: 'button-link secondary' }, 'Tags'),
      writable && h('a', { href: '#/contacts/import', class: 'button-link secondary' }, 'Import CSV'),
      writable && h('button', { type: 'button', onclick: () => {
        // The form is below the list: brought into view, ready to type in.
        addForm.scrollIntoView({ block: 'start' });
        addForm.querySelector('input')?.focus({ preventScroll: true });
      } }, 'Add a contact')),
    h('p', { class: 'muted' }, 'The people broadcasts go to, chosen by their tags and engagement.'),
    withheldNote(CONTACTS_WRITE, 'adding, importing, tagging, unsubscribing and deleting contacts'),
    tagsError !== null && errorBox(tagsError),
    filterForm('/contacts', filters), writable && bar.node, list, writable && addForm);
  /** @type {import('../ui.js').Column<Contact>[]} */
  const columns = [
    { header: 'Address', cell: (c) => clipped(c.email, { href: contactHref(c.id), wide: true }), role: 'primary' },
    { header: 'Name', cell: (c) => (c.name ? clipped(c.name) : none()), minor: true },
    { header: 'Status', cell: (c) => badge(c.status), role: 'status' },
    { header: 'Engagement', cell: (c) => tierLabel(c.engagement_tier), className: 'nowrap' },
    { header: 'Tags', cell: (c) => tagChips(c.tags, ROW_TAGS) },
    { header: 'Created', cell: (c) => time(c.created_at), className: 'nowrap', minor: true },
  ];
  await pagedTable(list, {
    api: '/v1/contacts', route: '/contacts', query, filters, columns, selection, counted: ['contact', 'contacts'],
    empty: filtered
      ? ['No contacts match these filters. ', h('a', { href: '#/contacts' }, 'Show all contacts')]
      : writable ? ['No contacts yet. Add one below, or ', h('a', { href: '#/contacts/import' }, 'import a CSV file'), ' of them.'] : 'No contacts yet.',
  });
}

/** The form that adds one contact; the API's refusals show beside the field they name. */
function addContactForm() {
  const errors = fieldErrors();
  const email = h('input', { id: 'new-contact-email', type: 'email', required: true, autocomplete: 'off',
    placeholder: 'ann@example.com' });
  const names = nameField('new-contact');
  const tags = h('input', { id: 'new-contact-tags', type: 'text', autocomplete: 'off', placeholder: 'news, customers' });
  const formErrors = h('div');
  const submit = h('button', { type: 'submit' }, 'Add contact');
  const form = h('form', { class: 'panel contact-form', novalidate: true, onsubmit: (event) => {
    event.preventDefault();
    void whileBusy(submit, async () => {
      const tagNames = tags.value.split(',').map((t) => t.trim()).filter(Boolean);
      try {
        /** @type {Contact} */
        const created = await api('POST', '/v1/contacts', { body: {
          email: email.value.trim(), ...(names.value() && { name: names.value() }), ...(tagNames.length > 0 && { tags: tagNames }),
        } });
        navigate('#/contacts', h('p', { class: 'flash' },
          h('a', { href: contactHref(created.id) }, created.email), ` was added${created.status === 'subscribed' ? '' : `, ${created.status}: the address was suppressed before`}.`));
      } catch (err) {
        errors.show(err, formErrors);
      }
    });
  } },
  h('h2', null, 'Add a contact'),
  h('div', { class: 'form-grid' },
    h('label', { for: 'new-contact-email' }, 'Email address'), h('div', null, email, errors.slot('email', 'Email address', email)),
    h('label', { for: 'new-contact-name' }, 'Full name'), h('div', null, names.input, names.parts, errors.slot('name', 'the name', names.input)),
    h('label', { for: 'new-contact-tags' }, 'Tags'), h('div', null, tags, h('p', { class: 'muted small hint' }, 'Separated by commas; new tags are created.'),
      errors.slot('tags', 'Tags', tags))),
  formErrors,
  submit);
  return form;
}

// ---------------------------------------------------------------------------
// Acting on several

/**
 * What one call made of a contact: `done` as asked, `already` as asked before it (tagged already, unsubscribed
 * already, deleted already), `cleaned` kept cleaned by an unsubscribe (no email goes to it either way).
 * @typedef {'done' | 'already' | 'cleaned'} Outcome
 */
/** What became of one contact: neither `outcome` nor `err` when it was not tried. @typedef {{ contact: Contact, outcome?: Outcome, err?: unknown }} Result */
/**
 * An action on the contacts picked: what it does to them ("Deleting 3 contacts") while it runs, the call for one
 * contact, and the summary's sentences.
 * @typedef {{ doing: (contacts: string) => string, call: (contact: Contact) => Promise<Outcome>,
 *   said: (counts: Record<Outcome, number>) => string[] }} BulkAction
 */

/** @param {number} n */
const contactCount = (n) => count(n, 'contact', 'contacts');
/** @param {Contact} contact @param {TagRef} tag */
const hasTag = (contact, tag) => contact.tags.some((t) => t.id === tag.id);

/**
 * The bar above the list while contacts are picked: how many, and what to do with them. An action runs on them a few
 * at a time, with its progress in the bar, then the list is drawn again (its filters and page kept) under a summary.
 * Once the person has gone to another page, the progress and the summary show in the notice of work under way.
 * @param {Tag[]} tags  the workspace's, offered by Add tag
 * @param {() => Contact[]} picked
 * @param {() => void} clear
 * @param {HTMLElement} list  left alone while an action runs
 */
function selectionBar(tags, picked, clear, list) {
  const selected = h('strong', { class: 'selection-count', 'aria-live': 'polite' });
  const errors = h('div');
  // Takes the focus from the controls it replaces while an action runs (see run).
  const progress = h('div', { class: 'selection-progress', tabindex: '-1' });
  const tagName = h('input', { id: 'bulk-tag', type: 'text', autocomplete: 'off', list: 'bulk-tag-names',
    placeholder: 'tag, existing or new' });
  const untag = h('select', { id: 'bulk-untag' });
  /** A button whose action runs on the contacts picked; its refusal to start shows under the bar. @param {string} label
   * @param {string} className @param {() => Promise<BulkAction | undefined>} prepare  undefined: nothing to do */
  const actionButton = (label, className, prepare) => {
    const button = h('button', { type: 'button', class: className, onclick: () => void whileBusy(button, async () => {
      fill(errors);
      try {
        const action = await prepare();
        if (action) await run(action);
      } catch (err) {
        fill(errors, errorBox(err));
      }
    }) }, label);
    return button;
  };
  const addTag = actionButton('Add tag', 'secondary', () => addTagAction(tagName.value.trim(), tags));
  const actions = [addTag,
    actionButton('Remove tag', 'secondary', async () => removeTagAction(tagsOf(picked()).find((t) => t.id === untag.value))),
    actionButton('Unsubscribe', 'secondary', () => unsubscribeAction(picked())),
    actionButton('Delete', 'danger', () => deleteAction(picked()))];
  // One action on many contacts at a time: a second would race the first over the same contacts.
  const held = h('div', { class: 'selection-held' });
  holdWhileRunning(BULK_WORK, actions, held);
  const controls = h('div', { class: 'selection-actions' },
    // A form, so that Enter in the name adds the tag.
    h('form', { class: 'selection-group', onsubmit: (event) => {
      event.preventDefault();
      addTag.click();
    } }, h('label', { for: 'bulk-tag', class: 'visually-hidden' }, 'Tag to add'), tagName,
    h('datalist', { id: 'bulk-tag-names' }, tags.map((t) => h('option', { value: t.name }))), addTag),
    h('span', { class: 'selection-group' }, h('label', { for: 'bulk-untag', class: 'visually-hidden' }, 'Tag to remove'), untag, actions[1]),
    actions.slice(2),
    h('button', { type: 'button', class: 'secondary', onclick: clear }, 'Clear selection'), held);
  const node = h('section', { class: 'selection-bar', 'aria-label': 'Selected contacts', hidden: true }, selected, controls, progress, errors);

  /** @param {BulkAction} action */
  const run = async (action) => {
    const contacts = picked();
    const hash = location.hash;
    const doing = action.doing(contactCount(contacts.length));
    // The control that started it goes with the others, or has lost the focus already to a dialog that asked first:
    // the focus goes on to what takes their place, which says what is being done, rather than to the page's top.
    const focused = document.activeElement;
    const focusLost = !focused || focused === document.body || controls.contains(focused);
    controls.hidden = true;
    list.inert = true;
    const work = startWork({ title: doing, kind: BULK_WORK, back: { href: hash, label: 'Back to the contacts' }, origin: node,
      total: contacts.length, counted: 'Contacts done' });
    let done = 0;
    /** @type {string | undefined} */
    let held;
    const show = () => {
      fill(progress, h('span', null, `${doing}…`), progressBar(done, contacts.length, 'Contacts done', held));
      work.progress(done, held);
    };
    show();
    if (focusLost) progress.focus();
    const { results, stopped } = await eachAtMost(contacts, action.call, {
      progress: (n) => { done = n; show(); },
      onStoreWait: (sentence) => { held = sentence; show(); },
      cancelled: work.cancelled,
    });
    const said = summary(action, results, stopped);
    // Drawn again only when still shown: the person may have gone elsewhere meanwhile, where the notice shows it.
    const failed = results.some((r) => r.err !== undefined);
    if (work.finish(said, { stopped: stopped !== undefined, failed })) navigate(hash, said);
  };
  return {
    node,
    /** @param {Contact[]} contacts */
    update(contacts) {
      node.hidden = contacts.length === 0;
      fill(selected, `${contacts.length.toLocaleString()} selected`);
      const chosen = untag.value;
      const offered = tagsOf(contacts);
      fill(untag, h('option', { value: '' }, offered.length > 0 ? 'tag to remove' : 'none of them has a tag'),
        offered.map((t) => h('option', { value: t.id, selected: t.id === chosen }, t.name)));
    },
  };
}

/** The tags the contacts have between them, by name. @param {Contact[]} contacts */
function tagsOf(contacts) {
  /** @type {Map<string, TagRef>} */
  const tags = new Map();
  for (const c of contacts) for (const t of c.tags) tags.set(t.id, t);
  return [...tags.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Calls `call` for each contact, AT_ONCE at a time, each call waiting out the rate limit. A limit that waiting will
 * not lift stops it: the contacts after it are not tried, as each would be refused the same.
 * @param {Contact[]} contacts
 * @param {(contact: Contact) => Promise<Outcome>} call
 * @param {{ progress: (done: number) => void, onStoreWait: (sentence: string | undefined) => void, cancelled: () => boolean }} hooks
 *   `progress` hears how many are done; `onStoreWait` hears that calls wait for the store, and when they no longer
 *   do; `cancelled` is true once the session has ended: no contact is tried after
 * @returns {Promise<{ results: Result[], stopped: ApiError | undefined }>}  the results in the contacts' order; `stopped`: the
 *   refusal of the limit that stopped it
 */
async function eachAtMost(contacts, call, { progress, onStoreWait, cancelled }) {
  /** @type {Result[]} */
  const results = contacts.map((contact) => ({ contact }));
  let next = 0;
  let done = 0;
  /** @type {ApiError | undefined} */
  let stopped;
  const worker = async () => {
    while (next < contacts.length && stopped === undefined && !cancelled()) {
      const result = results[next++];
      try {
        result.outcome = await waitingOutRateLimit(() => call(result.contact), onStoreWait);
      } catch (err) {
        result.err = err;
        if (err instanceof ApiError && limitReached(err)) stopped ??= err;
      }
      progress(++done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(AT_ONCE, contacts.length) }, worker));
  return { results, stopped };
}

/** @param {string} name  as typed or picked @param {Tag[]} tags  the workspace's @returns {Promise<BulkAction>} */
async function addTagAction(name, tags) {
  if (!name) throw new Error('Type the name of a tag, or pick one.');
  // A new name is made a tag first.
  /** @type {TagRef & { created?: boolean }} */
  const tag = tags.find((t) => sameTagName(t.name, name)) ?? await tagNamed(name);
  return {
    doing: (contacts) => `Tagging ${contacts} with “${tag.name}”`,
    call: async (c) => {
      await api('POST', `${contactPath(c.id)}/tags/${encodeURIComponent(tag.id)}`);
      return hasTag(c, tag) ? 'already' : 'done';
    },
    said: (n) => [tag.created && `The tag “${tag.name}” was created.`, `Tagged ${contactCount(n.done)} with “${tag.name}”.`,
      n.already > 0 && `${n.already.toLocaleString()} had it already.`].filter((s) => typeof s === 'string'),
  };
}

/** @param {TagRef | undefined} tag @returns {Promise<BulkAction>} */
async function removeTagAction(tag) {
  if (!tag) throw new Error('Pick the tag to remove.');
  return {
    doing: (contacts) => `Taking “${tag.name}” off ${contacts}`,
    call: async (c) => {
      await api('DELETE', `${contactPath(c.id)}/tags/${encodeURIComponent(tag.id)}`);
      return hasTag(c, tag) ? 'done' : 'already';
    },
    said: (n) => [`Took the tag “${tag.name}” off ${contactCount(n.done)}.`,
      n.already > 0 && `${n.already.toLocaleString()} did not have it.`].filter((s) => typeof s === 'string'),
  };
}

/** @param {Contact[]} contacts @returns {Promise<BulkAction | undefined>} */
async function unsubscribeAction(contacts) {
  const already = contacts.filter((c) => c.status !== 'subscribed').length;
  const asked = await confirmDialog({
    title: `Unsubscribe ${contactCount(contacts.length)}?`, confirm: `Unsubscribe ${contactCount(contacts.length)}`,
    message: [h('p', null, 'No broadcast goes to them any more, and their addresses are added to the suppressions: no email of this workspace is sent to them.'),
      already > 0 && h('p', null, `${count(already, 'is unsubscribed or cleaned already, and stays so', 'are unsubscribed or cleaned already, and stay so')}.`),
      h('p', { class: 'muted small' }, 'Removing a suppression later lets email through again; the contact stays unsubscribed.')],
  });
  if (!asked) return undefined;
  return {
    doing: (contacts) => `Unsubscribing ${contacts}`,
    call: async (c) => {
      /** @type {Contact} */
      const after = await api('POST', `${contactPath(c.id)}/unsubscribe`, { body: { reason: 'Unsubscribed in the dashboard' } });
      if (after.status === 'cleaned') return 'cleaned';
      return c.status === 'unsubscribed' ? 'already' : 'done';
    },
    said: (n) => [`Unsubscribed ${contactCount(n.done)}.`,
      n.already > 0 && `${count(n.already, 'was', 'were')} unsubscribed already.`,
      n.cleaned > 0 && `${count(n.cleaned, 'is cleaned, and stays so', 'are cleaned, and stay so')}: no email goes to a cleaned address either.`].filter((s) => typeof s === 'string'),
  };
}

/** @param {Contact[]} contacts @returns {Promise<BulkAction | undefined>} */
async function deleteAction(contacts) {
  const asked = await confirmDialog({
    title: `Delete ${contactCount(contacts.length)}?`, confirm: `Delete ${contactCount(contacts.length)}`, danger: true,
    message: [h('p', null, 'They leave the list and every audience. Their email history stays, and so do any suppressions of their addresses.'),
      h('p', { class: 'muted small' }, 'Adding an address again makes a new contact.')],
  });
  if (!asked) return undefined;
  return {
    doing: (contacts) => `Deleting ${contacts}`,
    call: async (c) => {
      try {
        await api('DELETE', contactPath(c.id));
        return 'done';
      } catch (err) {
        // Gone already, as asked: deleted elsewhere since the list was drawn.
        if (err instanceof ApiError && err.status === 404) return 'already';
        throw err;
      }
    },
    said: (n) => [`Deleted ${contactCount(n.done)}.`, n.already > 0 && `${count(n.already, 'was', 'were')} deleted already.`]
      .filter((s) => typeof s === 'string'),
  };
}

/**
 * What an action did, shown above the list drawn again: the limit that stopped it, its counts, how many it did not
 * get to, then each contact it failed for, with the API's reason.
 * @param {BulkAction} action
 * @param {Result[]} results
 * @param {ApiError} [stopped]  the refusal of the limit that stopped it
 */
function summary(action, results, stopped) {
  /** @type {Record<Outcome, number>} */
  const counts = { done: 0, already: 0, cleaned: 0 };
  for (const r of results) if (r.outcome) counts[r.outcome]++;
  // Refused by the limit: not done, like those never tried, and said once above rather than per contact.
  const failed = results.filter((r) => r.err !== undefined && limitReached(r.err) === undefined);
  const notDone = results.filter((r) => !r.outcome).length - failed.length;
  return h('div', { class: failed.length > 0 || stopped ? 'flash warn bulk-summary' : 'flash bulk-summary' },
    stopped && h('p', { class: 'bulk-stopped' }, h('strong', null, limitReached(stopped)), ' ', stopped.message),
    h('p', null, action.said(counts).join(' ')),
    notDone > 0 && h('p', null, `${count(notDone, 'contact was', 'contacts were')} not done: act on them again once the limit allows.`),
    failed.length > 0 && [h('p', null, `Failed for ${contactCount(failed.length)}:`),
      h('ul', { class: 'bulk-failures' }, failed.map((r) => h('li', null, h('strong', null, r.contact.email), ': ',
        r.err instanceof Error ? r.err.message : String(r.err))))]);
}

// ---------------------------------------------------------------------------
// One contact

/** @param {Ctx} ctx */
async function showContact({ view, id }) {
  const [contact, tags] = await Promise.all([
    /** @type {Promise<Contact | undefined>} */ (loadRecord(view, 'Contact', contactPath(id), { href: '#/contacts', label: 'All contacts' })),
    loadTags().catch(() => /** @type {Tag[]} */ ([])),
  ]);
  if (contact) renderContact(view, contact, tags);
}

/**
 * @param {HTMLElement} view
 * @param {Contact} contact
 * @param {Tag[]} tags  the workspace's, offered by the "add a tag" control
 */
function renderContact(view, contact, tags) {
  const path = contactPath(contact.id);
  const actionErrors = errorSlot();
  const unsubscribe = contact.status === 'subscribed' && askingButton('Unsubscribe', {
    title: `Unsubscribe ${contact.email}?`, confirm: 'Unsubscribe',
    message: [h('p', null, 'No broadcast goes to this contact any more, and the address is added to the suppressions: no email of this workspace is sent to it.'),
      h('p', { class: 'muted small' }, 'Removing the suppression later lets email through again; the contact stays unsubscribed.')],
  }, async () => {
    await api('POST', `${path}/unsubscribe`, { body: { reason: 'Unsubscribed in the dashboard' } });
    navigate(location.hash, `${contact.email} is unsubscribed.`);
  }, actionErrors);
  const remove = askingButton('Delete', {
    title: `Delete ${contact.email}?`, confirm: 'Delete', danger: true,
    message: [h('p', null, 'The contact leaves the list and every audience. Its email history stays, and so does any suppression of its address.'),
      h('p', { class: 'muted small' }, 'Adding the address again makes a new contact.')],
  }, async () => {
    await api('DELETE', path);
    navigate('#/contacts', `${contact.email} was deleted.`);
  }, actionErrors);
  fill(view,
    h('div', { class: 'title-row' }, h('h1', null, contact.email), badge(contact.status), h('span', { class: 'spacer' }),
      may(CONTACTS_WRITE) && [unsubscribe, remove]),
    actionErrors.node,
    h('p', null, h('a', { href: '#/contacts' }, '← All contacts'), ' · id ', code(contact.id), mailLinks(contact.email)),
    suppressionNote(contact.email),
    withheldNote(CONTACTS_WRITE, 'tagging, renaming, unsubscribing and deleting this contact'),
    details(/** @type {Array<[string, Children]>} */ ([
      ['Name', contact.name ?? none()],
      ...statusRows(contact),
      ['Engagement', tierLabel(contact.engagement_tier)],
      ['Created', time(contact.created_at)],
      ['Updated', time(contact.updated_at)],
    ])),
    h('div', { class: 'contact-panels' },
      tagsPanel(contact, tags),
      namePanel(contact),
      propertiesPanel(contact)));
}

/** Where the mail to the address is listed: its emails and their events, for the sections the key may read. @param {string} email */
function mailLinks(email) {
  const to = new URLSearchParams({ to: email });
  return [
    ...(may('emails:read') ? [' · ', h('a', { href: hashOf('/emails', to) }, 'Emails to this address')] : []),
    ...(may('events:read') ? [' · ', h('a', { href: hashOf('/events', to) }, 'Their events')] : []),
  ];
}

/**
 * Whether the address is suppressed, said beside the contact, which may read "subscribed" all the same: a bounce
 * suppresses the address for every email of the workspace without changing the contact's own status.
 * @param {string} email
 */
function suppressionNote(email) {
  const note = h('div');
  if (!may('suppressions:read')) return note;
  api('GET', '/v1/suppressions', { query: new URLSearchParams({ email, limit: '1' }) })
    .then((/** @type {{ data: Array<{ reason: Reason, created_at: string }> }} */ { data: [found] }) => {
      if (!found) return;
      fill(note, heldUpNote('suppressed-note', 'No email goes to this address: ', `it is suppressed (${reasonLabel(found.reason).toLowerCase()}, since `,
        time(found.created_at), '). ', h('a', { href: hashOf('/suppressions', new URLSearchParams({ email })) }, 'See it in Suppressions')));
    }, () => {});
  return note;
}

/** What the status badge beside the address does not say: since when, and why. @param {Contact} contact */
function statusRows(contact) {
  /** @type {Array<[string, Children]>} */
  const rows = [];
  if (contact.unsubscribed_at) {
    rows.push(['Unsubscribed', [time(contact.unsubscribed_at), contact.unsubscribe_reason && h('span', { class: 'reason' }, contact.unsubscribe_reason)]]);
  }
  if (contact.status === 'cleaned') rows.push(['Cleaned', 'The address bounced hard or complained: no email goes to it.']);
  return rows;
}

/**
 * Whether two tag names name one tag, as the API matches them: in NFC ("Café" typed composed or
 * decomposed) and without regard to case.
 * @param {string} a @param {string} b
 */
function sameTagName(a, b) {
  return a.normalize('NFC').toLowerCase() === b.normalize('NFC').toLowerCase();
}

/**
 * The tag of this name, made when there is none. One the picker did not offer (past its thousand, or made
 * since) is found by the API's refusal, which names it.
 * @param {string} name
 * @returns {Promise<TagRef & { created?: boolean }>}
 */
async function tagNamed(name) {
  try {
    /** @type {Tag} */
    const tag = await api('POST', '/v1/tags', { body: { name } });
    return { ...tag, created: true };
  } catch (err) {
    const existing = err instanceof ApiError && err.code === 'already_exists' ? err.body.tag_id : undefined;
    if (typeof existing !== 'string') throw err;
    return { id: existing, name };
  }
}

/** @param {Contact} contact @param {Tag[]} tags */
function tagsPanel(contact, tags) {
  const path = contactPath(contact.id);
  const errors = h('div');
  const chips = contact.tags.map((t) => h('span', { class: may(CONTACTS_WRITE) ? 'tag removable' : 'tag' }, t.name,
    may(CONTACTS_WRITE) && h('button', { type: 'button', class: 'tag-remove', 'aria-label': `Remove the tag ${t.name}`, title: 'Remove', onclick: (event) => {
      const button = /** @type {HTMLButtonElement} */ (event.currentTarget);
      void whileBusy(button, async () => {
        try {
          await api('DELETE', `${path}/tags/${encodeURIComponent(t.id)}`);
          navigate(location.hash, `The tag “${t.name}” was removed.`);
        } catch (err) {
          fill(errors, errorBox(err));
        }
      });
    } }, '×')));
  const offered = tags.filter((t) => !contact.tags.some((own) => own.id === t.id));
  const name = h('input', { id: 'add-tag', type: 'text', autocomplete: 'off', list: 'tag-names', placeholder: 'existing or new' });
  const add = h('button', { type: 'submit', class: 'secondary' }, 'Add tag');
  const form = h('form', { class: 'inline-form', onsubmit: (event) => {
    event.preventDefault();
    void whileBusy(add, async () => {
      const wanted = name.value.trim();
      if (!wanted) {
        fill(errors, errorBox(new Error('Type the name of a tag, or pick one.')));
        return;
      }
      try {
        // A new name is made a tag first.
        const known = tags.find((t) => sameTagName(t.name, wanted));
        /** @type {TagRef & { created?: boolean }} */
        const tag = known ?? await tagNamed(wanted);
        await api('POST', `${path}/tags/${encodeURIComponent(tag.id)}`);
        navigate(location.hash, tag.created ? `The tag “${tag.name}” was created and added.` : `The tag “${tag.name}” was added.`);
      } catch (err) {
        fill(errors, errorBox(err));
      }
    });
  } }, h('label', { for: 'add-tag' }, 'Add a tag'), name, h('datalist', { id: 'tag-names' }, offered.map((t) => h('option', { value: t.name }))), add);
  return h('section', { class: 'panel' }, h('h2', null, 'Tags'),
    contact.tags.length > 0 ? h('div', { class: 'tag-list' }, chips) : h('p', { class: 'muted' }, 'No tags. Broadcasts choose their audience by tag.'),
    may(CONTACTS_WRITE) && form, errors);
}

/** @param {Contact} contact */
function namePanel(contact) {
  const errors = fieldErrors();
  const near = h('div');
  const names = nameField('contact', contact.name);
  const save = h('button', { type: 'submit', class: 'secondary' }, 'Save the name');
  const form = h('form', { onsubmit: (event) => {
    event.preventDefault();
    void whileBusy(save, async () => {
      try {
        await api('PATCH', contactPath(contact.id), { body: { name: names.value() } });
        navigate(location.hash, 'The name was saved.');
      } catch (err) {
        errors.show(err, near);
      }
    });
  } },
  h('div', { class: 'form-grid' },
    h('label', { for: 'contact-name' }, 'Full name'), h('div', null, names.input, names.parts, errors.slot('name', 'the name', names.input))),
  near, save);
  return h('section', { class: 'panel' }, h('h2', null, 'Name'), fixedUnless(CONTACTS_WRITE, form));
}

/** @param {Contact} contact */
function propertiesPanel(contact) {
  const entries = Object.entries(contact.properties);
  return h('section', { class: 'panel contact-properties' }, h('h2', null, 'Properties'),
    entries.length === 0
      ? h('p', { class: 'muted' }, 'None. Properties come with the API or a CSV import, and broadcasts read them as ',
        code('{{ contact.properties.<name> }}'), '.')
      : table([
        { header: 'Name', cell: ([name]) => code(name), role: 'primary' },
        { header: 'Value', cell: ([, value]) => String(value), className: 'prose' },
      ], entries));
}

// ---------------------------------------------------------------------------
// Tags

/** @param {Ctx} ctx */
function showTags({ view, query }) {
  const errors = fieldErrors();
  const near = h('div');
  const name = h('input', { id: 'tag-name', type: 'text', required: true, autocomplete: 'off', placeholder: 'customers' });
  const create = h('button', { type: 'submit' }, 'Create tag');
  const list = h('div');
  fill(view,
    h('h1', null, 'Tags'),
    h('p', null, h('a', { href: '#/contacts' }, '← All contacts')),
    h('p', { class: 'muted' }, 'Labels on contacts; a broadcast goes to the contacts with the tags it names. Open a tag for its contacts. A tag is also made when a contact is given a new one.'),
    withheldNote(CONTACTS_WRITE, 'creating and deleting tags'),
    list,
    may(CONTACTS_WRITE) && [h('h2', null, 'New tag'),
    h('form', { onsubmit: (event) => {
      event.preventDefault();
      void whileBusy(create, async () => {
        try {
          /** @type {Tag} */
          const tag = await api('POST', '/v1/tags', { body: { name: name.value.trim() } });
          navigate('#/contacts/tags', `The tag “${tag.name}” was created.`);
        } catch (err) {
          errors.show(err, near);
        }
      });
    } }, h('div', { class: 'inline-form' }, h('label', { for: 'tag-name' }, 'Name'), name, create),
    errors.slot('name', 'Name', name), near)]);
  /** @type {import('../ui.js').Column<Tag>[]} */
  const columns = [
    { header: 'Name', cell: (t) => h('a', { href: hashOf('/contacts', new URLSearchParams({ tag_id: t.id })), class: 'tag',
      title: `The contacts tagged ${t.name}` }, t.name), role: 'primary' },
    { header: 'Created', cell: (t) => time(t.created_at), className: 'nowrap' },
    ...(may(CONTACTS_WRITE) ? [actionsColumn((/** @type {Tag} */ t) => rowAction('Delete', {
      title: `Delete the tag “${t.name}”?`, confirm: 'Delete', danger: true,
      message: h('p', null, 'It is taken off every contact that has it, and an audience chosen by it no longer finds them.') }, async () => {
        await api('DELETE', `/v1/tags/${encodeURIComponent(t.id)}`);
        navigate('#/contacts/tags', `The tag “${t.name}” was deleted.`);
      }))] : []),
  ];
  return pagedTable(list, { api: '/v1/tags', route: '/contacts/tags', query, columns,
    empty: may(CONTACTS_WRITE) ? 'No tags yet. Create one below, or give a contact a tag on its page, in the add form or in an import.' : 'No tags yet.' });
}
