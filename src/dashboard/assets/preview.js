// @ts-check
// Email HTML is only ever shown in a sandboxed frame.
import { h } from './ui.js';

/**
 * HTML in a frame with every sandbox restriction: no scripts, no same-origin
 * access, no forms, no navigating this page. The frame inherits the page's
 * Content-Security-Policy, so remote resources are not fetched (and a
 * preview never counts as an open).
 * @param {string} html
 */
export function previewFrame(html) {
  return h('div', { class: 'preview' }, h('iframe', { title: 'HTML preview', sandbox: '', srcdoc: html }));
}

/**
 * An email's HTML part, previewed, and its text part.
 * @param {string | null} html
 * @param {string | null} text
 */
export function bodyParts(html, text) {
  const preview = html === null ? [h('p', { class: 'muted' }, 'No HTML part.')] : [
    h('p', { class: 'muted small' }, 'Remote images are not loaded.'), previewFrame(html)];
  return [
    h('h2', null, 'HTML'),
    ...preview,
    h('h2', null, 'Text'),
    text === null ? h('p', { class: 'muted' }, 'No text part.') : h('pre', { class: 'body-text' }, text),
  ];
}
