import { analyzeSync, Output, Tag, toValueSync, Value, type Arguments, type Template } from 'liquidjs';
import { PARTS, type CompiledSource } from './template-engine.js';

// A template declares the variables its sources use, each with a type, whether
// a send must give it, and a fallback for when it does not. Declarations are
// checked when a version is saved; values against them when one is rendered.

export const VARIABLE_TYPES = ['string', 'number', 'boolean', 'object', 'list'] as const;
export type VariableType = (typeof VARIABLE_TYPES)[number];

export interface VariableDeclaration {
  key: string;
  type: VariableType;
  required: boolean;
  /** Used when a send leaves the variable out; null for none. */
  fallback: unknown;
}

export interface DeclarationInput {
  key: string;
  type: VariableType;
  required?: boolean;
  fallback?: unknown;
}

/** One thing wrong, named by the request field (and the place in a source, when it is one). */
export interface Problem {
  param: string;
  message: string;
  line?: number;
  column?: number;
  /** The variable used but not declared, for a client to offer declaring it. */
  variable?: string;
}

/**
 * Filled in by Mailroom for each recipient, never declared: `contact` from the
 * recipient's contact, `unsubscribe_url` with the recipient's unsubscribe link.
 */
export const PROVIDED_VARIABLES = new Set(['contact', 'unsubscribe_url']);
// Liquid reads these names as literals or loop state, never as data.
const LIQUID_NAMES = new Set(['empty', 'blank', 'nil', 'null', 'true', 'false', 'forloop', 'tablerowloop']);
const KEY = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
export const MAX_VARIABLES = 100;
/**
 * Lists and objects a fallback or a value given for a variable may nest. A
 * fallback is stored and shown as JSON, and a render writes values out (the
 * `json` filter, an object printed): both recurse, and run out of stack far
 * below the depth a request body can hold.
 */
export const MAX_VALUE_DEPTH = 32;

const typeOf = (value: unknown): VariableType | 'null' =>
  value === null ? 'null'
    : Array.isArray(value) ? 'list'
      : typeof value === 'object' ? 'object'
        : typeof value === 'number' ? 'number'
          : typeof value === 'boolean' ? 'boolean'
            : 'string';

const fits = (type: VariableType, value: unknown) => typeOf(value) === type && (type !== 'number' || Number.isFinite(value));

/** Checks and completes declarations; problems name `variables.<i>.<field>`. */
export function checkDeclarations(input: DeclarationInput[]): { declarations: VariableDeclaration[]; problems: Problem[] } {
  const problems: Problem[] = [];
  const seen = new Set<string>();
  const declarations = input.map((d, i): VariableDeclaration => {
    const param = `variables.${i}`;
    if (!KEY.test(d.key)) {
      problems.push({ param: `${param}.key`, message: `'${d.key}' is not a variable name: a letter or _, then letters, digits or _, 64 at most.` });
    } else if (PROVIDED_VARIABLES.has(d.key)) {
      problems.push({ param: `${param}.key`, message: `'${d.key}' is filled in by Mailroom for each recipient and is not declared.` });
    } else if (LIQUID_NAMES.has(d.key)) {
      problems.push({ param: `${param}.key`, message: `'${d.key}' is a Liquid word and cannot name a variable.` });
    } else if (seen.has(d.key)) {
      problems.push({ param: `${param}.key`, message: `'${d.key}' is declared twice.` });
    }
    seen.add(d.key);
    const fallback = d.fallback ?? null;
    if (fallback !== null && !fits(d.type, fallback)) {
      problems.push({ param: `${param}.fallback`, message: `The fallback of '${d.key}' must be a ${d.type}, like the variable.` });
    } else if (nestsDeeperThan(fallback, MAX_VALUE_DEPTH)) {
      problems.push({ param: `${param}.fallback`, message: `The fallback of '${d.key}' nests lists and objects more than ${MAX_VALUE_DEPTH} deep.` });
    }
    return { key: d.key, type: d.type, required: d.required ?? false, fallback };
  });
  return { declarations, problems };
}

const isContainer = (v: unknown): v is object => v !== null && typeof v === 'object';

/**
 * Whether `value` nests more than `limit` lists and objects (one of them is
 * 1 deep, a list in it 2), walked one level at a time rather than by recursion.
 */
function nestsDeeperThan(value: unknown, limit: number): boolean {
  let level = [value].filter(isContainer);
  for (let depth = 1; level.length > 0; depth++) {
    if (depth > limit) return true;
    level = level.flatMap((v) => Object.values(v).filter(isContainer));
  }
  return false;
}

const tooDeep = (name: string) => `'${name}' nests lists and objects more than ${MAX_VALUE_DEPTH} deep.`;

/** Variables the sources read that are neither declared nor provided, each where it is first used. */
export function undeclaredUses(compiled: CompiledSource, declarations: VariableDeclaration[]): Problem[] {
  const declared = new Set(declarations.map((d) => d.key));
  return [...compiled.globals].filter(([name]) => !declared.has(name) && !PROVIDED_VARIABLES.has(name))
    .map(([name, at]) => ({
      param: at.part, line: at.line, column: at.column, variable: name,
      message: `${at.part}, line ${at.line}, column ${at.column}: '${name}' is used but not declared in variables.`,
    }));
}

/** First and last name split from a contact's name, as Listmonk does: its first word and its last. */
export function namesOf(name: string): { first_name: string; last_name: string } {
  const words = name.split(/\s+/).filter(Boolean);
  return { first_name: words[0] ?? '', last_name: words.length > 1 ? words.at(-1)! : '' };
}

/** A sample `contact` given a name gets its first and last name as a real recipient does, unless the sample gives them. */
const sampleContact = (c: Record<string, unknown>) => (typeof c.name === 'string' ? { ...namesOf(c.name), ...c } : c);

/**
 * The data a render gets from the values given: each declared variable
 * checked against its type and its depth (MAX_VALUE_DEPTH), its fallback for one left out (null counts as
 * left out). Values of undeclared names are not passed on: no source can use
 * them. `contact` and `unsubscribe_url` pass only when `samples` allows
 * (previews); on a send Mailroom fills them.
 */
export function bindValues(declarations: VariableDeclaration[], values: Record<string, unknown>, param: string,
  samples: boolean): { data: Record<string, unknown>; problems: Problem[] } {
  const problems: Problem[] = [];
  const data: Record<string, unknown> = {};
  for (const d of declarations) {
    const value = Object.hasOwn(values, d.key) ? values[d.key] : undefined;
    const at = `${param}.${d.key}`;
    if (value === undefined || value === null) {
      if (d.fallback !== null) data[d.key] = d.fallback;
      else if (d.required) problems.push({ param: at, message: `'${d.key}' is required by the template.` });
    } else if (!fits(d.type, value)) {
      problems.push({ param: at, message: `'${d.key}' must be a ${d.type}, not a ${typeOf(value)}.` });
    } else if (nestsDeeperThan(value, MAX_VALUE_DEPTH)) {
      problems.push({ param: at, message: tooDeep(d.key) });
    } else {
      data[d.key] = value;
    }
  }
  for (const name of PROVIDED_VARIABLES) {
    if (!Object.hasOwn(values, name)) continue;
    if (!samples) {
      problems.push({ param: `${param}.${name}`, message: `'${name}' is filled in by Mailroom for each recipient and cannot be given.` });
    } else {
      const expected = name === 'contact' ? 'object' : 'string';
      if (typeOf(values[name]) !== expected) problems.push({ param: `${param}.${name}`, message: `'${name}' must be a ${expected}.` });
      else if (nestsDeeperThan(values[name], MAX_VALUE_DEPTH)) problems.push({ param: `${param}.${name}`, message: tooDeep(name) });
      else data[name] = name === 'contact' ? sampleContact(values[name] as Record<string, unknown>) : values[name];
    }
  }
  return { data, problems };
}

/** `{{ … }}` and `{% echo … %}`: what writes a value out. */
const writesValue = (node: Template): boolean => node instanceof Output || (node instanceof Tag && node.name === 'echo');
const TESTING_TAGS = new Set(['if', 'unless', 'case']);
/** Blocks written only as what their tag tests allows: a field tested there is the author's to handle. */
const testsFields = (node: Template): boolean => node instanceof Tag && TESTING_TAGS.has(node.name);

/** The `contact` fields `args` read, as dotted paths (`contact.first_name`), each cut where a part is named by a variable. */
function contactPathsIn(node: Template, args: Arguments): string[] {
  const { variables } = analyzeSync([{ token: node.token, render: () => undefined, arguments: () => args }], { partials: false });
  return (variables.contact ?? []).map((v) => {
    const fixed = [];
    for (const segment of v.segments) {
      if (typeof segment !== 'string' && typeof segment !== 'number') break;
      fixed.push(segment);
    }
    return fixed.join('.');
  }).filter((path) => path !== 'contact');
}

/**
 * The contact fields the sources write out with no fallback, as dotted paths
 * (`contact.first_name`, `contact.properties.company`), each once, in the
 * order they are first written (subject, html, text): for a contact without
 * one, what it writes is nothing. An output with a `default` filter has its
 * fallback, and one inside an `if`, `unless` or `case` that tests the field
 * is left to that test.
 */
export function contactFieldsWritten(compiled: CompiledSource): string[] {
  const written = new Set<string>();
  const visit = (nodes: Template[], tested: ReadonlySet<string>) => {
    for (const node of nodes) {
      if (writesValue(node)) {
        const args = [...node.arguments?.() ?? []];
        const hasFallback = args.some((a) => a instanceof Value && a.filters.some((f) => f.name === 'default'));
        if (!hasFallback) for (const path of contactPathsIn(node, args)) if (!tested.has(path)) written.add(path);
      }
      if (node.children) {
        const inner = testsFields(node) ? new Set([...tested, ...contactPathsIn(node, node.arguments?.() ?? [])]) : tested;
        visit(toValueSync(node.children(false, true)) as Template[], inner);
      }
    }
  };
  for (const part of PARTS) {
    const templates = compiled[part];
    if (templates) visit(templates, new Set());
  }
  return [...written];
}

/**
 * Which of `fields` (dotted paths, as contactFieldsWritten gives them) `data`
 * (a render's data) has missing, null or only white space: each is written as
 * nothing, or as good as nothing.
 */
export function emptyFields(fields: string[], data: Record<string, unknown>): string[] {
  return fields.filter((path) => {
    let value: unknown = data;
    for (const key of path.split('.')) {
      // A part read of a string or a number (a name's `size`) is Liquid's own, never empty.
      if (value === null || typeof value !== 'object') return false;
      value = Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
      if (value === undefined || value === null) return true;
    }
    return typeof value === 'string' && value.trim() === '';
  });
}
