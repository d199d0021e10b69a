import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino, { type Logger } from 'pino';
import { loadConfig } from '../../src/config.js';
import { ManualClock, systemClock, type Clock } from '../../src/core/clock.js';
import { startMailroom, type Mailroom } from '../../src/main.js';
import { loadContract, type Contract } from '../../src/contract/contract.js';
import { markDomainActive } from '../../src/domains/domains.repo.js';
import type { Domain } from '../../src/domains/index.js';
import { createTestDatabase, onPostgres } from './database.js';

// A real Mailroom on a loopback port with its own temporary data dir (and,
// with MAILROOM_TEST_DATABASE_URL set, its own fresh PostgreSQL database),
// and an HTTP client that checks every response against the contract in
// schema/.

let contract: Contract | undefined;
const sharedContract = () => (contract ??= loadContract());

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface ApiClient {
  request<T = any>(method: string, path: string, options?: { body?: unknown; rawBody?: string; headers?: Record<string, string>; token?: string | null }): Promise<ApiResponse<T>>;
  get<T = any>(path: string, options?: { headers?: Record<string, string>; token?: string | null }): Promise<ApiResponse<T>>;
  post<T = any>(path: string, body?: unknown, options?: { headers?: Record<string, string>; token?: string | null }): Promise<ApiResponse<T>>;
  patch<T = any>(path: string, body?: unknown, options?: { headers?: Record<string, string>; token?: string | null }): Promise<ApiResponse<T>>;
  put<T = any>(path: string, body?: unknown, options?: { headers?: Record<string, string>; token?: string | null }): Promise<ApiResponse<T>>;
  delete<T = any>(path: string, options?: { headers?: Record<string, string>; token?: string | null }): Promise<ApiResponse<T>>;
  /** The same client with another key. */
  as(token: string | null): ApiClient;
}

/** Finds the operation for a concrete request path by matching the contract's path templates. */
function operationFor(method: string, path: string): string | undefined {
  const doc = sharedContract().document;
  const bare = path.replace(/^\/v1/, '').split('?')[0];
  for (const [template, item] of Object.entries(doc.paths as Record<string, any>)) {
    const re = new RegExp('^' + template.replace(/\{[^}]+\}/g, '[^/]+') + '$');
    if (re.test(bare) && item[method.toLowerCase()]) return item[method.toLowerCase()].operationId;
  }
  return undefined;
}

export function apiClient(baseUrl: string, token: string | null): ApiClient {
  const request = async (method: string, path: string, options: { body?: unknown; rawBody?: string; headers?: Record<string, string>; token?: string | null } = {}) => {
    const key = options.token === undefined ? token : options.token;
    const headers: Record<string, string> = { ...(key ? { Authorization: `Bearer ${key}` } : {}), ...options.headers };
    let payload: string | undefined = options.rawBody;
    if (options.body !== undefined) {
      payload = JSON.stringify(options.body);
      headers['Content-Type'] ??= 'application/json';
    }
    const res = await fetch(baseUrl + path, { method, headers, body: payload });
    const text = await res.text();
    const body = text === '' ? undefined : res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text;
    // Every response is checked against the contract: error shape for
    // non-2xx, the operation's schema for 2xx.
    if (res.status >= 400) {
      if (!body?.error?.code || !body.error.message || !body.error.request_id) {
        throw new Error(`${method} ${path} -> ${res.status} without the error object: ${text}`);
      }
    } else {
      const opId = operationFor(method, path);
      if (!opId) throw new Error(`${method} ${path} -> ${res.status}, but the contract has no such operation`);
      const problem = sharedContract().checkResponse(opId, res.status, body);
      if (problem) throw new Error(`${method} ${path} -> ${res.status} does not match ${opId}'s response schema: ${problem}\n${text.slice(0, 2000)}`);
    }
    return { status: res.status, headers: res.headers, body };
  };
  const client: ApiClient = {
    request,
    get: (path, o) => request('GET', path, o),
    post: (path, body, o) => request('POST', path, { ...o, body }),
    patch: (path, body, o) => request('PATCH', path, { ...o, body }),
    put: (path, body, o) => request('PUT', path, { ...o, body }),
    delete: (path, o) => request('DELETE', path, o),
    as: (t) => apiClient(baseUrl, t),
  };
  return client;
}

export interface TestApp {
  url: string;
  dataDir: string;
  /** The database the app runs on (MAILROOM_DATABASE_URL), for a second process on the same data. */
  databaseUrl: string;
  mailroom: Mailroom;
  clock: Clock;
  /** Client authenticated with a full-access live key of the default workspace. */
  api: ApiClient;
  token: string;
  workspaceId: string;
  seed: Seed;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export interface Seed {
  workspace(options?: { name?: string; plan?: string }): Promise<{ id: string; name: string }>;
  key(options?: { workspaceId?: string; scopes?: string[]; mode?: 'live' | 'test'; name?: string }): Promise<{ id: string; token: string }>;
  /** A domain made through the service and marked active without DNS (no re-checks are planned for it). */
  activeDomain(name: string, options?: { workspaceId?: string }): Promise<Domain>;
}

export interface TestAppOptions {
  /** Extra MAILROOM_* variables. */
  env?: Record<string, string>;
  /** A ManualClock to move time; default: the system clock. */
  clock?: ManualClock;
  /** The server's logger, for a test that reads what it logs; default: silent (MAILROOM_TEST_LOG sets a level). */
  logger?: Logger;
}

/**
 * Settings of a Mailroom whose live mail would leave it (through a relay on a
 * closed port, so nothing does): a live key must send from an active domain
 * of its own, which in sink mode it need not.
 */
export const SENDING_ENV = { MAILROOM_DELIVERY: 'relay', MAILROOM_RELAY_URL: 'smtp://127.0.0.1:9' };

let workspaceCounter = 0;

export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-test-'));
  const database = onPostgres && options.env?.MAILROOM_DATABASE_URL === undefined ? await createTestDatabase() : undefined;
  const config = loadConfig({
    MAILROOM_DATA_DIR: dataDir,
    MAILROOM_HTTP_HOST: '127.0.0.1',
    MAILROOM_HTTP_PORT: '0',
    MAILROOM_SMTP_PORT: '0',
    MAILROOM_SUBMISSION_PORT: '0',
    MAILROOM_DELIVERY: 'sink',
    MAILROOM_SEND_DELAY: '0',
    MAILROOM_LOG_LEVEL: 'silent',
    MAILROOM_HOSTNAME: 'mx.mailroom.test',
    ...(database ? { MAILROOM_DATABASE_URL: database.url } : {}),
    ...options.env,
  });
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? pino({ level: process.env.MAILROOM_TEST_LOG ?? 'silent' });
  const mailroom = await startMailroom(config, { clock, logger }).catch(async (err: unknown) => {
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  });
  const { services } = mailroom;
  const defaultWs = await services.workspaces.ensureDefault();

  const seed: Seed = {
    async workspace({ name = `ws-${process.pid}-${++workspaceCounter}`, plan } = {}) {
      const ws = await services.workspaces.create({ name, plan });
      return { id: ws.id, name: ws.name };
    },
    async key({ workspaceId = defaultWs.id, scopes, mode = 'live', name = 'test key' } = {}) {
      const key = await services.apiKeys.create({ workspaceId, name, scopes, mode });
      return { id: key.id, token: key.token };
    },
    async activeDomain(name, { workspaceId = defaultWs.id } = {}) {
      const created = await services.domains.create(workspaceId, { name });
      await services.store.write((tx) => markDomainActive(tx, workspaceId, created.id, clock.now()));
      return services.domains.get(workspaceId, created.id);
    },
  };
  const { token } = await seed.key({ name: 'harness' });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await mailroom.close();
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  return {
    url: mailroom.httpUrl,
    dataDir,
    databaseUrl: config.databaseUrl,
    mailroom,
    clock,
    api: apiClient(mailroom.httpUrl, token),
    token,
    workspaceId: defaultWs.id,
    seed,
    close,
    [Symbol.asyncDispose]: close,
  };
}
