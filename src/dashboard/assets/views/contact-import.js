// @ts-check
// Importing contacts from a CSV file (or pasted text): read in the page with
// Papa Parse, shown as read (rows, and what each column becomes) before
// anything is sent, then upserted through POST /v1/contacts/bulk a thousand
// rows at a time, with progress, and summed up: created, updated, and each
// failed row by its line in the file, with the API's reason. Once the person
// has gone to another page, the notice of work under way shows the progress
// and the summary.
import { may, withheldNote } from '../access.js';
import { api, limitReached, waitingOutRateLimit } from '../api.js';
import { attach, code, count, errorBox, fill, h, progressBar, table, whileBusy } from '../ui.js';
import { holdWhileRunning, startWork } from '../work.js';

/** @typedef {import('../nav.js').Ctx} Ctx */
/** @typedef {import('../ui.js').Children} Children */
/**
 * One row as Papa Parse hands it to `step`: its cells, its errors, and where in the text it ends.
 * @typedef {{ data: string[], errors: Array<{ type: string, message: string }>, meta: { cursor: number, delimiter: string } }} StepResult
 */
/** @typedef {{ parse(text: string, config: { delimiter: string, skipEmptyLines: 'greedy', step: (row: StepResult) => void }): void }} Papa */
/** @typedef {'email' | 'name' | 'first_name' | 'last_name' | 'tags' | 'property' | 'ignored'} Role */
/** @typedef {{ header: string, role: Role }} CsvColumn */
/** @typedef {{ email: string, name?: string, tags?: string[], properties?: Record<string, string> }} BulkItem */
/** @typedef {{ line: number, item: BulkItem }} CsvRow  `line`: where the row starts in the file, counting from 1 */
/** @typedef {{ line: number, email: string | null, message: string }} Failure */
/** @typedef {{ rows: CsvRow[], columns: CsvColumn[], skipped: Failure[], delimiter: string, lines: number }} Reading */
/**
 * @typedef {{ created: number, updated: number, failed: number,
 *   errors: Array<{ index: number, email: string | null, code: string, message: string }> }} BulkResult
 */

/** bulkUpsertContacts takes at most this many contacts a request… */
const BULK_LIMIT = 1000;
/** The kind of work of an import. */
const IMPORT_WORK = 'contacts-import';
/** …in a body of at most 4 MiB: a file of many long properties is sent in smaller requests (a little room kept for the wrapper). */
const BULK_BYTES = 4 * 1024 * 1024 - 1024;
/** Rows shown as read, before importing. */
const SAMPLE_ROWS = 5;
/** Failed rows listed in the summary; the rest are counted. */
const SHOWN_FAILURES = 200;

/** Header names, as written or in any case, with spaces or hyphens for `_`, and what they are read as. */
const KNOWN_COLUMNS = /** @type {Record<string, Role>} */ ({
  email: 'email', email_address: 'email', name: 'name', first_name: 'first_name', last_name: 'last_name', tags: 'tags',
});
const ROLE_LABELS = /** @type {Record<Role, string>} */ ({
  email: 'Address', name: 'Name', first_name: 'First name', last_name: 'Last name', tags: 'Tags', property: 'Property', ignored: 'Ignored: no name',
});
/** The separators Papa Parse tells apart, by name. */
const DELIMITERS = /** @type {Record<string, string>} */ ({ ',': 'comma', ';': 'semicolon', '\t': 'tab', '|': 'bar' });
/** @param {string} delimiter */
const delimiterName = (delimiter) => DELIMITERS[delimiter] ?? `“${delimiter}”`;

/** @type {Array<[RegExp, (ctx: Ctx) => void | Promise<void>]>} */
export const CONTACT_IMPORT_ROUTES = [[/^\/contacts\/import$/, showImport]];

/** @type {Promise<Papa> | undefined} */
let papaLoaded;

/** Papa Parse (its browser build, served by the dashboard), fetched with the first import: other views never need it. */
function loadPapa() {
  papaLoaded ??= attach(Object.assign(document.createElement('script'), { src: '/dashboard/vendor/papaparse.js' }),
    'The CSV reader could not be loaded; reload the page to try again.')
    .then(() => /** @type {{ Papa: Papa }} */ (/** @type {unknown} */ (window)).Papa, (err) => {
      papaLoaded = undefined;
      throw err;
    });
  return papaLoaded;
}

/** @param {string} text */
const lineBreaks = (text) => text.match(/\r\n|\r|\n/g)?.length ?? 0;

// ---------------------------------------------------------------------------
// Reading

/** Lines of nothing but spaces and separators, which Papa Parse skips, at the start of a text. @param {string} delimiter */
const blankLinesPattern = (delimiter) => new RegExp(`^(?:[ \\t${delimiter.replace(/[\]\\^-]/g, '\\$&')}]*(?:\\r\\n|\\r|\\n))*`);

/** What a header names. @param {string} header */
function roleOf(header) {
  if (!header.trim()) return 'ignored';
  return KNOWN_COLUMNS[header.trim().toLowerCase().replace(/[\s-]+/g, '_')] ?? 'property';
}

/**
 * The file's rows as the API's bulk items, each with its line; or why it cannot be imported.
 * Empty cells are left out, so an import never clears what a contact has.
 * @param {Papa} papa
 * @param {string} source
 * @returns {Reading | { refusal: string }}
 */
function readContacts(papa, source) {
  const text = source.replace(/^\uFEFF/, '');
  /** @type {Array<{ line: number, cells: string[], errors: StepResult['errors'] }>} */
  const records = [];
  let delimiter = ',';
  let consumed = 0;
  let line = 1;
  /** @type {RegExp | undefined} */
  let blankLines;
  papa.parse(text, { delimiter: '', skipEmptyLines: 'greedy', step: (row) => {
    blankLines ??= blankLinesPattern(row.meta.delimiter);
    // The row starts after the lines skipped before it (blank, or empty cells only, as a spreadsheet leaves them);
    // a quoted cell may hold line breaks of its own.
    const segment = text.slice(consumed, row.meta.cursor);
    records.push({ line: line + lineBreaks(blankLines.exec(segment)?.[0] ?? ''), cells: row.data,
      errors: row.errors.filter((e) => e.type !== 'Delimiter') });
    line += lineBreaks(segment);
    consumed = row.meta.cursor;
    delimiter = row.meta.delimiter;
  } });
  const [head, ...body] = records;
  if (!head) return { refusal: 'The file is empty: there is nothing to import.' };
  const columns = head.cells.map((header) => ({ header: header.trim(), role: roleOf(header) }));
  if (!columns.some((c) => c.role === 'email')) {
    return { refusal: `No column is named “email”. The first line must name the columns, one of them email, for the addresses; this one names ${columns.map((c) => `“${c.header}”`).join(', ')}.` };
  }
  // "Email" and "email address" are one column twice; "Company" and "company" are two properties, as the API has them.
  const keyOf = (/** @type {CsvColumn} */ c) => (c.role === 'property' ? `property ${c.header}` : c.role);
  const twice = columns.find((c, i) => c.role !== 'ignored' && columns.findIndex((o) => keyOf(o) === keyOf(c)) !== i);
  if (twice) {
    const first = columns.find((c) => keyOf(c) === keyOf(twice));
    const named = first?.header === twice.header ? `the column “${twice.header}” twice` : `“${first?.header}” and “${twice.header}”, one column twice`;
    return { refusal: `The first line names ${named}: rename or remove one, so that it is clear which to use.` };
  }
  if (body.length === 0) return { refusal: 'The file has its header line but no contacts under it.' };

  /** @type {CsvRow[]} */
  const rows = [];
  /** @type {Failure[]} */
  const skipped = [];
  for (const record of body) {
    const cell = (/** @type {Role} */ role) => record.cells[columns.findIndex((c) => c.role === role)]?.trim() ?? '';
    if (record.errors.length > 0 || record.cells.length > columns.length) {
      skipped.push({ line: record.line, email: cell('email') || null, message: record.errors[0]?.message
        ?? `${record.cells.length} cells where the header names ${columns.length} columns: a ${delimiterName(delimiter)} inside a value needs the value in quotes.` });
      continue;
    }
    rows.push({ line: record.line, item: bulkItem(columns, record.cells) });
  }
  return { rows, columns, skipped, delimiter, lines: line - (text.endsWith('\n') || text.endsWith('\r') ? 1 : 0) };
}

/** @param {CsvColumn[]} columns @param {string[]} cells @returns {BulkItem} */
function bulkItem(columns, cells) {
  const cell = (/** @type {Role} */ role) => cells[columns.findIndex((c) => c.role === role)]?.trim() ?? '';
  const name = cell('name') || [cell('first_name'), cell('last_name')].filter(Boolean).join(' ');
  const tags = cell('tags').split(/[;|]/).map((t) => t.trim()).filter(Boolean);
  /** @type {Record<string, string>} */
  const properties = {};
  columns.forEach((c, i) => {
    const value = cells[i]?.trim();
    if (c.role === 'property' && value) properties[c.header] = value;
  });
  return {
    email: cell('email'), ...(name && { name }), ...(tags.length > 0 && { tags }),
    ...(Object.keys(properties).length > 0 && { properties }),
  };
}

// ---------------------------------------------------------------------------
// Importing

/**
 * One bulk request, tried again while the rate limit refuses it or the store is briefly unavailable (it is refused
 * whole, so nothing is applied twice).
 * @param {BulkItem[]} items @param {(sentence: string | undefined) => void} onStoreWait
 */
function bulk(items, onStoreWait) {
  return waitingOutRateLimit(async () => {
    /** @type {BulkResult} */
    const answer = await api('POST', '/v1/contacts/bulk', { body: { contacts: items } });
    return answer;
  }, onStoreWait);
}

/**
 * The rows in requests of at most BULK_LIMIT rows and BULK_BYTES of JSON.
 * @param {CsvRow[]} rows
 */
function chunks(rows) {
  const encoder = new TextEncoder();
  /** @type {CsvRow[][]} */
  const out = [];
  let bytes = 0;
  for (const row of rows) {
    const size = encoder.encode(JSON.stringify(row.item)).length + 1;
    const last = out.at(-1);
    if (last && last.length < BULK_LIMIT && bytes + size <= BULK_BYTES) {
      last.push(row);
      bytes += size;
    } else {
      out.push([row]);
      bytes = size;
    }
  }
  return out;
}

/** @typedef {{ created: number, updated: number, failures: Failure[], stopped: { line: number, err: unknown } | undefined }} ImportResult */

/**
 * Sends the rows in chunks, calling `progress` after each; stops at the first request that fails, or once cancelled.
 * @param {CsvRow[]} rows
 * @param {(done: number, held?: string) => void} progress  hears how many are done, and why it waits when it does
 * @param {() => boolean} cancelled  true once the session has ended
 * @returns {Promise<ImportResult>}
 */
async function importRows(rows, progress, cancelled) {
  let created = 0;
  let updated = 0;
  let done = 0;
  /** @type {Failure[]} */
  const failures = [];
  for (const chunk of chunks(rows)) {
    if (cancelled()) break;
    try {
      const answer = await bulk(chunk.map((r) => r.item), (held) => progress(done, held));
      created += answer.created;
      updated += answer.updated;
      for (const e of answer.errors) failures.push({ line: chunk[e.index].line, email: e.email, message: e.message });
    } catch (err) {
      return { created, updated, failures, stopped: { line: chunk[0].line, err } };
    }
    done += chunk.length;
    progress(done);
  }
  return { created, updated, failures, stopped: undefined };
}

// ---------------------------------------------------------------------------
// The page

/**
 * A file's text: UTF-8 when its bytes are; otherwise Windows-1252, what a
 * spreadsheet on Windows writes as "CSV" (every byte is a character in it),
 * named in `encoding` so the page can say how it was read.
 * @param {File} file
 * @returns {Promise<{ text: string, encoding?: string }>}
 */
async function fileText(file) {
  const bytes = await file.arrayBuffer();
  try {
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(bytes) };
  } catch {
    return { text: new TextDecoder('windows-1252').decode(bytes), encoding: 'Windows-1252 (Western European)' };
  }
}

/** @param {Ctx} ctx */
function showImport({ view }) {
  if (!may('contacts:write')) {
    fill(view, h('h1', null, 'Import contacts'), withheldNote('contacts:write', 'importing contacts'),
      h('p', null, h('a', { href: '#/contacts' }, '← All contacts')));
    return;
  }
  const file = h('input', { id: 'import-file', type: 'file', accept: '.csv,text/csv,text/plain' });
  const pasted = h('textarea', { id: 'import-text', rows: 6, spellcheck: 'false', placeholder: 'email,first_name,last_name,tags,company\nann@example.com,Ann,Lee,news;vip,Acme' });
  const readPasted = h('button', { type: 'button', class: 'secondary' }, 'Read the text');
  const readout = h('div');
  /** @param {() => Promise<{ text: string, encoding?: string }>} source */
  const read = async (source) => {
    try {
      const [papa, { text, encoding }] = await Promise.all([loadPapa(), source()]);
      showReading(readout, readContacts(papa, text), encoding);
    } catch (err) {
      fill(readout, errorBox(err));
    }
  };
  file.addEventListener('change', () => {
    const chosen = file.files?.[0];
    if (chosen) void read(() => fileText(chosen));
  });
  readPasted.addEventListener('click', () => void whileBusy(readPasted, () => read(async () => ({ text: pasted.value }))));
  // Fetched now, while the person picks a file.
  loadPapa().catch(() => {});
  fill(view,
    h('h1', null, 'Import contacts'),
    h('p', null, h('a', { href: '#/contacts' }, '← All contacts')),
    h('section', { class: 'panel import-help' },
      h('h2', null, 'The file'),
      h('p', null, 'A CSV file whose first line names the columns. Columns may be separated by commas, semicolons or tabs.'),
      h('ul', null,
        h('li', null, code('email'), ': the address; required.'),
        h('li', null, code('first_name'), ' and ', code('last_name'), ', or ', code('name'), '.'),
        h('li', null, code('tags'), ': tag names separated by ', code(';'), ' or ', code('|'), '; new tags are created.'),
        h('li', null, 'Any other column is a property, read in broadcasts as ', code('{{ contact.properties.<column> }}'),
          ': its name a letter, then letters, digits or ', code('_'), '.')),
      h('p', { class: 'muted small' }, 'An address already in the list is updated: the name and properties in the file are set, and its tags become those of its row when that row gives any. Empty cells change nothing.')),
    h('section', { class: 'panel import-source' },
      h('div', { class: 'form-grid' }, h('label', { for: 'import-file' }, 'CSV file'), file),
      h('details', null, h('summary', null, 'Or paste the text'),
        h('div', { class: 'import-paste' }, h('label', { for: 'import-text', class: 'visually-hidden' }, 'CSV text'), pasted, readPasted))),
    readout);
}

/**
 * What was read, and the button that imports it.
 * @param {HTMLElement} where
 * @param {Reading | { refusal: string }} reading
 * @param {string} [encoding]  named when the file was not UTF-8
 */
function showReading(where, reading, encoding) {
  if ('refusal' in reading) {
    fill(where, h('div', { class: 'error-box' }, h('p', { role: 'alert' }, reading.refusal), h('p', { class: 'muted' }, 'Nothing was sent.')));
    return;
  }
  const { rows, columns, skipped } = reading;
  const summary = h('div');
  const start = h('button', { type: 'button', disabled: rows.length === 0 }, `Import ${count(rows.length, 'contact', 'contacts')}`);
  // The button gives way to the progress: an import is started once.
  const held = h('div');
  const actions = h('div', { class: 'actions import-actions' }, start,
    rows.length > BULK_LIMIT && h('span', { class: 'muted small' }, `Sent ${BULK_LIMIT.toLocaleString()} at a time at most.`), held);
  // One import at a time: a second of the same file would race the first over the same addresses.
  // (With no row to import, the button stays disabled anyway.)
  holdWhileRunning(IMPORT_WORK, rows.length > 0 ? [start] : [], held);
  start.addEventListener('click', () => void whileBusy(start, async () => {
    const work = startWork({ title: `Importing ${count(rows.length, 'contact', 'contacts')}`, kind: IMPORT_WORK, back: { href: '#/contacts', label: 'See the contacts' },
      origin: where, total: rows.length, counted: 'Rows imported' });
    /** @param {number} done @param {string} [held] */
    const progress = (done, held) => {
      fill(actions, progressBar(done, rows.length, 'Rows imported', held));
      work.progress(done, held);
    };
    progress(0);
    const result = await importRows(rows, progress, work.cancelled);
    const sorted = { ...result, failures: [...skipped, ...result.failures].sort((a, b) => a.line - b.line) };
    // Shown here only when still on the page: elsewhere, the notice shows it.
    const ended = { stopped: sorted.stopped !== undefined, failed: sorted.failures.length > 0 };
    if (work.finish(importSummary(sorted), ended)) showSummary(summary, sorted);
  }));
  fill(where,
    h('section', { class: 'panel import-reading' },
      h('h2', null, 'As read'),
      h('p', null, `${count(rows.length + skipped.length, 'row', 'rows')} of contacts under the header, in ${count(reading.lines, 'line', 'lines')}, columns separated by ${DELIMITERS[reading.delimiter] ? `${DELIMITERS[reading.delimiter]}s` : `“${reading.delimiter}”`}.`),
      encoding && h('p', { class: 'muted small' }, `The file is not UTF-8: it was read as ${encoding}. If the names below look wrong, save it from your spreadsheet as “CSV UTF-8” and choose it again.`),
      // Read as the status of a row, so that a phone shows each column on one line.
      h('div', { class: 'import-columns' }, table([
        { header: 'Column', cell: (c) => (c.header ? code(c.header) : h('span', { class: 'muted' }, '(no name)')), role: 'primary' },
        { header: 'Read as', cell: (c) => (c.role === 'property' ? ['Property ', code(c.header)] : ROLE_LABELS[c.role]), role: 'status' },
      ], columns)),
      rows.length > 0 && [h('h3', null, rows.length > SAMPLE_ROWS ? `The first ${SAMPLE_ROWS}` : 'The contacts'),
        table([
          { header: 'Line', cell: (r) => String(r.line), className: 'num line-number' },
          { header: 'Address', cell: (r) => r.item.email || h('span', { class: 'muted' }, '(empty)'), role: 'primary' },
          { header: 'Name', cell: (r) => r.item.name ?? '' },
          { header: 'Tags', cell: (r) => (r.item.tags ?? []).join(', ') },
          { header: 'Properties', cell: (r) => Object.entries(r.item.properties ?? {}).map(([k, v]) => `${k}: ${v}`).join(', ') },
        ], rows.slice(0, SAMPLE_ROWS))],
      skipped.length > 0 && [h('h3', null, `${count(skipped.length, 'row is', 'rows are')} not read whole, and will not be sent`), ...failureTable(skipped)],
      actions),
    summary);
}

/** @param {Failure[]} failures */
function failureTable(failures) {
  return [
    table([
      { header: 'Line', cell: (f) => String(f.line), className: 'num line-number' },
      { header: 'Address', cell: (f) => f.email || h('span', { class: 'muted' }, '(none)'), role: 'primary' },
      { header: 'Reason', cell: (f) => f.message, className: 'prose' },
    ], failures.slice(0, SHOWN_FAILURES)),
    failures.length > SHOWN_FAILURES && h('p', { class: 'muted small' }, `The first ${SHOWN_FAILURES} are listed, of ${failures.length.toLocaleString()}.`),
  ];
}

/** @param {HTMLElement} where @param {ImportResult} result */
function showSummary(where, result) {
  fill(where, h('section', { class: 'panel import-summary', 'aria-live': 'polite' },
    h('h2', null, result.stopped ? 'Import stopped' : 'Import finished'),
    importSummary(result),
    h('p', null, h('a', { href: '#/contacts' }, 'See the contacts →'))));
  where.scrollIntoView({ block: 'nearest' });
}

/**
 * What an import did: why it stopped, if it did (a limit that waiting will not lift said as such), the counts, and
 * each failed row by its line.
 * @param {ImportResult} result
 */
function importSummary({ created, updated, failures, stopped }) {
  /** @param {string} label @param {number} value @param {string} key */
  const stat = (label, value, key) => h('div', { class: 'stat', 'data-stat': key },
    h('span', { class: 'stat-label' }, label), h('span', { class: 'stat-value' }, value.toLocaleString()));
  const limit = stopped && limitReached(stopped.err);
  return h('div', null,
    stopped && [limit ? h('div', { class: 'error-box' }, h('p', { role: 'alert' }, h('strong', null, limit), ' ', /** @type {Error} */ (stopped.err).message))
      : errorBox(stopped.err),
      h('p', null, `The rows from line ${stopped.line} on were not sent. Import the file again to finish${limit ? ' once the limit allows' : ''}: addresses already imported are updated, not added twice.`)],
    h('div', { class: 'stat-cards import-stats' }, stat('Created', created, 'created'), stat('Updated', updated, 'updated'),
      stat('Failed', failures.length, 'failed')),
    failures.length > 0 && [h('h3', null, 'Rows that failed'), ...failureTable(failures)]);
}
