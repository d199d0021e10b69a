import { statSync } from 'node:fs';
import { Agent, get } from 'node:http';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { onPostgres } from '../helpers/database.js';

// What the HTTP layer refuses before a handler runs, each answered with the
// error object: control characters in query parameters, ambiguous numbers
// and repeats, bodies that do not say they are JSON, and what Node's HTTP
// parser itself refuses.

/** One HTTP/1.1 exchange over a raw socket; resolves with what came back before the server closed. */
function rawHttp(url: string, request: string): Promise<{ status: number; headers: string; body: any }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = new Socket();
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within 5 s: ${JSON.stringify(text)}`));
    }, 5_000);
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => { text += chunk; });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      const [head, body = ''] = text.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), headers: head, body: body ? JSON.parse(body) : undefined });
    });
    socket.connect(Number(port), '127.0.0.1', () => socket.write(request));
  });
}

describe('requests refused before any handler', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
    await t.seed.activeDomain('acme.test');
    expect((await t.api.post('/v1/emails', { from: 'a@acme.test', to: 'ab.cd@remote.test', subject: 'abcd', text: 'x' })).status).toBe(201);
    expect((await t.api.post('/v1/contacts', { email: 'ab.cd@remote.test' })).status).toBe(201);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('a control character in any search or list filter is 400 validation_error naming the parameter', async () => {
    const filters: Array<[string, string]> = [
      ['/v1/emails', 'to'], ['/v1/emails', 'from'], ['/v1/emails', 'subject'], ['/v1/emails', 'tags'], ['/v1/emails', 'domain_id'],
      ['/v1/events', 'to'], ['/v1/events', 'from'], ['/v1/events', 'email_id'],
      ['/v1/inbound', 'to'], ['/v1/inbound', 'from'],
      ['/v1/contacts', 'email'], ['/v1/suppressions', 'email'],
    ];
    // NUL, another C0 control, DEL and a C1 control (NEL), percent-encoded as a client would send them.
    for (const control of ['%00', '%01', '%1B', '%7F', '%C2%85']) {
      for (const [path, name] of filters) {
        const res = await t.api.get(`${path}?${name}=ab${control}cd`);
        expect(res.status, `${path} ${name} ${control}`).toBe(400);
        expect(res.body.error, `${path} ${name} ${control}`).toMatchObject({ code: 'validation_error', param: name, message: `'${name}' must not contain control characters.` });
      }
    }
    // A cursor is opaque: any text the server did not make is an invalid cursor.
    expect((await t.api.get('/v1/emails?starting_after=ab%00cd')).body.error).toMatchObject({ code: 'invalid_cursor', param: 'starting_after' });
    // The same filters without the control character are searched as usual.
    expect((await t.api.get('/v1/emails?to=ab.cd')).body.data).toHaveLength(1);
    expect((await t.api.get('/v1/emails?subject=abcd')).body.data).toHaveLength(1);
    expect((await t.api.get('/v1/contacts?email=ab.cd')).body.data).toHaveLength(1);
    expect((await t.api.get('/v1/events?to=ab.cd')).status).toBe(200);
  });

  it('a query parameter whose percent-encoding is not UTF-8, or not one at all, is 400 naming it; a path id, one that names no record', async () => {
    const contact = (await t.api.get('/v1/contacts')).body.data[0];
    const refused: Array<[string, string, string]> = [
      // Leniently decoded, %FF would have been searched as U+FFFD, and %G1 as the three characters.
      ['GET', '/v1/emails?to=%FF', 'to'], ['GET', '/v1/emails?to=ab%C0%AF', 'to'], ['GET', '/v1/emails?subject=%G1', 'subject'],
      ['GET', '/v1/emails?subject=100%', 'subject'], ['GET', '/v1/emails?limit=5&from=%E9t%E9', 'from'],
      ['GET', '/v1/contacts?email=%ED%A0%80', 'email'], ['GET', '/v1/emails?starting_after=%FF', 'starting_after'],
      ['GET', '/v1/emails?t%FFo=x', 't%FFo'],
    ];
    for (const [method, path, param] of refused) {
      const res = await t.api.request(method, path);
      expect(res.status, `${method} ${path}`).toBe(400);
      expect(res.body.error, `${method} ${path}`).toMatchObject({ code: 'validation_error', param, message: `'${param}' is not valid percent-encoded UTF-8.` });
    }
    // A path id that cannot be decoded names no record: the 404 these operations list, as for an unknown id.
    const notFound: Array<[string, string, string]> = [
      ['GET', `/v1/contacts/${contact.id}%FF`, 'contact_id'], ['GET', `/v1/contacts/${contact.id}%FF/`, 'contact_id'],
      ['GET', '/v1/emails/em_%E9/events', 'email_id'], ['GET', '/v1/emails/%E0%A4%A', 'email_id'], ['GET', '/v1/emails/%zz', 'email_id'],
      ['POST', '/v1/emails/%zz/cancel', 'email_id'], ['DELETE', `/v1/contacts/${contact.id}/tags/tag_%C0%AF`, 'tag_id'],
      // Numbers in a path too: a template's version, an attachment's index.
      ['GET', '/v1/templates/welcome/versions/1%G1', 'version'], ['GET', '/v1/emails/em_x/attachments/%FF', 'index'],
    ];
    for (const [method, path, param] of notFound) {
      const res = await t.api.request(method, path);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error, `${method} ${path}`).toMatchObject({ code: 'not_found', param, message: `No record has a '${param}' that is not valid percent-encoded UTF-8.` });
    }
    // Where the path names what the operation creates, it is the validation_error that operation lists.
    for (const path of ['/v1/contacts/by-email/%FF', '/v1/contacts/by-email/ab%G1@remote.test']) {
      const res = await t.api.put(path, { name: 'x' });
      expect(res.status, path).toBe(422);
      expect(res.body.error, path).toMatchObject({ code: 'validation_error', param: 'email', message: "'email' is not valid percent-encoded UTF-8." });
    }
    expect((await t.api.get('/v1/contacts?email=%FF')).status).toBe(400);
    // Valid UTF-8, percent-encoded or not, is read as usual.
    expect((await t.api.post('/v1/emails', { from: 'a@acme.test', to: 'rené@remote.test', subject: 'Café', text: 'x' })).status).toBe(201);
    expect((await t.api.get('/v1/emails?to=ren%C3%A9')).body.data.map((e: { to: string[] }) => e.to)).toEqual([['rené@remote.test']]);
    expect((await t.api.get('/v1/emails?subject=Caf%C3%A9+')).status).toBe(200);
    expect((await t.api.get('/v1/emails?subject=Caf%C3%A9')).body.data).toHaveLength(1);
    expect((await t.api.get('/v1/emails?subject=100%25')).body.data).toEqual([]);
    const upserted = await t.api.put('/v1/contacts/by-email/ren%C3%A9%40remote.test', { name: 'René' });
    expect(upserted.status).toBe(200);
    expect(upserted.body).toMatchObject({ email: 'rené@remote.test', name: 'René' });
    expect((await t.api.get(`/v1/contacts/${upserted.body.id}`)).body.name).toBe('René');
  });

  it('a limit given twice, or spelled otherwise than in decimal digits, is 400', async () => {
    for (const query of ['limit=5&limit=6', 'limit=5&limit=5', 'limit=0x10', 'limit=1e1', 'limit=%205', 'limit=%2B5', 'limit=5.0', 'limit=']) {
      const res = await t.api.get(`/v1/emails?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error, query).toMatchObject({ code: 'validation_error', param: 'limit' });
    }
    expect((await t.api.get('/v1/emails?limit=5&limit=6')).body.error.message).toBe("'limit' is given 2 times; give it once.");
    expect((await t.api.get('/v1/emails?limit=0x10')).body.error.message).toBe("'limit' must be a whole number in decimal digits.");
    // Any single-valued parameter, not only limit; list parameters still take repeats.
    expect((await t.api.get('/v1/emails?to=a&to=b')).body.error).toMatchObject({ code: 'validation_error', param: 'to' });
    expect((await t.api.get('/v1/emails?limit=05')).status).toBe(200);
    expect((await t.api.get('/v1/emails?tags=a&tags=b')).status).toBe(200);
  });

  it('a body that does not say it is JSON is 415 unsupported_media_type', async () => {
    const body = JSON.stringify({ name: 'key' });
    for (const type of [undefined, 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const res = await t.api.request('POST', '/v1/api-keys', { rawBody: body, headers: type ? { 'Content-Type': type } : {} });
      expect(res.status, type).toBe(415);
      expect(res.body.error, type).toMatchObject({ code: 'unsupported_media_type', param: 'Content-Type' });
    }
    for (const type of ['application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/merge-patch+json']) {
      expect((await t.api.request('POST', '/v1/api-keys', { rawBody: body, headers: { 'Content-Type': type } })).status, type).toBe(201);
    }
    // No body at all, or an empty one, needs no type: an operation whose fields are all optional reads it as {}.
    const contact = (await t.api.get('/v1/contacts')).body.data[0];
    expect((await t.api.request('POST', `/v1/contacts/${contact.id}/unsubscribe`, {})).status).toBe(200);
    expect((await t.api.request('POST', `/v1/contacts/${contact.id}/unsubscribe`, { rawBody: '', headers: { 'Content-Type': 'text/plain' } })).status).toBe(200);
  });

  it('a compressed body is 415 naming its Content-Encoding, and is not read as JSON', async () => {
    const post = (body: Buffer | string, encoding: string) => fetch(`${t.url}/v1/api-keys`, {
      method: 'POST', body,
      headers: { Authorization: `Bearer ${t.token}`, 'Content-Type': 'application/json', 'Content-Encoding': encoding },
    });
    const json = JSON.stringify({ name: 'compressed' });
    for (const [encoding, body] of [['gzip', gzipSync(json)], ['GZip', gzipSync(json)], ['br', brotliCompressSync(json)],
      ['deflate', deflateSync(json)], ['gzip, identity', gzipSync(json)]] as const) {
      const res = await post(body, encoding);
      expect(res.status, encoding).toBe(415);
      const { error } = (await res.json()) as { error: Record<string, string> };
      expect(error, encoding).toMatchObject({ code: 'unsupported_media_type', param: 'Content-Encoding' });
      expect(error.message, encoding).toContain(`'${encoding}'`);
      expect(error.request_id, encoding).toBe(res.headers.get('x-request-id'));
      // RFC 7694: a server that takes no content coding says which it takes.
      expect(res.headers.get('accept-encoding'), encoding).toBe('identity');
      expect(res.headers.get('ratelimit-remaining'), encoding).not.toBeNull();
    }
    // A coding past the part of the header the message repeats is still seen.
    const long = `${'identity, '.repeat(20)}gzip`;
    const refused = await post(gzipSync(json), long);
    expect(refused.status).toBe(415);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain(`'${long.slice(0, 100)}'`);
    const names = (await t.api.get('/v1/api-keys?limit=100')).body.data.map((k: { name: string }) => k.name);
    expect(names).not.toContain('compressed');
    // identity is no coding at all.
    expect((await post(json, 'identity')).status).toBe(201);
  });

  it('a path id with a control character is 404 naming the parameter, on every store; an address to create under is 422', async () => {
    const contact = (await t.api.get('/v1/contacts')).body.data[0];
    for (const control of ['%00', '%01', '%7F']) {
      for (const [method, path, param] of [
        ['GET', `/v1/contacts/${contact.id}${control}`, 'contact_id'],
        ['DELETE', `/v1/contacts/${contact.id}${control}`, 'contact_id'],
        ['GET', `/v1/emails/em_1${control}/events`, 'email_id'],
      ]) {
        const res = await t.api.request(method, path);
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(res.body.error, `${method} ${path}`).toMatchObject({ code: 'not_found', param, message: `No record has a '${param}' with control characters.` });
      }
      // PUT /contacts/by-email/{email} creates the contact when there is none: the address is refused, not looked for.
      const upsert = await t.api.request('PUT', `/v1/contacts/by-email/ab.cd${control}@remote.test`, { body: { name: 'x' } });
      expect(upsert.status, control).toBe(422);
      expect(upsert.body.error).toMatchObject({ code: 'validation_error', param: 'email', message: "'email' must not contain control characters." });
    }
    expect((await t.api.get(`/v1/contacts/${contact.id}`)).status).toBe(200);
  });

  it('a NUL character anywhere in a body is a validation error naming its field, and nothing is stored', async () => {
    const cases: Array<[string, string, unknown, number, string]> = [
      ['POST', '/v1/api-keys', { name: 'a\u0000b' }, 422, 'name'],
      ['POST', '/v1/contacts', { email: 'nul@remote.test', properties: { note: 'x\u0000' } }, 422, 'properties.note'],
      ['POST', '/v1/contacts/bulk', { contacts: [{ email: 'ok@remote.test' }, { email: 'nul@remote.test', name: '\u0000' }] }, 422, 'contacts.1.name'],
      ['POST', '/v1/emails', { from: 'a@acme.test', to: 'ab.cd@remote.test', subject: 'abcd', text: 'x\u0000' }, 422, 'text'],
      ['POST', '/v1/templates/render', { subject: 'Hi', text: '{{ a }}', variables: [{ key: 'a', type: 'string' }], data: { 'a\u0000': 1 } }, 422, 'data.a\u0000'],
    ];
    for (const [method, path, body, status, param] of cases) {
      const res = await t.api.request(method, path, { body });
      expect(res.status, path).toBe(status);
      expect(res.body.error, path).toMatchObject({ code: 'validation_error', param, message: `'${param}' must not contain a NUL character (U+0000).` });
    }
    // A schema error comes first; an escaped backslash before "u0000" is not a NUL.
    expect((await t.api.post('/v1/api-keys', { name: 5, scopes: ['\u0000'] })).body.error).toMatchObject({ code: 'validation_error', param: 'name' });
    const literal = await t.api.post('/v1/api-keys', { name: 'a\\u0000b' });
    expect(literal.status).toBe(201);
    expect(literal.body.name).toBe('a\\u0000b');
    expect((await t.api.get('/v1/contacts?email=nul@remote.test')).body.data).toEqual([]);
  });

  it('a body that is JSON null is refused, not read as no body', async () => {
    const contact = (await t.api.get('/v1/contacts')).body.data[0];
    // Every field of these is optional: no body reads as {}, a null is not an object.
    for (const path of [`/v1/contacts/${contact.id}/unsubscribe`, '/v1/queue/retry']) {
      const res = await t.api.request('POST', path, { rawBody: 'null', headers: { 'Content-Type': 'application/json' } });
      expect(res.status, path).toBe(422);
      expect(res.body.error, path).toMatchObject({ code: 'validation_error', param: 'body', message: "'body' must be object." });
    }
  });

  it('a body that is not UTF-8 is 400 invalid_json, not stored with U+FFFD in place of its bytes', async () => {
    const latin1 = Buffer.concat([Buffer.from('{"name":"caf'), Buffer.from([0xe9]), Buffer.from('"}')]);
    const res = await fetch(`${t.url}/v1/api-keys`, { method: 'POST', headers: { Authorization: `Bearer ${t.token}`, 'Content-Type': 'application/json' }, body: latin1 });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: unknown }).error).toMatchObject({ code: 'invalid_json', message: 'The request body is not valid UTF-8.' });
    expect((await t.api.post('/v1/api-keys', { name: 'café' })).body.name).toBe('café');
  });

  it('a body nested deeper than it can be hashed for its Idempotency-Key is 400, not 500', async () => {
    const deep = '['.repeat(10_000) + ']'.repeat(10_000);
    const headers = { 'Content-Type': 'application/json', 'Idempotency-Key': 'deep-1' };
    for (const rawBody of [deep, `{"name":${deep}}`, '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000)]) {
      const res = await t.api.request('POST', '/v1/api-keys', { rawBody, headers });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'bad_request', message: 'The request body is nested too deeply.' });
    }
    // Without a key, the schema refuses it as usual; the key stays free for a request that can be kept.
    expect((await t.api.request('POST', '/v1/api-keys', { rawBody: deep, headers: { 'Content-Type': 'application/json' } })).body.error).toMatchObject({ code: 'validation_error', param: 'body' });
    expect((await t.api.post('/v1/api-keys', { name: 'after deep' }, { headers: { 'Idempotency-Key': 'deep-1' } })).status).toBe(201);
  });

  it('headers over the parser\'s limit are 431 with the error object', async () => {
    const res = await rawHttp(t.url, `GET /v1/emails HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(res.status).toBe(431);
    expect(res.headers).toMatch(/\r\nContent-Type: application\/json; charset=utf-8\r\n/);
    expect(res.body.error).toMatchObject({ code: 'headers_too_large', message: expect.stringMatching(/16384 bytes/) });
    expect(res.headers).toContain(`X-Request-Id: ${res.body.error.request_id}`);
  });

  it('a Content-Length that is not one decimal number is 400 with the error object', async () => {
    for (const lengths of [['abc'], ['-1'], ['0x10'], ['5', '6']]) {
      const fields = lengths.map((l) => `Content-Length: ${l}\r\n`).join('');
      const res = await rawHttp(t.url, `POST /v1/api-keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.token}\r\n${fields}\r\nhello`);
      expect(res.status, lengths.join()).toBe(400);
      expect(res.body.error, lengths.join()).toMatchObject({ code: 'bad_request', param: 'Content-Length' });
    }
    const smuggled = await rawHttp(t.url, 'POST /v1/api-keys HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n');
    expect(smuggled.status).toBe(400);
    expect(smuggled.body.error).toMatchObject({ code: 'bad_request', message: expect.stringMatching(/Transfer-Encoding/) });
  });

  it('closes the connection after a chunked body over the limit, rather than leave the next request on it waiting', async () => {
    const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
    const body = chunk(`{"email":"${'x'.repeat(1024 * 1024)}`) + chunk(`${'x'.repeat(1024 * 1024)}"}`) + '0\r\n\r\n';
    const res = await rawHttp(t.url, `POST /v1/contacts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.token}\r\n`
      + `Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${body}`
      + `GET /v1/tags HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.token}\r\n\r\n`);
    expect(res.status).toBe(413);
    expect(res.headers).toMatch(/^Connection: close$/im);
    expect(res.body.error.code).toBe('payload_too_large');
  });

  it('closes the connection after refusing a request before its body, rather than read the body on for as long as it is sent', async () => {
    const readOnly = (await t.seed.key({ scopes: ['contacts:read'] })).token;
    for (const [authorization, status] of [['', 401], [`Authorization: Bearer ${readOnly}\r\n`, 403]] as const) {
      // A billion bytes announced, a few sent: the answer comes at once, and the server hangs up rather than wait for the rest.
      const res = await rawHttp(t.url, `POST /v1/contacts HTTP/1.1\r\nHost: x\r\n${authorization}Content-Type: application/json\r\n`
        + `Content-Length: 1000000000\r\n\r\n{"email":"`);
      expect(res.status).toBe(status);
      expect(res.headers).toMatch(/^Connection: close$/im);
    }
  });

  it('reads a number in a path only in decimal digits, as in a query, so a record answers to one spelling', async () => {
    const template = await t.api.post('/v1/templates', { name: 'Numbers', subject: 'Hi', text: 'x' });
    expect(template.status).toBe(201);
    const path = `/v1/templates/${template.body.id}/versions`;
    expect((await t.api.get(`${path}/1`)).status).toBe(200);
    for (const spelling of ['0x1', '1e0', '1.0', '+1', '%201']) {
      const res = await t.api.get(`${path}/${spelling}`);
      expect(res.status, spelling).toBe(404);
      expect(res.body.error, spelling).toMatchObject({ code: 'not_found', param: 'version' });
    }
  });

  it('counts a request whose client went away mid-body as refused for it, not as a store out of reach', async () => {
    const socket = new Socket();
    await new Promise<void>((resolve) => socket.connect(Number(new URL(t.url).port), '127.0.0.1', resolve));
    socket.write(`POST /v1/tags HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.token}\r\nContent-Type: application/json\r\n`
      + 'Content-Length: 100\r\n\r\n{"na');
    await new Promise((resolve) => setTimeout(resolve, 200));
    socket.destroy();
    const counted = async () => {
      const text = await (await fetch(`${t.url}/metrics`)).text();
      return text.split('\n').filter((line) => line.startsWith('mailroom_http_requests_total{') && line.includes('operation="createTag"'));
    };
    await expect.poll(async () => (await counted()).some((line) => line.includes('status="400"'))).toBe(true);
    expect((await counted()).filter((line) => line.includes('status="503"'))).toEqual([]);
  });

  it('keeps an idle connection open longer than a proxy or a client keeps it, and says how long', async () => {
    const agent = new Agent({ keepAlive: true });
    try {
      const keepAlive = await new Promise<unknown>((resolve, reject) => {
        get(`${t.url}/v1/api-keys`, { agent, headers: { Authorization: `Bearer ${t.token}` } }, (res) => {
          res.resume();
          resolve(res.headers['keep-alive']);
        }).on('error', reject);
      });
      expect(keepAlive).toBe('timeout=65');
    } finally {
      agent.destroy();
    }
  });

  // The files of a SQLite store; PostgreSQL keeps its own.
  it.skipIf(onPostgres)('keeps the SQLite files readable by their owner only', async () => {
    await t.api.post('/v1/api-keys', { name: 'write something' });
    for (const file of ['mailroom.db', 'mailroom.db-wal', 'mailroom.db-shm']) {
      expect((statSync(join(t.dataDir, file)).mode & 0o777).toString(8), file).toBe('600');
    }
  });
});
