// @ts-check
// The dashboard's source editor, CodeMirror 6, bundled by
// scripts/build-dashboard-editor.mjs into one file the page loads
// (src/dashboard/assets/editor-bundle.js) with the types in editor-bundle.d.ts.
import { indentWithTab } from '@codemirror/commands';
import { html } from '@codemirror/lang-html';
import { Compartment, EditorState } from '@codemirror/state';
import { EditorView, keymap, placeholder as placeholderText } from '@codemirror/view';
import { basicSetup } from 'codemirror';

/** Line height in em, as app.css sets it for code. */
const LINE_EM = 1.45;

/**
 * An editor in `parent`. Tab indents; Escape then Tab moves focus on, as
 * CodeMirror does with indentWithTab, so the keyboard is never trapped.
 * @param {HTMLElement} parent
 * @param {{ value?: string, onChange?: () => void, language?: 'html' | 'text', placeholder?: string,
 *   rows?: number, labelledBy?: string, describedBy?: string }} options
 */
export function createEditor(parent, { value = '', onChange, language = 'text', placeholder, rows = 6, labelledBy, describedBy } = {}) {
  const extensions = [
    basicSetup,
    keymap.of([indentWithTab]),
    EditorView.lineWrapping,
    language === 'html' ? html() : [],
    placeholder ? placeholderText(placeholder) : [],
    EditorView.contentAttributes.of({ spellcheck: 'false', ...(labelledBy && { 'aria-labelledby': labelledBy }),
      ...(describedBy && { 'aria-describedby': describedBy }) }),
    EditorView.theme({ '.cm-content, .cm-gutter': { minHeight: `${rows * LINE_EM}em` } }),
    EditorView.updateListener.of((update) => {
      if (update.docChanged) onChange?.();
    }),
  ];
  // Whether the text may be changed, kept across setValue, which starts a new state.
  let readOnly = false;
  const editability = new Compartment();
  const access = () => [EditorState.readOnly.of(readOnly), EditorView.editable.of(!readOnly)];
  const state = (/** @type {string} */ doc) => EditorState.create({ doc, extensions: [extensions, editability.of(access())] });
  const view = new EditorView({ parent, state: state(value) });
  return {
    getValue: () => view.state.doc.toString(),
    /** Replaces the text and its undo history, as loading other content does; no change is reported. @param {string} text */
    setValue: (text) => view.setState(state(text)),
    focus: () => view.focus(),
    isReadOnly: () => readOnly,
    /** Fixes the text (it still reads, selects and copies) or frees it again. @param {boolean} fixed */
    setReadOnly: (fixed) => {
      readOnly = fixed;
      view.dispatch({ effects: editability.reconfigure(access()) });
    },
  };
}
