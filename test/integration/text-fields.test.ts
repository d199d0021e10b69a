import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type ApiResponse, type TestApp } from '../helpers/app.js';

// Control characters in the text fields of request bodies, field by field:
// names, addresses and ids are one line without any; a subject or a header
// value keeps TAB; a template's subject source, an unsubscribe reason and a
// contact's property keep TAB, CR and LF; html, text and template sources
// are taken as written. The rule is the schema's (schema/openapi.yaml's
// conventions), checked before any service runs.

const BEL = '\u0007';
const NEL = '\u0085'; // a C1 control
const DEL = '\u007f';

function expectRefused(res: ApiResponse, status: number, param: string, rule: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.error).toMatchObject({ code: 'validation_error', param, message: `'${param}' ${rule}.` });
}

const ONE_LINE = 'must be one line of text, without control characters (U+0000 to U+001F, U+007F to U+009F)';
const HEADER_VALUE = 'must be one line of text, without control characters other than TAB';
const MULTI_LINE = 'must not contain control characters other than TAB, CR and LF';

describe('control characters in text fields', () => {
  let t: TestApp;
  let contactId: string;
  const email = (fields: Record<string, unknown>) => ({ from: 'Ann <ann@acme.test>', to: 'reader@remote.test', subject: 'Hi', text: 'Hello.', ...fields });

  beforeAll(async () => {
    t = await startTestApp();
    await t.seed.activeDomain('acme.test');
    contactId = (await t.api.post('/v1/contacts', { email: 'reader@remote.test', name: 'Reader' })).body.id;
  });

  afterAll(async () => {
    await t?.close();
  });

  it('refuses a name with any control character, TAB included, naming the field, and keeps the old one', async () => {
    for (const control of [BEL, NEL, DEL, '\t', '\n', '\r']) {
      const name = `Ann${control}Lee`;
      expectRefused(await t.api.post('/v1/contacts', { email: 'ann@remote.test', name }), 422, 'name', ONE_LINE);
      expectRefused(await t.api.patch(`/v1/contacts/${contactId}`, { name }), 422, 'name', ONE_LINE);
      expectRefused(await t.api.post('/v1/tags', { name }), 422, 'name', ONE_LINE);
      expectRefused(await t.api.post('/v1/api-keys', { name }), 422, 'name', ONE_LINE);
      expectRefused(await t.api.post('/v1/templates', { name, subject: 'Hi', text: 'Hello.' }), 422, 'name', ONE_LINE);
      expectRefused(await t.api.post('/v1/broadcasts', { name }), 422, 'name', ONE_LINE);
      expectRefused(await t.api.post('/v1/webhooks', { url: 'http://127.0.0.1:9/hook', event_types: ['email.sent'], description: name }), 422, 'description', ONE_LINE);
      expectRefused(await t.api.post('/v1/contacts', { email: 'ann@remote.test', tags: ['news', name] }), 422, 'tags.1', ONE_LINE);
    }
    expect((await t.api.get(`/v1/contacts/${contactId}`)).body.name).toBe('Reader');
    expect((await t.api.get('/v1/contacts?email=ann@remote.test')).body.data).toEqual([]);
    // Letters of every script, and the characters around the refused ones, are text.
    const kept = await t.api.patch(`/v1/contacts/${contactId}`, { name: 'Zoë ~ 名前 \u00a0Lee' });
    expect(kept.status).toBe(200);
    expect(kept.body.name).toBe('Zoë ~ 名前 \u00a0Lee');
  });

  it('refuses a control character in an address, a display name or a file name of an email', async () => {
    expectRefused(await t.api.post('/v1/emails', email({ from: `Ann${NEL} <ann@acme.test>` })), 422, 'from', ONE_LINE);
    expectRefused(await t.api.post('/v1/emails', email({ reply_to: [`Bo${BEL} <bo@acme.test>`] })), 422, 'reply_to.0', ONE_LINE);
    expectRefused(await t.api.post('/v1/emails', email({ to: ['a@remote.test', `b${DEL}@remote.test`] })), 422, 'to.1', ONE_LINE);
    const attachment = { filename: `report${NEL}.txt`, content: Buffer.from('hi').toString('base64') };
    expectRefused(await t.api.post('/v1/emails', email({ attachments: [attachment] })), 422, 'attachments.0.filename', ONE_LINE);
    expectRefused(await t.api.post('/v1/attachments', attachment), 422, 'filename', ONE_LINE);
  });

  it('keeps a TAB in a subject or a header value, and refuses a line break or another control character there', async () => {
    const sent = await t.api.post('/v1/emails', email({ subject: 'Order\t42', headers: { 'X-Note': 'a\tb' } }));
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    expect((await t.api.get(`/v1/emails/${sent.body.id}`)).body.subject).toBe('Order\t42');
    for (const control of [BEL, NEL, DEL, '\n', '\r', '\f']) {
      expectRefused(await t.api.post('/v1/emails', email({ subject: `Order${control}42` })), 422, 'subject', HEADER_VALUE);
      expectRefused(await t.api.post('/v1/emails', email({ headers: { 'X-Note': `a${control}b` } })), 422, 'headers.X-Note', HEADER_VALUE);
      expectRefused(await t.api.post('/v1/broadcasts', { name: 'News', subject: `News${control}` }), 422, 'subject', HEADER_VALUE);
    }
    // The spam check lists no 422: the same refusal is a 400 there.
    expectRefused(await t.api.post('/v1/emails/check', email({ subject: `Order${BEL}42` })), 400, 'subject', HEADER_VALUE);
    // In a batch, the one email is refused and the others are sent.
    const batch = await t.api.post('/v1/emails/batch', { emails: [email({ subject: 'Fine' }), email({ subject: `Bad${NEL}` })] });
    expect(batch.status).toBe(200);
    expect(batch.body.data[0].id).toMatch(/^em_/);
    expect(batch.body.data[1].error).toMatchObject({ code: 'validation_error', param: 'subject' });
  });

  it('takes html, text and template sources as written, form feeds and C1 controls included', async () => {
    const text = `Page one\f\nPage two\ttabbed\r\nbell${BEL} del${DEL} nel${NEL}`;
    const html = `<pre>${text}</pre>`;
    const sent = await t.api.post('/v1/emails', email({ text, html }));
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    const stored = (await t.api.get(`/v1/emails/${sent.body.id}`)).body;
    expect(stored.text).toBe(text);
    expect(stored.html).toBe(html);
    const template = await t.api.post('/v1/templates', { name: 'Pages', subject: 'Hi', text, html });
    expect(template.status, JSON.stringify(template.body)).toBe(201);
    const broadcast = await t.api.post('/v1/broadcasts', { name: 'Pages', text, html });
    expect(broadcast.status, JSON.stringify(broadcast.body)).toBe(201);
    expect(broadcast.body.text).toBe(text);
  });

  it('refuses a body whose JSON escapes half of a surrogate pair alone, and takes a whole pair escaped', async () => {
    const refusal = { code: 'invalid_json', message: expect.stringMatching(/half of a surrogate pair alone/) };
    // Raw JSON text: the escapes as a client writes them, in a value, in a key, and deep in nesting.
    for (const body of [
      '{"from":"ann@acme.test","to":"reader@remote.test","subject":"Order \\ud800 42","text":"Hi"}',
      '{"from":"ann@acme.test","to":"reader@remote.test","subject":"Hi","text":"Hi","headers":{"X-\\udc00":"a"}}',
      `{"emails":[${'['.repeat(5_000)}"\\uDBFF"${']'.repeat(5_000)}]}`,
    ]) {
      const res = await t.api.request('POST', '/v1/emails', { rawBody: body, headers: { 'Content-Type': 'application/json' } });
      expect(res.status, body.slice(0, 80)).toBe(400);
      expect(res.body.error).toMatchObject(refusal);
    }
    // A backslash before "ud800" is a backslash; a pair is one character, however it is spelled.
    const sent = await t.api.request('POST', '/v1/emails', {
      rawBody: '{"from":"ann@acme.test","to":"reader@remote.test","subject":"a\\\\ud800 \\ud83d\\ude00","text":"Hi"}', headers: { 'Content-Type': 'application/json' },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    expect((await t.api.get(`/v1/emails/${sent.body.id}`)).body.subject).toBe('a\\ud800 \u{1f600}');
  });

  it('keeps TAB, CR and LF in a template subject source, a reason or a property, and refuses the other controls', async () => {
    // A tag written over two lines renders to one line.
    const template = await t.api.post('/v1/templates', { name: 'Lines', subject: 'Hi {{ name\n }}\tthere', text: 'Hello.', variables: [{ key: 'name', type: 'string' }] });
    expect(template.status, JSON.stringify(template.body)).toBe(201);
    expectRefused(await t.api.post('/v1/templates', { name: 'Bell', subject: `Hi${BEL}`, text: 'Hello.' }), 422, 'subject', MULTI_LINE);
    expectRefused(await t.api.post('/v1/templates/render', { subject: `Hi${NEL}`, text: 'Hello.' }), 422, 'subject', MULTI_LINE);

    const noted = await t.api.patch(`/v1/contacts/${contactId}`, { properties: { address: '1 Main St\r\nSpringfield\tUSA' } });
    expect(noted.status, JSON.stringify(noted.body)).toBe(200);
    expect(noted.body.properties.address).toBe('1 Main St\r\nSpringfield\tUSA');
    expectRefused(await t.api.patch(`/v1/contacts/${contactId}`, { properties: { address: `1 Main St${BEL}` } }), 422, 'properties.address', MULTI_LINE);
    const bulk = await t.api.post('/v1/contacts/bulk', { contacts: [{ email: 'fine@remote.test' }, { email: 'bad@remote.test', name: `Bad${NEL}` }] });
    expect(bulk.status).toBe(200);
    expect(bulk.body).toMatchObject({ created: 1, failed: 1 });
    expect(bulk.body.errors[0]).toMatchObject({ index: 1, code: 'validation_error', message: `'name' ${ONE_LINE}.` });

    expectRefused(await t.api.post(`/v1/contacts/${contactId}/unsubscribe`, { reason: `Too many${DEL}` }), 422, 'reason', MULTI_LINE);
    const unsubscribed = await t.api.post(`/v1/contacts/${contactId}/unsubscribe`, { reason: 'Too many.\nAnd too long.' });
    expect(unsubscribed.status, JSON.stringify(unsubscribed.body)).toBe(200);
  });

  it('refuses a subject that a template renders with a control character, at the send', async () => {
    expect((await t.api.post('/v1/templates', { name: 'Greeting', alias: 'greeting', subject: 'Hi {{ name }}', text: 'Hello.', variables: [{ key: 'name', type: 'string' }] })).status).toBe(201);
    expect((await t.api.post('/v1/templates/greeting/publish')).status).toBe(200);
    const send = (name: string) => t.api.post('/v1/emails', { from: 'ann@acme.test', to: 'reader@remote.test', template: { id: 'greeting', variables: { name } } });
    for (const control of [BEL, NEL, DEL]) {
      const res = await send(`Bo${control}`);
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      expect(res.body.error).toMatchObject({ code: 'validation_error', param: 'subject' });
    }
    const fine = await send('Bo\tLee');
    expect(fine.status, JSON.stringify(fine.body)).toBe(201);
    expect(fine.body.subject).toBe('Hi Bo\tLee');
  });
});
