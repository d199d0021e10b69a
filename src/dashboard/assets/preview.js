// @ts-check
// Email HTML is only ever shown in a sandboxed frame.
import { h } from './ui.js';

/** How wide a desktop mail client lays a message out: room for a 600-pixel newsletter and the frame's margins. */
const DESKTOP_MESSAGE_WIDTH_PX = 640;

/**
 * What a message may load in its preview: nothing but the images and styles
 * it carries in itself. The page's own policy lets this origin's images and
 * stylesheets load, and a message may hold this server's own open pixel or
 * tracked links (a reply quoting a tracked email, a message built for the
 * sink): fetched from a preview, they would count the operator's look as the
 * recipient's open. They are stopped here, in the page, because the tracking
 * endpoints cannot tell them apart: the sandboxed frame's origin is opaque,
 * so they come with Origin: null and Sec-Fetch-Site: cross-site, as from a
 * webmail that shows mail in a sandboxed frame (and over plain http to a
 * host other than localhost, with no Sec-Fetch header at all). A policy is
 * only ever added to, never loosened, by what follows it in the message.
 */
const PREVIEW_POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'";
const PREVIEW_POLICY_META = `<meta http-equiv="Content-Security-Policy" content="${PREVIEW_POLICY}">`;
/** A leading doctype, after any white space and comments: the policy goes after it, so the message keeps its rendering mode. */
const LEADING_DOCTYPE = /^\uFEFF?(?:\s|<!--[\s\S]*?-->)*<!doctype[^>]*>/i;

/**
 * `html` with the preview's policy first, so that it holds for everything the message holds.
 * @param {string} html
 */
export function withPreviewPolicy(html) {
  const doctype = LEADING_DOCTYPE.exec(html)?.[0] ?? '';
  return doctype + PREVIEW_POLICY_META + html.slice(doctype.length);
}

/**
 * HTML in a frame with every sandbox restriction: no scripts, no same-origin
 * access, no forms, no navigating this page. The frame inherits the page's
 * Content-Security-Policy and adds PREVIEW_POLICY, so nothing is fetched
 * (and a preview never counts as an open or a click).
 *
 * The message is laid out at least as wide as a desktop mail client would, and scaled down to a narrower box (a
 * template editor's column, a phone), as a phone's mail app shrinks a wide message: its whole width is seen at once,
 * rather than its right edge cut off where nothing says it is.
 * @param {string} html
 * @param {{ layoutWidth?: number }} [options]  the narrowest width to lay the message out at: a phone's, to see it as a
 *   phone shows it
 */
export function previewFrame(html, { layoutWidth = DESKTOP_MESSAGE_WIDTH_PX } = {}) {
  const frame = h('iframe', { title: 'HTML preview', sandbox: '', srcdoc: withPreviewPolicy(html) });
  const box = h('div', { class: 'preview' }, frame);
  new ResizeObserver(([entry]) => {
    const { width, height } = entry.contentRect;
    if (width === 0) return;
    const scale = Math.min(1, width / layoutWidth);
    frame.style.width = `${width / scale}px`;
    frame.style.height = `${height / scale}px`;
    frame.style.transform = scale < 1 ? `scale(${scale})` : '';
  }).observe(box);
  return box;
}

/**
 * Text that scrolls in its box (a message's text part, its source): a keyboard scrolls it once it has the focus, so
 * it takes the focus, as a region named by `label`.
 * @param {string} text @param {string} label @param {string} [className]
 */
export function scrolledText(text, label, className = 'body-text') {
  return h('pre', { class: className, tabindex: 0, role: 'region', 'aria-label': label }, text);
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
    text === null ? h('p', { class: 'muted' }, 'No text part.') : scrolledText(text, 'Text part'),
  ];
}
