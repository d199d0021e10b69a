import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadContract } from '../../src/contract/contract.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

// Every operation of the served OpenAPI document, walked with a bounded set
// of malformed requests (bodies, path ids, query values, keys) built from the
// document itself, so that a new operation is swept without a line here.
// Whatever the input, the answer is below 500, in time, and a 4xx carries the
// error object; and the server still answers and sends afterwards.

type Json = Record<string, any>;

interface Case {
  label: string;
  method: string;
  path: string;
  /** The raw body, sent with Content-Type: application/json. */
  body?: string | Buffer;
  idempotencyKey?: string;
  token: string | null;
  /** Statuses the answer must be one of, beyond "below 500". */
  expect?: number[];
  /** The parameter a refusal must name: the answer is then a 400 or 422 validation_error with this param. */
  refusedAs?: string;
  /** The path parameter that names no record: the answer is then a 404 not_found with this param. */
  notFoundAs?: string;
}

interface Operation {
  id: string;
  method: string;
  template: string;
  pathParams: string[];
  /** The operation lists 404: its path names a record to find. */
  findsRecord: boolean;
  query: Json[];
  bodySchema?: Json;
}

const ANSWER_WITHIN_MS = 5_000;
// Under the default 1 MiB body limit, with room for the rest of the body.
const NEAR_BODY_LIMIT = 1024 * 1024 - 4096;
const DEEP = 10_000;

const deeplyNested = '['.repeat(DEEP) + ']'.repeat(DEEP);

/**
 * Values of the wrong type, or at the edges of JSON, for one property; raw
 * JSON text, since some of them (1e309, a lone surrogate) do not survive
 * JSON.stringify. The edges of numbers go where a number is taken, those of
 * strings where a string is; every type goes everywhere.
 */
const WRONG_TYPES: Array<[string, string]> = [
  ['a string', '"sweep"'], ['a number', '7'], ['a boolean', 'true'], ['an object', '{"a":1}'], ['an array', '[1,"a"]'], ['null', 'null'],
  ['nested arrays', deeplyNested],
];
const NUMBER_EDGES: Array<[string, string]> = [['1e309', '1e309'], ['-0', '-0'], ['2**64', '18446744073709551616'], ['1.5', '1.5'], ['-1', '-1']];
const STRING_EDGES: Array<[string, string]> = [['a NUL', '"a\\u0000b"'], ['a lone surrogate', '"a\\ud800b"'], ['a control character', '"a\\u001bb"']];

/**
 * Control characters in text, and the kinds of text (the schema's format;
 * no format is one line) that refuse each: the rule of schema/openapi.yaml's
 * conventions, so that a new text field is held to it without a line here.
 */
const TEXT_EDGES: Array<[string, string, TextKind[]]> = [
  ['a BEL', '"a\\u0007b"', ['single-line', 'header-value', 'multi-line']],
  ['a DEL', '"a\\u007fb"', ['single-line', 'header-value', 'multi-line']],
  ['a C1 control', '"a\\u0085b"', ['single-line', 'header-value', 'multi-line']],
  ['a form feed', '"a\\fb"', ['single-line', 'header-value', 'multi-line']],
  ['a line break', '"a\\nb"', ['single-line', 'header-value']],
  ['a CR', '"a\\rb"', ['single-line', 'header-value']],
  ['a TAB', '"a\\tb"', ['single-line']],
];
type TextKind = 'single-line' | 'header-value' | 'multi-line' | 'message-body';

/** The kind of text a property's schema takes, or undefined when it takes no string. */
function textKindOf(schema: Json, resolve: (s: Json) => Json): TextKind | undefined {
  const branches = [schema, ...(schema.oneOf ?? []), ...(schema.anyOf ?? [])].map(resolve);
  const text = branches.find((b) => [b.type].flat().includes('string') && b.enum === undefined);
  if (!text) return undefined;
  if (text.contentEncoding !== undefined || text.contentMediaType !== undefined) return 'message-body';
  return (text.format ?? 'single-line') as TextKind;
}

/** The types a property's schema takes (all of them when it does not say). */
function typesOf(schema: Json, resolve: (s: Json) => Json): Set<string> {
  const branches = [schema, ...(schema.oneOf ?? []), ...(schema.anyOf ?? [])].map(resolve);
  const types = branches.flatMap((b) => (b.type ? [b.type].flat() : b.enum ? b.enum.map((v: unknown) => typeof v) : []));
  return new Set(types.length ? types : ['string', 'number', 'integer']);
}

function badValuesFor(schema: Json, resolve: (s: Json) => Json): Array<[string, string]> {
  const types = typesOf(schema, resolve);
  return [
    ...WRONG_TYPES,
    ...(types.has('number') || types.has('integer') ? NUMBER_EDGES : []),
    ...(types.has('string') ? STRING_EDGES : []),
  ];
}

/** The body of each operation that passes its schema, so that one changed property reaches the checks after it. */
function validBodies(ids: Record<string, string>): Record<string, Json> {
  const email = { from: 'Sweep <sweep@acme.test>', to: 'reader@remote.test', subject: 'Sweep', text: 'Hello.' };
  return {
    createApiKey: { name: 'sweep' },
    createAttachment: { content: Buffer.from('hello').toString('base64'), filename: 'a.txt' },
    createBroadcast: { name: 'Sweep', from: 'sweep@acme.test', subject: 'Hi', text: 'Hello.' },
    updateBroadcast: { name: 'Sweep 2' },
    previewBroadcastAudience: { audience: { tag_ids: [ids.tag_id] } },
    previewBroadcast: { contact_id: ids.contact_id },
    sendBroadcastTest: { to: ['reader@remote.test'] },
    sendBroadcast: { scheduled_at: new Date(Date.now() + 86_400_000).toISOString() },
    createContact: { email: 'new@remote.test' },
    bulkUpsertContacts: { contacts: [{ email: 'bulk@remote.test' }] },
    upsertContactByEmail: { name: 'Reader' },
    updateContact: { name: 'Reader' },
    unsubscribeContact: { reason: 'sweep' },
    createDomain: { name: 'sweep.test' },
    updateDomain: { open_tracking: true },
    createEmail: email,
    checkEmail: email,
    createEmailBatch: { emails: [email] },
    updateEmail: { scheduled_at: new Date(Date.now() + 86_400_000).toISOString() },
    retryQueue: { domain: 'remote.test' },
    holdQueue: { domain: 'remote.test' },
    releaseQueue: { domain: 'remote.test' },
    createSuppression: { email: 'gone@remote.test' },
    createTag: { name: 'sweep' },
    createTemplate: { name: 'sweep', subject: 'Hi {{ name }}', text: 'Hello {{ name }}.', variables: [{ key: 'name', type: 'string' }] },
    previewTemplate: { subject: 'Hi {{ name }}', text: 'Hello.', variables: [{ key: 'name', type: 'string' }], data: { name: 'A' } },
    updateTemplate: { subject: 'Hi' },
    publishTemplate: {},
    duplicateTemplate: { name: 'copy' },
    renderTemplate: { variables: { name: 'A' } },
    createWebhook: { url: 'http://127.0.0.1:9/hook', event_types: ['email.sent'] },
    updateWebhook: { description: 'sweep' },
  };
}

/** A schema or parameter with its $ref followed. */
const resolverOf = (doc: Json) => {
  const deref = (node: Json): Json => (typeof node?.$ref === 'string'
    ? deref(node.$ref.replace(/^#\//, '').split('/').reduce((o: Json, k: string) => o?.[k], doc))
    : node);
  return deref;
};

function operationsOf(doc: Json): Operation[] {
  const deref = resolverOf(doc);
  const ops: Operation[] = [];
  for (const [template, item] of Object.entries<Json>(doc.paths)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      const operation = item[method];
      if (!operation) continue;
      const parameters = [...(item.parameters ?? []), ...(operation.parameters ?? [])].map(deref);
      const bodySchema = operation.requestBody?.content?.['application/json']?.schema;
      ops.push({
        id: operation.operationId, method: method.toUpperCase(), template,
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        findsRecord: operation.responses?.['404'] !== undefined,
        query: parameters.filter((p) => p.in === 'query'),
        bodySchema: bodySchema && deref(bodySchema),
      });
    }
  }
  return ops;
}

/** A body of the schema's required properties, for an operation without a known valid body. */
function minimalBody(schema: Json): Json {
  const sample = (s: Json): unknown => {
    if (s.enum) return s.enum[0];
    if (s.default !== undefined) return s.default;
    const type = [s.type].flat()[0];
    if (type === 'integer' || type === 'number') return s.minimum ?? 1;
    if (type === 'boolean') return true;
    if (type === 'array') return [];
    if (type === 'object') return {};
    return 'x'.repeat(s.minLength ?? 1);
  };
  return Object.fromEntries((schema.required ?? []).map((name: string) => [name, sample(schema.properties?.[name] ?? {})]));
}

function withProperty(base: Json, name: string, rawValue: string): string {
  return withValueAt(base, [name], rawValue);
}

const PLACEHOLDER = '\u{10FFFF}sweep-value\u{10FFFF}';

/** The body with the value at `path` (keys and array indexes) replaced by raw JSON text. */
function withValueAt(base: Json, path: string[], rawValue: string): string {
  const copy = structuredClone(base);
  let parent: Json = copy;
  for (const key of path.slice(0, -1)) parent = parent[key];
  parent[path[path.length - 1]] = PLACEHOLDER;
  return JSON.stringify(copy).replace(JSON.stringify(PLACEHOLDER), () => rawValue);
}

/**
 * The places a bad value can go: every declared property of the body, and
 * one level down, every declared property of an object (or of the first item
 * of an array of objects) that the valid body holds.
 */
function propertiesOf(base: Json, schema: Json, resolve: (s: Json) => Json): Array<[string[], unknown, Json]> {
  const places: Array<[string[], unknown, Json]> = [];
  for (const [name, raw] of Object.entries<Json>(schema.properties ?? {})) {
    const property = resolve(raw);
    places.push([[name], base[name], property]);
    const value = base[name];
    const inner = Array.isArray(value) ? resolve(property.items ?? {}) : property;
    const holder = Array.isArray(value) ? value[0] : value;
    const path = Array.isArray(value) ? [name, '0'] : [name];
    if (holder === null || typeof holder !== 'object' || Array.isArray(holder)) continue;
    const branches = [inner, ...(inner.oneOf ?? []), ...(inner.anyOf ?? [])].map(resolve);
    for (const [innerName, innerRaw] of Object.entries<Json>(Object.assign({}, ...branches.map((b) => b.properties ?? {})))) {
      places.push([[...path, innerName], holder[innerName], resolve(innerRaw)]);
    }
  }
  return places;
}

function fill(template: string, values: Record<string, string>): string {
  return '/v1' + template.replace(/\{([^}]+)\}/g, (_, name: string) => values[name]);
}

function sweepCases(ops: Operation[], resolve: (s: Json) => Json, ids: Record<string, string>, tokens: { mine: string; theirs: string }): Case[] {
  const cases: Case[] = [];
  const bodies = validBodies(ids);
  for (const op of ops) {
    const realPath = fill(op.template, ids);
    const base = bodies[op.id] ?? (op.bodySchema ? minimalBody(op.bodySchema) : undefined);
    const validBody = base === undefined ? undefined : JSON.stringify(base);
    const add = (label: string, c: Partial<Case>) => cases.push({
      label: `${op.id}: ${label}`, method: op.method, path: realPath, body: validBody, token: tokens.mine,
      // A key on every write, so that the request's hash (and the replay of what it kept) is swept too.
      idempotencyKey: op.method === 'POST' ? `sweep-${cases.length}` : undefined, ...c,
    });

    add('no key', { token: null, expect: [401] });
    add('a malformed key', { token: 'svc_live_not-a-key', expect: [401] });
    add('a key that looks right but is not one', { token: 'svc_live_' + 'A'.repeat(46), expect: [401] });
    add('the key of another workspace', {
      token: tokens.theirs,
      // Records of this workspace are not found from another; a path without ids (a list, a create) answers the other workspace's own.
      expect: op.pathParams.some((p) => ids[p].includes('_')) ? [400, 403, 404, 422] : undefined,
    });

    for (const param of op.pathParams) {
      const real = ids[param];
      const prefix = /^([a-z]+)_/.exec(real)?.[1];
      const variants: Array<[string, string]> = [
        ['an unknown id', prefix ? `${prefix}_00000000000000000000000000` : 'unknown-9999'],
        ['an id of another type', prefix === 'em' ? ids.contact_id : ids.email_id],
        ['an id with %00', `${encodeURIComponent(real)}%00`],
        ['an id with %2F..%2F', `%2F..%2F..%2F${encodeURIComponent(real)}`],
        ['an id of 2,000 characters', 'a'.repeat(2_000)],
        ['a non-ASCII id', encodeURIComponent(`${prefix ?? 'x'}_é漢字😀`)],
        ['an id with %FF', `${prefix ?? 'x'}_%FF%FE`],
        ['an id with %G1', `${prefix ?? 'x'}_%G1`],
        ['an id with a truncated escape', `${prefix ?? 'x'}_%E0%A4%A`],
        ['a negative number', '-1'],
        ['a huge number', '99999999999999999999999'],
      ];
      for (const [label, value] of variants) {
        // A percent-encoding that is not UTF-8, or not one at all, names no record (or, where the path
        // names what the operation creates, is a validation error), named.
        const undecodable = /%FF|%G1|%A$/.test(value);
        add(`path ${param} as ${label}`, {
          path: fill(op.template, { ...ids, [param]: value }),
          ...(undecodable && (op.findsRecord ? { notFoundAs: param } : { refusedAs: param })),
        });
      }
    }

    for (const parameter of op.query) {
      const name = encodeURIComponent(parameter.name);
      const values = ['-1', '99999999999999999999999', '1.5', 'not-a-known-value', '', 'a%00b', encodeURIComponent('é'.repeat(2_000))];
      for (const value of values) add(`query ${parameter.name}=${value.slice(0, 20)}`, { path: `${realPath}?${name}=${value}` });
      for (const value of ['%FF%C0%AF', '%G1', 'a%']) {
        add(`query ${parameter.name}=${value} (not percent-encoded UTF-8)`, { path: `${realPath}?${name}=${value}`, refusedAs: parameter.name });
      }
      add(`query ${parameter.name} repeated`, { path: `${realPath}?${name}=1&${name}=2` });
      add(`query ${parameter.name}[] bracketed`, { path: `${realPath}?${name}[a]=1` });
    }
    if (op.query.some((p) => p.name === 'starting_after')) {
      const forged = Buffer.from(JSON.stringify({ p: 1, w: 'ws_x' })).toString('base64url');
      for (const cursor of ['garbage', forged, 'eyJ9', 'A'.repeat(5_000), '%FF%FE']) {
        add(`cursor ${cursor.slice(0, 12)}`, { path: `${realPath}?starting_after=${cursor}`, expect: [400] });
        add(`cursor ${cursor.slice(0, 12)} before`, { path: `${realPath}?ending_before=${cursor}`, expect: [400] });
      }
    }

    if (op.bodySchema) {
      const notAnObject = op.bodySchema.type === 'object' ? [400, 422] : undefined;
      const whole: Array<[string, string | Buffer, number[]?]> = [
        ['not JSON', 'hello', [400]], ['truncated JSON', validBody!.slice(0, Math.max(1, validBody!.length - 3)), [400]],
        ['an array', '[]', notAnObject], ['a string', '"text"', notAnObject], ['a number', '42', notAnObject],
        ['null', 'null', notAnObject], ['true', 'true', notAnObject], ['{}', '{}'],
        ['nested arrays', deeplyNested, notAnObject], ['nested objects', '{"a":'.repeat(DEEP) + '1' + '}'.repeat(DEEP)],
        ['an unknown property', withProperty(base!, 'sweep_unknown', '1')],
        ['a __proto__ property', `{"__proto__":{"polluted":1},${validBody!.slice(1)}`],
        ['a BOM', `\ufeff${validBody}`], ['invalid UTF-8', Buffer.from([...Buffer.from('{"name":"'), 0xff, 0xfe, 0xc0, 0xaf, ...Buffer.from('"}')]), [400]],
      ];
      for (const [label, body, expect] of whole) add(`body as ${label}`, { body, expect });
      for (const [path, value, schema] of propertiesOf(base!, op.bodySchema, resolve)) {
        const param = path.join('.');
        for (const [label, raw] of badValuesFor(schema, resolve)) {
          // PostgreSQL could not store a NUL, wherever it is.
          add(`body ${param} as ${label}`, { body: withValueAt(base!, path, raw), refusedAs: label === 'a NUL' ? param : undefined });
        }
        const kind = textKindOf(schema, resolve);
        for (const [label, raw, refusedBy] of kind ? TEXT_EDGES : []) {
          add(`body ${param} (${kind}) with ${label}`, { body: withValueAt(base!, path, raw), refusedAs: refusedBy.includes(kind!) ? param : undefined });
        }
        if (path.length === 1 && (typesOf(schema, resolve).has('string') || typeof value === 'string')) {
          add(`body ${path.join('.')} near the body limit`, { body: withValueAt(base!, path, JSON.stringify('a'.repeat(NEAR_BODY_LIMIT))) });
        }
      }
    }
  }
  return cases;
}

interface Answer {
  status: number;
  text: string;
}

function refusedNaming(status: number, text: string, param: string): boolean {
  if (status !== 400 && status !== 422) return false;
  const { error } = JSON.parse(text) as { error: { code: string; param?: string } };
  return error.code === 'validation_error' && error.param === param;
}

function notFoundNaming(status: number, text: string, param: string): boolean {
  if (status !== 404) return false;
  const { error } = JSON.parse(text) as { error: { code: string; param?: string } };
  return error.code === 'not_found' && error.param === param;
}

async function send(url: string, c: Case): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (c.token !== null) headers.Authorization = `Bearer ${c.token}`;
  if (c.body !== undefined) headers['Content-Type'] = 'application/json';
  if (c.idempotencyKey !== undefined) headers['Idempotency-Key'] = c.idempotencyKey;
  const res = await fetch(url + c.path, { method: c.method, headers, body: c.body, signal: AbortSignal.timeout(ANSWER_WITHIN_MS) });
  return { status: res.status, text: await res.text() };
}

describe('bad input on every operation', () => {
  let t: TestApp;
  let ids: Record<string, string>;
  let theirs: string;
  let sentBefore: string;
  let casesSent = 0;

  beforeAll(async () => {
    t = await startTestApp({ env: { MAILROOM_DEFAULT_PLAN: 'unlimited', MAILROOM_WEBHOOK_ALLOW_PRIVATE: 'true' } });
    const other = await t.seed.workspace({ plan: 'unlimited' });
    theirs = (await t.seed.key({ workspaceId: other.id })).token;
    const domain = await t.seed.activeDomain('acme.test');
    const created = async (path: string, body: Json) => {
      const res = await t.api.post(path, body);
      expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(201);
      return res.body;
    };
    const tag = await created('/v1/tags', { name: 'readers' });
    const contact = await created('/v1/contacts', { email: 'reader@remote.test', tags: [tag.id] });
    const email = await created('/v1/emails', {
      from: 'sweep@acme.test', to: 'reader@remote.test', subject: 'Kept', text: 'Hello.',
      attachments: [{ filename: 'a.txt', content: Buffer.from('hi').toString('base64') }],
    });
    sentBefore = email.id;
    const template = await created('/v1/templates', { name: 'welcome', subject: 'Hi {{ name }}', text: 'Hello {{ name }}.', variables: [{ key: 'name', type: 'string' }] });
    const broadcast = await created('/v1/broadcasts', { name: 'News', from: 'sweep@acme.test', subject: 'Hi', text: 'Hello.', audience: { tag_ids: [tag.id] } });
    const webhook = await created('/v1/webhooks', { url: 'http://127.0.0.1:9/hook', event_types: ['email.sent'] });
    const suppression = await created('/v1/suppressions', { email: 'gone@remote.test' });
    const key = await created('/v1/api-keys', { name: 'spare' });
    await t.api.post(`/v1/webhooks/${webhook.id}/test`);
    const deliveries = (await t.api.get(`/v1/webhooks/${webhook.id}/deliveries`)).body.data;
    const events = (await t.api.get('/v1/events')).body.data;
    ids = {
      key_id: key.id, broadcast_id: broadcast.id, contact_id: contact.id, tag_id: tag.id, email: 'reader@remote.test',
      domain_id: domain.id, email_id: email.id, index: '0', event_id: events[0]?.id ?? 'evt_00000000000000000000000000',
      inbound_id: 'in_00000000000000000000000000', suppression: suppression.id, template_id: template.id, version: '1',
      webhook_id: webhook.id, delivery_id: deliveries[0]?.id ?? 'whd_00000000000000000000000000',
    };
  });

  afterAll(async () => {
    await t?.close();
  });

  it('answers every malformed request below 500, in time, with the error object', async () => {
    const doc = (await (await fetch(`${t.url}/v1/openapi.json`)).json()) as Json;
    const ops = operationsOf(doc);
    for (const op of ops) for (const p of op.pathParams) expect(ids, `a real value for ${op.id}'s ${p}`).toHaveProperty(p);
    const contract = loadContract();
    // The valid bodies pass the schema, so that each case differs from an accepted request by the one bad value.
    expect(Object.entries(validBodies(ids)).filter(([id, body]) => !contract.operation(id)?.body?.(structuredClone(body))).map(([id]) => id)).toEqual([]);
    const cases = sweepCases(ops, resolverOf(doc), ids, { mine: t.token, theirs });
    const mine = Object.values(ids).filter((v) => v.includes('_'));
    const failures: string[] = [];
    const check = async (c: Case) => {
      let answer: Answer;
      try {
        answer = await send(t.url, c);
      } catch (err) {
        failures.push(`${c.label}: no answer (${(err as Error).message})`);
        return;
      }
      const { status, text } = answer;
      if (status >= 500) failures.push(`${c.label}: ${status} ${text.slice(0, 200)}`);
      else if (c.expect && !c.expect.includes(status)) failures.push(`${c.label}: ${status}, expected ${c.expect.join('/')}`);
      else if (c.refusedAs !== undefined && !refusedNaming(status, text, c.refusedAs)) {
        failures.push(`${c.label}: expected a validation_error naming '${c.refusedAs}', got ${status} ${text.slice(0, 200)}`);
      } else if (c.notFoundAs !== undefined && !notFoundNaming(status, text, c.notFoundAs)) {
        failures.push(`${c.label}: expected a 404 not_found naming '${c.notFoundAs}', got ${status} ${text.slice(0, 200)}`);
      }
      if (status >= 400) {
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          failures.push(`${c.label}: ${status} with a body that is not JSON: ${text.slice(0, 200)}`);
          return;
        }
        const problem = contract.checkSchema('Error', body);
        if (problem) failures.push(`${c.label}: ${status} body is not the error object (${problem.message}): ${text.slice(0, 200)}`);
      }
      // An error may echo the id asked for; an answer with data must hold none of this workspace's records.
      if (c.token === theirs && status < 400 && mine.some((id) => text.includes(id))) failures.push(`${c.label}: another workspace's record in the answer`);
    };
    // A few at a time, as clients would send them, without starving the machine.
    const queue = [...cases];
    await Promise.all(Array.from({ length: 4 }, async () => {
      for (let c = queue.shift(); c; c = queue.shift()) await check(c);
    }));
    casesSent = cases.length;
    expect(failures).toEqual([]);
    expect(casesSent).toBeGreaterThan(ops.length * 10);
  }, 60_000);

  it('still answers, keeps what it had accepted, and sends after the sweep', async () => {
    expect(casesSent).toBeGreaterThan(0);
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
    expect((await t.api.get(`/v1/emails/${sentBefore}`)).body.subject).toBe('Kept');
    for (const [name, path] of [['contact_id', 'contacts'], ['template_id', 'templates'], ['broadcast_id', 'broadcasts'], ['webhook_id', 'webhooks'], ['domain_id', 'domains']]) {
      expect((await t.api.get(`/v1/${path}/${ids[name]}`)).status, path).toBe(200);
    }
    const res = await t.api.post('/v1/emails', { from: 'sweep@acme.test', to: 'after@remote.test', subject: 'After', text: 'Still here.' });
    expect(res.status).toBe(201);
    expect((await t.api.get(`/v1/emails/${res.body.id}`)).body.subject).toBe('After');
  });
});
