import { promises as dns } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { simpleParser } from 'mailparser';
import { publishDkim, resolverOf, startDns, type TestDns } from '../helpers/dns.js';
import { directDeliveryEnv, startScriptedMx, type ScriptedMx } from '../helpers/mx.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/smtp-app.js';

// A broadcast end to end: its audience of three tagged contacts turned into
// three emails, each personalised, DKIM-signed by the delivery worker, found
// through a real DNS server and handed over SMTP to a real peer, with the
// RFC 8058 one-click headers; the contacts outside the audience get nothing.

const MX_HOST = '127.0.0.3';

describe('delivery of a broadcast', () => {
  let testDns: TestDns;
  let mx: ScriptedMx;
  let t: TestApp;
  let resolver: dns.Resolver;

  beforeAll(async () => {
    testDns = await startDns([
      { type: 'MX', name: 'readers.test', exchange: 'mx.readers.test', priority: 10 },
      { type: 'A', name: 'mx.readers.test', address: MX_HOST },
    ]);
    mx = await startScriptedMx({ host: MX_HOST, tls: true });
    t = await startTestApp({ env: { ...directDeliveryEnv(testDns.server, mx.port), MAILROOM_PUBLIC_URL: 'https://mail.acme.test' } });
    await publishDkim(testDns, await t.seed.activeDomain('acme.test'));
    resolver = resolverOf(testDns);
  });
  afterAll(async () => {
    await t?.close();
    await mx?.stop();
    await testDns?.stop();
  });

  it('reaches the MX once per contact of the audience, personalised, signed, with one-click unsubscribe', async () => {
    const add = async (body: Record<string, unknown>) => (await t.api.post('/v1/contacts', body)).body as { id: string };
    await add({ email: 'ann@readers.test', name: 'Ann Lee', tags: ['weekly'], properties: { city: 'Oslo' } });
    await add({ email: 'bob@readers.test', name: 'Bob Stone', tags: ['weekly'], properties: { city: 'Turku' } });
    await add({ email: 'cy@readers.test', name: 'Cy', tags: ['weekly'] });
    await add({ email: 'untagged@readers.test' });
    const gone = await add({ email: 'gone@readers.test', tags: ['weekly'] });
    await t.api.post(`/v1/contacts/${gone.id}/unsubscribe`, {});
    const deleted = await add({ email: 'deleted@readers.test', tags: ['weekly'] });
    await t.api.delete(`/v1/contacts/${deleted.id}`);
    await add({ email: 'blocked@readers.test', tags: ['weekly'] });
    await t.api.post('/v1/suppressions', { email: 'blocked@readers.test' });
    const tag = ((await t.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>).find((x) => x.name === 'weekly')!;

    const b = (await t.api.post('/v1/broadcasts', {
      name: 'Weekly', from: 'Acme <news@acme.test>', subject: 'This week, {{ contact.first_name | default: "friend" }}',
      html: '<p>Hello {{ contact.name }} in {{ contact.properties.city | default: "your town" }}.</p>',
      audience: { tag_ids: [tag.id] },
    })).body;
    expect((await t.api.post(`/v1/broadcasts/${b.id}/send`, {})).body.stats.audience_size).toBe(3);
    await eventually(async () => ((await t.api.get(`/v1/broadcasts/${b.id}`)).body.status === 'sent' ? true : undefined), 10_000, 'sent');
    await mx.waitFor(3, 15_000);

    expect(mx.received.flatMap((m) => m.rcptTo).sort()).toEqual(['ann@readers.test', 'bob@readers.test', 'cy@readers.test']);
    for (const received of mx.received) {
      const { results } = await dkimVerify(received.raw, { resolver: (name: string, type: string) => resolver.resolve(name, type as 'TXT') });
      expect(results).toEqual([expect.objectContaining({ signingDomain: 'acme.test', status: expect.objectContaining({ result: 'pass' }) })]);
      const raw = received.raw.toString('latin1');
      expect(raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click\r$/m);
      expect(raw).toMatch(/^List-Unsubscribe:\s+<https:\/\/mail\.acme\.test\/u\/[\w-]+>\r$/m);
      const message = await simpleParser(received.raw);
      // Without a link of its own, the content gets a visible one.
      expect(message.html).toMatch(/<a href="https:\/\/mail\.acme\.test\/u\/[\w-]+">Unsubscribe<\/a>/);
    }
    const ann = await simpleParser(mx.received.find((m) => m.rcptTo[0] === 'ann@readers.test')!.raw);
    expect(ann.subject).toBe('This week, Ann');
    expect(ann.html).toContain('<p>Hello Ann Lee in Oslo.</p>');
    const cy = await simpleParser(mx.received.find((m) => m.rcptTo[0] === 'cy@readers.test')!.raw);
    expect(cy.html).toContain('<p>Hello Cy in your town.</p>');

    const stats = await eventually(async () => {
      const s = (await t.api.get(`/v1/broadcasts/${b.id}`)).body.stats;
      return s.delivered === 3 ? s : undefined;
    }, 10_000, 'three deliveries counted');
    expect(stats).toMatchObject({ audience_size: 3, emails_created: 3, sent: 3, delivered: 3, suppressed: 0, failed: 0 });
  });
});
