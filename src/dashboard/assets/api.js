// @ts-check
// Talking to the API: fetch with the signed-in key, the API's error object
// turned into an ApiError whose message is shown as it is.

/** sessionStorage, not localStorage: the key lives only as long as the tab. */
const KEY_STORAGE = 'mailroom.apiKey';

/**
 * @typedef {{ code: string, message: string, param?: string, request_id?: string, problems?: { message: string }[],
 *   [field: string]: unknown }} ErrorBody
 */

/** Called when the signed-in key stops working (a 401, or revoked from this tab): the app signs out. @type {(message: string) => void} */
let onSessionEnd = () => {};

/** @param {(message: string) => void} handler */
export function whenSessionEnds(handler) {
  onSessionEnd = handler;
}

/** Ends the session: the key is forgotten and the sign-in form says why. @param {string} message */
export function endSession(message) {
  onSessionEnd(message);
}

export function storedKey() {
  return sessionStorage.getItem(KEY_STORAGE);
}

/** The signed-in key's mode, told by its prefix: a test key's mail is kept, never sent. */
export function keyMode() {
  const key = storedKey() ?? '';
  return key.startsWith('svc_test_') ? 'test' : key.startsWith('svc_live_') ? 'live' : 'unknown';
}

/** @param {string} key */
export function storeKey(key) {
  sessionStorage.setItem(KEY_STORAGE, key);
}

export function forgetKey() {
  sessionStorage.removeItem(KEY_STORAGE);
}

export class ApiError extends Error {
  /**
   * @param {number} status  0 when the server could not be reached
   * @param {string} message
   * @param {string} [requestId]
   * @param {{ code?: string, param?: string, retryAfter?: number, body?: Record<string, unknown> }} [details]  the API's
   *   machine code, the field it names, the seconds to wait before trying again (a 429's Retry-After), and the whole
   *   error object (an already_exists names the record there)
   */
  constructor(status, message, requestId, details = {}) {
    super(message);
    this.status = status;
    this.requestId = requestId;
    this.code = details.code;
    this.param = details.param;
    this.retryAfter = details.retryAfter;
    this.body = details.body ?? {};
  }
}


/**
 * One call with the given key: the parsed body (null for 204), or an
 * ApiError carrying the API's message.
 * @param {string} key
 * @param {string} method
 * @param {string} path
 * @param {{ query?: URLSearchParams, body?: unknown, text?: boolean }} [options]  `text`: the body as text (a message's source)
 * @returns {Promise<any>}
 */
export async function request(key, method, path, options = {}) {
  const search = options.query?.toString();
  /** @type {Record<string, string>} */
  const headers = { Authorization: `Bearer ${key}`, Accept: 'application/json' };
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(search ? `${path}?${search}` : path,
      { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  } catch {
    throw new ApiError(0, 'Could not reach the Mailroom server. Check the connection and try again.');
  }
  if (res.status === 204) return null;
  if (res.ok && options.text) return res.text();
  const body = await res.json().catch(() => null);
  if (res.ok) return body;
  /** @type {ErrorBody | undefined} */
  const error = body?.error;
  const retryAfter = Number(res.headers.get('Retry-After') ?? '') || undefined;
  throw new ApiError(res.status, error?.message ?? `The server answered ${res.status} ${res.statusText}.`,
    error?.request_id ?? res.headers.get('X-Request-Id') ?? undefined, { code: error?.code, param: error?.param, retryAfter, body: error });
}

/** A call refused for the rate limit is tried again after its Retry-After, this many times at most. */
const RATE_LIMIT_TRIES = 10;
/** A call refused while the store is unavailable is tried again this many times at most, each wait at most this long. */
const STORE_WAITS = 4;
const STORE_WAIT_MAX_SECONDS = 30;

/** Whether the store was briefly unavailable: the whole request was refused, and its Retry-After names when to come back. @param {unknown} err */
function storeUnavailable(err) {
  return err instanceof ApiError && err.status === 503 && err.code === 'store_unavailable';
}

/**
 * Whether waiting lifts the refusal: the request rate's 429 names its wait in Retry-After. A send quota's 429 does
 * not pass by waiting a moment (the daily one names hours, to UTC midnight; the monthly one names none).
 * @param {unknown} err
 */
export function passesByWaiting(err) {
  return err instanceof ApiError && err.status === 429 && err.code === 'rate_limit_exceeded' && err.retryAfter !== undefined;
}

/**
 * Which limit a 429 that waiting will not lift names, or that the store stayed unavailable through every wait, said
 * plainly, to put before the API's message; undefined for any other error. Work of many calls stops at it: each
 * further call would be refused the same.
 * @param {unknown} err
 */
export function limitReached(err) {
  if (storeUnavailable(err)) return `Stopped: the server's store stayed unavailable through ${STORE_WAITS} waits. Try again in a few minutes.`;
  if (!(err instanceof ApiError && err.status === 429) || passesByWaiting(err)) return undefined;
  const limit = err.code === 'daily_quota_exceeded' ? 'the daily send quota'
    : err.code === 'monthly_quota_exceeded' ? 'the monthly send quota' : 'a limit of the API';
  return `Stopped at ${limit}, which waiting will not lift.`;
}

/**
 * Makes `call`, and again while the rate limit refuses it, or the store is briefly unavailable (a 503), each time
 * after the wait its Retry-After names; a store's wait is told to `onStoreWait` first, as a sentence to show, and
 * the sentence is taken back (undefined) once the call is answered. Any other refusal, a quota's 429 among them, is
 * thrown at once, as is the last refusal past the bounds. Only for calls that a 429 or a 503 refuses whole, so that
 * nothing is applied twice.
 * @template T
 * @param {() => Promise<T>} call
 * @param {(sentence: string | undefined) => void} [onStoreWait]
 * @returns {Promise<T>}
 */
export async function waitingOutRateLimit(call, onStoreWait = () => {}) {
  let storeWaits = 0;
  for (let attempt = 1; ; attempt++) {
    try {
      const answer = await call();
      if (storeWaits > 0) onStoreWait(undefined);
      return answer;
    } catch (err) {
      const rateLimited = passesByWaiting(err) && attempt < RATE_LIMIT_TRIES;
      const storeDown = storeUnavailable(err) && storeWaits < STORE_WAITS;
      if (!rateLimited && !storeDown) throw err;
      let seconds = /** @type {ApiError} */ (err).retryAfter ?? 1;
      if (storeDown) {
        seconds = Math.min(seconds, STORE_WAIT_MAX_SECONDS);
        storeWaits++;
        onStoreWait(`The server's store is briefly unavailable: trying again in ${seconds} s (wait ${storeWaits} of ${STORE_WAITS}).`);
      }
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    }
  }
}

/**
 * Saves a file the API serves (an attachment) under `filename`: fetched with
 * the signed-in key, which a plain link could not carry, then handed to the
 * browser as a download.
 * @param {string} path
 * @param {string} filename
 */
export async function download(path, filename) {
  const key = storedKey();
  if (!key) throw new ApiError(401, 'Sign in with an API key first.');
  const res = await fetch(path, { headers: { Authorization: `Bearer ${key}` } });
  if (!res.ok) {
    /** @type {ErrorBody | undefined} */
    const error = (await res.json().catch(() => null))?.error;
    throw new ApiError(res.status, error?.message ?? `The server answered ${res.status}.`, error?.request_id);
  }
  const url = URL.createObjectURL(await res.blob());
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/**
 * A call with the signed-in key. A 401 means the key no longer works
 * (revoked, or the store was reset): sign out and say why.
 * @param {string} method
 * @param {string} path
 * @param {{ query?: URLSearchParams, body?: unknown, text?: boolean }} [options]
 * @returns {Promise<any>}
 */
export async function api(method, path, options) {
  const key = storedKey();
  if (!key) throw new ApiError(401, 'Sign in with an API key first.');
  try {
    return await request(key, method, path, options);
  } catch (err) {
    // A late answer to an old key must not sign out a key entered since.
    if (err instanceof ApiError && err.status === 401 && storedKey() === key) endSession(err.message);
    throw err;
  }
}
