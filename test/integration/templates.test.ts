import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type ApiClient, type ApiResponse, type TestApp } from '../helpers/app.js';
import { MAX_VALUE_DEPTH } from '../../src/templates/variables.js';

// The Templates API over a real socket: every operation, the ways each is
// refused, versions and publishing, rendering and its limits, scopes and
// workspace isolation.

const welcome = {
  name: 'Welcome',
  alias: 'welcome',
  subject: 'Welcome, {{ first_name }}!',
  html: '<h1>Hi {{ first_name }}</h1>\n<p>Your plan: {{ plan | upcase }}.</p>\n<p><a href="https://app.example/start">Get started</a></p>',
  from: 'Acme <hello@acme.test>',
  variables: [
    { key: 'first_name', type: 'string', required: true },
    { key: 'plan', type: 'string', fallback: 'free' },
  ],
};

function expectProblem(res: ApiResponse, status: number, code: string, param?: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.error.code).toBe(code);
  if (param !== undefined) expect(res.body.error.param).toBe(param);
  return res.body.error;
}

describe('templates API', () => {
  let t: TestApp;
  let api: ApiClient;
  beforeAll(async () => {
    t = await startTestApp();
    api = t.api;
  });
  afterAll(() => t.close());

  const create = async (body: Record<string, unknown>) => {
    const res = await api.post('/v1/templates', body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  };

  it('creates a template whose content is version 1, a draft, and reads it by id or alias', async () => {
    const tpl = await create(welcome);
    expect(tpl).toMatchObject({
      object: 'template', name: 'Welcome', alias: 'welcome', published_version: null, latest_version: 1, published: null,
      variables: [
        { key: 'first_name', type: 'string', required: true, fallback: null },
        { key: 'plan', type: 'string', required: false, fallback: 'free' },
      ],
      latest: {
        object: 'template_version', template_id: tpl.id, version: 1, subject: welcome.subject, html: welcome.html, text: null,
        from: 'Acme <hello@acme.test>', reply_to: null, published_at: null,
      },
    });
    expect(tpl.id).toMatch(/^tpl_/);
    expect((await api.get(`/v1/templates/${tpl.id}`)).body).toEqual(tpl);
    expect((await api.get('/v1/templates/welcome')).body).toEqual(tpl);
    expectProblem(await api.get('/v1/templates/tpl_nothing'), 404, 'not_found');
    expectProblem(await api.get('/v1/templates/nothing'), 404, 'not_found');
  });

  it('refuses a source that does not parse, naming the line and column', async () => {
    const err = expectProblem(await api.post('/v1/templates', {
      name: 'Broken', subject: 'Hi', html: '<p>\n  {% if vip %}Thanks</p>', variables: [{ key: 'vip', type: 'boolean' }],
    }), 422, 'template_invalid', 'html');
    expect(err.message).toBe('html, line 2, column 3: tag {% if vip %} not closed.');
    expect(err.problems).toEqual([{ param: 'html', message: err.message, line: 2, column: 3 }]);

    const several = expectProblem(await api.post('/v1/templates', { name: 'x', subject: '{{ a', text: '{% include "secrets" %}' }), 422, 'template_invalid');
    expect(several.problems).toEqual([
      { param: 'subject', line: 1, column: 1, message: 'subject, line 1, column 1: output "{{ a" not closed.' },
      { param: 'text', line: 1, column: 1, message: 'text, line 1, column 1: tag "include" not found.' },
    ]);
    expect(several.message).toBe('subject, line 1, column 1: output "{{ a" not closed. (and 1 more: see problems)');
  });

  it('refuses a variable used but not declared, but not contact or unsubscribe_url', async () => {
    const err = expectProblem(await api.post('/v1/templates', {
      name: 'x', subject: 'Hi {{ contact.first_name }}', html: '<a href="{{ unsubscribe_url }}">Unsubscribe</a>\n<p>{{ coupon }}</p>',
    }), 422, 'template_invalid', 'html');
    expect(err.message).toBe("html, line 2, column 7: 'coupon' is used but not declared in variables.");
    expect(err.problems[0]).toMatchObject({ line: 2, column: 7, variable: 'coupon' });
    await create({ name: 'provided', subject: 'Hi {{ contact.first_name }}', html: '<a href="{{ unsubscribe_url }}">Unsubscribe</a>' });
  });

  it('refuses bad declarations, content and fields', async () => {
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ subject: 'x', text: 'x' }, 'validation_error', 'name'],
      [{ name: 'x', text: 'x' }, 'validation_error', 'subject'],
      [{ name: '   ', subject: 'x', text: 'x' }, 'validation_error', 'name'],
      [{ name: 'x', subject: 'x' }, 'template_invalid', 'html'],
      [{ name: 'x', subject: 'x', text: 'x', from: 'not an address' }, 'template_invalid', 'from'],
      [{ name: 'x', subject: 'x', text: 'x', reply_to: ['a@b.test', 'nope'] }, 'template_invalid', 'reply_to.1'],
      [{ name: 'x', subject: 'x', text: 'x', variables: [{ key: 'contact', type: 'object' }] }, 'template_invalid', 'variables.0.key'],
      [{ name: 'x', subject: 'x', text: 'x', variables: [{ key: 'n', type: 'number', fallback: 'one' }] }, 'template_invalid', 'variables.0.fallback'],
      [{ name: 'x', subject: 'x', text: 'x', variables: [{ key: 'n', type: 'date' }] }, 'validation_error', 'variables.0.type'],
      [{ name: 'x', subject: 'x', text: 'x', alias: 'Has Spaces' }, 'validation_error', 'alias'],
      [{ name: 'x', subject: 'x', text: 'x', alias: 'tpl_mine' }, 'validation_error', 'alias'],
      // GET /templates/render is the preview's path, never a template named so.
      [{ name: 'x', subject: 'x', text: 'x', alias: 'render' }, 'validation_error', 'alias'],
      [{ name: 'x', subject: 'x', text: 'x', colour: 'red' }, 'validation_error', 'colour'],
      [{ name: 'x', subject: 'x', text: 'x', variables: [{ key: 'a', type: 'string', default: 1 }] }, 'validation_error', 'variables.0.default'],
    ];
    for (const [body, code, param] of cases) expectProblem(await api.post('/v1/templates', body), 422, code, param);
    const dup = expectProblem(await api.post('/v1/templates', { name: 'x', subject: 'x', text: 'x', alias: 'dup' }).then(async (first) => {
      expect(first.status).toBe(201);
      return api.post('/v1/templates', { name: 'y', subject: 'y', text: 'y', alias: 'dup' });
    }), 422, 'already_exists', 'alias');
    expect(dup.template_id).toMatch(/^tpl_/);
    expectProblem(await api.patch(`/v1/templates/${dup.template_id}`, { alias: 'render' }), 422, 'validation_error', 'alias');
  });

  it('refuses a fallback nested deeper than it can be kept, on create and on update, rather than failing', async () => {
    const nested = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
    const withFallback = (depth: number) =>
      `{"name":"deep","subject":"x","text":"{{ v }}","variables":[{"key":"v","type":"object","fallback":${nested(depth)}}]}`;
    const headers = { 'Content-Type': 'application/json' };
    for (const depth of [MAX_VALUE_DEPTH + 1, 20_000]) {
      const res = await api.request('POST', '/v1/templates', { rawBody: withFallback(depth), headers });
      expectProblem(res, 422, 'template_invalid', 'variables.0.fallback');
    }
    // Empty objects count as deep as full ones.
    const emptyObjects = '{"a":'.repeat(MAX_VALUE_DEPTH) + '{}' + '}'.repeat(MAX_VALUE_DEPTH);
    const empty = `{"name":"deep","subject":"x","text":"{{ v }}","variables":[{"key":"v","type":"object","fallback":${emptyObjects}}]}`;
    expectProblem(await api.request('POST', '/v1/templates', { rawBody: empty, headers }), 422, 'template_invalid', 'variables.0.fallback');
    const kept = await api.request('POST', '/v1/templates', { rawBody: withFallback(MAX_VALUE_DEPTH), headers });
    expect(kept.status).toBe(201);
    const update = `{"variables":[{"key":"v","type":"object","fallback":${nested(20_000)}}]}`;
    expectProblem(await api.request('PATCH', `/v1/templates/${kept.body.id}`, { rawBody: update, headers }), 422, 'template_invalid', 'variables.0.fallback');
  });

  it('lists templates newest first, with cursors and a partial, case-blind name filter', async () => {
    await using own = await startTestApp();
    const ids: string[] = [];
    for (const name of ['Receipt', 'Password reset', 'Weekly RECEIPT digest', 'Invite']) {
      ids.push((await own.api.post('/v1/templates', { name, subject: name, text: 'x' })).body.id);
    }
    const p1 = (await own.api.get('/v1/templates?limit=3')).body;
    expect(p1.data.map((x: { id: string }) => x.id)).toEqual(ids.slice(1).reverse());
    expect(p1.data[0]).not.toHaveProperty('latest');
    const p2 = (await own.api.get(`/v1/templates?limit=3&starting_after=${p1.next_cursor}`)).body;
    expect(p2).toEqual({ data: [expect.objectContaining({ id: ids[0] })], has_more: false });
    expect((await own.api.get('/v1/templates?name=receipt')).body.data.map((x: { name: string }) => x.name)).toEqual(['Weekly RECEIPT digest', 'Receipt']);
    expect((await own.api.get('/v1/templates?name=100%25')).body.data).toEqual([]);
    expectProblem(await own.api.get('/v1/templates?starting_after=forged'), 400, 'invalid_cursor');
    expectProblem(await own.api.get('/v1/templates?limit=0'), 400, 'validation_error', 'limit');
  });

  it('keeps versions immutable: a content change makes a draft, publishing chooses, a rollback is a publish', async () => {
    const tpl = await create({ ...welcome, alias: 'versions' });
    const published = (await api.post(`/v1/templates/${tpl.id}/publish`)).body;
    expect(published).toMatchObject({ published_version: 1, latest_version: 1, published: { version: 1 } });
    expect(published.published.published_at).toEqual(expect.any(String));

    const renamed = (await api.patch('/v1/templates/versions', { name: 'Welcome v2', alias: 'versions-2' })).body;
    expect(renamed).toMatchObject({ name: 'Welcome v2', alias: 'versions-2', latest_version: 1 });
    expectProblem(await api.get('/v1/templates/versions'), 404, 'not_found');

    const v2 = (await api.patch(`/v1/templates/${tpl.id}`, { subject: 'Hello {{ first_name }}', text: 'Hi {{ first_name }}' })).body;
    expect(v2).toMatchObject({ latest_version: 2, published_version: 1, latest: { version: 2, subject: 'Hello {{ first_name }}', html: welcome.html, published_at: null } });
    expect(v2.published).toEqual(published.published);
    // The same content again is no change.
    expect((await api.patch(`/v1/templates/${tpl.id}`, { subject: 'Hello {{ first_name }}' })).body.latest_version).toBe(2);
    // A change that does not check out writes nothing.
    expectProblem(await api.patch(`/v1/templates/${tpl.id}`, { html: '{{ nope }}' }), 422, 'template_invalid', 'html');
    expectProblem(await api.patch(`/v1/templates/${tpl.id}`, { html: null, text: null }), 422, 'template_invalid', 'html');
    expect((await api.get(`/v1/templates/${tpl.id}`)).body.latest_version).toBe(2);
    // Removing a variable the sources still use is refused.
    expectProblem(await api.patch(`/v1/templates/${tpl.id}`, { variables: [{ key: 'plan', type: 'string' }] }), 422, 'template_invalid', 'subject');

    const v3 = (await api.patch(`/v1/templates/${tpl.id}`, { html: null, from: null, variables: [{ key: 'first_name', type: 'string', fallback: 'friend' }] })).body;
    expect(v3.latest).toMatchObject({ version: 3, html: null, text: 'Hi {{ first_name }}', from: null, variables: [{ key: 'first_name', fallback: 'friend' }] });
    expect(v3.variables).toEqual(published.variables);

    expect((await api.post(`/v1/templates/${tpl.id}/publish`, { version: 3 })).body).toMatchObject({ published_version: 3, variables: v3.latest.variables });
    expect((await api.post(`/v1/templates/${tpl.id}/publish`, { version: 1 })).body.published_version).toBe(1);
    expectProblem(await api.post(`/v1/templates/${tpl.id}/publish`, { version: 4 }), 422, 'validation_error', 'version');
    expectProblem(await api.post(`/v1/templates/${tpl.id}/publish`, { version: 0 }), 422, 'validation_error', 'version');
    expectProblem(await api.post('/v1/templates/tpl_nothing/publish'), 404, 'not_found');

    const list = (await api.get(`/v1/templates/${tpl.id}/versions?limit=2`)).body;
    expect(list.data.map((v: { version: number }) => v.version)).toEqual([3, 2]);
    expect(list.data[0]).not.toHaveProperty('html');
    const rest = (await api.get(`/v1/templates/${tpl.id}/versions?limit=2&starting_after=${list.next_cursor}`)).body;
    expect(rest.data.map((v: { version: number }) => v.version)).toEqual([1]);
    expect(rest.has_more).toBe(false);
    expect((await api.get(`/v1/templates/versions-2/versions/1`)).body).toEqual({ ...published.published, published_at: expect.any(String) });
    expectProblem(await api.get(`/v1/templates/${tpl.id}/versions/9`), 404, 'not_found');
    expectProblem(await api.get(`/v1/templates/${tpl.id}/versions/first`), 404, 'not_found');
    expectProblem(await api.get('/v1/templates/tpl_nothing/versions'), 404, 'not_found');

    expectProblem(await api.patch(`/v1/templates/${tpl.id}`, {}), 422, 'validation_error');
    expectProblem(await api.patch('/v1/templates/tpl_nothing', { name: 'x' }), 404, 'not_found');
    const other = await create({ name: 'other', alias: 'taken', subject: 'x', text: 'x' });
    expectProblem(await api.patch(`/v1/templates/${tpl.id}`, { alias: 'taken' }), 422, 'already_exists', 'alias');
    expect((await api.patch(`/v1/templates/${other.id}`, { alias: 'taken' })).status).toBe(200);
    expect((await api.patch(`/v1/templates/${tpl.id}`, { alias: null })).body.alias).toBeNull();
  });

  it('duplicates the latest version into a new draft template', async () => {
    const tpl = await create({ ...welcome, alias: 'dup-source' });
    await api.patch(`/v1/templates/${tpl.id}`, { subject: 'Second {{ first_name }}' });
    await api.post(`/v1/templates/${tpl.id}/publish`, { version: 1 });
    const copy = await api.post('/v1/templates/dup-source/duplicate');
    expect(copy.status).toBe(201);
    expect(copy.body).toMatchObject({
      name: 'Welcome (copy)', alias: null, latest_version: 1, published_version: null,
      latest: { version: 1, subject: 'Second {{ first_name }}', html: welcome.html, from: welcome.from },
    });
    expect(copy.body.id).not.toBe(tpl.id);
    const named = await api.post(`/v1/templates/${tpl.id}/duplicate`, { name: 'Welcome B', alias: 'welcome-b' });
    expect(named.body).toMatchObject({ name: 'Welcome B', alias: 'welcome-b' });
    expectProblem(await api.post(`/v1/templates/${tpl.id}/duplicate`, { alias: 'welcome-b' }), 422, 'already_exists', 'alias');
    expectProblem(await api.post('/v1/templates/nothing/duplicate'), 404, 'not_found');
  });

  it('takes a name of 200 characters however many UTF-16 units they need, and shortens its copy\'s name by characters', async () => {
    const name = `a${'\u{1F600}'.repeat(199)}`;
    const tpl = await create({ ...welcome, name, alias: 'emoji-name' });
    expect(tpl.name).toBe(name);
    const copy = await api.post(`/v1/templates/${tpl.id}/duplicate`);
    expect(copy.status).toBe(201);
    // ' (copy)' does not fit: the name is cut to 200 characters, never inside one.
    expect(copy.body.name).toBe(name);
  });

  it('deletes a template and its versions', async () => {
    const tpl = await create({ ...welcome, alias: 'doomed' });
    expect((await api.delete('/v1/templates/doomed')).status).toBe(204);
    expectProblem(await api.get(`/v1/templates/${tpl.id}`), 404, 'not_found');
    expectProblem(await api.get(`/v1/templates/${tpl.id}/versions/1`), 404, 'not_found');
    expectProblem(await api.delete(`/v1/templates/${tpl.id}`), 404, 'not_found');
    const left = await t.mailroom.services.store.db.selectFrom('template_versions').select('version').where('template_id', '=', tpl.id).execute();
    expect(left).toEqual([]);
    // The alias is free again.
    await create({ ...welcome, alias: 'doomed' });
  });

  it('renders a version with values: escaped html, plain text derived from it, every problem listed', async () => {
    const tpl = await create({ ...welcome, alias: 'render-me' });
    expectProblem(await api.post('/v1/templates/render-me/render', { variables: { first_name: 'Ann' } }), 422, 'template_not_published', 'version');
    const draft = await api.post('/v1/templates/render-me/render', { version: 1, variables: { first_name: '<script>alert(1)</script>' } });
    expect(draft.body).toEqual({
      object: 'template_render',
      subject: 'Welcome, <script>alert(1)</script>!',
      html: '<h1>Hi &lt;script&gt;alert(1)&lt;/script&gt;</h1>\n<p>Your plan: FREE.</p>\n<p><a href="https://app.example/start">Get started</a></p>',
      text: 'HI <SCRIPT>ALERT(1)</SCRIPT>\n\nYour plan: FREE.\n\nGet started [https://app.example/start]',
    });
    await api.post(`/v1/templates/${tpl.id}/publish`);
    const published = await api.post(`/v1/templates/${tpl.id}/render`, { variables: { first_name: 'Ann', plan: 'pro', unused: 1 } });
    expect(published.body.subject).toBe('Welcome, Ann!');
    expect(published.body.html).toContain('Your plan: PRO.');

    const err = expectProblem(await api.post(`/v1/templates/${tpl.id}/render`, { variables: { plan: 3 } }), 422, 'template_variables_invalid');
    expect(err.problems).toEqual([
      { param: 'variables.first_name', message: "'first_name' is required by the template." },
      { param: 'variables.plan', message: "'plan' must be a string, not a number." },
    ]);
    expectProblem(await api.post(`/v1/templates/${tpl.id}/render`, { version: 7 }), 422, 'validation_error', 'version');
    expectProblem(await api.post(`/v1/templates/${tpl.id}/render`, { variables: [] }), 422, 'validation_error', 'variables');
    expectProblem(await api.post('/v1/templates/tpl_nothing/render', {}), 404, 'not_found');
  });

  it('previews unsaved sources with sample values, contact and unsubscribe_url included', async () => {
    const res = await api.post('/v1/templates/render', {
      subject: 'Hi {{ contact.first_name | default: "there" }}\n  and welcome',
      html: '<p>{{ items | size }} items for {{ contact.first_name }}</p><a href="{{ unsubscribe_url }}">Unsubscribe</a>',
      text: 'Unsubscribe: {{ unsubscribe_url }}',
      variables: [{ key: 'items', type: 'list', required: true }],
      data: { items: [1, 2], contact: { first_name: 'Bo' }, unsubscribe_url: 'https://x.test/u/1' },
    });
    expect(res.body).toEqual({
      object: 'template_render', subject: 'Hi Bo and welcome',
      html: '<p>2 items for Bo</p><a href="https://x.test/u/1">Unsubscribe</a>', text: 'Unsubscribe: https://x.test/u/1',
    });
    const bare = await api.post('/v1/templates/render', { html: '<p>{{ contact.first_name | default: "friend" }}</p>' });
    expect(bare.body).toEqual({ object: 'template_render', subject: '', html: '<p>friend</p>', text: 'friend' });
    // A sample contact's name gives its first and last name, as a real contact's does; names given win.
    const named = await api.post('/v1/templates/render', { subject: '{{ contact.first_name }}/{{ contact.last_name }}', text: 'x',
      data: { contact: { name: 'Ada King Lovelace' } } });
    expect(named.body.subject).toBe('Ada/Lovelace');
    const given = await api.post('/v1/templates/render', { subject: '{{ contact.first_name }}/{{ contact.last_name }}', text: 'x',
      data: { contact: { name: 'Ada Lovelace', first_name: 'Augusta' } } });
    expect(given.body.subject).toBe('Augusta/Lovelace');

    expect(expectProblem(await api.post('/v1/templates/render', { subject: 'x', html: '{{ a' }), 422, 'template_invalid', 'html').message)
      .toBe('html, line 1, column 1: output "{{ a" not closed.');
    expectProblem(await api.post('/v1/templates/render', { subject: 'x', html: '{{ a }}' }), 422, 'template_invalid', 'html');
    expectProblem(await api.post('/v1/templates/render', {
      subject: 'x', text: '{{ n }}', variables: [{ key: 'n', type: 'number', required: true }], data: { n: 'two' },
    }), 422, 'template_variables_invalid', 'data.n');
    expectProblem(await api.post('/v1/templates/render', { subject: 'x', text: 'x', data: { contact: 'Bo' } }), 422, 'template_variables_invalid', 'data.contact');
  });

  it('refuses values nested deeper than MAX_VALUE_DEPTH in a render and a preview, naming the variable and the limit', async () => {
    const tpl = await create({ name: 'Deep render', subject: '{{ v | json }}', text: 'x', variables: [{ key: 'v', type: 'object' }] });
    const objects = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
    const lists = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
    const headers = { 'Content-Type': 'application/json' };
    const tooDeep = (res: ApiResponse, param: string, name: string) =>
      expect(expectProblem(res, 422, 'template_variables_invalid', param).message).toBe(`'${name}' nests lists and objects more than ${MAX_VALUE_DEPTH} deep.`);
    const preview = `"subject":"{{ v | json }} {{ contact | json }}","text":"x","variables":[{"key":"v","type":"list"}]`;
    for (const depth of [MAX_VALUE_DEPTH + 1, 20_000]) {
      tooDeep(await api.request('POST', `/v1/templates/${tpl.id}/render`, { rawBody: `{"version":1,"variables":{"v":${objects(depth)}}}`, headers }), 'variables.v', 'v');
      tooDeep(await api.request('POST', '/v1/templates/render', { rawBody: `{${preview},"data":{"v":${lists(depth)}}}`, headers }), 'data.v', 'v');
      tooDeep(await api.request('POST', '/v1/templates/render', { rawBody: `{${preview},"data":{"contact":${objects(depth)}}}`, headers }), 'data.contact', 'contact');
    }
    // Empty lists count as deep as full ones; a value at the limit renders.
    tooDeep(await api.request('POST', `/v1/templates/${tpl.id}/render`, { rawBody: `{"version":1,"variables":{"v":{"a":${lists(MAX_VALUE_DEPTH)}}}}`, headers }), 'variables.v', 'v');
    const kept = await api.request('POST', `/v1/templates/${tpl.id}/render`, { rawBody: `{"version":1,"variables":{"v":${objects(MAX_VALUE_DEPTH)}}}`, headers });
    expect(kept.body.subject).toBe(objects(MAX_VALUE_DEPTH));
    const sample = await api.request('POST', '/v1/templates/render', { rawBody: `{${preview},"data":{"v":${lists(MAX_VALUE_DEPTH)},"contact":${objects(MAX_VALUE_DEPTH)}}}`, headers });
    expect(sample.body.subject).toBe(`${lists(MAX_VALUE_DEPTH)} ${objects(MAX_VALUE_DEPTH)}`);
  });

  it('refuses a template that loops a million times within the render limit, and keeps answering', async () => {
    const started = Date.now();
    const loop = '{% for i in (1..1000) %}{% for j in (1..1000) %}{{ i }}{{ j }}{% endfor %}{% endfor %}';
    const [refused, other] = await Promise.all([
      api.post('/v1/templates/render', { subject: 'x', text: loop }),
      api.get('/v1/templates?limit=1'),
    ]);
    const err = expectProblem(refused, 422, 'template_render_failed', 'text');
    expect(err.message).toMatch(/^Rendering text, line 1, column \d+ failed: .*limit exceeded/);
    expect(other.status).toBe(200);
    // Saved, it is refused the same way when rendered, and the server still answers.
    const tpl = await create({ name: 'loop', subject: 'x', text: loop });
    const renders = await Promise.all(Array.from({ length: 3 }, () => api.post(`/v1/templates/${tpl.id}/render`, { version: 1 })));
    for (const r of renders) expectProblem(r, 422, 'template_render_failed');
    expect((await api.get(`/v1/templates/${tpl.id}`)).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('refuses a filter over a long array or a range past one allocation, as a render failure', async () => {
    // Each would hold the server for seconds: a filter or a range runs to its end between the render limit's checks.
    for (const [text, message] of [
      ['{{ (1..300000) | sort | first }}', 'sort was given 300,000 elements; a filter takes at most 10,000'],
      ['{{ items | where: "sku" | size }}', 'where was given 20,000 elements; a filter takes at most 10,000'],
      ['{% for i in (1..9999999) %}{% endfor %}', "a range or a filter's result of 9,999,999 elements or characters; at most 1,000,000 (memory alloc limit exceeded)"],
    ]) {
      const items = Array.from({ length: 20_000 }, (_, i) => ({ sku: `s${i}` }));
      const err = expectProblem(await api.post('/v1/templates/render', {
        subject: 'x', text, variables: [{ key: 'items', type: 'list' }], data: { items },
      }), 422, 'template_render_failed', 'text');
      expect(err.message).toBe(`Rendering text, line 1, column 1 failed: ${message}.`);
    }
  });

  it('counts what a capture holds as a filter\'s result, so doubling one in a loop is refused within the limits', async () => {
    // Liquid's capture counts nothing: captured into itself twice, a variable doubles at each turn, to hundreds of millions of characters.
    const doubling = (start: string, turns: number) =>
      `{% capture s %}${start}{% endcapture %}{% for i in (1..${turns}) %}{% capture s %}{{ s }}{{ s }}{% endcapture %}{% endfor %}{{ s | size }}`;
    for (const [part, source] of [['text', doubling('xxxxxxxxxx', 25)], ['html', doubling('&', 16)]]) {
      const err = expectProblem(await api.post('/v1/templates/render', { subject: 'x', [part]: source }), 422, 'template_render_failed', part);
      expect(err.message).toMatch(/a capture over 1,000,000 characters|memory alloc limit exceeded/);
    }
    // A capture within the limits still works, in both parts.
    const kept = await api.post('/v1/templates/render', { subject: 'x', html: doubling('&', 3), text: doubling('xxxxxxxxxx', 10) });
    expect(kept.status).toBe(200);
    expect(kept.body).toMatchObject({ html: '104', text: '10240' });
  });

  it('checks a source of up to 10,000 tags in time, wherever they are, and refuses more', async () => {
    // Each tag's line and column was found by counting from the start: 10,000 tags spread over a long source took 25 s
    // a check, so these two held the event loop past the test's time; now they take milliseconds.
    const text = `{{ x }}${'a'.repeat(90)}`.repeat(10_000);
    const [undeclared, rendered, other] = await Promise.all([
      api.post('/v1/templates/render', { subject: 'x', text }),
      api.post('/v1/templates/render', { subject: 'x', text, variables: [{ key: 'x', type: 'string' }], data: { x: 'y' } }),
      api.get('/v1/templates?limit=1'),
    ]);
    expect(undeclared.body.error.problems).toEqual([expect.objectContaining({ param: 'text', line: 1, column: 4 })]);
    expect(rendered.status, JSON.stringify(rendered.body).slice(0, 300)).toBe(200);
    expect(rendered.body.text).toBe(`y${'a'.repeat(90)}`.repeat(10_000));
    expect(other.status).toBe(200);
    // Liquid's parser takes time growing with the square of the tags.
    const err = expectProblem(await api.post('/v1/templates', { name: 'many', subject: 'x', html: '{{ x }}'.repeat(10_001) }), 422, 'template_invalid', 'html');
    expect(err.message).toContain('10,001 tags and outputs ({% %} and {{ }}); a source has at most 10,000');
  }, 30_000);

  it('refuses blocks nested more than 100 deep, saying where, rather than running out of stack', async () => {
    const nested = (n: number, open: string, close: string) => `${open.repeat(n)}x${close.repeat(n)}`;
    // A hundred deep, each kind of block, still parses and renders.
    const deepest = `${nested(50, '{% if a %}', '{% endif %}')}${nested(50, '{%- for i in a -%}', '{% endfor %}')}`;
    const ok = await api.post('/v1/templates/render', { subject: 'x', text: nested(50, '{% capture c %}', '{% endcapture %}') + deepest,
      variables: [{ key: 'a', type: 'list' }], data: { a: [1] } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const refused = await api.post('/v1/templates', { name: 'deep', subject: 'x', html: `<p>\n  ${nested(5_000, '{% if a %}', '{% endif %}')}` });
    const err = expectProblem(refused, 422, 'template_invalid', 'html');
    expect(err.message).toContain('blocks ({% if %}, {% for %} and the like) nested more than 100 deep; a source nests them at most 100 deep');
    expect(refused.body.error.problems).toEqual([expect.objectContaining({ param: 'html', line: 2, column: 3 + 100 * 10 })]);
    // What raw and comment blocks hold opens nothing.
    const quoted = await api.post('/v1/templates/render', { subject: 'x', text: `{% raw %}${'{% if a %}'.repeat(200)}{% endraw %}{% comment %}${'{% for %}'.repeat(200)}{% endcomment %}` });
    expect(quoted.status, JSON.stringify(quoted.body).slice(0, 300)).toBe(200);
    expect(quoted.body.text).toBe('{% if a %}'.repeat(200));
    // Nesting inside a {% liquid %} tag, which the count does not read, is refused in the same words.
    const lines = `{% liquid\n${'if a\n'.repeat(5_000)}echo 1\n${'endif\n'.repeat(5_000)}%}`;
    const liquid = expectProblem(await api.post('/v1/templates/render', { subject: 'x', text: lines }), 422, 'template_invalid', 'text');
    expect(liquid.message).toContain('nested more than 100 deep');
  });

  it('needs the templates scopes', async () => {
    const tpl = await create({ ...welcome, alias: 'scoped' });
    const reader = api.as((await t.seed.key({ scopes: ['templates:read'] })).token);
    expect((await reader.get('/v1/templates')).status).toBe(200);
    expect((await reader.get('/v1/templates/scoped')).status).toBe(200);
    expect((await reader.get('/v1/templates/scoped/versions')).status).toBe(200);
    expect((await reader.post('/v1/templates/scoped/render', { version: 1, variables: { first_name: 'A' } })).status).toBe(200);
    expect((await reader.post('/v1/templates/render', { subject: 'x', text: 'x' })).status).toBe(200);
    expectProblem(await reader.post('/v1/templates', welcome), 403, 'forbidden');
    expectProblem(await reader.patch(`/v1/templates/${tpl.id}`, { name: 'x' }), 403, 'forbidden');
    expectProblem(await reader.post(`/v1/templates/${tpl.id}/publish`), 403, 'forbidden');
    expectProblem(await reader.post(`/v1/templates/${tpl.id}/duplicate`), 403, 'forbidden');
    expectProblem(await reader.delete(`/v1/templates/${tpl.id}`), 403, 'forbidden');
    const sender = api.as((await t.seed.key({ scopes: ['sending_access'] })).token);
    expectProblem(await sender.get('/v1/templates'), 403, 'forbidden');
    expectProblem(await api.as(null).get('/v1/templates'), 401, 'unauthorized');
  });

  it('never shows one workspace the templates, aliases or cursors of another', async () => {
    const mine = await create({ ...welcome, alias: 'shared-name' });
    await create({ name: 'second', subject: 'x', text: 'x' });
    const other = await t.seed.workspace();
    const them = api.as((await t.seed.key({ workspaceId: other.id })).token);
    expect((await them.get('/v1/templates')).body.data).toEqual([]);
    for (const ref of [mine.id, 'shared-name']) {
      expectProblem(await them.get(`/v1/templates/${ref}`), 404, 'not_found');
      expectProblem(await them.patch(`/v1/templates/${ref}`, { name: 'stolen' }), 404, 'not_found');
      expectProblem(await them.post(`/v1/templates/${ref}/publish`), 404, 'not_found');
      expectProblem(await them.post(`/v1/templates/${ref}/duplicate`), 404, 'not_found');
      expectProblem(await them.post(`/v1/templates/${ref}/render`, { version: 1 }), 404, 'not_found');
      expectProblem(await them.get(`/v1/templates/${ref}/versions`), 404, 'not_found');
      expectProblem(await them.get(`/v1/templates/${ref}/versions/1`), 404, 'not_found');
      expectProblem(await them.delete(`/v1/templates/${ref}`), 404, 'not_found');
    }
    // The alias is theirs to use too, and names their own template.
    const theirs = (await them.post('/v1/templates', { ...welcome, alias: 'shared-name' })).body;
    expect((await them.get('/v1/templates/shared-name')).body.id).toBe(theirs.id);
    expect((await api.get('/v1/templates/shared-name')).body.id).toBe(mine.id);
    const page = (await api.get('/v1/templates?limit=1')).body;
    expectProblem(await them.get(`/v1/templates?starting_after=${page.next_cursor}`), 400, 'invalid_cursor');
    expect((await api.get(`/v1/templates/${mine.id}`)).body.name).toBe('Welcome');
  });
});
