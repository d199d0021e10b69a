import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

async function sentHeaders(t: TestApp, emailId: string) {
  const row = await t.mailroom.services.store.db.selectFrom('sink_messages').select('raw')
    .where('email_id', '=', emailId).executeTakeFirstOrThrow();
  return (await simpleParser(row.raw)).headerLines;
}

const header = (lines: ReadonlyArray<{ key: string; line: string }>, name: string) =>
  lines.find((l) => l.key === name)?.line.replace(/^[^:]+:\s*/, '');

describe('unsubscribe links on sends that ask for them', () => {
  it('adds a working List-Unsubscribe: following it unsubscribes the contact and later sends fail', async () => {
    await using t = await startTestApp();
    await t.seed.activeDomain('news.example');
    const contact = await t.api.post('/v1/contacts', { email: 'reader@example.net', name: 'Reader' });
    expect(contact.status).toBe(201);

    const sent = await t.api.post('/v1/emails', {
      from: 'News <news@news.example>', to: 'Reader@Example.net', subject: 'Weekly', html: '<p>Hi</p>', unsubscribe: true,
    });
    expect(sent.status).toBe(201);
    await t.mailroom.delivery.drain();

    const lines = await sentHeaders(t, sent.body.id);
    const link = /^<([^>]+)>$/.exec(header(lines, 'list-unsubscribe') ?? '')?.[1];
    expect(link?.startsWith(`${t.url}/u/`)).toBe(true);
    // Plain http: the link is offered, one-click (RFC 8058) is not claimed.
    expect(header(lines, 'list-unsubscribe-post')).toBeUndefined();

    const click = await fetch(link!, { method: 'POST', body: 'List-Unsubscribe=One-Click',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    expect(click.status).toBe(200);
    expect((await t.api.get(`/v1/contacts/${contact.body.id}`)).body.status).toBe('unsubscribed');
    const suppressed = await t.api.get('/v1/suppressions?email=reader@example.net');
    expect(suppressed.body.data[0]).toMatchObject({ email: 'reader@example.net', reason: 'unsubscribe' });

    const again = await t.api.post('/v1/emails', { from: 'news@news.example', to: 'reader@example.net', subject: 'Weekly', html: '<p>Hi</p>' });
    await t.mailroom.delivery.drain();
    const failed = await t.api.get(`/v1/events?email_id=${again.body.id}&event_type=failed`);
    expect(failed.body.data).toHaveLength(1);
    expect(failed.body.data[0].data).toMatchObject({ reason: 'suppressed', suppression_reason: 'unsubscribe' });
  });

  it('claims one-click over https, and refuses the flag with several recipients or a List-Unsubscribe of its own', async () => {
    await using t = await startTestApp({ env: { MAILROOM_PUBLIC_URL: 'https://mail.example.test' } });
    await t.seed.activeDomain('news.example');
    const sent = await t.api.post('/v1/emails', { from: 'news@news.example', to: 'a@example.net', subject: 's', text: 'x', unsubscribe: true });
    await t.mailroom.delivery.drain();
    const lines = await sentHeaders(t, sent.body.id);
    expect(header(lines, 'list-unsubscribe')).toMatch(/^<https:\/\/mail\.example\.test\/u\/[A-Za-z0-9_-]+>$/);
    expect(header(lines, 'list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');

    const two = await t.api.post('/v1/emails', { from: 'news@news.example', to: ['a@example.net'], cc: 'b@example.net', subject: 's', text: 'x', unsubscribe: true });
    expect(two.status).toBe(422);
    expect(two.body.error.param).toBe('unsubscribe');
    const own = await t.api.post('/v1/emails', { from: 'news@news.example', to: 'a@example.net', subject: 's', text: 'x', unsubscribe: true,
      headers: { 'List-Unsubscribe': '<mailto:leave@news.example>' } });
    expect(own.status).toBe(422);
    expect(own.body.error.param).toBe('unsubscribe');
    const batch = await t.api.post('/v1/emails/batch', { emails: [
      { from: 'news@news.example', to: 'c@example.net', subject: 's', text: 'x', unsubscribe: true },
      { from: 'news@news.example', to: ['c@example.net', 'd@example.net'], subject: 's', text: 'x', unsubscribe: true },
    ] });
    expect(batch.status).toBe(200);
    expect(batch.body.data[0].id).toBeDefined();
    expect(batch.body.data[1].error).toMatchObject({ code: 'validation_error', param: 'unsubscribe' });
  });
});
