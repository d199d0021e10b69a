import { compile, type HtmlToTextOptions } from 'html-to-text';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { ThreadPool } from '../core/thread-pool.js';

// The text part of a message that has only HTML, derived by html-to-text.
// Links as "text [url]" (html-to-text's default, the href left out when it is
// the text), images and hidden elements (a preheader) left out, the cells of
// layout tables one to a line, lines wrapped at 78 (RFC 5322 §2.1.1).
//
// It costs far more than rendering the HTML (about 0.7 ms for a 20 KB
// newsletter against 45 µs for its Liquid), so a long one runs on a thread:
// a broadcast's chunk or a burst of sends by template would otherwise hold
// the event loop for hundreds of milliseconds, and leave the other cores idle.

const ONE_LINE = { leadingLineBreaks: 1, trailingLineBreaks: 1 };
const OPTIONS: HtmlToTextOptions = {
  wordwrap: 78,
  selectors: [
    { selector: 'a', options: { hideLinkHrefIfSameAsText: true } },
    { selector: 'img', format: 'skip' },
    { selector: '[style*="display:none"]', format: 'skip' },
    { selector: '[style*="display: none"]', format: 'skip' },
    ...['table', 'tr', 'td', 'th'].map((selector) => ({ selector, format: 'block', options: ONE_LINE })),
  ],
};

/** The text part derived on this thread: what a thread runs too. */
export const htmlToPlainTextHere: (html: string) => string = compile(OPTIONS);

/** Below this many characters converting here (about 200 µs at 4 KB) costs less than the hop to a thread and back. */
const THREAD_FROM_CHARS = 4096;

// Threads start on first use and do not keep the process alive when idle.
const threads = new ThreadPool('Deriving the text part', {
  source: 'const convert = require(workerData.module).compile(workerData.options);\nfunction handle(html) { return convert(html); }',
  workerData: { module: createRequire(import.meta.url).resolve('html-to-text'), options: OPTIONS },
}, availableParallelism());

/** The text part of a message that has only HTML. */
export function htmlToPlainText(html: string): Promise<string> {
  if (html.length < THREAD_FROM_CHARS) return Promise.resolve(htmlToPlainTextHere(html));
  // A thread that could not start or died (out of memory, say) leaves the work to this one.
  return threads.run<string>(() => html).catch(() => htmlToPlainTextHere(html));
}
