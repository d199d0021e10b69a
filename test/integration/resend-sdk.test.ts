import { Resend } from 'resend';
import { describe, expect, it } from 'vitest';
import { SENDING_ENV, startTestApp } from '../helpers/app.js';

// Resend's official Node SDK, from the registry, pointed at Mailroom by its
// base URL: it sends (tags in its {name, value} form included), reads back
// and lists, unchanged.

describe('the resend SDK against Mailroom', () => {
  it('sends with tags, gets and lists', async () => {
    // Where mail leaves: a live key is refused a domain it has not verified.
    await using t = await startTestApp({ env: SENDING_ENV });
    await t.seed.activeDomain('acme.test');
    const resend = new Resend(t.token, { baseUrl: `${t.url}/v1` });

    const sent = await resend.emails.send({
      from: 'Acme <hello@acme.test>', to: ['reader@example.org'], subject: 'Hello from the SDK', html: '<p>Hi</p>', text: 'Hi',
      tags: [{ name: 'category', value: 'welcome' }, { name: 'plan', value: 'pro' }],
    });
    expect(sent.error).toBeNull();
    const id = sent.data!.id;
    expect(id).toMatch(/^em_/);

    const got = await resend.emails.get(id);
    expect(got.error).toBeNull();
    expect(got.data).toMatchObject({ id, subject: 'Hello from the SDK' });
    const stored = (await t.api.get(`/v1/emails/${id}`)).body;
    expect(stored.tags).toEqual(['category:welcome', 'plan:pro']);
    expect((await t.api.get('/v1/emails?tags=category:welcome')).body.data.map((e: { id: string }) => e.id)).toEqual([id]);

    const listed = await resend.emails.list();
    expect(listed.error).toBeNull();
    expect(listed.data!.data.map((e: { id: string }) => e.id)).toContain(id);

    // Mailroom's error object reaches the SDK as its error.
    const refused = await resend.emails.send({ from: 'hello@unverified.test', to: ['reader@example.org'], subject: 'x', text: 'x' });
    expect(refused.data).toBeNull();
    expect(refused.error).toMatchObject({ error: { code: 'domain_not_verified' } });
  });
});
