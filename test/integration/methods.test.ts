import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadContract } from '../../src/contract/contract.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

// Every path of the served OpenAPI document, asked with each method it does
// not take: 405 with the error object and an Allow header of exactly the
// methods it takes (HEAD wherever GET is), whatever other route a router
// holds for the same text (/emails/batch is not an email's id). HEAD on a
// GET path answers as GET does, without a body.

type Json = Record<string, any>;

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** A request path for a path template: a number where the parameter is one, else an id no record has. */
function filled(template: string, item: Json): string {
  const parameters: Json[] = [...(item.parameters ?? []), ...METHODS.flatMap((m) => item[m.toLowerCase()]?.parameters ?? [])];
  return '/v1' + template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const parameter = parameters.find((p) => p.name === name);
    return parameter?.schema?.type === 'integer' ? '1' : name === 'email' ? 'nobody%40remote.test' : 'x_00000000000000000000000000';
  });
}

const sorted = (allow: string | null) => (allow ?? '').split(',').map((m) => m.trim()).sort();

describe('methods on every path of the document', () => {
  let t: TestApp;
  let doc: Json;

  beforeAll(async () => {
    t = await startTestApp({ env: { MAILROOM_DEFAULT_PLAN: 'unlimited' } });
    doc = (await (await fetch(`${t.url}/v1/openapi.json`)).json()) as Json;
  });

  afterAll(async () => {
    await t?.close();
  });

  const ask = (method: string, path: string) => fetch(t.url + path, { method, headers: { Authorization: `Bearer ${t.token}` } });

  it('answers a method a path does not take with 405, its methods in Allow, and the error object', async () => {
    const contract = loadContract();
    const failures: string[] = [];
    let asked = 0;
    for (const [template, item] of Object.entries<Json>(doc.paths)) {
      const path = filled(template, item);
      const taken = METHODS.filter((m) => item[m.toLowerCase()]);
      const allow = (taken.includes('GET') ? ['HEAD', ...taken] : taken).sort();
      for (const method of ['HEAD', ...METHODS].filter((m) => !allow.includes(m))) {
        asked++;
        const res = await ask(method, path);
        const text = await res.text();
        if (res.status !== 405) failures.push(`${method} ${path}: ${res.status} ${text.slice(0, 120)}`);
        if (JSON.stringify(sorted(res.headers.get('allow'))) !== JSON.stringify(allow)) failures.push(`${method} ${path}: Allow ${res.headers.get('allow')}, expected ${allow.join(', ')}`);
        // A key was sent: the answer is counted as any other.
        if (res.headers.get('ratelimit-scope') !== 'workspace') failures.push(`${method} ${path}: no RateLimit headers`);
        if (method === 'HEAD') {
          if (text !== '') failures.push(`${method} ${path}: a body`);
        } else {
          const body = JSON.parse(text) as { error?: { code?: string } };
          if (body.error?.code !== 'method_not_allowed') failures.push(`${method} ${path}: code ${body.error?.code}`);
          const problem = contract.checkSchema('Error', body);
          if (problem) failures.push(`${method} ${path}: not the error object (${problem.message})`);
        }
      }
      // OPTIONS names the same methods.
      const options = await ask('OPTIONS', path);
      if (options.status !== 200 || JSON.stringify(sorted(options.headers.get('allow'))) !== JSON.stringify(allow)) {
        failures.push(`OPTIONS ${path}: ${options.status} Allow ${options.headers.get('allow')}, expected ${allow.join(', ')}`);
      }
    }
    expect(failures).toEqual([]);
    expect(asked).toBeGreaterThan(Object.keys(doc.paths).length);
  }, 60_000);

  it('answers the fixed paths beside an id the same, whatever the case of the path or a final slash', async () => {
    for (const [method, path, allow] of [
      ['GET', '/v1/emails/batch', 'POST'], ['HEAD', '/v1/emails/check', 'POST'], ['PATCH', '/V1/EMAILS/BATCH/', 'POST'],
      ['DELETE', '/v1/contacts/bulk', 'POST'], ['DELETE', '/v1/api-keys/current', 'HEAD, GET'], ['GET', '/v1/templates/render', 'POST'],
    ]) {
      const res = await ask(method, path);
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get('allow'), `${method} ${path}`).toBe(allow);
    }
  });

  it('answers a method no route takes with 405 on a known path, and 404 on another, with the error object', async () => {
    for (const [method, path, status, allow] of [
      ['PURGE', '/v1/emails', 405, 'HEAD, GET, POST'], ['PROPFIND', '/v1/emails/batch', 405, 'POST'],
      ['PURGE', '/healthz', 405, 'HEAD, GET'], ['PURGE', '/dashboard', 405, 'HEAD, GET'], ['PURGE', '/v1/no-such-area', 404, null],
    ] as const) {
      const res = await ask(method, path);
      expect(res.status, `${method} ${path}`).toBe(status);
      expect(res.headers.get('allow'), `${method} ${path}`).toBe(allow);
      expect(((await res.json()) as { error: { code: string } }).error.code, `${method} ${path}`).toBe(status === 405 ? 'method_not_allowed' : 'not_found');
    }
  });

  it('answers HEAD on a GET path as GET, without a body', async () => {
    const paths = Object.entries<Json>(doc.paths).filter(([, item]) => item.get).map(([template, item]) => filled(template, item));
    for (const path of ['/v1/openapi.json', '/v1/emails', ...paths]) {
      const [get, head] = [await ask('GET', path), await ask('HEAD', path)];
      const body = await get.arrayBuffer();
      expect(head.status, path).toBe(get.status);
      expect(head.headers.get('content-type'), path).toBe(get.headers.get('content-type'));
      expect(head.headers.get('content-length'), path).toBe(String(body.byteLength));
      expect(await head.text(), path).toBe('');
    }
  });

  it('serves the document to GET and HEAD only', async () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const res = await ask(method, '/v1/openapi.json');
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow'), method).toBe('HEAD, GET');
      expect(((await res.json()) as { error: { code: string } }).error.code, method).toBe('method_not_allowed');
    }
  });
});
