import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { sinkMessagesFor } from '../../src/delivery/sink.js';
import { SENDING_ENV, startTestApp, type ApiClient, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/smtp-app.js';

// Broadcasts over HTTP: a draft, its audience and preview, sending it into
// the sink one email per contact, and the ways a send is steered (schedule,
// pace, pause, resume, cancel), with the 4xx of each.

const DOMAIN = 'news.test';
const FROM = `Acme News <hello@${DOMAIN}>`;

interface Contact { id: string; email: string }

describe('broadcasts', () => {
  let t: TestApp;
  let newsTag: string;
  let vipTag: string;
  const contacts: Record<string, Contact> = {};

  const addContact = async (key: string, body: Record<string, unknown>) => {
    const res = await t.api.post('/v1/contacts', body);
    expect(res.status).toBe(201);
    contacts[key] = res.body;
    return res.body as Contact;
  };

  const create = async (body: Record<string, unknown>, api: ApiClient = t.api) => {
    const res = await api.post('/v1/broadcasts', body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body as { id: string; status: string };
  };

  const emailsOf = async (id: string) => (await t.api.get(`/v1/emails?broadcast_id=${id}&limit=100`)).body.data as
    Array<{ id: string; contact_id: string; to: string[]; subject: string; broadcast_id: string }>;

  const settled = (id: string, status: string) => eventually(async () => {
    const b = (await t.api.get(`/v1/broadcasts/${id}`)).body;
    return b.status === status ? b : undefined;
  }, 15_000, `broadcast ${id} to be ${status}`);

  beforeAll(async () => {
    t = await startTestApp({ env: { MAILROOM_PUBLIC_URL: 'https://mail.acme.test' } });
    await t.seed.activeDomain(DOMAIN);
    await addContact('ann', { email: 'ann@example.com', name: 'Ann Lee', tags: ['news'], properties: { company: 'Lee & Co', seats: 3 } });
    await addContact('bob', { email: 'bob@example.com', name: 'Bob', tags: ['news'] });
    await addContact('vip', { email: 'vip@example.com', name: 'Vera Ip', tags: ['news', 'vip'] });
    await addContact('untagged', { email: 'untagged@example.com' });
    const gone = await addContact('unsubscribed', { email: 'gone@example.com', tags: ['news'] });
    expect((await t.api.post(`/v1/contacts/${gone.id}/unsubscribe`, {})).status).toBe(200);
    const deleted = await addContact('deleted', { email: 'deleted@example.com', tags: ['news'] });
    expect((await t.api.delete(`/v1/contacts/${deleted.id}`)).status).toBe(204);
    await addContact('suppressed', { email: 'blocked@example.com', tags: ['news'] });
    expect((await t.api.post('/v1/suppressions', { email: 'blocked@example.com' })).status).toBe(201);
    const tags = (await t.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>;
    newsTag = tags.find((x) => x.name === 'news')!.id;
    vipTag = tags.find((x) => x.name === 'vip')!.id;
  });

  afterAll(async () => {
    await t?.close();
  });

  it('keeps a draft with no more than a name, and counts the audience it would have', async () => {
    const draft = await create({ name: 'Empty' });
    expect(draft).toMatchObject({
      object: 'broadcast', name: 'Empty', status: 'draft', from: null, subject: null, template: null, mode: null,
      audience: { tag_ids: [], exclude_tag_ids: [], engagement_tiers: null }, send_rate_per_minute: null,
      stats: { audience_size: 4, emails_created: 0, sent: 0 },
    });
    const narrowed = await t.api.post(`/v1/broadcasts/${draft.id}/audience`, { audience: { tag_ids: [newsTag], exclude_tag_ids: [vipTag] } });
    expect(narrowed.status).toBe(200);
    expect(narrowed.body.count).toBe(2);
    expect(narrowed.body.data.map((c: Contact) => c.email)).toEqual(['ann@example.com', 'bob@example.com']);
    const engaged = await t.api.post(`/v1/broadcasts/${draft.id}/audience`, { audience: { engagement_tiers: ['engaged', 'at_risk'] } });
    expect(engaged.body).toEqual({ object: 'broadcast_audience', count: 0, data: [] });
    const missing = await t.api.post(`/v1/broadcasts/${draft.id}/send`, {});
    expect(missing.status).toBe(422);
    expect(missing.body.error.code).toBe('broadcast_incomplete');
    expect((await t.api.delete(`/v1/broadcasts/${draft.id}`)).status).toBe(204);
    expect((await t.api.get(`/v1/broadcasts/${draft.id}`)).status).toBe(404);
  });

  it('refuses what could never be sent, naming the field', async () => {
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ name: 'x', from: 'not an address' }, 'validation_error', 'from'],
      [{ name: 'x', audience: { tag_ids: ['tag_nope'] } }, 'validation_error', 'audience.tag_ids.0'],
      [{ name: 'x', html: '<p>hi</p>', template: { id: 'welcome' } }, 'validation_error', 'template'],
      [{ name: 'x', template: { id: 'no-such-template' } }, 'validation_error', 'template.id'],
      [{ name: 'x', subject: 'Hi {{ contact.name', text: 'x' }, 'template_invalid', 'subject'],
      [{ name: 'x', subject: 'Hi', html: '<p>{{ coupon }}</p>' }, 'template_invalid', 'html'],
      [{ name: '   ' }, 'validation_error', 'name'],
    ];
    for (const [body, code, param] of cases) {
      const res = await t.api.post('/v1/broadcasts', body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.error, JSON.stringify(body)).toMatchObject({ code, param });
    }
    const schema = await t.api.post('/v1/broadcasts', { name: 'x', send_rate_per_minute: 0 });
    expect(schema.status).toBe(422);
    expect((await t.api.get('/v1/broadcasts/bc_unknown')).status).toBe(404);
  });

  it('refuses to send content whose every email would be refused, once, rather than skipping each contact', async () => {
    // The subject renders a control character whatever the contact: no header can carry it.
    const b = await create({ name: 'Bell', from: FROM, subject: 'Ding {{ "%07" | url_decode }}', text: 'Hello.', audience: { tag_ids: [newsTag] } });
    const refused = await t.api.post(`/v1/broadcasts/${b.id}/send`, {});
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({ code: 'validation_error', param: 'subject' });
    expect(refused.body.error.message).toMatch(/^The message this content makes would be refused: .*subject/);
    expect((await t.api.get(`/v1/broadcasts/${b.id}`)).body).toMatchObject({ status: 'draft', stats: { emails_created: 0, skipped: 0 } });
  });

  it('refuses to send now to an audience with no contact, keeping the draft; scheduled, it is counted when it starts', async () => {
    const b = await create({ name: 'Nobody', from: FROM, subject: 'Hi', text: 'Hello.', audience: { engagement_tiers: ['engaged'] } });
    const refused = await t.api.post(`/v1/broadcasts/${b.id}/send`, {});
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({ code: 'broadcast_audience_empty', param: 'audience' });
    expect(refused.body.error.message).toMatch(/^No contact is in the audience now/);
    expect((await t.api.get(`/v1/broadcasts/${b.id}`)).body).toMatchObject({ status: 'draft', started_at: null, stats: { emails_created: 0 } });
    const later = await t.api.post(`/v1/broadcasts/${b.id}/send`, { scheduled_at: 'in 2 hours' });
    expect(later.status).toBe(200);
    expect(later.body.status).toBe('scheduled');
    expect((await t.api.post(`/v1/broadcasts/${b.id}/cancel`, {})).status).toBe(200);
  });

  it('keeps a scheduled broadcast one that can go out: an edit is checked as sending checks it', async () => {
    const b = await create({ name: 'Later', from: FROM, subject: 'Hi', text: 'Hello.', audience: { tag_ids: [newsTag] } });
    expect((await t.api.post(`/v1/broadcasts/${b.id}/send`, { scheduled_at: 'in 2 hours' })).body.status).toBe('scheduled');
    const bell = await t.api.patch(`/v1/broadcasts/${b.id}`, { subject: 'Ding {{ "%07" | url_decode }}' });
    expect(bell.status).toBe(422);
    expect(bell.body.error).toMatchObject({ code: 'validation_error', param: 'subject' });
    const fromless = await t.api.patch(`/v1/broadcasts/${b.id}`, { from: null });
    expect(fromless.status).toBe(422);
    expect(fromless.body.error).toMatchObject({ code: 'broadcast_incomplete', param: 'from' });
    const renamed = await t.api.patch(`/v1/broadcasts/${b.id}`, { name: 'Later, renamed', subject: 'Hi {{ contact.first_name }}' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ status: 'scheduled', name: 'Later, renamed', subject: 'Hi {{ contact.first_name }}', from: FROM });
    // A draft may be anything while it is written.
    const draft = await create({ name: 'Draft' });
    expect((await t.api.patch(`/v1/broadcasts/${draft.id}`, { subject: 'Ding {{ "%07" | url_decode }}' })).status).toBe(200);
  });

  it('previews the message as one contact would get it, personalised, with a visible unsubscribe link', async () => {
    const b = await create({
      name: 'Preview', from: FROM, subject: 'News for {{ contact.first_name }} at {{ contact.properties.company }}', preview_text: 'This week at Acme',
      html: '<html><body><p>Hello {{ contact.name }} &lt;{{ contact.email }}&gt;, {{ contact.properties.seats }} seats</p></body></html>',
      audience: { tag_ids: [newsTag] },
    });
    const res = await t.api.post(`/v1/broadcasts/${b.id}/preview`, { contact_id: contacts.ann.id });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'broadcast_render', contact_id: contacts.ann.id, to: 'ann@example.com', subject: 'News for Ann at Lee & Co' });
    // Properties are escaped in HTML like every other value.
    expect(res.body.html).toMatch(/^<html><body><div style="display:none[^"]*">This week at Acme<\/div><p>Hello Ann Lee &lt;ann@example.com&gt;, 3 seats<\/p>/);
    expect(res.body.html).toMatch(/<a href="https:\/\/mail\.acme\.test\/u\/[\w-]+">Unsubscribe<\/a>/);
    expect(res.body.text).toMatch(/Hello Ann Lee <ann@example\.com>, 3 seats[\s\S]*Unsubscribe: https:\/\/mail\.acme\.test\/u\//);
    const unknown = await t.api.post(`/v1/broadcasts/${b.id}/preview`, { contact_id: 'ct_nope' });
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.param).toBe('contact_id');
  });

  it('names the contact fields the content writes that the contact previewed lacks, leaving out those with a fallback', async () => {
    const b = await create({
      name: 'Fields', from: FROM, subject: 'Hi {{ contact.first_name }}, news for {{ contact.properties.company }}',
      html: '<p>{{ contact.last_name }}, dear {{ contact.name | default: "friend" }}</p>', text: 'Hi {{ contact.first_name }}',
    });
    const previewAs = async (broadcastId: string, contact: Contact) => {
      const res = await t.api.post(`/v1/broadcasts/${broadcastId}/preview`, { contact_id: contact.id });
      expect(res.status).toBe(200);
      return res.body as { subject: string; empty_fields: string[] };
    };
    expect((await previewAs(b.id, contacts.ann)).empty_fields).toEqual([]);
    // Named "Bob": no last name, and no company among his properties.
    expect((await previewAs(b.id, contacts.bob)).empty_fields).toEqual(['contact.properties.company', 'contact.last_name']);
    expect(await previewAs(b.id, contacts.untagged)).toMatchObject({
      subject: 'Hi , news for', empty_fields: ['contact.first_name', 'contact.properties.company', 'contact.last_name'],
    });

    // A template's sources are read the same way.
    const template = await t.api.post('/v1/templates', { name: 'Fields letter', subject: 'For {{ contact.first_name }}',
      html: '<p>{{ contact.name | default: "Hello" }}</p>' });
    expect((await t.api.post(`/v1/templates/${template.body.id}/publish`, {})).status).toBe(200);
    const fromTemplate = await create({ name: 'Fields by template', from: FROM, template: { id: template.body.id } });
    expect((await previewAs(fromTemplate.id, contacts.untagged)).empty_fields).toEqual(['contact.first_name']);
    expect((await previewAs(fromTemplate.id, contacts.ann)).empty_fields).toEqual([]);
  });

  it('sends one personalised email per contact of the audience, each with one-click unsubscribe, and counts them', async () => {
    const b = await create({
      name: 'November news', from: FROM, subject: 'November, {{ contact.first_name | default: "friend" }}',
      html: '<p>Hi {{ contact.name }}. <a href="{{ unsubscribe_url }}">Leave</a></p>', text: 'Hi {{ contact.name }}. Leave: {{ unsubscribe_url }}',
      audience: { tag_ids: [newsTag], exclude_tag_ids: [vipTag] },
    });
    const sent = await t.api.post(`/v1/broadcasts/${b.id}/send`, {});
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ status: expect.stringMatching(/^(sending|sent)$/), mode: 'live', stats: { audience_size: 2 } });
    const done = await settled(b.id, 'sent');
    expect(done.started_at).not.toBeNull();
    expect(done.sent_at).not.toBeNull();

    const emails = await emailsOf(b.id);
    expect(emails.map((e) => e.to[0]).sort()).toEqual(['ann@example.com', 'bob@example.com']);
    expect(new Set(emails.map((e) => e.contact_id))).toEqual(new Set([contacts.ann.id, contacts.bob.id]));
    await t.mailroom.delivery.drain();
    const ann = emails.find((e) => e.to[0] === 'ann@example.com')!;
    expect(ann.subject).toBe('November, Ann');
    const [kept] = await sinkMessagesFor(t.mailroom.services.store.db, ann.id);
    const raw = kept.raw.toString('latin1');
    // Folded onto its own line, as the token is long; and signed.
    expect(raw).toMatch(/^List-Unsubscribe:\r\n <https:\/\/mail\.acme\.test\/u\/[\w-]+>\r$/m);
    expect(raw).toMatch(/h=[^;]*list-unsubscribe:list-unsubscribe-post;/);
    expect(raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click\r$/m);
    expect(raw).toContain('Hi Ann Lee.');
    // The content has its own link: no footer is added.
    expect(raw).not.toMatch(/^Unsubscribe: /m);

    const stats = await eventually(async () => {
      const s = (await t.api.get(`/v1/broadcasts/${b.id}`)).body.stats;
      return s.delivered === 2 ? s : undefined;
    }, 10_000, 'both emails delivered');
    expect(stats).toEqual({
      audience_size: 2, emails_created: 2, sent: 2, delivered: 2, bounced: 0, complained: 0, opened: 0, clicked: 0,
      unsubscribed: 0, failed: 0, suppressed: 0, skipped: 0,
    });

    // Done: it cannot be sent, changed or deleted again.
    for (const [res, code] of [
      [await t.api.post(`/v1/broadcasts/${b.id}/send`, {}), 'broadcast_not_editable'],
      [await t.api.patch(`/v1/broadcasts/${b.id}`, { name: 'Again' }), 'broadcast_not_editable'],
      [await t.api.delete(`/v1/broadcasts/${b.id}`), 'broadcast_not_editable'],
      [await t.api.post(`/v1/broadcasts/${b.id}/cancel`, {}), 'broadcast_not_cancellable'],
      [await t.api.post(`/v1/broadcasts/${b.id}/pause`, {}), 'broadcast_not_sending'],
      [await t.api.post(`/v1/broadcasts/${b.id}/resume`, {}), 'broadcast_not_paused'],
    ] as const) {
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe(code);
    }
  });

  it('skips on the next broadcast a contact who unsubscribed with the one-click link, and counts the unsubscribe', async () => {
    const first = await create({ name: 'First', from: FROM, subject: 'One', text: 'Hello', audience: { tag_ids: [newsTag], exclude_tag_ids: [vipTag] } });
    await t.api.post(`/v1/broadcasts/${first.id}/send`, {});
    await settled(first.id, 'sent');
    const bob = (await emailsOf(first.id)).find((e) => e.to[0] === 'bob@example.com')!;
    await t.mailroom.delivery.drain();
    const raw = (await sinkMessagesFor(t.mailroom.services.store.db, bob.id))[0].raw.toString('latin1');
    // The text had no link of its own: the footer has one.
    expect(raw).toMatch(/Unsubscribe: https:\/\/mail\.acme\.test\/u\//);
    const link = /^List-Unsubscribe:\s+<([^>]+)>/m.exec(raw)![1];
    const oneClick = await fetch(link.replace('https://mail.acme.test', t.url), {
      method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click',
    });
    expect(oneClick.status).toBe(200);
    expect((await t.api.get(`/v1/broadcasts/${first.id}`)).body.stats.unsubscribed).toBe(1);

    const second = await create({ name: 'Second', from: FROM, subject: 'Two', text: 'Hello again', audience: { tag_ids: [newsTag], exclude_tag_ids: [vipTag] } });
    await t.api.post(`/v1/broadcasts/${second.id}/send`, {});
    await settled(second.id, 'sent');
    expect((await emailsOf(second.id)).map((e) => e.to[0])).toEqual(['ann@example.com']);
  });

  it('leaves out the engagement tiers a broadcast does not name, as a sunset policy does', async () => {
    // Ann has had mail by now (tier new); the untagged contact never has (no_data).
    await t.mailroom.services.contacts.foldEvents();
    const tiers = Object.fromEntries(await Promise.all(['ann', 'untagged'].map(async (k) =>
      [k, (await t.api.get(`/v1/contacts/${contacts[k].id}`)).body.engagement_tier as string])));
    expect(tiers).toEqual({ ann: 'new', untagged: 'no_data' });
    const b = await create({ name: 'Warm only', from: FROM, subject: 'Hi', text: 'Hello', audience: { engagement_tiers: ['new', 'engaged'] } });
    await t.api.post(`/v1/broadcasts/${b.id}/send`, {});
    await settled(b.id, 'sent');
    const to = (await emailsOf(b.id)).map((e) => e.to[0]);
    expect(to).toContain('ann@example.com');
    expect(to).not.toContain('untagged@example.com');
  });

  it('sends test emails marked as such, outside the stats', async () => {
    const b = await create({ name: 'Tested', from: FROM, subject: 'Hello {{ contact.first_name }}', text: 'Body', audience: { tag_ids: [vipTag] } });
    const res = await t.api.post(`/v1/broadcasts/${b.id}/test`, { to: ['vip@example.com', 'qa@acme.test'] });
    expect(res.status).toBe(200);
    expect(res.body.data.map((d: { to: string }) => d.to)).toEqual(['vip@example.com', 'qa@acme.test']);
    const first = (await t.api.get(`/v1/emails/${res.body.data[0].email_id}`)).body;
    expect(first).toMatchObject({ subject: '[Test] Hello Vera', tags: ['broadcast_test'], broadcast_id: null });
    expect((await t.api.get(`/v1/emails/${res.body.data[1].email_id}`)).body.subject).toBe('[Test] Hello');
    expect((await t.api.get(`/v1/broadcasts/${b.id}`)).body).toMatchObject({ status: 'draft', stats: { emails_created: 0 } });
    const tooMany = await t.api.post(`/v1/broadcasts/${b.id}/test`, { to: ['a@x.test', 'b@x.test', 'c@x.test', 'd@x.test', 'e@x.test', 'f@x.test'] });
    expect(tooMany.status).toBe(422);
    // An address refused names itself, and none of the others is sent.
    const before = (await t.api.get('/v1/emails?limit=100')).body.data.length;
    const refused = await t.api.post(`/v1/broadcasts/${b.id}/test`, { to: ['qa@acme.test', 'not an address'] });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({ code: 'validation_error', param: 'to.1',
      message: "'to.1' (not an address) is not a valid email address; no test was sent." });
    expect((await t.api.get('/v1/emails?limit=100')).body.data.length).toBe(before);
  });

  it('sends a test once for a retry under the same Idempotency-Key, and refuses the key with other addresses', async () => {
    const b = await create({ name: 'Retried', from: FROM, subject: 'Retry', text: 'Body' });
    const headers = { 'Idempotency-Key': `test-${b.id}` };
    const first = await t.api.post(`/v1/broadcasts/${b.id}/test`, { to: ['qa@acme.test'] }, { headers });
    expect(first.status).toBe(200);
    const again = await t.api.post(`/v1/broadcasts/${b.id}/test`, { to: ['qa@acme.test'] }, { headers });
    expect(again.status).toBe(200);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const tests = (await t.api.get('/v1/emails?limit=100')).body.data as Array<{ subject: string }>;
    expect(tests.filter((e) => e.subject === '[Test] Retry')).toHaveLength(1);
    const other = await t.api.post(`/v1/broadcasts/${b.id}/test`, { to: ['boss@acme.test'] }, { headers });
    expect(other.status).toBe(409);
    expect(other.body.error).toMatchObject({ code: 'idempotency_conflict', param: 'Idempotency-Key' });
  });

  it('answers a retried send under the same Idempotency-Key as the first, where without one it is no longer a draft', async () => {
    const b = await create({ name: 'Sent once', from: FROM, subject: 'Once', text: 'Body', audience: { tag_ids: [vipTag] } });
    const headers = { 'Idempotency-Key': `send-${b.id}` };
    const first = await t.api.post(`/v1/broadcasts/${b.id}/send`, {}, { headers });
    expect(first.status).toBe(200);
    const again = await t.api.post(`/v1/broadcasts/${b.id}/send`, {}, { headers });
    expect(again.status).toBe(200);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((await t.api.post(`/v1/broadcasts/${b.id}/send`, {})).body.error.code).toBe('broadcast_not_editable');
    await settled(b.id, 'sent');
    expect(await emailsOf(b.id)).toHaveLength(1);
  });

  it('schedules a broadcast, moves it, and sends it when asked at once', async () => {
    const b = await create({ name: 'Later', from: FROM, subject: 'Later', text: 'Soon', audience: { tag_ids: [vipTag] } });
    const scheduled = await t.api.post(`/v1/broadcasts/${b.id}/send`, { scheduled_at: 'in 2 hours' });
    expect(scheduled.body).toMatchObject({ status: 'scheduled', stats: { emails_created: 0 } });
    expect(Date.parse(scheduled.body.scheduled_at) - Date.now()).toBeGreaterThan(7_000_000);
    // A scheduled broadcast can still change.
    expect((await t.api.patch(`/v1/broadcasts/${b.id}`, { subject: 'Later today' })).body.subject).toBe('Later today');
    const bad = await t.api.post(`/v1/broadcasts/${b.id}/send`, { scheduled_at: 'next blue moon' });
    expect(bad.status).toBe(422);
    expect(bad.body.error.param).toBe('scheduled_at');
    await t.api.post(`/v1/broadcasts/${b.id}/send`, {});
    await settled(b.id, 'sent');
    expect((await emailsOf(b.id)).map((e) => e.subject)).toEqual(['Later today']);
  });

  it('goes at the pace asked, pauses and resumes where it stopped, and cancels without making the rest', async () => {
    for (let i = 0; i < 6; i++) await addContact(`paced${i}`, { email: `paced${i}@example.com`, tags: ['paced'] });
    const pacedTag = ((await t.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>).find((x) => x.name === 'paced')!.id;
    const paced = await create({ name: 'Paced', from: FROM, subject: 'Paced', text: 'One a second', audience: { tag_ids: [pacedTag] }, send_rate_per_minute: 60 });
    await t.api.post(`/v1/broadcasts/${paced.id}/send`, {});
    await eventually(async () => ((await emailsOf(paced.id)).length >= 1 ? true : undefined), 5_000, 'the first email');
    const paused = await t.api.post(`/v1/broadcasts/${paced.id}/pause`, {});
    expect(paused.body).toMatchObject({ status: 'paused', status_reason: 'paused by request' });
    const made = (await emailsOf(paced.id)).length;
    expect(made).toBeLessThan(6);
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await emailsOf(paced.id)).length).toBe(made);
    expect((await t.api.patch(`/v1/broadcasts/${paced.id}`, { name: 'x' })).body.error.code).toBe('broadcast_not_editable');
    // New contacts after the start are not in the audience.
    await addContact('late', { email: 'late@example.com', tags: ['paced'] });
    await t.api.post(`/v1/broadcasts/${paced.id}/resume`, {});
    await eventually(async () => ((await emailsOf(paced.id)).length >= made + 1 ? true : undefined), 5_000, 'sending to go on');
    const cancelled = await t.api.post(`/v1/broadcasts/${paced.id}/cancel`, {});
    expect(cancelled.body).toMatchObject({ status: 'cancelled' });
    expect(cancelled.body.cancelled_at).not.toBeNull();
    const atCancel = (await emailsOf(paced.id)).length;
    expect(atCancel).toBeLessThan(6);
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await emailsOf(paced.id)).length).toBe(atCancel);

    const whole = await create({ name: 'Whole', from: FROM, subject: 'All', text: 'All of them', audience: { tag_ids: [pacedTag] } });
    await t.api.post(`/v1/broadcasts/${whole.id}/send`, {});
    await settled(whole.id, 'sent');
    const all = await emailsOf(whole.id);
    expect(all).toHaveLength(7);
    expect(new Set(all.map((e) => e.contact_id)).size).toBe(7);
  });

  it('pauses a broadcast sent as fast as it can be made between two chunks, and resumes where it stopped', async () => {
    for (let start = 0; start < 4000; start += 1000) {
      const res = await t.api.post('/v1/contacts/bulk', { contacts: Array.from({ length: 1000 }, (_, i) => ({ email: `fast${start + i}@example.com`, tags: ['fast'] })) });
      expect(res.body.created).toBe(1000);
    }
    const fastTag = ((await t.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>).find((x) => x.name === 'fast')!.id;
    // Its chunks follow one another under one claim: a pause must still stop it at the next one.
    const b = await create({ name: 'Fast', from: FROM, subject: 'Fast', text: 'Hello', audience: { tag_ids: [fastTag] } });
    await t.api.post(`/v1/broadcasts/${b.id}/send`, {});
    await eventually(async () => ((await t.api.get(`/v1/broadcasts/${b.id}`)).body.stats.emails_created > 0 ? true : undefined), 10_000, 'the first chunk');
    const paused = await t.api.post(`/v1/broadcasts/${b.id}/pause`, {});
    expect(paused.body.status).toBe('paused');
    const atPause = (await t.api.get(`/v1/broadcasts/${b.id}`)).body.stats.emails_created as number;
    expect(atPause).toBeLessThan(4000);
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await t.api.get(`/v1/broadcasts/${b.id}`)).body.stats.emails_created).toBe(atPause);
    expect((await t.api.post(`/v1/broadcasts/${b.id}/resume`, {})).body.status).toBe('sending');
    const sent = await settled(b.id, 'sent');
    expect(sent.stats).toMatchObject({ audience_size: 4000, emails_created: 4000 });
  });

  it('pauses, naming the contact, when a message runs out of render time on every try, and leaves no contact out', async () => {
    await addContact('quick0', { email: 'quick0@example.com', tags: ['timed'] });
    // Five million turns of a loop take its message past the render limit, however fast the machine.
    const slow = await addContact('slow', { email: 'slow@example.com', tags: ['timed'], properties: { loops: 5_000 } });
    await addContact('quick1', { email: 'quick1@example.com', tags: ['timed'] });
    const timedTag = ((await t.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>).find((x) => x.name === 'timed')!.id;
    const b = await create({
      name: 'Timed', from: FROM, subject: 'Timed', audience: { tag_ids: [timedTag] },
      text: 'Hello.{% for i in (1..contact.properties.loops) %}{% for j in (1..1000) %}{% endfor %}{% endfor %}',
    });
    expect((await t.api.post(`/v1/broadcasts/${b.id}/send`, {})).body.status).toBe('sending');
    const paused = await settled(b.id, 'paused');
    expect(paused.status_reason).toContain(`contact ${slow.id} (slow@example.com) ran out of render time on each of 3 tries`);
    expect(paused.stats.emails_created).toBe(0);
    expect((await t.api.patch(`/v1/contacts/${slow.id}`, { properties: { loops: null } })).status).toBe(200);
    expect((await t.api.post(`/v1/broadcasts/${b.id}/resume`, {})).body.status).toBe('sending');
    const sent = await settled(b.id, 'sent');
    expect(sent.stats).toMatchObject({ audience_size: 3, emails_created: 3 });
    expect((await emailsOf(b.id)).map((e) => e.to[0]).sort()).toEqual(['quick0@example.com', 'quick1@example.com', 'slow@example.com']);
  });

  it('sends to the rest, and lists with its reason, a contact whose data makes the Liquid fail', async () => {
    await addContact('fine', { email: 'fine@example.com', tags: ['refs'] });
    // A malformed percent-encoding only this contact has: url_decode throws on it.
    const broken = await addContact('broken', { email: 'broken@example.com', tags: ['refs'], properties: { ref: '%E0%A4%A' } });
    await addContact('plain', { email: 'plain@example.com', tags: ['refs'], properties: { ref: 'spring%20sale' } });
    const refsTag = ((await t.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>).find((x) => x.name === 'refs')!.id;
    const b = await create({
      name: 'Referred', from: FROM, subject: 'Hi', text: 'Your code: {{ contact.properties.ref | url_decode }}', audience: { tag_ids: [refsTag] },
    });
    expect((await t.api.get(`/v1/broadcasts/${b.id}/skipped`)).body).toEqual({ data: [], has_more: false });
    expect((await t.api.post(`/v1/broadcasts/${b.id}/send`, {})).status).toBe(200);
    const sent = await settled(b.id, 'sent');
    expect(sent.stats).toMatchObject({ audience_size: 3, emails_created: 2, skipped: 1 });
    expect((await emailsOf(b.id)).map((e) => e.to[0]).sort()).toEqual(['fine@example.com', 'plain@example.com']);
    const listed = await t.api.get(`/v1/broadcasts/${b.id}/skipped`);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      data: [{
        object: 'broadcast_skip', contact_id: broken.id, email: 'broken@example.com', code: 'render_failed',
        message: expect.stringMatching(/^Rendering text, line 1, column \d+ failed: .*URI malformed.* Change the content, or the contact's data it reads, so that it renders\.$/),
        created_at: expect.any(String),
      }],
      has_more: false,
    });
    expect(Date.parse(listed.body.data[0].created_at)).toBeGreaterThanOrEqual(Date.parse(sent.started_at));
  });

  /**
   * Sends a broadcast of `content` to three new contacts tagged `tag`, the
   * middle one `odd`, and returns the odd one's skip, once the broadcast is
   * sent with that one skip and the other two got their emails.
   */
  const sendSkippingOne = async (tag: string, odd: { email: string; properties?: Record<string, unknown> },
    fineProperties: Record<string, unknown>, content: Record<string, unknown>, storedEmail?: string) => {
    await addContact(`${tag}0`, { email: `${tag}0@example.com`, tags: [tag], properties: fineProperties });
    const oddContact = await addContact(`${tag}Odd`, { ...odd, tags: [tag] });
    if (storedEmail !== undefined) {
      // An address the contacts API no longer takes, as a contact saved before it checked addresses as sending does.
      await t.mailroom.services.store.write((tx) => tx.updateTable('contacts').set({ email: storedEmail }).where('id', '=', oddContact.id).execute());
      oddContact.email = storedEmail;
    }
    await addContact(`${tag}1`, { email: `${tag}1@example.com`, tags: [tag], properties: fineProperties });
    const tagId = ((await t.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>).find((x) => x.name === tag)!.id;
    const b = await create({ name: tag, from: FROM, ...content, audience: { tag_ids: [tagId] } });
    expect((await t.api.post(`/v1/broadcasts/${b.id}/send`, {})).status).toBe(200);
    const sent = await settled(b.id, 'sent');
    expect(sent.stats).toMatchObject({ audience_size: 3, emails_created: 2, skipped: 1 });
    expect((await emailsOf(b.id)).map((e) => e.to[0]).sort()).toEqual([`${tag}0@example.com`, `${tag}1@example.com`]);
    const listed = await t.api.get(`/v1/broadcasts/${b.id}/skipped`);
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ data: [{ object: 'broadcast_skip', contact_id: oddContact.id, email: oddContact.email }], has_more: false });
    return listed.body.data[0] as { code: string; message: string };
  };

  it('sends to the rest, and lists as invalid_address, a contact whose address has a domain with no valid ASCII form', async () => {
    // 58 characters as written, 68 in ASCII (xn--…), over the 63 DNS allows a label: refused as a contact now, as by sending.
    const address = 'info@bürgerbüro-der-verbandsgemeinde-südliche-weinstraße-landau.de';
    const refused = await t.api.post('/v1/contacts', { email: address });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({ code: 'validation_error', param: 'email' });
    const skip = await sendSkippingOne('idn', { email: 'idn-before@example.com' }, {}, { subject: 'Hi', text: 'Hello.' }, address);
    expect(skip).toMatchObject({
      code: 'invalid_address',
      message: `No email can be sent to ${address}: its domain has no valid ASCII form (IDNA: labels of letters, digits and hyphens, `
        + "at most 63 characters each once converted). Correct the contact's address.",
    });
  });

  it('sends to the rest, and lists as invalid_subject, a contact whose data renders a control character into the subject', async () => {
    // Line breaks in a rendered subject become a space; a decoded BEL cannot go in a header.
    const skip = await sendSkippingOne('coupons', { email: 'bell@example.com', properties: { coupon: 'SPRING%0710' } }, { coupon: 'SPRING%2010' },
      { subject: 'Your code: {{ contact.properties.coupon | url_decode }}', text: 'Hello.' });
    expect(skip).toMatchObject({
      code: 'invalid_subject',
      message: 'The subject rendered for this contact holds the control character U+0007, which an email header cannot carry. '
        + "Change the subject, or the contact's data it shows, so that it renders without one.",
    });
  });

  it('sends to the rest, and lists as invalid_subject, a contact whose data renders the subject over the length a subject can have', async () => {
    const skip = await sendSkippingOne('titles', { email: 'long@example.com', properties: { title: 'Professor Emeritus of Letters, '.repeat(2) } },
      { title: 'Dr' }, { subject: 'Hello {% for i in (1..17) %}{{ contact.properties.title }}{% endfor %}', text: 'Hello.' });
    expect(skip).toMatchObject({
      code: 'invalid_subject',
      message: "The subject rendered for this contact is 1,059 characters, over the 998 an email's subject can have. Shorten the subject, or the contact's data it shows.",
    });
  });

  it('sends to the rest, and lists as message_too_large, a contact whose data makes its message over the content limit', async () => {
    // 100 copies of the contact's letter, 90 times in each part: short for most, 27 MB of html and text for 500 CJK characters.
    const body = (raw: string) => '{% capture page %}{% for i in (1..100) %}{{ contact.properties.letter }}{% endfor %}{% endcapture %}'
      + `{% for i in (1..90) %}{{ page${raw} }}{% endfor %}`;
    const skip = await sendSkippingOne('letters', { email: 'longread@example.com', properties: { letter: '書'.repeat(500) } }, { letter: 'Hi. ' },
      { subject: 'Letters', html: `<p>${body(' | raw')}</p>`, text: body('') });
    expect(skip).toMatchObject({
      code: 'message_too_large',
      message: 'The message rendered for this contact is 25.8 MiB of html and text, over the 25 MiB an email can have. '
        + "Shorten the content, or the contact's data it repeats.",
    });
  });

  it('pages the skipped contacts, and answers bad input on their list with the error object', async () => {
    for (let i = 0; i < 3; i++) await addContact(`odd${i}`, { email: `odd${i}@example.com`, tags: ['odd'], properties: { ref: `%${i}` } });
    const oddTag = ((await t.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>).find((x) => x.name === 'odd')!.id;
    const b = await create({ name: 'Odd', from: FROM, subject: 'Hi', text: '{{ contact.properties.ref | url_decode }}', audience: { tag_ids: [oddTag] } });
    await t.api.patch(`/v1/contacts/${contacts.odd0.id}`, { properties: { ref: 'ok' } });
    expect((await t.api.post(`/v1/broadcasts/${b.id}/send`, {})).status).toBe(200);
    expect((await settled(b.id, 'sent')).stats).toMatchObject({ emails_created: 1, skipped: 2 });
    const first = await t.api.get(`/v1/broadcasts/${b.id}/skipped?limit=1`);
    expect(first.body).toMatchObject({ has_more: true, data: [{ email: 'odd2@example.com' }] });
    const second = await t.api.get(`/v1/broadcasts/${b.id}/skipped?limit=1&starting_after=${first.body.next_cursor}`);
    expect(second.body).toMatchObject({ has_more: false, data: [{ email: 'odd1@example.com' }] });

    const path = `/v1/broadcasts/${b.id}/skipped`;
    const badInput: Array<[string, string, string]> = [
      [`${path}?limit=0`, 'validation_error', 'limit'],
      [`${path}?limit=101`, 'validation_error', 'limit'],
      [`${path}?limit=ten`, 'validation_error', 'limit'],
      [`${path}?starting_after=forged`, 'invalid_cursor', 'starting_after'],
      // A cursor of another list is not one of this list.
      [`${path}?starting_after=${(await t.api.get('/v1/broadcasts?limit=1')).body.next_cursor}`, 'invalid_cursor', 'starting_after'],
    ];
    for (const [url, code, param] of badInput) {
      const res = await t.api.get(url);
      expect(res.status, url).toBe(400);
      expect(res.body.error, url).toMatchObject({ code, param, message: expect.any(String), request_id: expect.any(String) });
    }
    const unknown = await t.api.get('/v1/broadcasts/bc_unknown/skipped');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');
    const noScope = (await t.seed.key({ scopes: ['emails:read'] })).token;
    const denied = await t.api.as(noScope).get(path);
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBeTypeOf('string');
    const readOnly = (await t.seed.key({ scopes: ['broadcasts:read'] })).token;
    expect((await t.api.as(readOnly).get(path)).body.data).toHaveLength(2);
    const other = await t.seed.workspace();
    const theirs = t.api.as((await t.seed.key({ workspaceId: other.id })).token);
    const elsewhere = await theirs.get(path);
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.body.error.code).toBe('not_found');
  });

  it('needs the broadcast scopes, and keeps each workspace to its own broadcasts and contacts', async () => {
    const b = await create({ name: 'Ours', from: FROM, subject: 'Ours', text: 'x' });
    const readOnly = (await t.seed.key({ scopes: ['broadcasts:read'] })).token;
    expect((await t.api.as(readOnly).get(`/v1/broadcasts/${b.id}`)).status).toBe(200);
    const denied = await t.api.as(readOnly).post(`/v1/broadcasts/${b.id}/send`, {});
    expect(denied.status).toBe(403);
    const noScope = (await t.seed.key({ scopes: ['emails:read'] })).token;
    expect((await t.api.as(noScope).get('/v1/broadcasts')).status).toBe(403);

    const other = await t.seed.workspace();
    const theirs = t.api.as((await t.seed.key({ workspaceId: other.id })).token);
    expect((await theirs.get(`/v1/broadcasts/${b.id}`)).status).toBe(404);
    expect((await theirs.post(`/v1/broadcasts/${b.id}/send`, {})).status).toBe(404);
    expect((await theirs.get('/v1/broadcasts')).body.data).toEqual([]);
    const their = await create({ name: 'Theirs' }, theirs);
    expect((await theirs.post(`/v1/broadcasts/${their.id}/audience`, {})).body.count).toBe(0);
    const tagged = await theirs.post(`/v1/broadcasts/${their.id}/audience`, { audience: { tag_ids: [newsTag] } });
    expect(tagged.status).toBe(422);
    expect((await theirs.post(`/v1/broadcasts/${their.id}/preview`, { contact_id: contacts.ann.id })).status).toBe(422);
  });

  it('refuses, where mail leaves, to send from a domain the workspace has not verified', async () => {
    await using sending = await startTestApp({ env: SENDING_ENV });
    const b = (await sending.api.post('/v1/broadcasts', { name: 'Elsewhere', from: FROM, subject: 'x', text: 'x' })).body;
    const refused = await sending.api.post(`/v1/broadcasts/${b.id}/send`, {});
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({ code: 'domain_not_verified', param: 'from' });
    expect((await sending.api.get(`/v1/broadcasts/${b.id}`)).body.status).toBe('draft');
  });

  it('sends from a verified domain written in Unicode, as an email from it may be sent', async () => {
    await using sending = await startTestApp({ env: SENDING_ENV });
    await sending.seed.activeDomain('bücher.example.test');
    expect((await sending.api.post('/v1/contacts', { email: 'reader@example.com' })).status).toBe(201);
    const from = 'Bücher <news@bücher.example.test>';
    expect((await sending.api.post('/v1/emails', { from, to: 'reader@example.com', subject: 'x', text: 'x' })).status).toBe(201);
    const b = (await sending.api.post('/v1/broadcasts', { name: 'Unicode', from, subject: 'x', text: 'x' })).body;
    const sent = await sending.api.post(`/v1/broadcasts/${b.id}/send`, {});
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body.status).toMatch(/^(sending|sent)$/);
  });
});

describe('a broadcast and the send quota', () => {
  // 20:00 UTC: the daily quota resets four hours later.
  const clock = new ManualClock(Date.UTC(2026, 10, 24, 20, 0, 0));
  let t: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    t = await startTestApp({ clock, env: { MAILROOM_PLANS: JSON.stringify({ tiny: { dailySendQuota: 3, monthlySendQuota: 1000 },
      small: { dailySendQuota: 400, monthlySendQuota: 10_000 } }) } });
    const ws = await t.seed.workspace({ plan: 'tiny' });
    api = t.api.as((await t.seed.key({ workspaceId: ws.id })).token);
    await t.seed.activeDomain(DOMAIN, { workspaceId: ws.id });
    for (let i = 0; i < 5; i++) expect((await api.post('/v1/contacts', { email: `reader${i}@example.com` })).status).toBe(201);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('uses the quota to the last email, pauses saying when it goes on, and goes on by itself after the reset', async () => {
    const b = (await api.post('/v1/broadcasts', { name: 'Big', from: FROM, subject: 'Hi', text: 'Hello' })).body;
    await api.post(`/v1/broadcasts/${b.id}/send`, {});
    const paused = await eventually(async () => {
      const now = (await api.get(`/v1/broadcasts/${b.id}`)).body;
      return now.status === 'paused' ? now : undefined;
    }, 10_000, 'the broadcast to pause');
    expect(paused.status_reason).toBe("The workspace's daily send quota is used up; sending resumes at 2026-11-25T00:00:00.000Z.");
    expect(paused.stats.emails_created).toBe(3);
    // Within the day, an early resume pauses it again with nothing more made.
    expect((await api.post(`/v1/broadcasts/${b.id}/resume`, {})).body.status).toBe('sending');
    await eventually(async () => ((await api.get(`/v1/broadcasts/${b.id}`)).body.status === 'paused' ? true : undefined), 10_000, 'a second pause');
    clock.advance(4 * 3_600_000 + 1_000);
    const done = await eventually(async () => {
      const now = (await api.get(`/v1/broadcasts/${b.id}`)).body;
      return now.status === 'sent' ? now : undefined;
    }, 10_000, 'the broadcast to go on after the reset and finish');
    expect(done.stats.emails_created).toBe(5);
    expect(done.status_reason).toBeNull();
    const emails = (await api.get(`/v1/emails?broadcast_id=${b.id}`)).body.data as Array<{ contact_id: string }>;
    expect(new Set(emails.map((e) => e.contact_id)).size).toBe(5);
  });

  it('still uses the quota to the last email when the workspace\'s own sends take part of it while a chunk is made', async () => {
    const ws = await t.seed.workspace({ plan: 'small' });
    const busy = t.api.as((await t.seed.key({ workspaceId: ws.id })).token);
    await t.seed.activeDomain(`busy.${DOMAIN}`, { workspaceId: ws.id });
    const from = `News <hello@busy.${DOMAIN}>`;
    const contacts = Array.from({ length: 600 }, (_, i) => ({ email: `busy${i}@example.com` }));
    expect((await busy.post('/v1/contacts/bulk', { contacts })).status).toBe(200);
    const b = (await busy.post('/v1/broadcasts', { name: 'Busy day', from, subject: 'Hi', text: 'Hello' })).body as { id: string };
    // Sends through the API, four at a time, for as long as the broadcast goes on: each chunk it made ahead counted
    // on the quota its last read saw.
    let sending = true;
    let accepted = 0;
    const sender = async () => {
      for (let i = 0; sending && i < 2_000; i++) {
        const res = await busy.post('/v1/emails', { from, to: `direct${i}@example.com`, subject: 'Direct', text: 'x' });
        if (res.status === 201) accepted++;
        else expect(res.body.error.code).toBe('daily_quota_exceeded');
      }
    };
    const senders = [sender(), sender(), sender(), sender()];
    expect((await busy.post(`/v1/broadcasts/${b.id}/send`, {})).status).toBe(200);
    const paused = await eventually(async () => {
      const now = (await busy.get(`/v1/broadcasts/${b.id}`)).body;
      return now.status === 'paused' ? now : undefined;
    }, 20_000, 'the broadcast to pause');
    sending = false;
    await Promise.all(senders);
    expect(paused.status_reason).toMatch(/^The workspace's daily send quota is used up/);
    // Paused only once nothing was left: the broadcast's emails and the sends fill the day's 400.
    expect(paused.stats.emails_created + accepted).toBe(400);
    expect((await busy.post('/v1/emails', { from, to: 'late@example.com', subject: 'Late', text: 'x' })).status).toBe(429);
  });
});

describe('the size of a broadcast\'s chunks', () => {
  // The clock stands still, so a paced broadcast makes one chunk until it is moved on.
  const clock = new ManualClock(Date.UTC(2026, 10, 24, 9, 0, 0));
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ clock });
    await t.seed.activeDomain(DOMAIN);
    const contacts = (tag: string, n: number) => Array.from({ length: n }, (_, i) => ({ email: `${tag}${i}@example.com`, tags: [tag] }));
    // The fifth of these has data its message cannot render with.
    const skipping = contacts('skip', 7).map((c, i) => (i === 4 ? { ...c, properties: { ref: '%G' } } : c));
    for (const body of [{ contacts: contacts('big', 7) }, { contacts: contacts('small', 250) }, { contacts: skipping }]) {
      expect((await t.api.post('/v1/contacts/bulk', body)).status).toBe(200);
    }
  });

  afterAll(async () => {
    await t?.close();
  });

  const tagId = async (name: string) => ((await t.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>).find((x) => x.name === name)!.id;
  const made = async (id: string) => (await t.api.get(`/v1/broadcasts/${id}`)).body as { status: string; stats: { emails_created: number; skipped: number } };
  /** Sends a broadcast paced so that its next chunk waits for the clock, and returns it once its first chunk is made. */
  const firstChunk = async (body: Record<string, unknown>) => {
    const b = (await t.api.post('/v1/broadcasts', { from: FROM, subject: 'Chunks', send_rate_per_minute: 60_000, ...body })).body as { id: string };
    expect((await t.api.post(`/v1/broadcasts/${b.id}/send`, {})).body.status).toBe('sending');
    await eventually(async () => ((await made(b.id)).stats.emails_created > 0 ? true : undefined), 10_000, 'the first chunk');
    return b.id;
  };

  it('makes the emails of a big newsletter in chunks of no more than two million characters, and small ones 200 at a time', async () => {
    const big = await firstChunk({ name: 'Big', html: `<p>${'Long read. '.repeat(54_000)}</p>`, text: 'Hello', audience: { tag_ids: [await tagId('big')] } });
    // About 594,000 characters a message: three fill a chunk.
    await new Promise((r) => setTimeout(r, 300));
    expect((await made(big)).stats.emails_created).toBe(3);
    clock.advance(1_000);
    await eventually(async () => ((await made(big)).stats.emails_created === 6 ? true : undefined), 10_000, 'the second chunk');
    clock.advance(1_000);
    const sent = await eventually(async () => {
      const now = await made(big);
      return now.status === 'sent' ? now : undefined;
    }, 10_000, 'the last chunk');
    expect(sent.stats.emails_created).toBe(7);

    const small = await firstChunk({ name: 'Small', text: 'Hello', audience: { tag_ids: [await tagId('small')] } });
    await new Promise((r) => setTimeout(r, 300));
    expect((await made(small)).stats.emails_created).toBe(200);
    clock.advance(1_000);
    await eventually(async () => ((await made(small)).status === 'sent' ? true : undefined), 10_000, 'the small one to finish');
    expect((await made(small)).stats.emails_created).toBe(250);
  });

  it('records a skipped contact with the chunk it ends up in, once, not with the chunk that rendered it and stopped short', async () => {
    const id = await firstChunk({
      name: 'Big, one skipped', html: `<p>${'Long read. '.repeat(54_000)}{{ contact.properties.ref | url_decode }}</p>`, text: 'Hello',
      audience: { tag_ids: [await tagId('skip')] },
    });
    // The first chunk rendered all seven and kept three: the fifth contact's failure is not its own.
    expect((await made(id)).stats).toMatchObject({ emails_created: 3, skipped: 0 });
    clock.advance(1_000);
    const sent = await eventually(async () => {
      const now = await made(id);
      return now.status === 'sent' ? now : undefined;
    }, 10_000, 'the last chunk');
    expect(sent.stats).toMatchObject({ emails_created: 6, skipped: 1 });
    const skips = (await t.api.get(`/v1/broadcasts/${id}/skipped`)).body.data as Array<{ email: string; code: string }>;
    expect(skips).toEqual([expect.objectContaining({ email: 'skip4@example.com', code: 'render_failed' })]);
  });
});

describe('the webhooks of broadcasts and unsubscribes', () => {
  let t: TestApp;
  const received: Array<{ type: string; data: { id: string; email_id: string | null; data: Record<string, unknown> } }> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      res.writeHead(200).end();
    });
  });

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t = await startTestApp({ env: { MAILROOM_WEBHOOK_ALLOW_PRIVATE: 'true', MAILROOM_PUBLIC_URL: 'https://mail.acme.test' } });
    await t.seed.activeDomain(DOMAIN);
    const hook = await t.api.post('/v1/webhooks', {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
      event_types: ['broadcast.sending', 'broadcast.paused', 'broadcast.sent', 'broadcast.cancelled', 'contact.unsubscribed'],
    });
    expect(hook.status).toBe(201);
  });

  afterAll(async () => {
    await t?.close();
    server.close();
  });

  const delivered = async (n: number) => {
    await t.mailroom.services.webhookDispatcher.drain();
    return eventually(async () => {
      await t.mailroom.services.webhookDispatcher.drain();
      return received.length >= n ? received : undefined;
    }, 10_000, `${n} webhook POSTs`);
  };

  it('tells an endpoint when a broadcast starts, pauses, goes on, finishes or is cancelled, and when a contact unsubscribes', async () => {
    for (const email of ['one@example.com', 'two@example.com']) await t.api.post('/v1/contacts', { email });
    const b = (await t.api.post('/v1/broadcasts', { name: 'Hooked', from: FROM, subject: 'Hi', text: 'Hello', send_rate_per_minute: 60 })).body;
    await t.api.post(`/v1/broadcasts/${b.id}/send`, {});
    await t.api.post(`/v1/broadcasts/${b.id}/pause`, {});
    await t.api.post(`/v1/broadcasts/${b.id}/resume`, {});
    await eventually(async () => ((await t.api.get(`/v1/broadcasts/${b.id}`)).body.status === 'sent' ? true : undefined), 10_000, 'sent');
    const cancelled = (await t.api.post('/v1/broadcasts', { name: 'Dropped', from: FROM, subject: 'Hi', text: 'Hello' })).body;
    await t.api.post(`/v1/broadcasts/${cancelled.id}/send`, { scheduled_at: 'in 1 day' });
    await t.api.post(`/v1/broadcasts/${cancelled.id}/cancel`, {});
    const contact = (await t.api.get('/v1/contacts?email=one@')).body.data[0];
    await t.api.post(`/v1/contacts/${contact.id}/unsubscribe`, { reason: 'too many' });
    // Unsubscribing again changes nothing, and says nothing.
    await t.api.post(`/v1/contacts/${contact.id}/unsubscribe`, {});

    const posts = await delivered(6);
    // The contract promises each event once per endpoint, not their order: up
    // to 4 POSTs to an endpoint are in flight at once (schema/openapi.yaml,
    // createWebhook). So the events are matched as a set, each by its fields.
    expect(posts).toHaveLength(6);
    expect(new Set(posts.map((p) => p.data.id)).size).toBe(6);
    expect(posts.map((p) => ({ type: p.type, email_id: p.data.email_id, data: p.data.data }))).toEqual(expect.arrayContaining([
      { type: 'broadcast.sending', email_id: null, data: { broadcast_id: b.id, name: 'Hooked', audience_size: 2, resumed: false } },
      { type: 'broadcast.paused', email_id: null, data: { broadcast_id: b.id, name: 'Hooked', reason: 'paused by request', resume_at: null } },
      { type: 'broadcast.sending', email_id: null, data: { broadcast_id: b.id, name: 'Hooked', audience_size: 2, resumed: true } },
      { type: 'broadcast.sent', email_id: null, data: { broadcast_id: b.id, name: 'Hooked', emails_created: 2 } },
      { type: 'broadcast.cancelled', email_id: null, data: { broadcast_id: cancelled.id, name: 'Dropped', previous_status: 'scheduled', emails_created: 0 } },
      { type: 'contact.unsubscribed', email_id: null, data: { contact_id: contact.id, email: 'one@example.com', reason: 'too many', source: 'api' } },
    ]));
    // The events list stays the timeline of emails.
    const listed = (await t.api.get('/v1/events?limit=100')).body.data as Array<{ type: string }>;
    expect(listed.every((e) => e.type.startsWith('email.'))).toBe(true);
  });
});
