import { isUtf8 } from 'node:buffer';
import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import { AppError } from '../core/errors.js';
import type { Clock } from '../core/clock.js';
import type { CursorCodec } from '../core/cursors.js';
import { requireScope, type FineScope } from '../core/scopes.js';
import { rateLimitExceeded, type RateLimiter } from '../core/rate-limit.js';
import type { Plan } from '../config.js';
import type { PageQuery } from '../store/paging.js';
import type { ApiKeysService, AuthContext } from '../api-keys/api-keys.service.js';
import { checkRequestBody, describeAjvError, refuseNulCharacters, type Contract, type CompiledOperation } from '../contract/contract.js';
import type { IsPaged, OperationId, PathParams, QueryParams, RequestBody, Schema, SchemaName } from '../contract/operations.js';
import { MAX_IDEMPOTENCY_KEY_LENGTH, requestHash, type Idempotency, type Replay } from './idempotency.js';

// op() is the whole request pipeline of one API operation, after routing:
// auth (and scope) -> rate limit -> body -> idempotency -> validation ->
// handler. Routes stay one line each; the rules live here once. The steps
// that are not HTTP's own (the scope check, the rate limiter, the body's
// schema) are functions of core/ and contract/ that SMTP submission calls too.

export interface AppState {
  requestId: string;
  auth?: AuthContext;
  /** The API operation that answered, for the request log and metrics. */
  operationId?: string;
}

/** What every op() needs, hung on app.context by createApp. */
export interface HttpDeps {
  contract: Contract;
  apiKeys: ApiKeysService;
  rateLimiter: RateLimiter;
  idempotency: Idempotency;
  cursors: CursorCodec;
  clock: Clock;
  logger: Logger;
  plan(name: string): Plan;
  /** Told of every answered request: its operation ('unrouted' for none), status and duration. */
  observe?(operation: string, status: number, seconds: number): void;
}

declare module 'koa' {
  interface ExtendableContext {
    mailroom: HttpDeps;
  }
}

/** What a handler gets: the operation's input, validated against its schema and typed from it. */
export interface OpInput<Id extends OperationId = OperationId> {
  auth: AuthContext;
  body: RequestBody<Id>;
  query: QueryParams<Id>;
  params: PathParams<Id>;
  /** The page asked for, on a paged list (an operation that takes `limit`). */
  page: IsPaged<Id> extends true ? PageQuery : undefined;
  requestId: string;
  ip: string;
  /** A request header, '' when absent. */
  header(name: string): string;
  /** Checks a part of the body against a component schema of the contract (a batch's items, one by one): the part as that schema's type, or what is wrong with it. */
  check<Name extends SchemaName>(schema: Name, value: unknown): { value: Schema<Name> } | { problem: { message: string; param?: string } };
}

export interface OpOptions {
  /** The scope the key must hold; null where any valid key may call (a key reading itself). */
  scope: FineScope | null;
  /** Success status (default 200). 204 sends no body. */
  status?: number;
  /** Whether the operation honours Idempotency-Key. */
  idempotent?: boolean;
  /** Rate-limit tokens this request costs (default 1), from the body as sent: it is not validated yet. */
  cost?: (body: unknown) => number;
  /** Largest accepted request body (default 1 MiB). */
  maxBodyBytes?: number;
  /** A POST that stores nothing (a preview, a render, a check): left out of the key's trail of writes. */
  changesNothing?: boolean;
}

export type OpMiddleware = Middleware<AppState> & { operationId: string };

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
/** How much of a refused header's value an error message repeats. */
const MAX_ECHOED_HEADER_CHARS = 100;

/** The middleware of operation `operationId`; an id that schema/ does not define does not compile. */
export function op<Id extends OperationId>(operationId: Id, options: OpOptions, handler: (input: OpInput<Id>) => unknown): OpMiddleware {
  const mw = async (ctx: Context & { state: AppState; params?: Record<string, string> }) => {
    const deps = ctx.mailroom;
    const operation = deps.contract.operation(operationId)!;
    ctx.state.operationId = operationId;

    const auth = await authenticate(ctx, deps);
    let rawBody: unknown;
    let mayHoldNul = false;
    try {
      if (options.scope) requireScope(auth.granted, options.scope);
      if (operation.body) ({ value: rawBody, mayHoldNul } = await readJson(ctx, options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES));
    } catch (err) {
      // Refused before its cost is known (a missing scope, a body that is not JSON or too large):
      // it still counts as one request, and the client sees its allowance.
      await limitRate(ctx, deps, auth, 1, { enforce: false });
      throw err;
    }
    await limitRate(ctx, deps, auth, options.cost ? options.cost(rawBody) : 1);

    const params = { ...(ctx.params ?? {}) };
    const idemKey = options.idempotent ? ctx.get('Idempotency-Key') : '';
    if (idemKey.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
      throw new AppError('bad_request', `Idempotency-Key is at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters.`, { param: 'Idempotency-Key' });
    }
    const hash = idemKey ? requestHash({ operationId, mode: auth.mode, params, headers: headersAsRead(ctx, operation), body: rawBody }) : '';
    if (idemKey) {
      const replay = await deps.idempotency.begin(auth.workspaceId, idemKey, operationId, hash, auth.keyId);
      if (replay) {
        ctx.set('Idempotent-Replayed', 'true');
        respond(ctx, replay);
        return;
      }
    }

    let response: Replay | undefined;
    try {
      const input = validate<Id>(ctx, deps, operation, auth, params, rawBody, mayHoldNul);
      const result = await handler(input);
      response = { status: options.status ?? 200, body: options.status === 204 ? undefined : result };
    } catch (err) {
      if (err instanceof AppError) response = { status: err.status, body: errorBody(err, ctx.state.requestId) };
      throw err;
    } finally {
      if (idemKey) await deps.idempotency.finish(auth.workspaceId, idemKey, operationId, hash, response);
      if (ctx.method !== 'GET' && !options.changesNothing && response && response.status < 500) {
        const id = (response.body as { id?: unknown } | undefined)?.id;
        void deps.apiKeys.recordActivity(auth, {
          operationId, method: ctx.method, path: ctx.path, status: response.status,
          resourceId: typeof id === 'string' ? id : (params[Object.keys(params)[0]] ?? null),
          requestId: ctx.state.requestId, ip: ctx.ip ?? null,
        }).catch((e) => deps.logger.error({ err: e }, 'could not record key activity'));
      }
    }
    respond(ctx, response);
  };
  return Object.assign(mw as Middleware<AppState>, { operationId });
}

/**
 * The operation's own request headers as it reads them, those that differ
 * from their default: an absent or blank one is its default, a listed value
 * is in the schema's spelling ("Strict" is "strict"), so that only a header
 * that changes the request changes its hash.
 */
function headersAsRead(ctx: Context, operation: CompiledOperation): Record<string, string> {
  const out: Record<string, string> = {};
  for (const h of operation.headerParams) {
    const given = ctx.get(h.name).trim();
    const value = h.values?.find((v) => v.toLowerCase() === given.toLowerCase()) ?? given;
    if (value !== '' && value !== h.default) out[h.name] = value;
  }
  return out;
}

function respond(ctx: Context, r: Replay): void {
  ctx.status = r.status;
  if (r.body !== undefined) ctx.body = r.body;
}

export function errorBody(err: AppError, requestId: string) {
  return {
    error: {
      code: err.code,
      message: err.message,
      ...(err.param !== undefined && { param: err.param }),
      ...err.details,
      request_id: requestId,
    },
  };
}

/** The token of an `Authorization: Bearer <token>` header, if the request has one. */
export const bearerToken = (ctx: Context): string | undefined => /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('Authorization'))?.[1];

async function authenticate(ctx: Context & { state: AppState }, deps: HttpDeps): Promise<AuthContext> {
  const token = bearerToken(ctx);
  if (token === undefined) {
    ctx.set('WWW-Authenticate', 'Bearer');
    throw new AppError('unauthorized', ctx.get('Authorization') ? 'The Authorization header must be "Bearer <API key>".' : 'Missing API key: send "Authorization: Bearer <API key>".');
  }
  const auth = await deps.apiKeys.authenticate(token);
  if (!auth) {
    deps.logger.warn({ request_id: ctx.state.requestId, ip: ctx.ip, path: ctx.path }, 'refused an API key that is not valid');
    ctx.set('WWW-Authenticate', 'Bearer error="invalid_token"');
    throw new AppError('unauthorized', 'The API key is not valid.');
  }
  ctx.state.auth = auth;
  return auth;
}

/**
 * A request under /v1 that no operation answered (404, 405) still counts
 * against its workspace's allowance when it carries a valid key, and shows
 * the RateLimit headers; without a valid key it has no workspace and is left
 * as it is.
 */
export async function chargeUnrouted(ctx: Context & { state: AppState }, deps: HttpDeps): Promise<void> {
  const token = bearerToken(ctx);
  const auth = token === undefined ? undefined : await deps.apiKeys.authenticate(token);
  if (auth) await limitRate(ctx, deps, auth, 1, { enforce: false });
}

/** Takes `cost` from the workspace's bucket and says so in the headers; over the limit, 429 unless `enforce` is false. */
async function limitRate(ctx: Context, deps: HttpDeps, auth: AuthContext, cost: number, { enforce = true } = {}): Promise<void> {
  const d = await deps.rateLimiter.take(auth.workspaceId, auth.mode, deps.plan(auth.plan), cost);
  ctx.set('RateLimit-Limit', String(d.limit));
  ctx.set('RateLimit-Remaining', String(d.remaining));
  ctx.set('RateLimit-Reset', String(d.resetSeconds));
  ctx.set('RateLimit-Policy', d.policy);
  ctx.set('RateLimit-Scope', 'workspace');
  if (!d.allowed && enforce) throw rateLimitExceeded(auth.mode, d);
}

/**
 * The 415 for a request body sent with a content coding, or undefined when it
 * is sent as it is. A compressed body read as text is bytes of no meaning: it
 * is refused before a byte is read and, as RFC 7694 asks, the answer says
 * which coding is taken (Accept-Encoding: identity, set here). `instead` tells
 * the client what to send.
 */
export function contentCodingRefusal(ctx: Context, instead: string): AppError | undefined {
  const encoding = ctx.get('Content-Encoding').trim();
  if (encoding.split(',').every((coding) => /^\s*(identity)?\s*$/i.test(coding))) return undefined;
  ctx.set('Accept-Encoding', 'identity');
  return new AppError('unsupported_media_type',
    `The request body is sent with Content-Encoding '${encoding.slice(0, MAX_ECHOED_HEADER_CHARS)}', which is not taken: ${instead}.`,
    { param: 'Content-Encoding' });
}

/** The request body, refused with 413 past `maxBytes`. */
export async function readBody(ctx: Context, maxBytes: number): Promise<Buffer> {
  // The rest of a body too large is not read: the connection closes after the 413 (see createApp).
  const tooLarge = () => new AppError('payload_too_large', `The request body is over ${maxBytes} bytes.`);
  if (Number(ctx.get('Content-Length') || 0) > maxBytes) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) throw tooLarge();
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    // The client went away mid-body (ECONNRESET, "aborted"): its request is refused as its own doing,
    // not taken for a store out of reach, whose socket errors share the code.
    throw new AppError('bad_request', 'The request body did not arrive whole: the connection closed before its end.');
  }
  return Buffer.concat(chunks);
}

/**
 * The body's JSON value, and whether it may hold U+0000: JSON can only spell
 * one as the escape \u0000, and looking for that in the text is much cheaper
 * than walking every value of a large body.
 */
async function readJson(ctx: Context, maxBytes: number): Promise<{ value: unknown; mayHoldNul: boolean }> {
  // A body must say it is JSON; no body (or an empty one) reads as {}.
  const declared = Number(ctx.get('Content-Length') || 0);
  const hasBody = declared > 0 || ctx.get('Transfer-Encoding') !== '';
  // The usual spelling is taken as it is, without parsing the media type.
  if (hasBody && ctx.get('Content-Type') !== 'application/json' && !ctx.is('application/json', '+json')) {
    throw new AppError('unsupported_media_type', 'The request body must be JSON, sent with Content-Type: application/json.', { param: 'Content-Type' });
  }
  const refusal = hasBody ? contentCodingRefusal(ctx, 'send the JSON uncompressed') : undefined;
  if (refusal) throw refusal;
  const bytes = await readBody(ctx, maxBytes);
  // JSON is UTF-8; decoding other bytes would store U+FFFD in their place without a word.
  if (!isUtf8(bytes)) throw new AppError('invalid_json', 'The request body is not valid UTF-8.');
  const text = bytes.toString('utf8');
  if (text.trim() === '') return { value: undefined, mayHoldNul: false };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new AppError('invalid_json', `The request body is not valid JSON: ${(err as Error).message}`);
  }
  // Half of a surrogate pair alone is no character: UTF-8 cannot hold it, as
  // it cannot hold the bytes refused above. JSON can only spell one as an
  // escape, so only a body with such an escape is walked.
  if (SURROGATE_ESCAPE.test(text) && holdsLoneSurrogate(value)) {
    throw new AppError('invalid_json', 'The request body is not valid JSON text: a string holds half of a surrogate pair alone (an escape from \\ud800 to \\udfff without its other half), which is not a character.');
  }
  return { value, mayHoldNul: text.includes('\\u0000') };
}

const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
/** With the u flag a class of surrogates matches only those not in a pair. */
const LONE_SURROGATE = /[\ud800-\udfff]/u;

/** Walked with a list rather than recursion: however deep the body nests, no stack runs out. */
function holdsLoneSurrogate(value: unknown): boolean {
  const left = [value];
  while (left.length > 0) {
    const v = left.pop();
    if (typeof v === 'string') {
      if (LONE_SURROGATE.test(v)) return true;
    } else if (typeof v === 'object' && v !== null) {
      for (const [key, inner] of Object.entries(v)) {
        if (LONE_SURROGATE.test(key)) return true;
        left.push(inner);
      }
    }
  }
  return false;
}

// C0 and C1 controls and DEL: never part of an address, subject or id, and
// a NUL cut short the full-text query it reached.
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;
const CURSOR_PARAMS = new Set(['starting_after', 'ending_before']);

/**
 * One query parameter as the schema is to see it, after the checks ajv's
 * coercion would let through: control characters, a single-valued parameter
 * given twice (which one was meant?), and a number spelled otherwise than in
 * decimal digits ("0x10" and "1e1" coerce to 16 and 10).
 */
function queryValue(operation: CompiledOperation, name: string, value: string | string[] | undefined): unknown {
  const values = [value ?? ''].flat();
  const bad = (message: string) => new AppError('validation_error', message, { status: 400, param: name });
  // A cursor is refused as invalid_cursor, by the codec, for any text it did not make.
  if (!CURSOR_PARAMS.has(name) && values.some((v) => CONTROL_CHARACTER.test(v))) throw bad(`'${name}' must not contain control characters.`);
  if (operation.arrayParams.has(name)) {
    // "tags=" or "tags=a,,b" filters by nothing the client meant: refused rather than read as no filter.
    const items = values.flatMap((v) => v.split(',')).map((v) => v.trim());
    if (items.includes('')) throw bad(`'${name}' holds an empty value; give values separated by commas, or leave '${name}' out.`);
    return items;
  }
  if (values.length > 1) throw bad(`'${name}' is given ${values.length} times; give it once.`);
  if (operation.integerParams.has(name) && !/^-?\d+$/.test(values[0])) throw bad(`'${name}' must be a whole number in decimal digits.`);
  return values[0];
}

/** Whether a percent-encoded URL part decodes to UTF-8 text: not "%FF" (no UTF-8), not "%G1" or a lone "%" (no escape at all). */
function decodable(encoded: string): boolean {
  try {
    decodeURIComponent(encoded);
    return true;
  } catch {
    return false;
  }
}

/**
 * Refuses a query or path parameter whose percent-encoding is malformed,
 * naming it: Koa's query parser and the router decode such text leniently
 * (U+FFFD for %FF, "%G1" as it is), and the request would then filter or
 * look up something the client never wrote. A path parameter that cannot be
 * decoded names no record, as one with a control character does.
 */
function refuseMalformedEncoding(ctx: Context, operation: CompiledOperation): void {
  // Only an escape can be malformed; most requests have none.
  if (!ctx.querystring.includes('%') && !ctx.path.includes('%')) return;
  const message = (param: string) => `'${param}' is not valid percent-encoded UTF-8.`;
  const bad = (param: string) => new AppError('validation_error', message(param), { status: 400, param });
  for (const pair of ctx.querystring ? ctx.querystring.split('&') : []) {
    const [name, value = ''] = pair.split(/=(.*)/s);
    // A name that does not decode is named as it was written.
    if (!decodable(name)) throw bad(name);
    if (!decodable(value)) throw bad(decodeURIComponent(name));
  }
  // The path's segments, from the end, line up with the operation's: a parameter holds no raw '/'.
  const template = operation.path.split('/').reverse();
  const segments = ctx.path.replace(/\/$/, '').split('/').reverse();
  template.forEach((part, i) => {
    const name = /^\{(.+)\}$/.exec(part)?.[1];
    if (name !== undefined && !decodable(segments[i] ?? '')) {
      throw pathRefusal(operation, name, { notFound: `No record has a '${name}' that is not valid percent-encoded UTF-8.`, invalid: message(name) });
    }
  });
}

/**
 * A path parameter no record could have: nothing found where the path names a
 * record to find, a validation error where the operation would create one
 * (PUT /contacts/by-email/{email}, which lists no 404).
 */
function pathRefusal(operation: CompiledOperation, param: string | undefined, said: { notFound: string; invalid: string }): AppError {
  return operation.pathFindsRecord
    ? new AppError('not_found', said.notFound, { param })
    : new AppError('validation_error', said.invalid, { status: operation.validationStatus, param });
}

function validate<Id extends OperationId>(ctx: Context, deps: HttpDeps, operation: CompiledOperation, auth: AuthContext,
  params: Record<string, string>, rawBody: unknown, mayHoldNul: boolean): OpInput<Id> {
  refuseMalformedEncoding(ctx, operation);
  // No record's id or address holds a control character; PostgreSQL could not even compare one with a NUL.
  const controlled = Object.keys(params).find((name) => CONTROL_CHARACTER.test(params[name]));
  if (controlled !== undefined) {
    throw pathRefusal(operation, controlled, {
      notFound: `No record has a '${controlled}' with control characters.`, invalid: `'${controlled}' must not contain control characters.`,
    });
  }
  // As in the query: ajv would take "0x1", "1e0" or " 1" for 1, and the same record would answer to many spellings.
  const misspelt = Object.keys(params).find((name) => operation.integerParams.has(name) && !/^-?\d+$/.test(params[name]));
  if (misspelt !== undefined) {
    throw pathRefusal(operation, misspelt, {
      notFound: `No record has a '${misspelt}' of '${params[misspelt]}': it is a whole number in decimal digits.`,
      invalid: `'${misspelt}' must be a whole number in decimal digits.`,
    });
  }
  if (!operation.params(params)) {
    const e = describeAjvError(operation.params.errors?.[0]);
    throw pathRefusal(operation, e.param, { notFound: e.message, invalid: e.message });
  }
  const query: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(ctx.query)) query[name] = queryValue(operation, name, value);
  if (!operation.query(query)) {
    throw new AppError('validation_error', describeAjvError(operation.query.errors?.[0]).message,
      { status: 400, param: describeAjvError(operation.query.errors?.[0]).param });
  }
  // An operation that takes a body reads a missing one as {}; a JSON null is a body, and not an object.
  const body = operation.body && rawBody === undefined ? {} : rawBody;
  checkRequestBody(operation, body);
  // PostgreSQL's text and jsonb cannot store U+0000, and no field of the API means one.
  if (mayHoldNul) refuseNulCharacters(operation, body);
  let page: PageQuery | undefined;
  if (operation.paged) {
    if (query.starting_after !== undefined && query.ending_before !== undefined) {
      throw new AppError('bad_request', 'Pass starting_after or ending_before, not both.', { param: 'ending_before' });
    }
    const list = [operation.id, ...Object.values(params)].join('/');
    const ws = auth.workspaceId;
    page = {
      limit: query.limit as number,
      after: query.starting_after !== undefined ? deps.cursors.decode(list, ws, String(query.starting_after), 'starting_after') : undefined,
      before: query.ending_before !== undefined ? deps.cursors.decode(list, ws, String(query.ending_before), 'ending_before') : undefined,
      cursor: (pos) => deps.cursors.encode(list, ws, pos),
    };
  }
  // ajv has checked body, query and params against the schemas the types are generated from.
  return {
    auth, body: body as RequestBody<Id>, query: query as QueryParams<Id>, params: params as PathParams<Id>,
    page: page as OpInput<Id>['page'], requestId: ctx.state.requestId, ip: ctx.ip,
    header: (name) => ctx.get(name),
    check<Name extends SchemaName>(schema: Name, value: unknown) {
      const problem = deps.contract.checkSchema(schema, value);
      return problem ? { problem } : { value: value as Schema<Name> };
    },
  };
}
