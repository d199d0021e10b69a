import { CaptureTag, Context, Liquid, LiquidError, Token, toValue, toValueSync, type Emitter, type FilterImplOptions, type Template } from 'liquidjs';

// Liquid, set up for sources written by API users and rendered with data from
// API requests, many tenants in one process:
// - it cannot read files: its file system is an empty map, and the tags that
//   load other templates (include, render, layout) do not exist, so using
//   one is a syntax error when the template is saved;
// - a variable reads only the data's own properties (ownPropertyOnly), never
//   a prototype's (`constructor`, `__proto__`);
// - HTML output is escaped unless the last filter is `raw`; subject and text
//   are not HTML and are not escaped;
// - a source is at most MAX_SOURCE_CHARS (parseLimit) with at most
//   MAX_SOURCE_TAGS tags and outputs and MAX_NESTING blocks open within one
//   another, a message renders in
//   RENDER_LIMIT_MS (renderLimit), its filters and ranges allocate at most
//   MEMORY_LIMIT (memoryLimit), and each part it outputs is at most
//   MAX_OUTPUT_CHARS (counted as it is written);
// - the render limit is checked between the template's nodes, so no one node
//   may run long: a range or a filter's result is at most MAX_ONE_ALLOCATION,
//   and a filter takes arrays of at most MAX_FILTERED_ELEMENTS (sorting a
//   million elements would hold the event loop for seconds);
// - a capture is counted as a filter's result is (Liquid's own counts
//   nothing), else capturing a variable twice into itself doubles it at each
//   turn of a loop, to hundreds of millions of characters within one node.
// An undefined variable renders as nothing (strictVariables off); undeclared
// variables are refused when a template is saved instead, by static analysis.

export type Part = 'subject' | 'html' | 'text';
export const PARTS: readonly Part[] = ['subject', 'html', 'text'];

/** Characters of one source (subject, html or text). */
export const MAX_SOURCE_CHARS = 1_000_000;
/**
 * Tags and outputs (`{% %}`, `{{ }}`) of one source: Liquid's parser takes
 * time growing with their square (140,000 took seven seconds, all of them
 * holding the event loop), and a real template has hundreds.
 */
export const MAX_SOURCE_TAGS = 10_000;
/**
 * Blocks (`{% if %}`, `{% for %}` and the like) open within one another:
 * Liquid parses and renders them by recursion, so a few thousand run out of
 * stack, and a real template nests a handful.
 */
export const MAX_NESTING = 100;
/** Time one message (subject, html and text together) may take to render. */
export const RENDER_LIMIT_MS = 100;
/** Characters or elements the filters and ranges of one message may allocate. */
export const MEMORY_LIMIT = 10_000_000;
/** Characters one rendered part may have. */
export const MAX_OUTPUT_CHARS = 5_000_000;
/** Characters or elements one range or one filter's result may allocate. */
export const MAX_ONE_ALLOCATION = 1_000_000;
/** Elements an array given to a filter may have. */
export const MAX_FILTERED_ELEMENTS = 10_000;
/** Filters that read one element of an array whatever its length. */
const ONE_ELEMENT_FILTERS = new Set(['size', 'first', 'last']);

/** Where a source went wrong, 1-based. */
export interface SourceProblem {
  part: Part;
  message: string;
  line?: number;
  column?: number;
}

export interface CompiledSource {
  subject: Template[];
  html: Template[] | null;
  text: Template[] | null;
  /** Each variable the sources read from outside (by its first name), where it is first used. */
  globals: Map<string, { part: Part; line: number; column: number }>;
}

export interface Rendered {
  subject: string;
  html: string | null;
  text: string | null;
}

function engine(escapeHtml: boolean): Liquid {
  const liquid = new Liquid({
    templates: {},
    ownPropertyOnly: true,
    strictFilters: true,
    strictVariables: false,
    ...(escapeHtml && { outputEscape: 'escape' as const }),
    // The `date` filter writes UTC whatever the host's zone.
    timezoneOffset: 0,
    cache: false,
    parseLimit: MAX_SOURCE_CHARS,
    renderLimit: RENDER_LIMIT_MS,
    memoryLimit: MEMORY_LIMIT,
  });
  for (const tag of ['include', 'render', 'layout']) delete liquid.tags[tag];
  liquid.registerTag('capture', BoundedCapture);
  for (const [name, filter] of Object.entries(liquid.filters)) {
    if (!ONE_ELEMENT_FILTERS.has(name)) liquid.registerFilter(name, takingBoundedArrays(name, filter));
  }
  return liquid;
}

/** `filter`, refusing an array of more than MAX_FILTERED_ELEMENTS as its input or an argument. */
function takingBoundedArrays(name: string, filter: FilterImplOptions): FilterImplOptions {
  const handler = typeof filter === 'function' ? filter : filter.handler;
  const bounded: typeof handler = function (value, ...args) {
    for (const v of [value, ...args]) {
      if (Array.isArray(v) && v.length > MAX_FILTERED_ELEMENTS) {
        throw new Error(`${name} was given ${v.length.toLocaleString('en-US')} elements; a filter takes at most ${MAX_FILTERED_ELEMENTS.toLocaleString('en-US')}`);
      }
    }
    return handler.call(this, value, ...args);
  };
  return typeof filter === 'function' ? bounded : { ...filter, handler: bounded };
}

/**
 * Liquid's allocation count for one message (its own Limiter's rule), which
 * also refuses a single allocation over MAX_ONE_ALLOCATION.
 */
class AllocationBudget {
  private used = 0;

  use(count: number): void {
    if (!(+count > 0)) return;
    if (+count > MAX_ONE_ALLOCATION) {
      throw new Error(`a range or a filter's result of ${(+count).toLocaleString('en-US')} elements or characters; at most ${MAX_ONE_ALLOCATION.toLocaleString('en-US')} (memory alloc limit exceeded)`);
    }
    if (this.used + +count > MEMORY_LIMIT) throw new Error('memory alloc limit exceeded');
    this.used += +count;
  }

  check(count: number): void {
    if (+count > MEMORY_LIMIT) throw new Error('memory alloc limit exceeded');
  }
}

/**
 * The line and column (1-based) of `index` in `source`. The line starts of
 * the source last asked about are indexed once (every token of a source
 * shares its string), and a line is found by binary search.
 */
let indexedSource: string | undefined;
let lineStarts: number[] = [];
function positionIn(source: string, index: number): [line: number, column: number] {
  if (source !== indexedSource) {
    indexedSource = source;
    lineStarts = [0];
    for (let i = source.indexOf('\n'); i >= 0; i = source.indexOf('\n', i + 1)) lineStarts.push(i + 1);
  }
  let low = 0;
  let high = lineStarts.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if (lineStarts[mid] <= index) low = mid;
    else high = mid - 1;
  }
  return [low + 1, index - lineStarts[low] + 1];
}

/**
 * Liquid finds a token's line and column by counting characters from the
 * start of its source, and the static analysis asks it for every variable:
 * a source of n tags took n² steps (140,000 `{{ x }}` held the event loop
 * for minutes). Here it is found as above.
 */
Token.prototype.getPosition = function getPosition(this: Token): number[] {
  return positionIn(this.input, this.begin);
};

/** `capture`, writing into a bounded output, its result counted in the message's allocations. */
class BoundedCapture extends CaptureTag {
  override *render(ctx: Context): Generator<unknown, void, string> {
    const out = new BoundedOutput(MAX_ONE_ALLOCATION, 'a capture');
    yield this.liquid.renderer.renderTemplates(this.templates, ctx, out);
    ctx.memoryLimit.use(out.buffer.length);
    ctx.bottom()[this.variable] = out.buffer;
  }
}

const htmlEngine = engine(true);
const plainEngine = engine(false);
const engineFor = (part: Part) => (part === 'html' ? htmlEngine : plainEngine);

/** Liquid's message without the ", line:1, col:7" it appends (the caller says where, its own way). */
function describe(err: unknown): { message: string; line?: number; column?: number } {
  if (!(err instanceof LiquidError)) return { message: err instanceof Error ? err.message : String(err) };
  const [line, column] = err.token?.getPosition() ?? [];
  const message = err.message.replace(/, line:\d+, col:\d+$/, '');
  return { message, ...(line !== undefined && { line, column }) };
}

/** Liquid's tags that open a block closed by `end<name>`, whose content is parsed as Liquid. */
const BLOCK_TAGS = new Set(['if', 'unless', 'for', 'case', 'capture', 'tablerow']);
/** Blocks whose content is not parsed: what is inside them opens nothing. */
const OPAQUE_TAGS = new Set(['raw', 'comment']);

/** Where `text` first opens a block deeper than MAX_NESTING, 1-based, if it does. */
function nestedTooDeep(text: string): { line: number; column: number } | undefined {
  const tag = /\{%-?\s*(\w+)/g;
  let depth = 0;
  for (let found = tag.exec(text); found; found = tag.exec(text)) {
    const name = found[1];
    if (OPAQUE_TAGS.has(name)) {
      const end = new RegExp(`\\{%-?\\s*end${name}\\b`, 'g');
      end.lastIndex = tag.lastIndex;
      if (!end.exec(text)) return undefined;
      tag.lastIndex = end.lastIndex;
    } else if (BLOCK_TAGS.has(name)) {
      if (++depth > MAX_NESTING) {
        const [line, column] = positionIn(text, found.index);
        return { line, column };
      }
    } else if (name.startsWith('end') && BLOCK_TAGS.has(name.slice(3))) {
      depth = Math.max(0, depth - 1);
    }
  }
  return undefined;
}

const NESTING_MESSAGE = `blocks ({% if %}, {% for %} and the like) nested more than ${MAX_NESTING} deep; a source nests them at most ${MAX_NESTING} deep`;

/** Parses each given source; every problem found, or the compiled parts and the variables they read. */
export function compileSource(source: { subject: string; html: string | null; text: string | null }):
  { ok: true; compiled: CompiledSource } | { ok: false; problems: SourceProblem[] } {
  const problems: SourceProblem[] = [];
  const parsed: Partial<Record<Part, Template[] | null>> = {};
  for (const part of PARTS) {
    const text = source[part];
    if (text === null) {
      parsed[part] = null;
      continue;
    }
    const tags = text.match(/\{[{%]/g)?.length ?? 0;
    if (tags > MAX_SOURCE_TAGS) {
      problems.push({ part, message: `${tags.toLocaleString('en-US')} tags and outputs ({% %} and {{ }}); a source has at most ${MAX_SOURCE_TAGS.toLocaleString('en-US')}` });
      continue;
    }
    const deep = nestedTooDeep(text);
    if (deep) {
      problems.push({ part, message: NESTING_MESSAGE, ...deep });
      continue;
    }
    try {
      parsed[part] = engineFor(part).parse(text);
    } catch (err) {
      // Nesting the count above does not see (inside a {% liquid %} tag) still ends as it does.
      const described = describe(err);
      problems.push({ part, ...described, ...(/Maximum call stack size exceeded/.test(described.message) && { message: NESTING_MESSAGE }) });
    }
  }
  if (problems.length > 0) return { ok: false, problems };
  const globals: CompiledSource['globals'] = new Map();
  for (const part of PARTS) {
    const templates = parsed[part];
    if (!templates) continue;
    const found = engineFor(part).analyzeSync(templates, { partials: false }).globals;
    for (const [name, uses] of Object.entries(found)) {
      const first = uses[0]?.location;
      if (!globals.has(name) && first) globals.set(name, { part, line: first.row, column: first.col });
    }
  }
  return { ok: true, compiled: { subject: parsed.subject!, html: parsed.html!, text: parsed.text!, globals } };
}

/** A render that could not finish: the part, where in it, and whether its time ran out (rather than its data being at fault). */
export class RenderFailure extends Error {
  constructor(readonly part: Part, message: string, readonly overTime: boolean, readonly line?: number, readonly column?: number) {
    super(message);
  }
}

/** Liquid's own rule for writing a value out (its emitter's), with the output counted. */
function asText(value: unknown): string {
  const v = toValue(value) as unknown;
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '';
  if (Array.isArray(v)) return v.map(asText).join('');
  return String(v);
}

class BoundedOutput implements Emitter {
  buffer = '';
  constructor(private readonly maxChars = MAX_OUTPUT_CHARS, private readonly what = 'output') {}
  write(value: unknown): void {
    const text = asText(value);
    if (this.buffer.length + text.length > this.maxChars) {
      throw new Error(`${this.what} over ${this.maxChars.toLocaleString('en-US')} characters`);
    }
    this.buffer += text;
  }
}

/**
 * Renders the compiled parts with `data`, synchronously: a message is a few
 * milliseconds at most, and within RENDER_LIMIT_MS by construction. `untilMs`
 * (performance.now() time) ends the render sooner, for a request that renders
 * many messages.
 */
export function renderSource(compiled: CompiledSource, data: Record<string, unknown>, untilMs?: number): Rendered {
  const start = performance.now();
  const budget = Math.max(0, Math.min(RENDER_LIMIT_MS, (untilMs ?? Number.POSITIVE_INFINITY) - start));
  // One budget of time and allocation for the whole message. (Liquid's
  // Limiter type has private fields: a class of our own needs the cast.)
  let limits: Pick<Context, 'renderLimit' | 'memoryLimit'> | undefined;
  const memoryLimit = new AllocationBudget() as unknown as Context['memoryLimit'];
  const render = (part: Part, templates: Template[]): string => {
    const liquid = engineFor(part);
    const ctx = new Context(data, liquid.options, { sync: true, renderLimit: budget }, { liquid, memoryLimit, ...limits });
    limits ??= { renderLimit: ctx.renderLimit, memoryLimit };
    const out = new BoundedOutput();
    try {
      toValueSync(liquid.renderer.renderTemplates(templates, ctx, out));
    } catch (err) {
      const d = describe(err);
      const overTime = /render limit exceeded/.test(d.message);
      const message = !overTime ? d.message
        : budget < RENDER_LIMIT_MS ? 'the render time of the request is used up (render limit exceeded)'
          : `rendering took longer than ${RENDER_LIMIT_MS} ms (render limit exceeded)`;
      throw new RenderFailure(part, message, overTime, d.line, d.column);
    }
    return out.buffer;
  };
  return {
    subject: render('subject', compiled.subject),
    html: compiled.html && render('html', compiled.html),
    text: compiled.text && render('text', compiled.text),
  };
}

/**
 * Compiled versions, least recently used out first, bounded by count and by
 * the characters of their sources (a parsed template takes some multiple of
 * its source in memory). Versions never change, so an entry never goes stale.
 */
export class CompiledCache<T> {
  private readonly entries = new Map<string, { value: T; weight: number }>();
  private weight = 0;

  constructor(private readonly maxEntries: number, private readonly maxWeight: number) {}

  get(key: string): T | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    this.entries.delete(key);
    this.entries.set(key, hit);
    return hit.value;
  }

  set(key: string, value: T, weight: number): void {
    this.delete(key);
    this.entries.set(key, { value, weight });
    this.weight += weight;
    while (this.entries.size > this.maxEntries || (this.weight > this.maxWeight && this.entries.size > 1)) {
      this.delete(this.entries.keys().next().value!);
    }
  }

  delete(key: string): void {
    const hit = this.entries.get(key);
    if (!hit) return;
    this.entries.delete(key);
    this.weight -= hit.weight;
  }

  get size(): number {
    return this.entries.size;
  }
}
