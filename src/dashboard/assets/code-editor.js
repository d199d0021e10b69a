// @ts-check
// A labelled source editor for HTML or text: CodeMirror, from the bundle
// built out of src/dashboard/editor/entry.js. The bundle is large, so it is
// loaded the first time a view asks for an editor, not with the page.
import { h } from './ui.js';

/** @typedef {HTMLDivElement & { value: string, disabled: boolean }} CodeField */

/**
 * A field that reads and writes its text through `value`, as a textarea does,
 * and reports each edit as an `input` event that bubbles to its form.
 * Setting `value` reports nothing and starts a new undo history; setting
 * `disabled` fixes the text, greyed, as a disabled textarea.
 * @param {{ id: string, label: string, language: 'html' | 'text', value?: string, rows?: number, placeholder?: string }} spec
 * @returns {Promise<CodeField>}
 */
export async function codeEditor({ id, label, language, value = '', rows, placeholder }) {
  const { createEditor } = await import('./editor-bundle.js');
  const labelId = `${id}-label`;
  const hintId = `${id}-hint`;
  const host = h('div', { id, class: 'code-editor' });
  // The editable area's own input events are kept in: onChange reports every edit (undo, paste, drop) once.
  host.addEventListener('input', (event) => event.stopPropagation());
  const field = /** @type {CodeField} */ (h('div', { class: 'code-field' },
    h('label', { id: labelId, onclick: () => editor.focus() }, label),
    host,
    h('p', { id: hintId, class: 'muted small editor-keys' }, 'Tab indents; press Esc, then Tab, to move to the next field.')));
  const editor = createEditor(host, {
    value, language, rows, placeholder, labelledBy: labelId, describedBy: hintId,
    onChange: () => field.dispatchEvent(new Event('input', { bubbles: true })),
  });
  Object.defineProperty(field, 'value', { get: editor.getValue, set: editor.setValue });
  Object.defineProperty(field, 'disabled', {
    get: editor.isReadOnly,
    set: (/** @type {boolean} */ fixed) => {
      editor.setReadOnly(fixed);
      field.classList.toggle('disabled', fixed);
    },
  });
  return field;
}
