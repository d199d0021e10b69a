import { promises as dns } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { ManualClock } from '../../src/core/clock.js';
import { parseReturnPath } from '../../src/inbound/return-path.js';
import { publishDkim, resolverOf, startDns, type DnsRecord, type TestDns } from '../helpers/dns.js';
import { directDeliveryEnv, startScriptedMx, type ScriptedMx } from '../helpers/mx.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

// Live delivery end to end: the API accepts, the worker resolves the MX
// through a real DNS server (dnsmasq on loopback), talks SMTP to a scripted
// MX, and writes what happened. The clock is manual and the worker is driven
// with drain(), so retries happen exactly when the test moves time.

const MX_HOST = '127.0.0.2';

describe('delivery to MX hosts', () => {
  const clock = new ManualClock();
  let testDns: TestDns;
  let mx: ScriptedMx;
  let t: TestApp;
  let resolver: dns.Resolver;
  /** Replies the MX gives, by recipient address and stage; a function for replies that change between attempts. */
  const script = new Map<string, (stage: string) => string | undefined>();
  const tries = new Map<string, number>();

  const mxFor = (domain: string, exchange = `mx.${domain}`): DnsRecord[] => [
    { type: 'MX', name: domain, exchange, priority: 10 },
    { type: 'A', name: exchange, address: MX_HOST },
  ];

  beforeAll(async () => {
    testDns = await startDns([
      ...mxFor('ok.test'), ...mxFor('grey.test'), ...mxFor('multi.test'), ...mxFor('gone.test', 'aspmx.l.google.com'),
      ...mxFor('slow.test'), { type: 'MX', name: 'nomail.test', exchange: '.', priority: 0 }, { type: 'A', name: 'nomail.test', address: MX_HOST },
    ]);
    mx = await startScriptedMx({
      host: MX_HOST,
      tls: true,
      reply: (stage, ctx) => {
        const address = stage === 'rcpt' ? ctx.address! : stage === 'data' ? ctx.rcptTo.join(',') : '';
        const key = `${stage}:${address}`;
        tries.set(key, (tries.get(key) ?? 0) + 1);
        return script.get(address)?.(stage);
      },
    });
    t = await startTestApp({
      clock,
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

  const send = async (to: string | string[], subject = 'Hello') => {
    const res = await t.api.post('/v1/emails', { from: 'Ann <ann@acme.test>', to, subject, text: 'Hello there.\n.\nA line with a dot.' });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };
  const email = async (id: string) => (await t.api.get(`/v1/emails/${id}`)).body;
  const events = async (id: string) => (await t.api.get(`/v1/emails/${id}/events?limit=100`)).body.data.reverse() as Array<{ type: string; data: any }>;

  it('delivers over STARTTLS with a DKIM signature that verifies and a return path naming the email', async () => {
    const before = mx.received.length;
    const id = await send('Bea <bea@ok.test>');
    await t.mailroom.delivery.drain();
    expect((await email(id)).status).toBe('delivered');
    const received = mx.received[before];
    expect(received.rcptTo).toEqual(['bea@ok.test']);
    expect(received.secure).toBe(true);
    expect(parseReturnPath(received.mailFrom)?.emailId).toBe(id);
    expect(received.mailFrom).toMatch(/@bounces\.acme\.test$/);
    // A line holding a lone dot survives (dot-stuffed on the wire, RFC 5321 §4.5.2), and lone LFs became CRLF.
    expect(received.raw.toString()).toContain('Hello there.\r\n.\r\nA line with a dot.');
    const { results } = await dkimVerify(received.raw, { resolver: (name: string, type: string) => resolver.resolve(name, type as 'TXT') });
    expect(results).toEqual([expect.objectContaining({ signingDomain: 'acme.test', status: expect.objectContaining({ result: 'pass' }) })]);
    const delivered = (await events(id)).find((e) => e.type === 'email.delivered')!;
    expect(delivered.data).toMatchObject({ to: 'bea@ok.test', from: 'Ann <ann@acme.test>', subject: 'Hello', smtp_code: 250, mx_host: 'mx.ok.test' });
  });

  it('sends the recipients of one domain in one transaction, and retries only those a 452 turned away', async () => {
    let full = true;
    script.set('b@multi.test', (stage) => (stage === 'rcpt' && full ? '452 4.2.2 Mailbox full, try again later' : undefined));
    const before = mx.received.length;
    const id = await send(['a@multi.test', 'b@multi.test', 'c@multi.test']);
    await t.mailroom.delivery.drain();
    expect(mx.received.slice(before).map((m) => m.rcptTo)).toEqual([['a@multi.test', 'c@multi.test']]);
    let e = await email(id);
    expect(e.status).toBe('sent');
    expect(e.recipients.map((r: { status: string }) => r.status)).toEqual(['delivered', 'deferred', 'delivered']);
    const delayed = (await events(id)).find((x) => x.type === 'email.delayed')!;
    expect(delayed.data).toMatchObject({ to: 'b@multi.test', attempt: 1, smtp_code: 452, reason: expect.stringContaining('Mailbox full') });

    full = false;
    clock.set(Date.parse(delayed.data.next_attempt_at));
    await t.mailroom.delivery.drain();
    expect(mx.received.slice(before).map((m) => m.rcptTo)).toEqual([['a@multi.test', 'c@multi.test'], ['b@multi.test']]);
    e = await email(id);
    expect(e.status).toBe('delivered');
  });

  it('defers on 4xx and delivers on the retry', async () => {
    let greylisted = true;
    script.set('g@grey.test', (stage) => (stage === 'rcpt' && greylisted ? '451 4.7.1 Greylisted, please try again in 600 seconds' : undefined));
    const id = await send('g@grey.test');
    await t.mailroom.delivery.drain();
    const delayed = (await events(id)).find((x) => x.type === 'email.delayed')!;
    // The server asked for 10 minutes, longer than the first step of the schedule.
    expect(Date.parse(delayed.data.next_attempt_at) - clock.now()).toBeGreaterThanOrEqual(600_000);
    clock.set(Date.parse(delayed.data.next_attempt_at) - 1);
    await t.mailroom.delivery.drain();
    expect((await email(id)).status).toBe('sent');
    greylisted = false;
    clock.advance(1);
    await t.mailroom.delivery.drain();
    expect((await events(id)).map((x) => x.type)).toEqual(['email.queued', 'email.sent', 'email.delayed', 'email.delivered']);
  });

  it('builds a message once: a retry and each destination send it as built, signed, and nothing is kept once it is settled', async () => {
    const db = t.mailroom.services.store.db;
    const kept = async (id: string) => (await db.selectFrom('email_messages').select('raw').where('email_id', '=', id).executeTakeFirst())?.raw;
    const receivedBy = (address: string) => mx.received.filter((m) => m.rcptTo.includes(address));
    let refusals = 1;
    script.set('d@grey.test', (stage) => (stage === 'data' && refusals-- > 0 ? '451 4.3.0 Try again later' : undefined));
    const id = await send(['d@grey.test', 'e@ok.test']);
    await t.mailroom.delivery.drain();
    // ok.test took its copy; grey.test turned its copy away after the data: the message is kept for the retry.
    const built = await kept(id);
    expect(built).toBeInstanceOf(Buffer);
    const [first] = receivedBy('e@ok.test');
    expect(first.raw.subarray(first.raw.length - built!.length).equals(built!)).toBe(true);
    expect(first.raw.subarray(0, first.raw.length - built!.length).toString()).toMatch(/^DKIM-Signature: /);

    clock.advance(3_600_000);
    await t.mailroom.delivery.drain();
    expect((await email(id)).status).toBe('delivered');
    const [retried] = receivedBy('d@grey.test');
    // The same bytes, Date and all, an hour later, signed for this attempt.
    expect(retried.raw.subarray(retried.raw.length - built!.length).equals(built!)).toBe(true);
    expect(retried.raw.subarray(0, retried.raw.length - built!.length).toString()).toMatch(/^DKIM-Signature: /);
    expect(await kept(id)).toBeUndefined();
  });

  it('classifies a 5xx bounce, suppresses the address, and does not send to it again', async () => {
    script.set('nobody@gone.test', (stage) => (stage === 'rcpt' ? '550 5.1.1 The email account that you tried to reach does not exist.' : undefined));
    const id = await send('nobody@gone.test');
    await t.mailroom.delivery.drain();
    expect((await email(id)).status).toBe('failed');
    const bounced = (await events(id)).find((x) => x.type === 'email.bounced')!;
    expect(bounced.data).toEqual({
      to: 'nobody@gone.test', from: 'Ann <ann@acme.test>', subject: 'Hello', bounce_type: 'hard', bounce_subtype: 'no_mailbox',
      smtp_code: 550, enhanced_status_code: '5.1.1', provider: 'Google', recommended_action: 'suppress_recipient',
      original_error: expect.stringContaining('does not exist'),
    });
    expect(await t.mailroom.services.suppressions.check(t.workspaceId, ['nobody@gone.test'])).toEqual(new Map([['nobody@gone.test', 'hard_bounce']]));

    const tried = tries.get('rcpt:nobody@gone.test');
    const again = await send('nobody@gone.test');
    expect((await email(again)).status).toBe('failed');
    await t.mailroom.delivery.drain();
    expect(tries.get('rcpt:nobody@gone.test')).toBe(tried);
  });

  it('fails at once on a null MX, without connecting', async () => {
    const connections = mx.connections;
    const id = await send('x@nomail.test');
    await t.mailroom.delivery.drain();
    const e = await email(id);
    expect(e.status).toBe('failed');
    expect(e.recipients[0]).toMatchObject({ status: 'bounced', smtp_code: 556 });
    const bounced = (await events(id)).find((x) => x.type === 'email.bounced')!;
    expect(bounced.data).toMatchObject({ bounce_type: 'hard', bounce_subtype: 'no_domain', smtp_code: 556, enhanced_status_code: '5.1.10' });
    expect(mx.connections).toBe(connections);
  });

  it('keeps test-key emails in the sink even in direct mode', async () => {
    const testApi = t.api.as((await t.seed.key({ mode: 'test' })).token);
    const connections = mx.connections;
    const res = await testApi.post('/v1/emails', { from: 'ann@acme.test', to: ['bea@ok.test', 'bounced@mailroom.test'], subject: 'Test', text: 'x' });
    await t.mailroom.delivery.drain();
    const e = (await testApi.get(`/v1/emails/${res.body.id}`)).body;
    expect(e.recipients.map((r: { status: string }) => r.status)).toEqual(['delivered', 'bounced']);
    expect(mx.connections).toBe(connections);
    expect(tries.get('rcpt:bea@ok.test')).toBe(1);
  });

  it('gives up after the lifetime: a soft bounce and a failed recipient', async () => {
    script.set('late@slow.test', (stage) => (stage === 'rcpt' ? '421 4.4.2 Too busy, come back later' : undefined));
    const id = await send('late@slow.test');
    const start = clock.now();
    await t.mailroom.delivery.drain();
    for (let i = 0; i < 100 && (await email(id)).status === 'sent'; i++) {
      const row = await t.mailroom.services.store.db.selectFrom('outbound_queue').select('next_attempt_at').where('email_id', '=', id).executeTakeFirst();
      if (row) clock.set(row.next_attempt_at);
      await t.mailroom.delivery.drain();
    }
    expect((await email(id)).status).toBe('failed');
    expect(clock.now() - start).toBeGreaterThan(4.5 * 86_400_000);
    expect(clock.now() - start).toBeLessThan(5 * 86_400_000);
    const all = await events(id);
    const delays = all.filter((x) => x.type === 'email.delayed');
    expect(delays.length).toBeGreaterThan(30);
    expect(delays.map((d) => d.data.attempt)).toEqual(delays.map((_, i) => i + 1));
    expect(all.slice(-2).map((x) => x.type)).toEqual(['email.bounced', 'email.failed']);
    expect(all.at(-2)!.data).toMatchObject({ bounce_type: 'soft', smtp_code: 421, enhanced_status_code: '4.4.2' });
    expect(await t.mailroom.services.suppressions.check(t.workspaceId, ['late@slow.test'])).toEqual(new Map());
  });
});
