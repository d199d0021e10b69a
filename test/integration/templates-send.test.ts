import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simpleParser } from 'mailparser';
import { startTestApp, type ApiClient, type ApiResponse, type TestApp } from '../helpers/app.js';
import { MAX_VALUE_DEPTH } from '../../src/templates/variables.js';
import { MAX_REQUEST_RENDERED_CHARS } from '../../src/templates/templates.service.js';
import { MAX_SUBJECT_CHARS } from '../../src/emails/email-input.js';

// Sending by template through POST /v1/emails, /batch and /check: rendered
// once when the email is created, stored rendered, kept when the template
// changes, and listed by template.

const receipt = {
  name: 'Receipt',
  alias: 'receipt',
  subject: 'Receipt {{ order_id }} for {{ contact.first_name | default: "you" }}',
  html: '<p>Hi {{ contact.first_name | default: "there" }},</p>\n<p>Order {{ order_id }}: {{ note }}</p>\n'
    + '{% for item in items %}<li>{{ item.name }} x{{ item.qty }}</li>{% endfor %}\n<p><a href="{{ unsubscribe_url }}">Unsubscribe</a></p>',
  from: 'Acme <billing@acme.test>',
  reply_to: 'help@acme.test',
  variables: [
    { key: 'order_id', type: 'string', required: true },
    { key: 'note', type: 'string', fallback: 'thank you' },
    { key: 'items', type: 'list', fallback: [] },
  ],
};

function expectProblem(res: ApiResponse, status: number, code: string, param?: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.error.code).toBe(code);
  if (param !== undefined) expect(res.body.error.param).toBe(param);
  return res.body.error;
}

describe('sending by template', () => {
  let t: TestApp;
  let api: ApiClient;
  let tpl: { id: string };
  beforeAll(async () => {
    t = await startTestApp();
    api = t.api;
    await t.seed.activeDomain('acme.test');
    tpl = (await api.post('/v1/templates', receipt)).body;
    expect((await api.post('/v1/templates/receipt/publish')).status).toBe(200);
  });
  afterAll(() => t.close());

  const send = async (body: Record<string, unknown>) => {
    const res = await api.post('/v1/emails', body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  };

  it('renders the published version into the email, with the version\'s defaults, and stores it rendered', async () => {
    const email = await send({
      to: 'bob@example.org', template: { id: 'receipt', variables: { order_id: 'A-1', items: [{ name: 'Mug', qty: 2 }] } },
    });
    expect(email).toMatchObject({
      from: 'Acme <billing@acme.test>', reply_to: ['help@acme.test'], subject: 'Receipt A-1 for you',
      template_id: tpl.id, template_version: 1,
    });
    expect(email.html).toContain('<p>Hi there,</p>\n<p>Order A-1: thank you</p>\n<li>Mug x2</li>');
    // The email has one recipient: the link is its unsubscribe page.
    expect(email.html).toMatch(new RegExp(`<a href="${t.url}/u/[A-Za-z0-9_-]+">Unsubscribe</a>`));
    expect(email.text).toContain('Order A-1: thank you');
    expect(email.text).toMatch(new RegExp(`Unsubscribe\\s\\[${t.url}/u/[A-Za-z0-9_-]+\\]`));
    expect((await api.get(`/v1/emails/${email.id}`)).body).toMatchObject({ html: email.html, text: email.text, template_id: tpl.id, template_version: 1 });

    // The request's own subject, from and reply_to win; a version is named by number.
    const own = await send({
      from: 'Ann <ann@acme.test>', to: ['a@example.org', 'b@example.org'], reply_to: [], subject: 'Your receipt',
      template: { id: tpl.id, version: 1, variables: { order_id: 'A-2' } },
    });
    expect(own).toMatchObject({ from: 'Ann <ann@acme.test>', subject: 'Your receipt', reply_to: [], template_version: 1 });
    // Two recipients: no unsubscribe link names one of them.
    expect(own.html).toContain('<a href="">Unsubscribe</a>');

    const plain = await send({ from: 'a@acme.test', to: 'b@example.org', subject: 'Plain', text: 'x' });
    expect(plain).toMatchObject({ template_id: null, template_version: null });
  });

  it('escapes a variable in html and keeps it intact in text', async () => {
    const created = (await api.post('/v1/templates', {
      name: 'Escape', subject: 'Note: {{ note }}', html: '<p>{{ note }}</p>', text: 'Note: {{ note }}',
      variables: [{ key: 'note', type: 'string', required: true }],
    })).body;
    const note = '<script>alert("x")</script> & more';
    const email = await send({ from: 'a@acme.test', to: 'b@example.org', template: { id: created.id, version: 1, variables: { note } } });
    expect(email.html).toBe('<p>&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; more</p>');
    expect(email.text).toBe(`Note: ${note}`);
    expect(email.subject).toBe(`Note: ${note}`);
    // What the sink kept: the html part escaped, the text part intact.
    await t.mailroom.delivery.drain();
    const kept = await t.mailroom.services.store.db.selectFrom('sink_messages').select('raw').where('email_id', '=', email.id).executeTakeFirstOrThrow();
    const parsed = await simpleParser(kept.raw);
    expect(parsed.html).toContain('&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;');
    expect(parsed.html).not.toContain('<script>');
    expect(parsed.text?.trim()).toBe(`Note: ${note}`);
  });

  it('fills contact from the contact of a sole to recipient, and leaves it empty otherwise', async () => {
    await api.post('/v1/contacts', { email: 'carol.jones@example.org', name: 'Carol Ann Jones' });
    const created = (await api.post('/v1/templates', {
      name: 'Contact', subject: 'For {{ contact.first_name }}', text: '[{{ contact.first_name }}|{{ contact.last_name }}|{{ contact.name }}|{{ contact.email }}]',
    })).body;
    const ref = { id: created.id, version: 1 };
    const one = await send({ from: 'a@acme.test', to: 'Carol <Carol.Jones@example.org>', template: ref });
    expect(one.text).toBe('[Carol|Jones|Carol Ann Jones|carol.jones@example.org]');
    expect(one.subject).toBe('For Carol');
    expect((await send({ from: 'a@acme.test', to: 'carol.jones@example.org', cc: 'x@example.org', template: ref })).text).toBe('[Carol|Jones|Carol Ann Jones|carol.jones@example.org]');
    expect((await send({ from: 'a@acme.test', to: ['carol.jones@example.org', 'd@example.org'], template: ref })).text).toBe('[|||]');
    expect((await send({ from: 'a@acme.test', to: 'stranger@example.org', template: ref })).text).toBe('[|||]');
  });

  it('keeps an email sent by v1 as it was after v2 is published, and resends it unchanged', async () => {
    const created = (await api.post('/v1/templates', {
      name: 'Versioned', alias: 'versioned', subject: 'v1 {{ n }}', html: '<p>First {{ n }}</p>', from: 'a@acme.test',
      variables: [{ key: 'n', type: 'number', required: true }],
    })).body;
    await api.post('/v1/templates/versioned/publish');
    const first = await send({ to: 'r@example.org', template: { id: 'versioned', variables: { n: 1 } } });
    expect(first).toMatchObject({ subject: 'v1 1', html: '<p>First 1</p>', text: 'First 1', template_version: 1 });

    await api.patch('/v1/templates/versioned', { subject: 'v2 {{ n }}', html: '<p>Second {{ n }}</p>' });
    // A draft changes nothing for sends.
    expect((await send({ to: 'r@example.org', template: { id: 'versioned', variables: { n: 2 } } })).subject).toBe('v1 2');
    await api.post('/v1/templates/versioned/publish');
    const second = await send({ to: 'r@example.org', template: { id: 'versioned', variables: { n: 3 } } });
    expect(second).toMatchObject({ subject: 'v2 3', html: '<p>Second 3</p>', template_version: 2 });

    const again = (await api.get(`/v1/emails/${first.id}`)).body;
    expect(again).toMatchObject({ subject: 'v1 1', html: '<p>First 1</p>', text: 'First 1', template_id: created.id, template_version: 1 });
    await t.mailroom.delivery.drain();
    const resent = await api.post(`/v1/emails/${first.id}/resend`);
    expect(resent.status).toBe(201);
    expect(resent.body).toMatchObject({ subject: 'v1 1', html: '<p>First 1</p>', text: 'First 1', template_id: created.id, template_version: 1 });
    // Deleting the template leaves its emails as they are.
    expect((await api.delete('/v1/templates/versioned')).status).toBe(204);
    expect((await api.get(`/v1/emails/${first.id}`)).body).toMatchObject({ html: '<p>First 1</p>', template_id: created.id });
  });

  it('refuses a send the template cannot make, naming the field', async () => {
    const draftOnly = (await api.post('/v1/templates', { name: 'Draft', alias: 'draft-only', subject: 'x', text: 'x', from: 'a@acme.test' })).body;
    const noFrom = (await api.post('/v1/templates', { name: 'No from', subject: 'x', text: 'x' })).body;
    const base = { to: 'refused@example.org' };
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ ...base, template: { id: 'draft-only' } }, 'template_not_published', 'template.id'],
      [{ ...base, template: { id: 'nothing' } }, 'validation_error', 'template.id'],
      [{ ...base, template: { id: 'tpl_nothing' } }, 'validation_error', 'template.id'],
      [{ ...base, template: { id: draftOnly.id, version: 2 } }, 'validation_error', 'template.version'],
      [{ ...base, template: { id: noFrom.id, version: 1 } }, 'validation_error', 'from'],
      [{ ...base, template: { id: 'receipt', variables: { order_id: 'x' } }, html: '<p>x</p>' }, 'validation_error', 'template'],
      [{ ...base, template: { id: 'receipt', variables: {} } }, 'template_variables_invalid', 'template.variables.order_id'],
      [{ ...base, template: { id: 'receipt', variables: { order_id: 'x', contact: {} } } }, 'template_variables_invalid', 'template.variables.contact'],
      [{ ...base, template: { id: 'receipt', variables: { order_id: 'x' }, extra: 1 } }, 'validation_error', 'template.extra'],
      [{ ...base, template: { id: 'receipt', version: 0 } }, 'validation_error', 'template.version'],
      [{ ...base, template: { variables: {} } }, 'validation_error', 'template.id'],
      [{ ...base, from: 'a@acme.test', subject: 'x' }, 'validation_error', 'html'],
      [{ ...base, subject: 'x', text: 'x' }, 'validation_error', 'from'],
      [{ from: 'a@acme.test', to: 'b@example.org', text: 'x' }, 'validation_error', 'subject'],
      [{ to: 'not an address', template: { id: 'receipt', variables: { order_id: 'x' } } }, 'validation_error', 'to'],
    ];
    for (const [body, code, param] of cases) expectProblem(await api.post('/v1/emails', body), 422, code, param);
    const err = expectProblem(await api.post('/v1/emails', { ...base, template: { id: 'receipt', variables: { note: 5, items: 'many' } } }), 422, 'template_variables_invalid');
    expect(err.problems).toEqual([
      { param: 'template.variables.order_id', message: "'order_id' is required by the template." },
      { param: 'template.variables.note', message: "'note' must be a string, not a number." },
      { param: 'template.variables.items', message: "'items' must be a list, not a string." },
    ]);
    expect((await api.get('/v1/emails?to=refused@example.org')).body.data).toEqual([]);
  });

  it('refuses a variable nested deeper than MAX_VALUE_DEPTH, on a send, in a batch and in a check, naming it and the limit', async () => {
    const deep = (await api.post('/v1/templates', {
      name: 'Deep', alias: 'deep', subject: '{{ v | json }}', text: '{{ v }} {{ w | json }}', from: 'a@acme.test',
      variables: [{ key: 'v', type: 'object', fallback: {} }, { key: 'w', type: 'list', fallback: [] }],
    })).body;
    expect((await api.post(`/v1/templates/${deep.id}/publish`)).status).toBe(200);
    const objects = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
    const lists = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
    const send = (variables: string) => `{"to":"deep@example.org","template":{"id":"deep","variables":${variables}}}`;
    const headers = { 'Content-Type': 'application/json' };
    const message = (name: string) => `'${name}' nests lists and objects more than ${MAX_VALUE_DEPTH} deep.`;
    for (const depth of [MAX_VALUE_DEPTH + 1, 20_000]) {
      for (const [variables, name] of [[`{"v":${objects(depth)}}`, 'v'], [`{"w":${lists(depth)}}`, 'w']]) {
        const one = expectProblem(await api.request('POST', '/v1/emails', { rawBody: send(variables), headers }), 422, 'template_variables_invalid', `template.variables.${name}`);
        expect(one.message).toBe(message(name));
        const batch = await api.request('POST', '/v1/emails/batch', { rawBody: `{"emails":[${send(variables)}]}`, headers });
        expect(batch.status).toBe(200);
        expect(batch.body.data[0].error).toMatchObject({ code: 'template_variables_invalid', param: `template.variables.${name}`, message: message(name) });
        const strict = await api.request('POST', '/v1/emails/batch', { rawBody: `{"emails":[${send(variables)}]}`, headers: { ...headers, 'Mailroom-Batch-Validation': 'strict' } });
        expectProblem(strict, 422, 'template_variables_invalid', `emails.0.template.variables.${name}`);
        expectProblem(await api.request('POST', '/v1/emails/check', { rawBody: send(variables), headers }), 400, 'template_variables_invalid', `template.variables.${name}`);
      }
    }
    // The same under an Idempotency-Key (a body too deep to hash for one is 400 before: see request-checks).
    const keyed = { ...headers, 'Idempotency-Key': 'deep-variables' };
    expectProblem(await api.request('POST', '/v1/emails', { rawBody: send(`{"v":${objects(MAX_VALUE_DEPTH + 1)}}`), headers: keyed }), 422, 'template_variables_invalid', 'template.variables.v');
    expect((await api.get('/v1/emails?to=deep@example.org')).body.data).toEqual([]);
    const sent = await api.request('POST', '/v1/emails', { rawBody: send(`{"v":${objects(MAX_VALUE_DEPTH)},"w":${lists(MAX_VALUE_DEPTH)}}`), headers });
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    expect(sent.body.subject).toBe(objects(MAX_VALUE_DEPTH));
    expect(sent.body.text).toContain(lists(MAX_VALUE_DEPTH));
  });

  it('refuses a send whose render runs past the limit, quickly, and keeps answering', async () => {
    const loop = (await api.post('/v1/templates', {
      name: 'Loop', subject: 'x', from: 'a@acme.test', text: '{% for i in (1..1000000) %}{{ i }}{% endfor %}',
    })).body;
    const started = Date.now();
    const [refused, other] = await Promise.all([
      api.post('/v1/emails', { to: 'b@example.org', template: { id: loop.id, version: 1 } }),
      api.get('/v1/emails?limit=1'),
    ]);
    expect(expectProblem(refused, 422, 'template_render_failed', 'template').message).toMatch(/limit exceeded/);
    expect(other.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('refuses the items of a batch past MAX_REQUEST_RENDERED_CHARS in all, each alone, and sends the others', async () => {
    // Each email renders to just under 5,000,000 characters, its html a source of 1,000,000 written five times.
    const big = (await api.post('/v1/templates', {
      name: 'Big', subject: 'Big', from: 'a@acme.test', text: 'x', html: `{% for i in (1..5) %}${'y'.repeat(999_000)}{% endfor %}`,
    })).body;
    const perEmail = 3 + 5 * 999_000 + 1;
    const fitting = Math.floor(MAX_REQUEST_RENDERED_CHARS / perEmail);
    expect(fitting).toBeGreaterThan(1);
    const emails = Array.from({ length: fitting + 2 }, (_, i) => ({ to: `big${i}@example.org`, template: { id: big.id, version: 1 } }));
    const message = `Rendering failed: with this email the emails of the request render to over ${MAX_REQUEST_RENDERED_CHARS.toLocaleString('en-US')} `
      + 'characters in all (subjects, html and text); send it in another request.';

    const strict = await api.post('/v1/emails/batch', { emails }, { headers: { 'Mailroom-Batch-Validation': 'strict' } });
    expect(expectProblem(strict, 422, 'template_render_failed', `emails.${fitting}.template`).message).toBe(`emails[${fitting}]: ${message}`);
    expect((await api.get('/v1/emails?to=big0@example.org')).body.data).toEqual([]);

    const res = await api.post('/v1/emails/batch', { emails });
    expect(res.status).toBe(200);
    const results: Array<{ id?: string; error?: unknown }> = res.body.data;
    expect(results.slice(0, fitting).every((r) => r.id !== undefined)).toBe(true);
    for (const r of results.slice(fitting)) {
      expect(r.error).toEqual({ code: 'template_render_failed', param: 'template', message, problems: [{ param: 'template', message }] });
    }
    const kept = (await api.get(`/v1/emails/${results[0].id}`)).body;
    expect(kept.html).toHaveLength(5 * 999_000);
    // Alone, the same email renders.
    expect((await api.post('/v1/emails', emails[fitting])).status).toBe(201);
  });

  it('refuses a subject rendered over MAX_SUBJECT_CHARS, as a given one is, unless the request gives its own', async () => {
    const tens = (n: number) => `{% for i in (1..${n}) %}0123456789{% endfor %}`;
    const longest = (await api.post('/v1/templates', { name: 'Longest subject', subject: `${tens(99)}abcdefgh`, text: 'x', from: 'a@acme.test' })).body;
    const over = (await api.post('/v1/templates', { name: 'Long subject', subject: `${tens(99)}abcdefghi`, text: 'x', from: 'a@acme.test' })).body;
    expect(MAX_SUBJECT_CHARS).toBe(998);
    const sent = await send({ to: 'subject@example.org', template: { id: longest.id, version: 1 } });
    expect(sent.subject).toHaveLength(998);
    const refused = expectProblem(await api.post('/v1/emails', { to: 'subject@example.org', template: { id: over.id, version: 1 } }),
      422, 'template_render_failed', 'template');
    expect(refused.message).toBe('The subject rendered from the template is 999 characters; a subject is at most 998.');
    const batch = await api.post('/v1/emails/batch', { emails: [{ to: 'subject@example.org', template: { id: over.id, version: 1 } }] });
    expect(batch.body.data[0].error).toMatchObject({ code: 'template_render_failed', param: 'template' });
    expect((await send({ to: 'subject@example.org', subject: 'Own subject', template: { id: over.id, version: 1 } })).subject).toBe('Own subject');
  });

  it('refuses, as saving it would be, a version stored before a limit its source is over now', async () => {
    const old = (await api.post('/v1/templates', { name: 'Old', subject: 'Old', text: 'fine' })).body as { id: string };
    // Saved before blocks were held to 100 deep: written here as an older Mailroom kept it.
    const deep = `${'{% if true %}'.repeat(150)}deep${'{% endif %}'.repeat(150)}`;
    await t.mailroom.services.store.write((tx) => tx.updateTable('template_versions').set({ text_body: deep })
      .where('template_id', '=', old.id).where('version', '=', 1).execute());
    const err = expectProblem(await api.post('/v1/emails', { from: 'a@acme.test', to: 'b@example.org', template: { id: old.id, version: 1 } }),
      422, 'template_invalid', 'text');
    expect(err.message).toMatch(/^Version 1 of this template was saved before a limit it is over: text, line 1, column 1301: blocks .* nested more than 100 deep; .* Save a version within it\.$/);
    expect(err.problems).toEqual([expect.objectContaining({ param: 'text', line: 1, column: 1_301 })]);
  });

  it('sends a batch with each item\'s own variables, one bad item failing alone', async () => {
    const res = await api.post('/v1/emails/batch', {
      emails: [
        { to: 'one@example.org', template: { id: 'receipt', variables: { order_id: 'B-1' } } },
        { to: 'two@example.org', template: { id: 'receipt', variables: { order_id: 7 } } },
        { to: 'three@example.org', template: { id: tpl.id, version: 1, variables: { order_id: 'B-3', note: 'enjoy' } } },
        { from: 'a@acme.test', to: 'four@example.org', subject: 'Plain', text: 'plain' },
        { to: 'five@example.org', template: { id: 'no-such-template' } },
      ],
    });
    expect(res.status).toBe(200);
    const [one, two, three, four, five] = res.body.data;
    expect(two.error).toEqual({
      code: 'template_variables_invalid', message: "'order_id' must be a string, not a number.", param: 'template.variables.order_id',
      problems: [{ param: 'template.variables.order_id', message: "'order_id' must be a string, not a number." }],
    });
    expect(five.error).toMatchObject({ code: 'validation_error', param: 'template.id' });
    const subjects = await Promise.all([one, three, four].map(async (r) => (await api.get(`/v1/emails/${r.id}`)).body));
    expect(subjects.map((e) => [e.subject, e.template_version])).toEqual([['Receipt B-1 for you', 1], ['Receipt B-3 for you', 1], ['Plain', null]]);
    expect(subjects[1].html).toContain('Order B-3: enjoy');
  });

  it('scores an email by template without sending it, and answers 400 for one it cannot render', async () => {
    const res = await api.post('/v1/emails/check', { to: 'b@example.org', template: { id: 'receipt', variables: { order_id: 'C-1' } } });
    expect(res.status).toBe(200);
    expect(res.body.object).toBe('spam_check');
    expectProblem(await api.post('/v1/emails/check', { to: 'b@example.org', template: { id: 'receipt' } }), 400, 'template_variables_invalid', 'template.variables.order_id');
    expectProblem(await api.post('/v1/emails/check', { to: 'b@example.org', template: { id: 'nothing' } }), 400, 'validation_error', 'template.id');
    expect((await api.get('/v1/emails?to=b@example.org&limit=100')).body.data.every((e: { subject: string }) => e.subject !== 'Receipt C-1 for you')).toBe(true);
  });

  it('sends by template with a key that may only send', async () => {
    const sender = api.as((await t.seed.key({ scopes: ['sending_access'] })).token);
    const res = await sender.post('/v1/emails', { to: 'b@example.org', template: { id: 'receipt', variables: { order_id: 'S-1' } } });
    expect(res.status).toBe(201);
    expect(res.body.subject).toBe('Receipt S-1 for you');
  });

  it('lists emails by template id or alias, within the workspace', async () => {
    await using own = await startTestApp();
    await own.seed.activeDomain('acme.test');
    const a = (await own.api.post('/v1/templates', { ...receipt, alias: 'a' })).body;
    const b = (await own.api.post('/v1/templates', { ...receipt, alias: 'b' })).body;
    const ids: Record<string, string[]> = { a: [], b: [] };
    for (const [alias, n] of [['a', 1], ['b', 2], ['a', 3]] as const) {
      const res = await own.api.post('/v1/emails', { to: 'r@example.org', template: { id: alias, version: 1, variables: { order_id: String(n) } } });
      ids[alias].unshift(res.body.id);
    }
    await own.api.post('/v1/emails', { from: 'x@acme.test', to: 'r@example.org', subject: 'plain', text: 'x' });
    const byId = (await own.api.get(`/v1/emails?template_id=${a.id}`)).body;
    expect(byId.data.map((e: { id: string }) => e.id)).toEqual(ids.a);
    expect(byId.data[0]).toMatchObject({ template_id: a.id, template_version: 1 });
    expect((await own.api.get('/v1/emails?template_id=b')).body.data.map((e: { id: string }) => e.id)).toEqual(ids.b);
    const paged = (await own.api.get('/v1/emails?template_id=a&limit=1')).body;
    expect(paged.has_more).toBe(true);
    expect((await own.api.get(`/v1/emails?template_id=a&limit=1&starting_after=${paged.next_cursor}`)).body.data.map((e: { id: string }) => e.id)).toEqual([ids.a[1]]);
    expect((await own.api.get('/v1/emails?template_id=nothing')).body).toEqual({ data: [], has_more: false });
    // Deleted, its emails are still found by its id.
    await own.api.delete(`/v1/templates/${b.id}`);
    expect((await own.api.get(`/v1/emails?template_id=${b.id}`)).body.data).toHaveLength(1);

    const other = await own.seed.workspace();
    const them = own.api.as((await own.seed.key({ workspaceId: other.id })).token);
    expect((await them.get(`/v1/emails?template_id=${a.id}`)).body.data).toEqual([]);
    expect((await them.get('/v1/emails?template_id=a')).body.data).toEqual([]);
    expectProblem(await them.post('/v1/emails', { from: 'x@acme.test', to: 'r@example.org', template: { id: a.id, version: 1, variables: { order_id: '1' } } }),
      422, 'validation_error', 'template.id');
  });
});
