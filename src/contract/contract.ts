import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { Ajv2020, type ValidateFunction, type ErrorObject } from 'ajv/dist/2020.js';
import type { DataValidationCxt } from 'ajv/dist/types/index.js';
import addFormatsModule from 'ajv-formats';
import { AppError } from '../core/errors.js';

// The OpenAPI document in schema/ is the single source of truth: request
// validators are compiled from it at boot, tests validate responses against
// it, and it is served at /v1/openapi.json. schema/openapi.yaml holds the
// shared parts; schema/paths/*.yaml hold one API area each and are merged in.

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;

export const SCHEMA_DIR = fileURLToPath(new URL('../../schema/', import.meta.url));
const COMPONENTS_ID = 'mailroom:components';
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

type Json = Record<string, any>;

export interface CompiledOperation {
  id: string;
  method: string;
  path: string;
  body?: ValidateFunction;
  query: ValidateFunction;
  params: ValidateFunction;
  /** Query parameters declared as arrays: accept repeats and comma lists. */
  arrayParams: Set<string>;
  /** Query and path parameters declared as integers: plain decimal digits only. */
  integerParams: Set<string>;
  paged: boolean;
  /** 422 where the operation lists it, else 400 (the spec's per-operation statuses). */
  validationStatus: 400 | 422;
  /** The path names a record to find (the operation lists 404), rather than one it may create. */
  pathFindsRecord: boolean;
  /** The request headers the operation reads besides Idempotency-Key (Mailroom-Batch-Validation): they change what it does. */
  headerParams: HeaderParam[];
}

export interface HeaderParam {
  name: string;
  /** What an absent or blank header means. */
  default?: string;
  /** The values it takes, when the schema lists them; matched without regard to case. */
  values?: string[];
}

export interface Contract {
  document: Json;
  operation(id: string): CompiledOperation | undefined;
  operations(): CompiledOperation[];
  /**
   * The methods a request path (under /v1, without it) takes, HEAD with GET,
   * or undefined for a path the document does not have.
   */
  methodsAt(path: string): string[] | undefined;
  /** Validates a response body against the operation's schema for that status (used by tests). */
  checkResponse(id: string, status: number, body: unknown): string | undefined;
  /** Checks a value against one of the document's component schemas; what is wrong, or undefined. */
  checkSchema(name: string, value: unknown): { message: string; param?: string } | undefined;
  /**
   * The operation with some keywords of its body's properties left out
   * (`{ subject: ['maxLength'] }`): for a body made from something other than
   * a request, which the request's limits do not fit (a submitted message).
   */
  operationWithoutLimits(id: string, limits: Record<string, string[]>): CompiledOperation;
}

/**
 * A matcher for each path of the document, with the methods it takes (HEAD
 * wherever GET is), ordered so that a fixed segment is tried before a
 * parameter in the same place: OpenAPI matches concrete paths before
 * templated ones, so /emails/batch is that path and never an email's id.
 * Case-blind and with an optional final slash, as the routers match.
 */
function pathMatchersOf(document: Json): Array<{ pattern: RegExp; methods: string[]; order: string }> {
  return Object.entries(document.paths as Json).map(([path, item]) => {
    const segments = path.split('/').slice(1);
    const methods = METHODS.filter((m) => (item as Json)[m]).map((m) => m.toUpperCase());
    return {
      pattern: new RegExp(`^/${segments.map((s) => (/^\{.+\}$/.test(s) ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/')}/?$`, 'i'),
      methods: methods.includes('GET') ? ['HEAD', ...methods] : methods,
      order: segments.map((s) => (s.startsWith('{') ? '1' : '0')).join(''),
    };
  }).sort((a, b) => a.order.localeCompare(b.order));
}

export function loadDocument(dir = SCHEMA_DIR): Json {
  const doc = parseYaml(readFileSync(join(dir, 'openapi.yaml'), 'utf8')) as Json;
  doc.paths ??= {};
  doc.components ??= {};
  const partsDir = join(dir, 'paths');
  for (const file of readdirSync(partsDir).filter((f) => f.endsWith('.yaml')).sort()) {
    const part = parseYaml(readFileSync(join(partsDir, file), 'utf8')) as Json;
    for (const [p, item] of Object.entries(part.paths ?? {})) {
      if (doc.paths[p]) throw new Error(`schema/paths/${file}: path ${p} is already defined`);
      doc.paths[p] = item;
    }
    for (const [section, entries] of Object.entries(part.components ?? {})) {
      doc.components[section] ??= {};
      for (const [name, value] of Object.entries(entries as Json)) {
        if (doc.components[section][name]) throw new Error(`schema/paths/${file}: components.${section}.${name} is already defined`);
        doc.components[section][name] = value;
      }
    }
  }
  return doc;
}

function rewriteRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (node && typeof node === 'object') {
    const out: Json = {};
    for (const [k, v] of Object.entries(node)) {
      out[k] = k === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/')
        ? `${COMPONENTS_ID}#/$defs/${v.slice('#/components/schemas/'.length)}`
        : rewriteRefs(v);
    }
    return out;
  }
  return node;
}

function deref(doc: Json, node: Json): Json {
  if (typeof node?.$ref !== 'string') return node;
  const path = node.$ref.replace(/^#\//, '').split('/');
  return deref(doc, path.reduce((o: Json, k: string) => o?.[k], doc));
}

/**
 * The control characters each kind of request text refuses. A string the
 * schema gives no format (and no content annotation) is one line of text: a
 * name, an address, an id. U+0000 is left to refuseNulCharacters, which
 * refuses it in every string and key, whatever its format.
 */
const TEXT_FORMATS = {
  // Names, addresses, ids: shown in lists, CSV exports and headers, where no control character means anything.
  'single-line': { refused: /[\u0001-\u001f\u007f-\u009f]/, rule: 'must be one line of text, without control characters (U+0000 to U+001F, U+007F to U+009F)' },
  // A header's unstructured text (RFC 5322 §3.2.5): TAB is white space there; line breaks are the folding the message builder does itself.
  'header-value': { refused: /[\u0001-\u0008\u000a-\u001f\u007f-\u009f]/, rule: 'must be one line of text, without control characters other than TAB' },
  // A note of several lines (an unsubscribe reason, a contact's property).
  'multi-line': { refused: /[\u0001-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/, rule: 'must not contain control characters other than TAB, CR and LF' },
  // A message body or template source: taken as written (form feeds and the like do occur in real mail).
  'message-body': {},
} satisfies Record<string, { refused?: RegExp; rule?: string }>;
type TextFormat = keyof typeof TEXT_FORMATS;
const DEFAULT_TEXT_FORMAT: TextFormat = 'single-line';

const isTextFormat = (format: unknown): format is TextFormat => typeof format === 'string' && Object.hasOwn(TEXT_FORMATS, format);

/**
 * Whether `text` keeps to a text format's rule, NUL included: for text made
 * after the schema's check, such as a subject rendered from a template.
 */
export function fitsTextFormat(format: TextFormat, text: string): boolean {
  const { refused } = TEXT_FORMATS[format] as { refused?: RegExp };
  return !text.includes('\0') && !refused?.test(text);
}

/** Keywords whose values are schemas, or maps or lists of schemas, that a value's own parts are checked against. */
const SUBSCHEMA_KEYWORDS = ['items', 'prefixItems', 'additionalProperties', 'oneOf', 'anyOf', 'allOf'];
const SUBSCHEMA_MAPS = ['properties', 'patternProperties', '$defs'];

/**
 * The schema with the default text format on every string it declares
 * without a format of its own (or a content annotation: base64, a media
 * type), so that a new text field of a request is one line unless its schema
 * says otherwise. if/then/else and not only test a value's shape; the
 * properties themselves carry the rule.
 */
function withDefaultTextFormat(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withDefaultTextFormat);
  if (!node || typeof node !== 'object') return node;
  const schema: Json = { ...node };
  const declaresText = [schema.type].flat().includes('string') && schema.enum === undefined && schema.const === undefined;
  if (declaresText && schema.format === undefined && schema.contentEncoding === undefined && schema.contentMediaType === undefined) {
    schema.format = DEFAULT_TEXT_FORMAT;
  }
  for (const key of SUBSCHEMA_KEYWORDS) if (schema[key] !== undefined) schema[key] = withDefaultTextFormat(schema[key]);
  for (const key of SUBSCHEMA_MAPS) {
    if (schema[key]) schema[key] = Object.fromEntries(Object.entries(schema[key] as Json).map(([k, v]) => [k, withDefaultTextFormat(v)]));
  }
  return schema;
}

/** The schema keyword naming the Unicode normal form a string is kept in (as tag names are, in NFC). */
const NORMALIZATION_KEYWORD = 'x-unicode-normalization';
/** The schema keyword saying a string is kept without its leading and trailing white space (as tag names are). */
const TRIM_KEYWORD = 'x-trim';

/**
 * An ajv for the document. Request schemas (`requests`) get the text formats'
 * default on their strings; response schemas are as written, since they show
 * what was received from elsewhere too (an inbound message, a server's reply).
 */
function newAjv(doc: Json, { coerce = false, requests = false } = {}): Ajv2020 {
  // strictSchema: an unknown keyword (a typo, or text that YAML turned into a key) fails the start instead of being ignored.
  const ajv = new Ajv2020({
    allErrors: false, strictSchema: true, strictTypes: false, strictTuples: false, strictRequired: false,
    coerceTypes: coerce ? 'array' : false, useDefaults: true,
  });
  addFormats(ajv);
  for (const [name, { refused }] of Object.entries<{ refused?: RegExp }>(TEXT_FORMATS)) {
    ajv.addFormat(name, { type: 'string', validate: refused ? (text: string) => !refused.test(text) : () => true });
  }
  // A string kept in a Unicode normal form, or trimmed, is stored so: it is
  // put in that form before its limits are checked, so a decomposed "é" (e
  // and U+0301) counts as the one character it becomes, spaces around a name
  // that fits are dropped rather than counted, and a name of spaces alone is too short.
  keepStringAs(ajv, NORMALIZATION_KEYWORD, { type: 'string', enum: ['NFC'] }, (form: 'NFC', text) => text.normalize(form));
  keepStringAs(ajv, TRIM_KEYWORD, { type: 'boolean', const: true }, (_trim: true, text) => text.trim());
  // As the $defs of one schema, the components' strings get the default like any other.
  const components = { $id: COMPONENTS_ID, $defs: rewriteRefs(doc.components?.schemas ?? {}) };
  ajv.addSchema((requests ? withDefaultTextFormat(components) : components) as Json);
  return ajv;
}

/** A modifying keyword: the string it is on is replaced by `keep(value, text)` before its length is checked. */
function keepStringAs<V>(ajv: Ajv2020, keyword: string, metaSchema: { type: 'string' | 'boolean' } & Json, keep: (value: V, text: string) => string) {
  ajv.addKeyword({
    keyword, type: 'string', schemaType: metaSchema.type, metaSchema,
    modifying: true, before: 'maxLength', errors: false,
    validate: (value: V, text: string, _schema?: unknown, where?: DataValidationCxt) => {
      if (where) (where.parentData as Json)[where.parentDataProperty] = keep(value, text);
      return true;
    },
  });
}

export function loadContract(dir = SCHEMA_DIR): Contract {
  const document = loadDocument(dir);
  const bodyAjv = newAjv(document, { requests: true });
  const responseAjv = newAjv(document);
  // Query and path parameters are checked for control characters as they are read (src/http/op.ts).
  const queryAjv = newAjv(document, { coerce: true });
  const ops = new Map<string, CompiledOperation>();
  const bodySchemas = new Map<string, Json>();
  const responseSchemas = new Map<string, Json>();

  for (const [path, item] of Object.entries(document.paths as Json)) {
    for (const method of METHODS) {
      const operation = (item as Json)[method] as Json | undefined;
      if (!operation) continue;
      const id = operation.operationId as string;
      if (!id) throw new Error(`schema: ${method.toUpperCase()} ${path} has no operationId`);
      if (ops.has(id)) throw new Error(`schema: operationId ${id} is used twice`);
      const parameters = [...((item as Json).parameters ?? []), ...(operation.parameters ?? [])].map((p: Json) => deref(document, p));
      const objectSchema = (where: string) => {
        const list = parameters.filter((p) => p.in === where);
        return {
          type: 'object',
          properties: Object.fromEntries(list.map((p) => [p.name, rewriteRefs(p.schema ?? {})])),
          required: list.filter((p) => p.required).map((p) => p.name),
          additionalProperties: false,
        };
      };
      const bodySchema = operation.requestBody?.content?.['application/json']?.schema;
      const queryParams = parameters.filter((p) => p.in === 'query');
      if (bodySchema) bodySchemas.set(id, bodySchema);
      ops.set(id, {
        id,
        method: method.toUpperCase(),
        path,
        body: bodySchema ? bodyAjv.compile(withDefaultTextFormat(rewriteRefs(bodySchema)) as Json) : undefined,
        query: queryAjv.compile(objectSchema('query')),
        params: queryAjv.compile(objectSchema('path')),
        arrayParams: new Set(queryParams.filter((p) => p.schema?.type === 'array').map((p) => p.name)),
        integerParams: new Set(parameters.filter((p) => (p.in === 'query' || p.in === 'path') && p.schema?.type === 'integer').map((p) => p.name)),
        paged: queryParams.some((p) => p.name === 'limit'),
        validationStatus: operation.responses?.['422'] ? 422 : 400,
        pathFindsRecord: Boolean(operation.responses?.['404']),
        headerParams: parameters.filter((p) => p.in === 'header' && p.name.toLowerCase() !== 'idempotency-key').map((p) => ({
          name: p.name,
          ...(typeof p.schema?.default === 'string' && { default: p.schema.default }),
          ...(Array.isArray(p.schema?.enum) && { values: p.schema.enum as string[] }),
        })),
      });
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const schema = deref(document, response as Json)?.content?.['application/json']?.schema;
        if (schema) responseSchemas.set(`${id} ${status}`, schema);
      }
    }
  }

  const responseValidators = new Map<string, ValidateFunction>();
  const componentValidators = new Map<string, ValidateFunction>();
  const pathMatchers = pathMatchersOf(document);
  return {
    document,
    operation: (id) => ops.get(id),
    operations: () => [...ops.values()],
    methodsAt: (path) => pathMatchers.find((m) => m.pattern.test(path))?.methods,
    checkResponse(id, status, body) {
      const key = `${id} ${status}`;
      const schema = responseSchemas.get(key);
      if (!schema) return status === 204 && (body === undefined || body === '') ? undefined : `no response schema for ${key}`;
      let validate = responseValidators.get(key);
      if (!validate) {
        validate = responseAjv.compile(rewriteRefs(schema) as Json);
        responseValidators.set(key, validate);
      }
      return validate(body) ? undefined : describeAjvError(validate.errors?.[0]).message;
    },
    checkSchema(name, value) {
      let validate = componentValidators.get(name);
      if (!validate) {
        if (!document.components?.schemas?.[name]) throw new Error(`schema: no component schema ${name}`);
        validate = bodyAjv.compile({ $ref: `${COMPONENTS_ID}#/$defs/${name}` });
        componentValidators.set(name, validate);
      }
      return validate(value) ? undefined : describeAjvError(validate.errors?.[0]);
    },
    operationWithoutLimits(id, limits) {
      const operation = ops.get(id);
      const schema = bodySchemas.has(id) ? deref(document, bodySchemas.get(id)!) : undefined;
      if (!operation || !schema?.properties) throw new Error(`schema: ${id} has no request body with properties`);
      const properties = Object.fromEntries(Object.entries(schema.properties as Json).map(([name, property]) => {
        const kept = { ...(property as Json) };
        for (const keyword of limits[name] ?? []) delete kept[keyword];
        return [name, kept];
      }));
      return { ...operation, body: bodyAjv.compile(withDefaultTextFormat(rewriteRefs({ ...schema, properties })) as Json) };
    },
  };
}

/**
 * Checks a request body against its operation's schema, filling in defaults;
 * refuses it with the validation_error the API answers (400 or 422 as the
 * operation lists). The API and SMTP submission check bodies through here.
 */
export function checkRequestBody(operation: CompiledOperation, body: unknown): void {
  if (!operation.body || operation.body(body)) return;
  const e = describeAjvError(operation.body.errors?.[0], 'body');
  throw new AppError('validation_error', e.message, { status: operation.validationStatus, param: e.param });
}

/** Refuses a body with U+0000 in any of its strings or keys, as the validation_error of its operation. */
export function refuseNulCharacters(operation: CompiledOperation, body: unknown): void {
  const param = nulCharacterAt(body);
  if (param !== undefined) {
    throw new AppError('validation_error', `'${param}' must not contain a NUL character (U+0000).`, { status: operation.validationStatus, param });
  }
}

/**
 * The dotted path of a string (or key) of a JSON value that holds
 * U+0000: PostgreSQL's text and jsonb cannot store it, and no address,
 * subject or body means it. Iterative, since a body may nest deeper than the
 * stack goes.
 */
function nulCharacterAt(value: unknown): string | undefined {
  interface Place { node: unknown; key?: string; parent?: Place }
  const pathOf = (place: Place) => {
    const keys: string[] = [];
    for (let p: Place | undefined = place; p?.key !== undefined; p = p.parent) keys.unshift(p.key);
    return keys.join('.') || 'body';
  };
  const pending: Place[] = [{ node: value }];
  for (let place = pending.pop(); place; place = pending.pop()) {
    const { node } = place;
    if (typeof node === 'string') {
      if (node.includes('\0')) return pathOf(place);
    } else if (Array.isArray(node)) {
      node.forEach((item, i) => pending.push({ node: item, key: String(i), parent: place }));
    } else if (node !== null && typeof node === 'object') {
      for (const [key, item] of Object.entries(node)) {
        if (key.includes('\0')) return pathOf({ node: item, key, parent: place });
        pending.push({ node: item, key, parent: place });
      }
    }
  }
  return undefined;
}

/** One readable sentence and the dotted field path from ajv's first error. */
export function describeAjvError(e: ErrorObject | undefined, root?: string): { message: string; param?: string } {
  if (!e) return { message: 'The request is not valid.' };
  const path = e.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  const where = (extra?: string) => {
    const parts = [...path, ...(extra ? [extra] : [])];
    return parts.length ? parts.join('.') : root;
  };
  switch (e.keyword) {
    case 'required': {
      const param = where((e.params as { missingProperty: string }).missingProperty);
      return { message: `'${param}' is required.`, param };
    }
    case 'additionalProperties': {
      const param = where((e.params as { additionalProperty: string }).additionalProperty);
      return { message: `Unknown field '${param}'.`, param };
    }
    case 'format': {
      const format = (e.params as { format: string }).format;
      const rule = isTextFormat(format) ? (TEXT_FORMATS[format] as { rule?: string }).rule : undefined;
      if (rule === undefined) break;
      const param = where();
      return { message: `'${param}' ${rule}.`, param };
    }
    case 'enum': {
      const param = where();
      const allowed = (e.params as { allowedValues: unknown[] }).allowedValues.map(String).join(', ');
      return { message: `'${param}' must be one of: ${allowed}.`, param };
    }
  }
  const param = where();
  return { message: param ? `'${param}' ${e.message}.` : `The request body ${e.message}.`, param };
}
