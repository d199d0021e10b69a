import { promises as dns } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { simpleParser } from 'mailparser';
import { publishDkim, resolverOf, startDns, type TestDns } from '../helpers/dns.js';
import { directDeliveryEnv, startScriptedMx, type ScriptedMx } from '../helpers/mx.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

// A message sent by template, end to end: rendered when the API accepts it,
// DKIM-signed by the delivery worker, found through a real DNS server and
// handed over SMTP to a real peer, which gets the variables filled in.

const MX_HOST = '127.0.0.2';

describe('delivery of an email sent by template', () => {
  let testDns: TestDns;
  let mx: ScriptedMx;
  let t: TestApp;
  let resolver: dns.Resolver;

  beforeAll(async () => {
    testDns = await startDns([
      { type: 'MX', name: 'ok.test', exchange: 'mx.ok.test', priority: 10 },
      { type: 'A', name: 'mx.ok.test', address: MX_HOST },
    ]);
    mx = await startScriptedMx({ host: MX_HOST, tls: true });
    t = await startTestApp({
      env: directDeliveryEnv(testDns.server, mx.port),
    });
    const domain = await t.seed.activeDomain('acme.test');
    await publishDkim(testDns, domain);
    resolver = resolverOf(testDns);
  });
  afterAll(async () => {
    await t?.close();
    await mx?.stop();
    await testDns?.stop();
  });

  it('reaches the MX rendered for its recipient, with a DKIM signature that verifies', async () => {
    await t.api.post('/v1/contacts', { email: 'bea@ok.test', name: 'Bea Smith' });
    const created = await t.api.post('/v1/templates', {
      name: 'Shipped', alias: 'shipped', from: 'Acme Shop <shop@acme.test>',
      subject: 'Order {{ order.number }} has shipped, {{ contact.first_name }}',
      html: '<p>Hi {{ contact.first_name }},</p><p>{{ order.items | size }} items are on their way: '
        + '{% for item in order.items %}{{ item }}{% unless forloop.last %}, {% endunless %}{% endfor %}.</p>'
        + '<p>Note: {{ note }}</p><p><a href="https://track.example/{{ order.number | url_encode }}">Track it</a></p>',
      variables: [{ key: 'order', type: 'object', required: true }, { key: 'note', type: 'string', fallback: 'none' }],
    });
    expect(created.status).toBe(201);
    expect((await t.api.post('/v1/templates/shipped/publish')).status).toBe(200);

    const before = mx.received.length;
    const sent = await t.api.post('/v1/emails', {
      to: 'Bea <bea@ok.test>',
      template: { id: 'shipped', variables: { order: { number: 'A&B-7', items: ['Mug', 'Tea <Earl Grey>'] } } },
    });
    expect(sent.status).toBe(201);
    await t.mailroom.delivery.drain();
    expect((await t.api.get(`/v1/emails/${sent.body.id}`)).body.status).toBe('delivered');

    const received = mx.received[before];
    expect(received.rcptTo).toEqual(['bea@ok.test']);
    const { results } = await dkimVerify(received.raw, { resolver: (name: string, type: string) => resolver.resolve(name, type as 'TXT') });
    expect(results).toEqual([expect.objectContaining({ signingDomain: 'acme.test', status: expect.objectContaining({ result: 'pass' }) })]);

    const message = await simpleParser(received.raw);
    expect(message.from?.text).toBe('"Acme Shop" <shop@acme.test>');
    expect(message.subject).toBe('Order A&B-7 has shipped, Bea');
    expect(message.html).toContain('<p>Hi Bea,</p><p>2 items are on their way: Mug, Tea &lt;Earl Grey&gt;.</p><p>Note: none</p>');
    expect(message.html).toContain('<a href="https://track.example/A%26B-7">Track it</a>');
    expect(message.text).toContain('Hi Bea,');
    expect(message.text).toContain('2 items are on their way: Mug, Tea <Earl Grey>.');
    expect(message.text).toContain('Track it [https://track.example/A%26B-7]');
  });
});
