// @ts-check
// Templates: the list, and an editor for a template's subject, HTML, text and
// variable declarations with a live preview rendered by the server (the same
// engine that sends), its version history, publish, duplicate and delete; a
// new template is written in the same editor, empty, and created when saved.
import { may, withheldNote } from '../access.js';
import { ApiError, api } from '../api.js';
import { codeEditor } from '../code-editor.js';
import { filterForm, filterText, loadRecord, pagedTable } from '../lists.js';
import { navigate, showNote } from '../nav.js';
import { previewFrame, scrolledText } from '../preview.js';
import {
  actionForm, actionsColumn, askingButton, badge, byId, clipped, code, errorBox, errorSlot, fieldErrors, fill, formatTime, h, rowAction, table, time, whileBusy,
} from '../ui.js';
import { discardAsked, guardEdits } from '../unsaved.js';

/** @typedef {import('../nav.js').Ctx} Ctx */
/** @typedef {'string' | 'number' | 'boolean' | 'object' | 'list'} VariableType */
/** @typedef {{ key: string, type: VariableType, required: boolean, fallback: unknown }} Variable */
/**
 * @typedef {{ version: number, subject: string, from: string | null, variables: Variable[], created_at: string,
 *   published_at: string | null, html?: string | null, text?: string | null }} Version
 */
/**
 * @typedef {{ id: string, name: string, alias: string | null, published_version: number | null, latest_version: number,
 *   variables: Variable[], created_at: string, updated_at: string, latest: Version, published: Version | null }} Template
 */

const VARIABLE_TYPES = /** @type {VariableType[]} */ (['string', 'number', 'boolean', 'object', 'list']);
/** The preview is rendered again this long after the last keystroke. */
const PREVIEW_DELAY_MS = 300;
/** What an alias may be, as the API checks it. */
const ALIAS_PATTERN = '[a-z][a-z0-9._\\-]{0,63}';

/** The scope of every change to a template; previews need only templates:read. */
const TEMPLATES_WRITE = 'templates:write';

/** @type {Array<[RegExp, (ctx: Ctx) => void | Promise<void>]>} */
export const TEMPLATE_ROUTES = [
  [/^\/templates$/, showTemplates],
  [/^\/templates\/new$/, showNewTemplate],
  [/^\/templates\/([^/]+)$/, showTemplate],
];

/**
 * Which version sends, and any newer one not yet published, said the same in the list and the editor's title. The
 * badge says whether the template sends at all: a published template with a newer draft is still live.
 * @param {Pick<Template, 'published_version' | 'latest_version'>} t
 * @returns {{ status: 'draft' | 'published', said: string, newerDraft: number | null }}
 */
function publishState({ published_version: published, latest_version: latest }) {
  if (published === null) return { status: 'draft', said: 'never published', newerDraft: null };
  if (published === latest) return { status: 'published', said: `version ${published} sends`, newerDraft: null };
  return { status: 'published', said: `version ${published} sends; version ${latest} is a draft, not yet published`, newerDraft: latest };
}

/** @param {string} id */
const templateHref = (id) => `#/templates/${encodeURIComponent(id)}`;
/** @param {string} id */
const templatePath = (id) => `/v1/templates/${encodeURIComponent(id)}`;

/** @param {Ctx} ctx */
function showTemplates({ view, query }) {
  const list = h('div');
  const filters = [filterText('Find', 'name', query, 'part of a name')];
  fill(view,
    h('div', { class: 'title-row' }, h('h1', null, 'Templates'), h('span', { class: 'spacer' }),
      may(TEMPLATES_WRITE) && h('a', { href: '#/templates/new', class: 'button-link' }, 'New template')),
    withheldNote(TEMPLATES_WRITE, 'creating, saving, publishing and deleting templates'),
    filterForm('/templates', filters), list);
  /** @type {import('../ui.js').Column<Template>[]} */
  const columns = [
    { header: 'Name', cell: (t) => clipped(t.name, { href: templateHref(t.id), wide: true }) },
    { header: 'Alias', cell: (t) => code(t.alias), className: 'nowrap' },
    { header: 'Status', cell: (t) => {
      const { status, newerDraft } = publishState(t);
      if (newerDraft === null) return badge(status);
      return [badge(status), ' ', h('span', { class: 'muted small template-draft-note', title: `Version ${newerDraft} is a draft, not yet published` },
        `draft v${newerDraft}`)];
    }, role: 'status' },
    { header: 'Published', cell: (t) => (t.published_version === null ? h('span', { class: 'muted' }, 'never')
      : `version ${t.published_version}`), className: 'nowrap' },
    { header: 'Latest', cell: (t) => `version ${t.latest_version}`, className: 'nowrap', minor: true },
    { header: 'Updated', cell: (t) => time(t.updated_at) },
  ];
  return pagedTable(list, { api: '/v1/templates', route: '/templates', query, columns, filters,
    empty: query.has('name') ? ['No template’s name has “', query.get('name'), '” in it. ', h('a', { href: '#/templates' }, 'Show all templates')]
      : may(TEMPLATES_WRITE) ? 'No templates yet. Press New template to write one, then publish it to send with it.' : 'No templates yet.' });
}

/**
 * A typed value from what was typed: empty is "none".
 * @param {VariableType} type
 * @param {string} raw
 * @returns {unknown}
 */
function typedValue(type, raw) {
  const text = raw.trim();
  if (text === '') return undefined;
  if (type === 'string') return raw;
  if (type === 'number') {
    const n = Number(text);
    if (!Number.isFinite(n)) throw new Error(`“${raw}” is not a number.`);
    return n;
  }
  if (type === 'boolean') {
    if (text !== 'true' && text !== 'false') throw new Error(`“${raw}” is not true or false.`);
    return text === 'true';
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`“${raw}” is not JSON (an ${type === 'list' ? 'array like ["a", "b"]' : 'object like {"a": 1}'}).`);
  }
}

/** @param {unknown} value */
const shown = (value) => (value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value));

/**
 * What a saved required variable without a fallback shows in the preview until a sample is typed: its own name for
 * text, so that the preview shows at once and says where each value goes.
 * @param {Variable} variable
 */
function placeholderSample(variable) {
  if (!variable.required || shown(variable.fallback) !== '') return '';
  return { string: variable.key, number: '1', boolean: 'true', object: '{}', list: '[]' }[variable.type];
}

/** How a problem names the source it is about. */
const PART_NAMES = /** @type {Record<string, string>} */ ({ subject: 'the subject', html: 'the HTML', text: 'the text' });

/**
 * A refused render's problems, split: the variables the content uses without declaring them, each with where it is
 * first used, and the other problems.
 * @param {unknown} err
 */
function undeclaredIn(err) {
  /** @type {Array<{ name: string, where: string }>} */
  const uses = [];
  /** @type {string[]} */
  const others = [];
  const problems = err instanceof ApiError && Array.isArray(err.body.problems) ? err.body.problems : [];
  for (const p of problems) {
    // The API names the variable of a use it found undeclared.
    if (typeof p?.variable !== 'string') others.push(String(p?.message));
    else uses.push({ name: p.variable, where: `in ${PART_NAMES[p.param] ?? p.param}${p.line === undefined ? '' : `, line ${p.line}`}` });
  }
  return { uses, others };
}

/**
 * The sample values typed in each template's editor, by variable name, for as long as the page is open: saving or
 * publishing draws the editor again, and its preview would lose what it was rendered with. They are never saved.
 * @type {Map<string, Map<string, string>>}
 */
const typedSamples = new Map();

/**
 * One row of the variables table: its inputs, and how to read it back. Its controls are named for a screen reader by
 * the variable ("Type of variable first_name", "Remove variable first_name"), or by the row's place while it has no
 * name, as the table's headers say nothing of which row a control is in.
 * @param {Variable | undefined} variable
 * @param {Map<string, string>} samples  the sample values typed for this template, read and kept by the row
 * @param {() => void} changed
 * @param {(row: HTMLTableRowElement) => void} remove
 */
function variableRow(variable, samples, changed, remove) {
  const key = h('input', { type: 'text', value: variable?.key ?? '', required: true, pattern: '[A-Za-z_][A-Za-z0-9_]*', autocomplete: 'off' });
  const type = h('select', null, VARIABLE_TYPES.map((t) => h('option', { value: t, selected: t === (variable?.type ?? 'string') }, t)));
  const required = h('input', { type: 'checkbox', checked: variable?.required ?? false });
  const fallback = h('input', { type: 'text', value: shown(variable?.fallback), autocomplete: 'off', placeholder: 'none' });
  const sample = h('input', { type: 'text', autocomplete: 'off',
    value: variable ? samples.get(variable.key) ?? (shown(variable.fallback) || placeholderSample(variable)) : '' });
  const keepSample = () => {
    if (key.value.trim()) samples.set(key.value.trim(), sample.value);
  };
  sample.addEventListener('input', keepSample);
  // A sample typed before its variable was named is kept once it is.
  key.addEventListener('input', () => sample.value !== '' && keepSample());
  const removeButton = may(TEMPLATES_WRITE) && h('button', { type: 'button', class: 'secondary', onclick: () => remove(row) }, 'Remove');
  const row = h('tr', { class: 'variable-row' },
    h('td', { 'data-label': 'Name' }, key), h('td', { 'data-label': 'Type' }, type),
    h('td', { class: 'variable-required' }, h('label', null, required, 'Required')),
    h('td', { 'data-label': 'Fallback' }, fallback), h('td', { 'data-label': 'Sample value' }, sample),
    h('td', { class: 'row-actions' }, removeButton));
  /** Names the row's controls by its variable, or by its place in the table (1 for the first) while it has no name. */
  const relabel = () => {
    const place = `variable ${row.sectionRowIndex + 1}`;
    const which = key.value.trim() ? `variable ${key.value.trim()}` : place;
    key.setAttribute('aria-label', `Name of ${place}`);
    type.setAttribute('aria-label', `Type of ${which}`);
    required.setAttribute('aria-label', `${which} is required`);
    fallback.setAttribute('aria-label', `Fallback of ${which}`);
    sample.setAttribute('aria-label', `Sample value of ${which}`);
    if (removeButton) removeButton.setAttribute('aria-label', `Remove ${which}`);
  };
  key.addEventListener('input', relabel);
  for (const input of [key, type, required, fallback, sample]) input.addEventListener('input', changed);
  return {
    row,
    relabel,
    /** What was typed, to tell whether it changed: sample values are the preview's, never saved. */
    typed: () => [key.value, type.value, required.checked, fallback.value],
    /** @returns {{ declaration: { key: string, type: VariableType, required: boolean, fallback: unknown }, sample: unknown }} */
    read() {
      const t = /** @type {VariableType} */ (type.value);
      const name = key.value.trim();
      /** A value typed in the row, its refusal naming the variable and the field: the table may hold many. @param {string} field @param {string} raw */
      const valueOf = (field, raw) => {
        try {
          return typedValue(t, raw);
        } catch (err) {
          throw new Error(`The ${field} of “${name || 'the unnamed variable'}”: ${err instanceof Error ? err.message : String(err)}`);
        }
      };
      const fallbackValue = valueOf('fallback', fallback.value);
      return {
        declaration: { key: name, type: t, required: required.checked, fallback: fallbackValue === undefined ? null : fallbackValue },
        sample: valueOf('sample value', sample.value),
      };
    },
  };
}

/** @param {Ctx} ctx */
async function showTemplate({ view, id }) {
  /** @type {Template | undefined} */
  const template = await loadRecord(view, 'Template', templatePath(id), { href: '#/templates', label: 'All templates' });
  if (template) await templateEditor(view, template);
}

/** A template not yet created: the editor starts empty, and saving creates it with its content as version 1. @param {Ctx} ctx */
function showNewTemplate({ view }) {
  return templateEditor(view, null);
}

/**
 * The editor of `template`, or of a new one when it is null.
 * @param {HTMLElement} view @param {Template | null} template
 */
async function templateEditor(view, template) {
  const name = h('input', { id: 'template-name', type: 'text', value: template?.name ?? '', required: true, autocomplete: 'off' });
  const alias = h('input', { id: 'template-alias', type: 'text', value: template?.alias ?? '', autocomplete: 'off',
    placeholder: template ? 'none' : 'welcome-email (optional)', pattern: ALIAS_PATTERN });
  const from = h('input', { id: 'template-from', type: 'text', value: template?.latest.from ?? '', placeholder: 'Ann <ann@example.com> (optional)' });
  const subject = h('input', { id: 'template-subject', type: 'text', required: true });
  const html = await codeEditor({ id: 'template-html', label: 'HTML', language: 'html', rows: 16 });
  const text = await codeEditor({ id: 'template-text', label: 'Text', language: 'text', rows: 6, placeholder: 'Made from the HTML when empty.' });
  const contactName = h('input', { id: 'sample-contact-name', type: 'text', value: 'Ada Lovelace', autocomplete: 'off' });
  const contactEmail = h('input', { id: 'sample-contact-email', type: 'email', value: 'ada@example.com', autocomplete: 'off' });
  const rows = h('tbody');
  /** @type {Map<HTMLTableRowElement, ReturnType<typeof variableRow>>} */
  const variables = new Map();
  /** @type {Map<string, string>} */
  const samples = (template && typedSamples.get(template.id)) ?? new Map();
  if (template) typedSamples.set(template.id, samples);
  const preview = h('div', { class: 'template-preview', 'aria-live': 'polite' });
  const versions = h('div');
  /** The note saying which older version the editor holds, which saving copies into a new one. @type {HTMLElement | undefined} */
  let olderVersionNote;
  // The API's refusal of a save is shown beside the field it names (a Liquid error beside its source).
  const fields = fieldErrors();

  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  let rendering = 0;
  /**
   * The sources and declarations the preview shows a refusal of (template_invalid), or '' while it shows anything
   * else. That refusal depends on nothing more, so while they are unchanged (a sample value or the contact typed) it
   * would come again: the request is not sent.
   */
  let refusalShownFor = '';
  const changed = () => {
    clearTimeout(timer);
    timer = setTimeout(() => void renderPreview(), PREVIEW_DELAY_MS);
  };
  /** The rows after one removed have moved up a place. */
  const relabelVariables = () => {
    for (const v of variables.values()) v.relabel();
  };
  const noVariables = h('p', { class: 'muted small' }, 'No variables are declared.');
  const variablesTable = h('div', { class: 'table-wrap' }, h('table', { class: 'variables' },
    h('thead', null, h('tr', null, ['Name', 'Type', 'Required', 'Fallback', 'Sample value'].map((t) => h('th', { scope: 'col' }, t)),
      h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')))),
    rows));
  /** An empty table is a bare frame: a sentence says there is nothing in it instead. */
  const showWhetherEmpty = () => {
    variablesTable.hidden = variables.size === 0;
    noVariables.hidden = variables.size > 0;
  };
  /**
   * A row of the table; one added by its button takes the focus, on its name.
   * @param {Variable} [variable] @param {boolean} [focused]
   */
  const addVariable = (variable, focused = false) => {
    const v = variableRow(variable, samples, changed, (row) => {
      // The focus was on the row's Remove: it goes to the next row's, or the one before, or to Add variable.
      const neighbour = row.nextElementSibling ?? row.previousElementSibling;
      variables.delete(row);
      row.remove();
      showWhetherEmpty();
      relabelVariables();
      changed();
      const next = neighbour?.querySelector('.row-actions button') ?? addButton;
      if (next instanceof HTMLElement) next.focus();
    });
    variables.set(v.row, v);
    rows.append(v.row);
    showWhetherEmpty();
    v.relabel();
    if (focused) v.row.querySelector('input')?.focus();
    return v.row;
  };
  /**
   * Declares a variable the content uses, as a required string without a fallback: its sample is its own name, so the
   * preview shows at once where it goes. The focus goes to its type, the one thing the name cannot tell.
   * @param {string} key @param {HTMLElement} item  the line of the note that offered it, gone at once
   */
  const declare = (key, item) => {
    const row = addVariable({ key, type: 'string', required: true, fallback: null });
    row.querySelector('select')?.focus();
    item.remove();
    clearTimeout(timer);
    void renderPreview();
  };
  const addButton = h('button', { type: 'button', class: 'secondary', onclick: () => addVariable(undefined, true) }, 'Add variable');

  /** The editor's content, as the API takes it. */
  const content = () => {
    const read = [...variables.values()].map((v) => v.read());
    return {
      subject: subject.value,
      html: html.value === '' ? null : html.value,
      text: text.value === '' ? null : text.value,
      variables: read.map((r) => r.declaration),
      data: Object.fromEntries(read.filter((r) => r.sample !== undefined).map((r) => [r.declaration.key, r.sample])),
    };
  };

  /** Everything saving stores, as typed, to compare with what was loaded. */
  const typed = () => JSON.stringify([name.value, alias.value, from.value, subject.value, html.value, text.value,
    [...variables.values()].map((v) => v.typed())]);
  let loaded = '';
  // A key that may not save has nothing to lose: its edits change only the preview.
  const edits = guardEdits(view, template ? `“${template.name}”` : 'the new template', () => may(TEMPLATES_WRITE) && typed() !== loaded);
  /** Said in a question about an action that reloads the editor, when it holds changes: the action does not save them. @param {string} consequence */
  const unsavedNote = (consequence) => (may(TEMPLATES_WRITE) && typed() !== loaded
    ? h('p', { class: 'unsaved-warning' }, `Your changes in the editor are not saved: ${consequence}`) : null);

  /** @param {Version} version */
  const load = (version) => {
    subject.value = version.subject;
    html.value = version.html ?? '';
    text.value = version.text ?? '';
    from.value = version.from ?? '';
    variables.clear();
    rows.replaceChildren();
    showWhetherEmpty();
    for (const v of version.variables) addVariable(v);
    loaded = typed();
    olderVersionNote?.remove();
    olderVersionNote = version.version === template?.latest_version ? undefined
      : showNote(`The editor holds version ${version.version}, saved ${formatTime(version.created_at)}. `
        + `Saving makes a copy of it, with your changes, version ${(template?.latest_version ?? 0) + 1}.`, { lasting: true });
    void renderPreview();
  };

  async function renderPreview() {
    const turn = ++rendering;
    let sources = '';
    try {
      const { subject: s, html: body, text: plain, variables: declared, data } = content();
      sources = JSON.stringify([s, body, plain, declared]);
      if (sources === refusalShownFor) return;
      refusalShownFor = '';
      // Said as what to do, not as the API's refusal: a new template is empty, a new required variable has no sample.
      if (body === null && plain === null) {
        fill(preview, h('p', { class: 'empty' }, 'Write the HTML or text, and the preview shows here.'));
        return;
      }
      const unset = declared.filter((d) => d.required && d.key && data[d.key] === undefined).map((d) => `“${d.key}”`);
      if (unset.length > 0) {
        fill(preview, h('p', { class: 'empty' }, `Give ${unset.join(', ')} a sample value under Variables to see the preview.`));
        return;
      }
      const rendered = await api('POST', '/v1/templates/render', { body: {
        subject: s, ...(body !== null && { html: body }), ...(plain !== null && { text: plain }), variables: declared,
        data: { ...data, contact: { name: contactName.value, email: contactEmail.value }, unsubscribe_url: 'https://example.com/unsubscribe' },
      } });
      if (turn !== rendering) return;
      fill(preview,
        h('p', { class: 'preview-subject' }, h('span', { class: 'muted' }, 'Subject: '), rendered.subject),
        rendered.html === null ? h('p', { class: 'muted' }, 'No HTML part.') : previewFrame(rendered.html),
        h('h3', null, 'Text'), scrolledText(rendered.text ?? '', 'Text part'));
    } catch (err) {
      if (turn !== rendering) return;
      refusalShownFor = err instanceof ApiError && err.code === 'template_invalid' ? sources : '';
      const { uses, others } = undeclaredIn(err);
      if (uses.length === 0) fill(preview, errorBox(err));
      else fill(preview, undeclaredNote(uses), ...others.map((message) => errorBox(new Error(message))));
    }
  }

  /**
   * Says which variables the content uses without declaring them, each with a button that declares it.
   * @param {Array<{ name: string, where: string }>} uses
   */
  const undeclaredNote = (uses) => h('div', { class: 'undeclared-note' },
    h('p', null, uses.length === 1 ? 'The content uses a variable that is not declared. Declare it to see the preview.'
      : 'The content uses variables that are not declared. Declare them to see the preview.'),
    h('ul', null, uses.map(({ name: key, where }) => {
      const item = h('li', null, h('code', null, key), h('span', { class: 'muted' }, where));
      if (may(TEMPLATES_WRITE)) {
        item.append(h('button', { type: 'button', class: 'secondary', 'aria-label': `Declare ${key}`, onclick: () => declare(key, item) }, 'Declare'));
      }
      return item;
    })));

  const [editor, editorErrors] = actionForm({ class: 'template-editor' }, async (errors) => {
    try {
      const { subject: s, html: body, text: plain, variables: declared } = content();
      if (!template) {
        /** @type {Template} */
        const created = await api('POST', '/v1/templates', { body: {
          name: name.value.trim(), ...(alias.value.trim() && { alias: alias.value.trim() }), subject: s,
          ...(body !== null && { html: body }), ...(plain !== null && { text: plain }), variables: declared,
          ...(from.value.trim() && { from: from.value.trim() }),
        } });
        edits.release();
        // Its editor, drawn next, renders the preview with the sample values typed here.
        typedSamples.set(created.id, samples);
        navigate(templateHref(created.id), `${created.name} was created as version 1, a draft. Publish it to send with it.`);
        return;
      }
      /** @type {Template} */
      const saved = await api('PATCH', templatePath(template.id), { body: {
        name: name.value.trim(), alias: alias.value.trim() || null, subject: s, html: body, text: plain, variables: declared,
        from: from.value.trim() || null,
      } });
      edits.release();
      navigate(location.hash, saved.latest_version === template.latest_version
        ? 'Saved: the content did not change, so no new version was made.'
        : `Saved as version ${saved.latest_version}, a draft. Publish it to send with it.`);
    } catch (err) {
      fields.show(err, errors.node);
    }
  },
  h('div', { class: 'form-grid' },
    h('label', { for: 'template-name' }, 'Name'), h('div', null, name, fields.slot('name', 'Name', name)),
    h('label', { for: 'template-alias' }, 'Alias'), h('div', null, alias, fields.slot('alias', 'Alias', alias)),
    h('label', { for: 'template-from' }, 'Default from'), h('div', null, from, fields.slot('from', 'Default from', from)),
    h('label', { for: 'template-subject' }, 'Subject'), h('div', null, subject, fields.slot('subject', 'Subject', subject))),
  html, fields.slot('html', 'HTML'), text, fields.slot('text', 'Text'),
  h('h2', null, 'Variables'),
  h('p', { class: 'muted small' }, 'Declare each variable the content uses. ', h('code', null, 'contact.*'), ' and ',
    h('code', null, 'unsubscribe_url'), ' need no declaration. Lists and objects are written as JSON.'),
  noVariables, variablesTable,
  fields.slot('variables', 'Variables'),
  may(TEMPLATES_WRITE) && [addButton,
    h('div', { class: 'form-actions' }, h('button', { type: 'submit' }, template ? 'Save as a new version' : 'Create template'))]);

  for (const input of [subject, html, text, contactName, contactEmail]) input.addEventListener('input', changed);

  const layout = h('div', { class: 'template-layout' },
    h('div', null, editor, editorErrors),
    h('aside', null,
      h('h2', null, 'Preview'),
      h('div', { class: 'form-grid' },
        h('label', { for: 'sample-contact-name' }, 'Contact name'), contactName,
        h('label', { for: 'sample-contact-email' }, 'Contact email'), contactEmail),
      h('p', { class: 'muted small' }, 'Rendered by the server with the sample values. Remote images are not loaded.'),
      preview));

  if (!template) {
    fill(view, h('h1', null, 'New template'),
      withheldNote(TEMPLATES_WRITE, 'creating templates; what is written here changes only the preview'),
      h('p', null, h('a', { href: '#/templates' }, '← All templates')),
      layout);
    loaded = typed();
    void renderPreview();
    name.focus();
    return;
  }

  const actionErrors = errorSlot();
  const path = templatePath(template.id);
  /** @param {number} version */
  const openButton = (version) => {
    const button = h('button', { type: 'button', class: 'secondary', onclick: async () => {
      if (!await discardAsked(`Open version ${version}`)) return;
      await whileBusy(button, async () => {
        try {
          load(await api('GET', `${path}/versions/${version}`));
          fill(actionErrors.node);
          // From the list of versions, up to the note saying which the editor holds, above it.
          byId('note').scrollIntoView({ block: 'start' });
        } catch (err) {
          actionErrors.show(err);
        }
      });
    } }, 'Open');
    return button;
  };
  /** @param {number} version @returns {import('../ui.js').Question} */
  const publishQuestion = (version) => ({ title: `Publish version ${version}?`, confirm: `Publish version ${version}`,
    message: [h('p', null, 'Sends by this template use it from now on.'),
      unsavedNote(`they are not in version ${version}, and publishing discards them. Save first to publish them.`)] });

  const loadVersions = async () => {
    try {
      const page = await api('GET', `${path}/versions`, { query: new URLSearchParams({ limit: '100' }) });
      /** @type {import('../ui.js').Column<Version>[]} */
      const columns = [
        { header: 'Version', cell: (v) => `version ${v.version}`, className: 'nowrap' },
        { header: 'Subject', cell: (v) => v.subject },
        { header: 'Saved', cell: (v) => time(v.created_at) },
        // The latest version, newer than the one published, is the draft the editor holds, as the title says.
        { header: 'Status', cell: (v) => (v.version === template.published_version ? badge('published')
          : v.version === template.latest_version ? badge('draft')
            : h('span', { class: 'muted' }, v.published_at ? 'published before' : 'never published')) },
        actionsColumn((v) => [
          openButton(v.version),
          ...(v.version === template.published_version || !may(TEMPLATES_WRITE) ? [] : rowAction('Publish', () => publishQuestion(v.version), async () => {
            await api('POST', `${path}/publish`, { body: { version: v.version } });
            edits.release();
            navigate(location.hash, `Version ${v.version} is published.`);
          })),
        ]),
      ];
      fill(versions, table(columns, page.data));
    } catch (err) {
      fill(versions, errorBox(err));
    }
  };

  const publishLatest = askingButton(`Publish version ${template.latest_version}`, () => publishQuestion(template.latest_version), async () => {
    await api('POST', `${path}/publish`, { body: {} });
    edits.release();
    navigate(location.hash, `Version ${template.latest_version} is published.`);
  }, actionErrors, { primary: true });
  publishLatest.disabled = template.published_version === template.latest_version;
  const state = publishState(template);

  fill(view,
    h('div', { class: 'title-row' },
      h('h1', null, template.name),
      badge(state.status), h('span', { class: 'muted publish-state' }, state.said),
      h('span', { class: 'spacer' }),
      may(TEMPLATES_WRITE) && [publishLatest,
      ...rowAction('Duplicate', () => ({ title: `Make a copy of “${template.name}”?`, confirm: 'Duplicate',
        message: [h('p', null, `Its latest version, ${template.latest_version}, becomes version 1 of a new template, a draft named “`, template.name, ' (copy)”.'),
          unsavedNote('the copy is made from what was saved, and your changes are discarded.')] }),
      async () => {
        /** @type {Template} */
        const copy = await api('POST', `${path}/duplicate`, { body: {} });
        edits.release();
        navigate(templateHref(copy.id), `${copy.name} is a copy of ${template.name}.`);
      }),
      ...rowAction('Delete', { title: `Delete “${template.name}”?`, confirm: 'Delete', danger: true,
        message: [h('p', null, 'The template and all its versions are deleted; this cannot be undone.'),
          h('p', null, 'Emails already sent with it keep their content.')] }, async () => {
        await api('DELETE', path);
        edits.release();
        navigate('#/templates', `${template.name} was deleted.`);
      })]),
    actionErrors.node,
    withheldNote(TEMPLATES_WRITE, 'saving, publishing, duplicating and deleting this template; edits made here change only the preview'),
    h('p', null, h('a', { href: '#/templates' }, '← All templates'), ' · id ', code(template.id)),
    layout,
    h('h2', null, 'Versions'), versions);
  load(template.latest);
  await loadVersions();
}
