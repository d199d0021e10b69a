import { promises as dns } from 'node:dns';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { publishDkim, resolverOf, startDns, type TestDns } from '../helpers/dns.js';
import { directDeliveryEnv, startScriptedMx, type ScriptedMx } from '../helpers/mx.js';

// The form of what goes out: every line of the message a remote MX receives
// fits RFC 5322's 998 octets whatever the subject, and a display name that
// reads as an address is refused however it is spelled.

const MX_HOST = '127.0.0.2';
const MAX_LINE_OCTETS = 998;

const longestLine = (raw: Buffer) => Math.max(...raw.toString('latin1').split('\r\n').map((line) => line.length));

describe('the form of outgoing mail', () => {
  const clock = new ManualClock();
  let testDns: TestDns;
  let mx: ScriptedMx;
  let t: TestApp;
  let resolver: dns.Resolver;

  beforeAll(async () => {
    testDns = await startDns([{ type: 'MX', name: 'ok.test', exchange: 'mx.ok.test', priority: 10 }, { type: 'A', name: 'mx.ok.test', address: MX_HOST }]);
    mx = await startScriptedMx({ host: MX_HOST });
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

  /** Sends through the API and returns the raw message the MX received. */
  async function delivered(body: Record<string, unknown>): Promise<Buffer> {
    const before = mx.received.length;
    const res = await t.api.post('/v1/emails', { from: 'Ann <ann@acme.test>', to: 'bea@ok.test', text: 'x', ...body });
    expect(res.status).toBe(201);
    await t.mailroom.delivery.drain();
    expect(mx.received).toHaveLength(before + 1);
    return mx.received[before].raw;
  }

  it('folds a subject of 998 characters without a space into lines of at most 998 octets, and it reads back whole', async () => {
    for (const subject of ['s'.repeat(998), `Re: ${'w'.repeat(500)} and ${'v'.repeat(489)}`, `${'ß'.repeat(600)}`]) {
      expect(subject.length).toBeLessThanOrEqual(998);
      const raw = await delivered({ subject });
      expect(longestLine(raw), subject.slice(0, 20)).toBeLessThanOrEqual(MAX_LINE_OCTETS);
      // Folded the way RFC 5322 §2.2.3 allows, each line well under 78 characters even.
      expect(longestLine(raw.subarray(0, raw.indexOf('\r\n\r\n')))).toBeLessThanOrEqual(78);
      expect((await simpleParser(raw)).subject).toBe(subject);
      // The DKIM signature covers the folded Subject and still verifies.
      const { results } = await dkimVerify(raw, { resolver: (name: string, type: string) => resolver.resolve(name, type as 'TXT') });
      expect(results[0].status.result).toBe('pass');
    }
  });

  it('sends an ordinary subject as it is', async () => {
    const raw = await delivered({ subject: 'Quarterly numbers' });
    expect(raw.toString('latin1')).toContain('\r\nSubject: Quarterly numbers\r\n');
  });

  it('refuses a custom header holding a word no folding fits in a line', async () => {
    const res = await t.api.post('/v1/emails', { from: 'ann@acme.test', to: 'bea@ok.test', subject: 's', text: 'x', headers: { 'X-Token': 't'.repeat(998) } });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: 'validation_error', param: 'headers.X-Token' });
    // A long value of ordinary words folds, and goes out within the limit.
    const raw = await delivered({ subject: 's', headers: { 'X-Note': `${'word '.repeat(190)}end`, 'X-Token': 't'.repeat(997) } });
    expect(longestLine(raw)).toBeLessThanOrEqual(MAX_LINE_OCTETS);

    // The References of a long thread, far over one line, goes out folded and reads back whole.
    const references = Array.from({ length: 120 }, (_, i) => `<reply-${i}.${'x'.repeat(30)}@mail.acme.test>`).join(' ');
    expect(references.length).toBeGreaterThan(5_000);
    const threaded = await delivered({ subject: 'Re: the long thread', headers: { References: references } });
    expect(longestLine(threaded)).toBeLessThanOrEqual(MAX_LINE_OCTETS);
    expect((await simpleParser(threaded)).references).toEqual(references.split(' '));
    const tooLong = await t.api.post('/v1/emails', { from: 'ann@acme.test', to: 'bea@ok.test', subject: 's', text: 'x', headers: { 'X-Note': 'w '.repeat(8_193) } });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.error).toMatchObject({ code: 'validation_error', param: 'headers.X-Note', message: 'The value of X-Note is over 16384 characters.' });
  });

  it('refuses a display name spelling an address, plainly or as an encoded word', async () => {
    const spellings = [
      '"ceo@bank.test" <ann@acme.test>',
      '"=?utf-8?q?ceo=40bank.test?=" <ann@acme.test>',
      '=?utf-8?B?Y2VvQGJhbmsudGVzdA==?= <ann@acme.test>',
      '"=?utf-8?q?ceo?= =?utf-8?q?=40bank.test?=" <ann@acme.test>',
      '"ceo＠bank.test" <ann@acme.test>',
    ];
    for (const from of spellings) {
      const res = await t.api.post('/v1/emails', { from, to: 'bea@ok.test', subject: 's', text: 'x' });
      expect(res.status, from).toBe(422);
      expect(res.body.error, from).toMatchObject({ code: 'validation_error', param: 'from' });
      expect(res.body.error.message, from).toMatch(/display name that looks like an address/);
    }
    const to = await t.api.post('/v1/emails', { from: 'ann@acme.test', to: '"=?utf-8?q?boss=40acme.test?=" <bea@ok.test>', subject: 's', text: 'x' });
    expect(to.status).toBe(422);
    expect(to.body.error.param).toMatch(/^to/);
    // An encoded word that is a name is a name.
    expect((await t.api.post('/v1/emails', { from: '"=?utf-8?q?Ann_L=C3=A9e?=" <ann@acme.test>', to: 'bea@ok.test', subject: 's', text: 'x' })).status).toBe(201);
  });

  it('carries a quoted local part to the MX as written, in RCPT TO and quoted in the To field (RFC 5321 section 4.1.2)', async () => {
    // A comma in it would split the To field in two were it not quoted and bracketed.
    const before = mx.received.length;
    const res = await t.api.post('/v1/emails', { from: 'ann@acme.test', to: ['"bea,ops"@ok.test', 'Cy <"cy\\"x"@ok.test>'], subject: 'quoted', text: 'x' });
    expect(res.status).toBe(201);
    await t.mailroom.delivery.drain();
    // An email of an earlier test may go out in the same drain.
    const received = mx.received.slice(before).filter((m) => m.rcptTo.some((r) => r.startsWith('"')));
    expect(received.flatMap((m) => m.rcptTo).sort()).toEqual(['"bea,ops"@ok.test', '"cy\\"x"@ok.test']);
    const raw = received[0].raw;
    const message = await simpleParser(raw);
    expect(message.headers.get('to')).toMatchObject({ value: [{ address: '"bea,ops"@ok.test', name: '' }, { address: '"cy\\"x"@ok.test', name: 'Cy' }] });
    expect(raw.toString('latin1')).toMatch(/^To: <"bea,ops"@ok\.test>, Cy <"cy\\"x"@ok\.test>\r\n/m);
    const rcpts = mx.commands.map((c) => c.line).filter((line) => line.startsWith('RCPT TO:'));
    expect(rcpts).toEqual(expect.arrayContaining(['RCPT TO:<"bea,ops"@ok.test>', 'RCPT TO:<"cy\\"x"@ok.test>']));

    // With a space, as "john doe": the client sends it whole (smtp-server, this MX, cannot read such a path and answers 501).
    const spaced = await t.api.post('/v1/emails', { from: 'ann@acme.test', to: '"john doe"@ok.test', subject: 's', text: 'x' });
    expect(spaced.status).toBe(201);
    expect(spaced.body.to).toEqual(['"john doe"@ok.test']);
    await t.mailroom.delivery.drain();
    expect(mx.commands.map((c) => c.line)).toContain('RCPT TO:<"john doe"@ok.test>');
  });

  it('refuses a malformed quoted local part as any other malformed address, and never lets one reach a header', async () => {
    for (const to of ['"john doe@ok.test', 'john doe"@ok.test', '"john" doe"@ok.test', '"a\\"@ok.test', '""@ok.test', '"a<b"@ok.test',
      '"a\r\nBcc: eve@evil.test"@ok.test', '"a\nb"@ok.test']) {
      const res = await t.api.post('/v1/emails', { from: 'ann@acme.test', to, subject: 's', text: 'x' });
      expect(res.status, to).toBe(422);
      expect(res.body.error, to).toMatchObject({ code: 'validation_error', param: 'to' });
      expect(res.body.error.message, to).toMatch(/'to' (is not a valid email address|must be one line of text)/);
    }
  });
});
