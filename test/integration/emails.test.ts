import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as delay } from 'node:timers/promises';
import { Migrator, sql } from 'kysely';
import { ManualClock } from '../../src/core/clock.js';
import { migrations } from '../../src/store/migrations/index.js';
import { SENDING_ENV, startTestApp, type ApiClient, type TestApp } from '../helpers/app.js';
import { onPostgres } from '../helpers/database.js';

// The Emails API over a real socket: what is accepted, every way a request is
// refused, and the state rules of reschedule, cancel and resend.

/** Polls `check` until it returns a value, or fails after `ms`. */
async function eventually<T>(check: () => Promise<T | undefined>, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms`);
    await delay(20);
  }
}

const statusOf = async (api: ApiClient, id: string, wanted: string) =>
  eventually(async () => ((await api.get(`/v1/emails/${id}`)).body.status === wanted ? true : undefined));

const basic = { from: 'Ann Lee <ann@acme.test>', to: 'bob@example.org', subject: 'Hello', text: 'Hi Bob' };

describe('POST /v1/emails', () => {
  let t: TestApp;
  let testApi: ApiClient;
  beforeAll(async () => {
    t = await startTestApp();
    await t.seed.activeDomain('acme.test');
    testApi = t.api.as((await t.seed.key({ mode: 'test' })).token);
  });
  afterAll(() => t.close());

  it('accepts a send from an active domain and delivers it (sink)', async () => {
    const res = await t.api.post('/v1/emails', {
      ...basic, to: ['Bob <bob@example.org>', 'carol@example.net'], cc: 'dan@example.org', bcc: ['eve@example.com'],
      reply_to: 'replies@acme.test', html: '<p>Hi</p>', headers: { 'X-Campaign': 'fall' }, tags: ['welcome', 'onboarding'],
    });
    expect(res.status).toBe(201);
    const e = res.body;
    expect(e).toMatchObject({
      object: 'email', from: 'Ann Lee <ann@acme.test>', to: ['Bob <bob@example.org>', 'carol@example.net'], cc: ['dan@example.org'],
      bcc: ['eve@example.com'], reply_to: ['replies@acme.test'], subject: 'Hello', html: '<p>Hi</p>', text: 'Hi Bob',
      headers: { 'X-Campaign': 'fall' }, tags: ['welcome', 'onboarding'], mode: 'live', status: 'pending',
      message_id: `<${e.id}@acme.test>`, scheduled_at: null, resent_from: null,
    });
    expect(e.domain_id).toMatch(/^dom_/);
    expect(e.recipients.map((r: { email: string; type: string; status: string }) => [r.email, r.type, r.status])).toEqual([
      ['bob@example.org', 'to', 'queued'], ['carol@example.net', 'to', 'queued'], ['dan@example.org', 'cc', 'queued'], ['eve@example.com', 'bcc', 'queued'],
    ]);
    await statusOf(t.api, e.id, 'delivered');
    const after = (await t.api.get(`/v1/emails/${e.id}`)).body;
    expect(after.recipients.every((r: { status: string; smtp_code: number }) => r.status === 'delivered' && r.smtp_code === 250)).toBe(true);
    expect(after.sent_at).not.toBeNull();
  });

  it('refuses, where mail leaves, a live send from a domain the workspace does not have or has not verified', async () => {
    await using sending = await startTestApp({ env: SENDING_ENV });
    const unknown = await sending.api.post('/v1/emails', { ...basic, from: 'ann@unknown.test' });
    expect(unknown.status).toBe(422);
    expect(unknown.body.error).toMatchObject({ code: 'domain_not_verified', param: 'from' });
    expect(unknown.body.error.message).toContain("'unknown.test'");
    await sending.mailroom.services.domains.create(sending.workspaceId, { name: 'pending.test' });
    const pending = await sending.api.post('/v1/emails', { ...basic, from: 'ann@pending.test' });
    expect(pending.status).toBe(422);
    expect(pending.body.error.code).toBe('domain_not_verified');
    expect(pending.body.error.message).toMatch(/'pending\.test'.*not verified/);
  });

  it('lets a live key send from any domain in sink mode, as a mail catcher, and keeps the source', async () => {
    const res = await t.api.post('/v1/emails', { ...basic, from: 'App <noreply@never-added.test>' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ mode: 'live', domain_id: null });
    await statusOf(t.api, res.body.id, 'delivered');
    const raw = await fetch(`${t.url}/v1/emails/${res.body.id}/raw`, { headers: { Authorization: `Bearer ${t.token}` } });
    expect(raw.status).toBe(200);
    expect(await raw.text()).toContain('From: App <noreply@never-added.test>');
  });

  it('lets a test key send from any domain', async () => {
    const res = await testApi.post('/v1/emails', { ...basic, from: 'ann@anything.test' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ mode: 'test', domain_id: null });
    await statusOf(testApi, res.body.id, 'delivered');
  });

  it.each([
    ['an unknown field', { ...basic, colour: 'blue' }, 'colour'],
    ['a missing from', { to: basic.to, subject: 'x', text: 'x' }, 'from'],
    ['a missing subject', { from: basic.from, to: basic.to, text: 'x' }, 'subject'],
    ['neither html nor text', { from: basic.from, to: basic.to, subject: 'x' }, 'html'],
    ['a malformed address', { ...basic, to: ['ok@example.org', 'not-an-address'] }, 'to.1'],
    ['two addresses in one entry', { ...basic, cc: 'a@example.org, b@example.org' }, 'cc'],
    ['an empty to', { ...basic, to: [] }, 'to'],
    ['too many recipients', { ...basic, to: Array.from({ length: 51 }, (_, i) => `r${i}@example.org`) }, 'to'],
    ['a structural header', { ...basic, headers: { From: 'ceo@acme.test' } }, 'headers.From'],
    ['a header with a line break', { ...basic, headers: { 'X-A': 'a\r\nBcc: x@example.org' } }, 'headers.X-A'],
    ['tags that are not strings', { ...basic, tags: [{ name: 'x' }] }, 'tags.0'],
    ['an unreadable scheduled_at', { ...basic, scheduled_at: 'sometime soon' }, 'scheduled_at'],
    ['a scheduled_at in the past', { ...basic, scheduled_at: '2020-01-01T00:00:00Z' }, 'scheduled_at'],
    ['a scheduled_at too far ahead', { ...basic, scheduled_at: 'in 60 days' }, 'scheduled_at'],
    ['inline content without a filename', { ...basic, attachments: [{ content: 'aGk=' }] }, 'attachments.0.filename'],
    ['content that is not base64', { ...basic, attachments: [{ content: '***', filename: 'a.txt' }] }, 'attachments.0.content'],
    ['an unknown attachment_id', { ...basic, attachments: [{ attachment_id: 'att_nope' }] }, 'attachments.0.attachment_id'],
  ])('refuses %s with 422 naming the field', async (_, body, param) => {
    const res = await t.api.post('/v1/emails', body);
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: 'validation_error', param });
  });

  it('refuses malformed JSON, a missing key, and a key without the scope', async () => {
    expect((await t.api.request('POST', '/v1/emails', { rawBody: '{"from":', headers: { 'Content-Type': 'application/json' } })).status).toBe(400);
    expect((await t.api.as(null).post('/v1/emails', basic)).status).toBe(401);
    const reader = t.api.as((await t.seed.key({ scopes: ['emails:read'] })).token);
    const res = await reader.post('/v1/emails', basic);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('forbidden');
    const sender = t.api.as((await t.seed.key({ scopes: ['sending_access'] })).token);
    expect((await sender.post('/v1/emails', basic)).status).toBe(201);
    expect((await sender.get('/v1/emails')).status).toBe(403);
  });

  it('replays an Idempotency-Key and refuses it for a different request', async () => {
    const headers = { 'Idempotency-Key': 'send-once-1' };
    const first = await t.api.post('/v1/emails', basic, { headers });
    const again = await t.api.post('/v1/emails', basic, { headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const other = await t.api.post('/v1/emails', { ...basic, subject: 'Different' }, { headers });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('idempotency_conflict');
    const list = await t.api.get(`/v1/emails?subject=${encodeURIComponent('Hello')}&limit=100`);
    expect(list.body.data.filter((e: { id: string }) => e.id === first.body.id)).toHaveLength(1);
  });

  it('does not send to suppressed recipients and fails an email whose recipients all are', async () => {
    await t.mailroom.services.suppressions.create(t.workspaceId, 'gone@example.org');
    const res = await t.api.post('/v1/emails', { ...basic, to: ['Gone@Example.org', 'here@example.org'] });
    expect(res.body.recipients.map((r: { status: string }) => r.status)).toEqual(['suppressed', 'queued']);
    await statusOf(t.api, res.body.id, 'delivered');
    const events = (await t.api.get(`/v1/emails/${res.body.id}/events`)).body.data;
    expect(events.find((e: { type: string }) => e.type === 'email.failed').data)
      .toMatchObject({ to: 'Gone@Example.org', reason: 'suppressed', suppression_reason: 'manual' });

    const all = await t.api.post('/v1/emails', { ...basic, to: 'gone@example.org' });
    expect(all.status).toBe(201);
    expect(all.body.status).toBe('failed');
  });
});

describe('POST /v1/emails/check', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
    await t.seed.activeDomain('acme.test');
  });
  afterAll(() => t.close());

  it('scores without sending', async () => {
    const good = await t.api.post('/v1/emails/check', { ...basic, headers: { 'List-Unsubscribe': '<https://acme.test/u>' } });
    expect(good.status).toBe(200);
    expect(good.body).toMatchObject({ object: 'spam_check', score: 0, spam: false, rules: [] });

    const bad = await t.api.post('/v1/emails/check', {
      from: 'promo@unverified.test', to: 'bob@example.org', subject: 'FREE MONEY FOR YOU!!!',
      html: '<a href="https://bit.ly/x">https://acme.test</a> Act now, click here.', attachments: [{ content: 'aGk=', filename: 'setup.exe' }],
    });
    expect(bad.status).toBe(200);
    expect(bad.body.spam).toBe(true);
    expect(bad.body.rules.map((r: { rule: string }) => r.rule)).toEqual(expect.arrayContaining([
      'domain_not_verified', 'html_without_text', 'subject_all_caps', 'spam_phrases', 'link_shortener', 'link_text_mismatch', 'risky_attachment',
    ]));
    expect((await t.api.get('/v1/emails')).body.data).toEqual([]);
  });

  it('says what to fix for bulk mail: one-click unsubscribe, a visible link, and quotes each finding', async () => {
    const to = Array.from({ length: 12 }, (_, i) => `reader${i}@example.org`);
    const res = await t.api.post('/v1/emails/check', {
      from: 'News <news@acme.test>', to, subject: 'Weekly NEWS!!!', text: 'This week: new things.',
      html: '<p>This week: new things. <a href="https://t.ly/abc">Read</a></p>',
      headers: { 'List-Unsubscribe': '<mailto:leave@acme.test>' },
    });
    expect(res.status).toBe(200);
    const byRule = Object.fromEntries(res.body.rules.map((r: { rule: string; found: string[] }) => [r.rule, r.found]));
    expect(byRule.no_one_click_unsubscribe).toEqual(['no https address in List-Unsubscribe']);
    expect(byRule.no_visible_unsubscribe).toEqual(['no unsubscribe link in the text or the HTML']);
    expect(byRule.link_shortener).toEqual(["the t.ly link 'https://t.ly/abc' in the HTML"]);
    expect(byRule.subject_exclamations).toEqual(["'Weekly NEWS!!!' in the subject"]);
    expect(res.body.suggestions).toContain("Use at most one exclamation mark in the subject ('Weekly NEWS!!!' in the subject).");
    // The same message to one reader is not bulk.
    const single = await t.api.post('/v1/emails/check', { from: 'news@acme.test', to: 'one@example.org', subject: 'Weekly news', text: 'This week.' });
    expect(single.body.rules.map((r: { rule: string }) => r.rule)).toEqual(['no_list_unsubscribe']);
  });

  it('answers 400 for a payload that could not be sent', async () => {
    const unknown = await t.api.post('/v1/emails/check', { ...basic, colour: 'red' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.param).toBe('colour');
    const address = await t.api.post('/v1/emails/check', { ...basic, to: 'nobody' });
    expect(address.status).toBe(400);
    expect(address.body.error).toMatchObject({ code: 'validation_error', param: 'to' });
    expect((await t.api.post('/v1/emails/check', { ...basic, attachments: [{ attachment_id: 'att_gone' }] })).status).toBe(400);
  });
});

describe('attachments', () => {
  const clock = new ManualClock();
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ clock });
    await t.seed.activeDomain('acme.test');
  });
  afterAll(() => t.close());

  it('uploads a file, keeps its name and type, and attaches it by id', async () => {
    const up = await t.api.post('/v1/attachments', { content: Buffer.from('%PDF-1.4 test').toString('base64'), filename: 'report.pdf' });
    expect(up.status).toBe(201);
    expect(up.body).toMatchObject({ object: 'attachment', filename: 'report.pdf', content_type: 'application/pdf', size: 13 });
    expect(up.body.attachment_id).toBe(up.body.id);
    expect(Date.parse(up.body.expires_at) - Date.parse(up.body.created_at)).toBe(24 * 3600_000);

    const typed = await t.api.post('/v1/attachments', { content: 'aGk=', filename: 'notes', content_type: 'Text/Plain' });
    expect(typed.body.content_type).toBe('text/plain');

    const sent = await t.api.post('/v1/emails', {
      ...basic, attachments: [{ attachment_id: up.body.attachment_id }, { content: 'aGVsbG8=', filename: 'hello.txt', content_id: 'hello' }],
    });
    expect(sent.status).toBe(201);
    expect(sent.body.attachments).toEqual([
      { filename: 'report.pdf', content_type: 'application/pdf', size: 13, content_id: null },
      { filename: 'hello.txt', content_type: 'text/plain', size: 5, content_id: 'hello' },
    ]);
  });

  it.each([
    ['an empty file', { content: '', filename: 'a.txt' }, 'content'],
    ['content that is not base64', { content: 'no!', filename: 'a.txt' }, 'content'],
    ['a file name with a path', { content: 'aGk=', filename: 'dir/a.txt' }, 'filename'],
    ['a bad content type', { content: 'aGk=', filename: 'a', content_type: 'pdf' }, 'content_type'],
    ['an unknown field', { content: 'aGk=', filename: 'a', size: 2 }, 'size'],
    ['a missing filename', { content: 'aGk=' }, 'filename'],
  ])('refuses %s with 422', async (_, body, param) => {
    const res = await t.api.post('/v1/attachments', body);
    expect(res.status).toBe(422);
    expect(res.body.error.param).toBe(param);
  });

  it('refuses a file over 10 MiB with 422 naming the limit', async () => {
    const res = await t.api.post('/v1/attachments', { content: Buffer.alloc(10 * 1024 * 1024 + 1).toString('base64'), filename: 'big.bin' });
    expect(res.status).toBe(422);
    expect(res.body.error.message).toMatch(/limit is 10485760 bytes/);
  });

  it('refuses an expired upload at send time, and the purge task deletes it', async () => {
    const up = await t.api.post('/v1/attachments', { content: 'aGk=', filename: 'old.txt' });
    clock.advance(24 * 3600_000 + 1);
    const res = await t.api.post('/v1/emails', { ...basic, attachments: [{ attachment_id: up.body.id }] });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: 'validation_error', param: 'attachments.0.attachment_id' });
    expect(res.body.error.message).toMatch(/expired/);

    clock.advance(3600_000);
    // A tick the scheduler began on its own before the clock moved may hold the purge task: tick until a run sees the new time.
    const left = async () => t.mailroom.services.store.db.selectFrom('attachments').select('id').where('id', '=', up.body.id).execute();
    for (let i = 0; i < 20 && (await left()).length > 0; i++) {
      await t.mailroom.scheduler.tick();
      if ((await left()).length > 0) await new Promise((r) => setTimeout(r, 100));
    }
    expect(await left()).toEqual([]);
  });
});

describe('POST /v1/emails/batch', () => {
  const clock = new ManualClock();
  let t: TestApp;
  beforeAll(async () => {
    // Where mail leaves, so that an item from a domain not verified fails alone.
    t = await startTestApp({ clock, env: SENDING_ENV });
    await t.seed.activeDomain('acme.test');
  });
  afterAll(() => t.close());

  it('reports each item in order, sending the good ones', async () => {
    const res = await t.api.post('/v1/emails/batch', {
      emails: [
        basic,
        { ...basic, from: 'ann@elsewhere.test' },
        { ...basic, to: 'broken' },
        { ...basic, to: 'second@example.org', tags: ['batch'] },
        { ...basic, attachments: [{ attachment_id: 'att_missing' }] },
      ],
    });
    expect(res.status).toBe(200);
    const [a, b, c, d, e] = res.body.data;
    expect(a).toMatchObject({ index: 0, id: expect.stringMatching(/^em_/) });
    expect(b).toMatchObject({ index: 1, error: { code: 'domain_not_verified', param: 'from' } });
    expect(c).toMatchObject({ index: 2, error: { code: 'validation_error', param: 'to' } });
    expect(d).toMatchObject({ index: 3, id: expect.stringMatching(/^em_/) });
    expect(e).toMatchObject({ index: 4, error: { code: 'validation_error', param: 'attachments.0.attachment_id' } });
    expect(b.id).toBeUndefined();
    expect((await t.api.get(`/v1/emails/${d.id}`)).body.tags).toEqual(['batch']);
  });

  it('refuses only a wrong envelope as a whole: more than 100 emails, none, or not a list of objects', async () => {
    const over = await t.api.post('/v1/emails/batch', { emails: Array.from({ length: 101 }, () => basic) });
    expect(over.status).toBe(422);
    expect(over.body.error.param).toBe('emails');
    expect((await t.api.post('/v1/emails/batch', { emails: [] })).status).toBe(422);
    expect((await t.api.post('/v1/emails/batch', [basic])).status).toBe(422);
    expect((await t.api.post('/v1/emails/batch', { emails: [basic, 'not an email'] })).body.error.param).toBe('emails.1');
  });

  it('refuses more than 100 emails with 422 on a plan whose burst is one full batch, not with a 429 no wait could end', async () => {
    const ws = await t.seed.workspace({ plan: 'free' });
    await t.seed.activeDomain('acme.test', { workspaceId: ws.id });
    const api = t.api.as((await t.seed.key({ workspaceId: ws.id })).token);
    const over = await api.post('/v1/emails/batch', { emails: Array.from({ length: 1_000 }, () => basic) });
    expect(over.status).toBe(422);
    expect(over.body.error.param).toBe('emails');
    // It is charged as a full batch, the most a batch can cost.
    expect(over.headers.get('ratelimit-remaining')).toBe('0');
  });

  it('fails a malformed item alone, with its error at its index, and sends the rest', async () => {
    const res = await t.api.post('/v1/emails/batch', { emails: [
      { ...basic, subject: 'first good' },
      { ...basic, colour: 'red' },
      { from: basic.from, subject: 'no recipient', text: 'x' },
      { ...basic, to: 42 },
      { ...basic, subject: 'last good' },
    ] });
    expect(res.status).toBe(200);
    const [a, b, c, d, e] = res.body.data;
    expect(a.id).toMatch(/^em_/);
    expect(b).toEqual({ index: 1, error: { code: 'validation_error', message: "Unknown field 'colour'.", param: 'colour' } });
    expect(c).toMatchObject({ index: 2, error: { code: 'validation_error', param: 'to' } });
    expect(d).toMatchObject({ index: 3, error: { code: 'validation_error', param: 'to' } });
    expect(e.id).toMatch(/^em_/);
    for (const r of [b, c, d]) expect(r.id).toBeUndefined();
    expect((await t.api.get(`/v1/emails/${e.id}`)).body.subject).toBe('last good');
  });

  it('is all or nothing with Mailroom-Batch-Validation: strict', async () => {
    const before = (await t.api.get('/v1/emails?limit=100')).body.data.length;
    const strict = { headers: { 'Mailroom-Batch-Validation': 'strict' } };
    const malformed = await t.api.post('/v1/emails/batch', { emails: [basic, { ...basic, colour: 'red' }] }, strict);
    expect(malformed.status).toBe(422);
    expect(malformed.body.error).toMatchObject({ code: 'validation_error', param: 'emails.1.colour' });
    const unsendable = await t.api.post('/v1/emails/batch', { emails: [basic, basic, { ...basic, from: 'ann@elsewhere.test' }] }, strict);
    expect(unsendable.status).toBe(422);
    expect(unsendable.body.error).toMatchObject({ code: 'domain_not_verified', param: 'emails.2.from' });
    expect((await t.api.get('/v1/emails?limit=100')).body.data.length).toBe(before);

    const fine = await t.api.post('/v1/emails/batch', { emails: [basic, basic] }, strict);
    expect(fine.status).toBe(200);
    expect(fine.body.data.every((r: { id?: string }) => r.id)).toBe(true);
    const unknown = await t.api.post('/v1/emails/batch', { emails: [basic] }, { headers: { 'Mailroom-Batch-Validation': 'sometimes' } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.param).toBe('Mailroom-Batch-Validation');
  });

  it('costs a tenth of the rate limit of single sends and replays under one Idempotency-Key', async () => {
    const before = Number((await t.api.get('/v1/emails?limit=1')).headers.get('ratelimit-remaining'));
    const headers = { 'Idempotency-Key': 'batch-1' };
    const emails = Array.from({ length: 100 }, (_, i) => ({ ...basic, to: `r${i}@example.org` }));
    const res = await t.api.post('/v1/emails/batch', { emails }, { headers });
    expect(res.status).toBe(200);
    expect(res.body.data.every((r: { id?: string }) => r.id)).toBe(true);
    expect(before - Number(res.headers.get('ratelimit-remaining'))).toBe(10);

    const replay = await t.api.post('/v1/emails/batch', { emails }, { headers });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(res.body);
    const conflict = await t.api.post('/v1/emails/batch', { emails: emails.slice(1) }, { headers });
    expect(conflict.status).toBe(409);
  });
});

describe('reschedule, cancel and resend', () => {
  let t: TestApp;
  const clock = new ManualClock();
  beforeAll(async () => {
    // A long send delay keeps new emails pending until the test moves the clock.
    t = await startTestApp({ clock, env: { MAILROOM_SEND_DELAY: '600' } });
    await t.seed.activeDomain('acme.test');
  });
  afterAll(() => t.close());

  const create = async (extra: Record<string, unknown> = {}) => (await t.api.post('/v1/emails', { ...basic, ...extra })).body;

  it('reschedules a pending email, then hands it off at once when rescheduled to now', async () => {
    const e = await create();
    expect(e.status).toBe('pending');
    const later = await t.api.patch(`/v1/emails/${e.id}`, { scheduled_at: 'in 2 hours' });
    expect(later.status).toBe(200);
    expect(later.body).toMatchObject({ status: 'scheduled', scheduled_at: new Date(clock.now() + 7200_000).toISOString() });

    const now = await t.api.patch(`/v1/emails/${e.id}`, { scheduled_at: new Date(clock.now()).toISOString() });
    expect(now.body.status).toBe('pending');
    await t.mailroom.delivery.drain();
    expect((await t.api.get(`/v1/emails/${e.id}`)).body.status).toBe('delivered');
    const types = (await t.api.get(`/v1/emails/${e.id}/events`)).body.data.map((x: { type: string }) => x.type);
    expect(types).toEqual(['email.delivered', 'email.sent', 'email.queued', 'email.scheduled', 'email.queued']);

    const late = await t.api.patch(`/v1/emails/${e.id}`, { scheduled_at: 'in 1 hour' });
    expect(late.status).toBe(422);
    expect(late.body.error.code).toBe('invalid_state');
  });

  it('refuses a bad reschedule body', async () => {
    const e = await create();
    expect((await t.api.patch(`/v1/emails/${e.id}`, {})).status).toBe(422);
    expect((await t.api.patch(`/v1/emails/${e.id}`, { scheduled_at: 'in 1 hour', subject: 'x' })).body.error.param).toBe('subject');
    expect((await t.api.patch(`/v1/emails/${e.id}`, { scheduled_at: 'whenever' })).body.error.param).toBe('scheduled_at');
    expect((await t.api.patch('/v1/emails/em_unknown', { scheduled_at: 'in 1 hour' })).status).toBe(404);
  });

  it('cancels pending and scheduled emails, and says so again on a repeat', async () => {
    const pending = await create();
    const res = await t.api.post(`/v1/emails/${pending.id}/cancel`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: pending.id, object: 'email_cancel', cancelled: true, status: 'cancelled' });
    expect((await t.api.post(`/v1/emails/${pending.id}/cancel`)).body.cancelled).toBe(true);
    const got = (await t.api.get(`/v1/emails/${pending.id}`)).body;
    expect(got.recipients[0].status).toBe('cancelled');

    const scheduled = await create({ scheduled_at: 'in 1 day' });
    expect(scheduled.status).toBe('scheduled');
    expect((await t.api.post(`/v1/emails/${scheduled.id}/cancel`)).body).toMatchObject({ cancelled: true, status: 'cancelled' });

    // Cancelled emails are out of the queue for good.
    clock.advance(2 * 86_400_000);
    await t.mailroom.services.emails.promoteDue();
    await t.mailroom.delivery.drain();
    expect((await t.api.get(`/v1/emails/${scheduled.id}`)).body.status).toBe('cancelled');
    expect((await t.api.get(`/v1/emails/${pending.id}`)).body.status).toBe('cancelled');
    expect((await t.api.patch(`/v1/emails/${pending.id}`, { scheduled_at: 'in 1 hour' })).status).toBe(422);
  });

  it('does not cancel an email once delivery has it', async () => {
    const e = await create();
    clock.advance(600_000);
    await t.mailroom.delivery.drain();
    const res = await t.api.post(`/v1/emails/${e.id}/cancel`);
    expect(res.body).toEqual({ id: e.id, object: 'email_cancel', cancelled: false, status: 'delivered' });
    expect((await t.api.post('/v1/emails/em_unknown/cancel')).status).toBe(404);
  });

  it('resends a delivered email as a new one, and refuses the states that cannot be resent', async () => {
    const e = await create({ to: ['x@example.org', 'bounced@mailroom.test'], tags: ['r'], attachments: [{ content: 'aGk=', filename: 'a.txt' }] });
    clock.advance(600_000);
    await t.mailroom.delivery.drain();
    const copy = await t.api.post(`/v1/emails/${e.id}/resend`);
    expect(copy.status).toBe(201);
    expect(copy.body.id).not.toBe(e.id);
    expect(copy.body).toMatchObject({
      status: 'pending', resent_from: e.id, to: e.to, subject: e.subject, tags: ['r'],
      attachments: [{ filename: 'a.txt', content_type: 'text/plain', size: 2, content_id: null }],
    });

    const pendingCopy = await t.api.post(`/v1/emails/${copy.body.id}/resend`);
    expect(pendingCopy.status).toBe(422);
    expect(pendingCopy.body.error.code).toBe('invalid_state');
    await t.api.post(`/v1/emails/${copy.body.id}/cancel`);
    expect((await t.api.post(`/v1/emails/${copy.body.id}/resend`)).status).toBe(422);
    expect((await t.api.post('/v1/emails/em_unknown/resend')).status).toBe(404);
  });

  it('keeps emails apart between workspaces', async () => {
    const e = await create();
    const ws = await t.seed.workspace();
    const other = t.api.as((await t.seed.key({ workspaceId: ws.id })).token);
    expect((await other.get(`/v1/emails/${e.id}`)).status).toBe(404);
    expect((await other.post(`/v1/emails/${e.id}/cancel`)).status).toBe(404);
    expect((await other.get(`/v1/emails/${e.id}/events`)).status).toBe(404);
    expect((await other.get('/v1/emails')).body.data).toEqual([]);
  });
});

describe('send quotas', () => {
  const clock = new ManualClock(Date.parse('2026-11-30T22:00:00Z'));
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ clock, env: { MAILROOM_PLANS: JSON.stringify({ tiny: { dailySendQuota: 2, monthlySendQuota: 3 } }) } });
  });
  afterAll(() => t.close());

  it('answers 429 past the daily quota with Retry-After to UTC midnight, and past the monthly one without', async () => {
    const ws = await t.seed.workspace({ plan: 'tiny' });
    await t.seed.activeDomain('acme.test', { workspaceId: ws.id });
    const api = t.api.as((await t.seed.key({ workspaceId: ws.id })).token);
    const testApi = t.api.as((await t.seed.key({ workspaceId: ws.id, mode: 'test' })).token);

    expect((await api.post('/v1/emails', basic)).status).toBe(201);
    expect((await api.post('/v1/emails/batch', { emails: [basic, basic] })).status).toBe(429);
    expect((await api.post('/v1/emails', basic)).status).toBe(201);
    const daily = await api.post('/v1/emails', basic);
    expect(daily.status).toBe(429);
    expect(daily.body.error.code).toBe('daily_quota_exceeded');
    expect(daily.headers.get('retry-after')).toBe('7200');
    // Test keys send nothing real and do not count.
    expect((await testApi.post('/v1/emails', basic)).status).toBe(201);

    clock.set(Date.parse('2026-12-01T00:00:01Z')); // a new day, and a new month
    expect((await api.post('/v1/emails', basic)).status).toBe(201);
    expect((await api.post('/v1/emails', basic)).status).toBe(201);
    clock.set(Date.parse('2026-12-02T00:00:01Z'));
    expect((await api.post('/v1/emails', basic)).status).toBe(201);
    const monthly = await api.post('/v1/emails', basic);
    expect(monthly.status).toBe(429);
    expect(monthly.body.error.code).toBe('monthly_quota_exceeded');
    expect(monthly.headers.get('retry-after')).toBeNull();
  });

  it('takes sends made at the same moment up to the quota, and refuses only the ones past it', async () => {
    const ws = await t.seed.workspace({ plan: 'tiny' });
    await t.seed.activeDomain('acme.test', { workspaceId: ws.id });
    const api = t.api.as((await t.seed.key({ workspaceId: ws.id })).token);
    const testApi = t.api.as((await t.seed.key({ workspaceId: ws.id, mode: 'test' })).token);
    const other = await t.seed.workspace({ plan: 'tiny' });
    await t.seed.activeDomain('acme.test', { workspaceId: other.id });
    const otherApi = t.api.as((await t.seed.key({ workspaceId: other.id })).token);

    const answers = await Promise.all([
      ...Array.from({ length: 4 }, () => api.post('/v1/emails', basic)), testApi.post('/v1/emails', basic), otherApi.post('/v1/emails', basic),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 201, 201, 429, 429]);
    expect(answers.slice(4).map((a) => a.status)).toEqual([201, 201]);
    const made = answers.filter((a) => a.status === 201).map((a) => a.body.id as string);
    const stored = await t.mailroom.services.store.db.selectFrom('emails').select(['id', 'workspace_id']).where('id', 'in', made).execute();
    expect(stored.map((r) => r.workspace_id).sort()).toEqual([ws.id, ws.id, ws.id, other.id].sort());
    const usage = await t.mailroom.services.store.db.selectFrom('send_usage').select(['workspace_id', 'count'])
      .where('workspace_id', 'in', [ws.id, other.id]).where('period', 'like', 'd:%').execute();
    expect(usage.map((u) => [u.workspace_id, Number(u.count)]).sort()).toEqual([[ws.id, 2], [other.id, 1]].sort());
  });

  it('counts nothing for emails the store refuses to write after their quota was taken', async () => {
    const ws = await t.seed.workspace({ plan: 'tiny' });
    await t.seed.activeDomain('acme.test', { workspaceId: ws.id });
    const api = t.api.as((await t.seed.key({ workspaceId: ws.id })).token);
    const { db } = t.mailroom.services.store;
    const refusedSubject = 'refused by the store';
    // The database itself refuses these emails' rows, once the send is past every check of its own.
    if (onPostgres) {
      await sql`CREATE FUNCTION refuse_email() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$`.execute(db);
      await sql`CREATE TRIGGER refuse_email BEFORE INSERT ON emails FOR EACH ROW WHEN (NEW.subject = ${sql.lit(refusedSubject)})
        EXECUTE FUNCTION refuse_email()`.execute(db);
    } else {
      await sql`CREATE TRIGGER refuse_email BEFORE INSERT ON emails FOR EACH ROW WHEN NEW.subject = ${sql.lit(refusedSubject)}
        BEGIN SELECT RAISE(ABORT, 'refused'); END`.execute(db);
    }
    try {
      expect((await api.post('/v1/emails', { ...basic, subject: refusedSubject })).status).toBe(500);
      expect((await api.post('/v1/emails/batch', { emails: [basic, { ...basic, subject: refusedSubject }] })).status).toBe(500);
    } finally {
      await sql`DROP TRIGGER refuse_email ${onPostgres ? sql`ON emails` : sql``}`.execute(db);
    }
    const used = await db.selectFrom('send_usage').select('count').where('workspace_id', '=', ws.id).execute();
    expect(used.map((u) => Number(u.count))).toEqual(used.map(() => 0));
    // The day's quota of 2 is whole.
    expect((await api.post('/v1/emails/batch', { emails: [basic, basic] })).status).toBe(200);
    expect((await api.post('/v1/emails', basic)).status).toBe(429);
  });
});

describe('stored content', () => {
  it('keeps every email\'s html, text and headers when their migration moves them out of the email rows and back', async () => {
    await using t = await startTestApp({ env: { MAILROOM_SEND_DELAY: '3600' } });
    await t.seed.activeDomain('acme.test');
    const sent = [
      { ...basic, html: '<p>Hi <b>Bob</b> ✓</p>', headers: { 'X-Campaign': 'spring' } },
      { ...basic, text: undefined, html: '<p>only html</p>' },
    ];
    const ids: string[] = [];
    for (const body of sent) ids.push((await t.api.post('/v1/emails', body)).body.id);
    const content = async () => Promise.all(ids.map(async (id) => {
      const { html, text, headers } = (await t.api.get(`/v1/emails/${id}`)).body;
      return { html, text, headers };
    }));
    const before = await content();
    expect(before).toEqual([
      { html: '<p>Hi <b>Bob</b> ✓</p>', text: 'Hi Bob', headers: { 'X-Campaign': 'spring' } },
      { html: '<p>only html</p>', text: null, headers: {} },
    ]);

    const { db } = t.mailroom.services.store;
    const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
    expect((await migrator.migrateTo('0011_inbound_sources')).error).toBeUndefined();
    const rows = await sql<{ id: string; html: string | null; text_body: string | null; headers: string }>`
      SELECT id, html, text_body, headers FROM emails ORDER BY pos`.execute(db);
    expect(rows.rows.map((r) => ({ html: r.html, text: r.text_body, headers: JSON.parse(r.headers) }))).toEqual(before);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await content()).toEqual(before);
  });
});
