import { generateKeyPairSync } from 'node:crypto';
import { dkimSign, type DKIMSignOptions } from 'mailauth';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDns, type TestDns } from '../helpers/dns.js';
import { eventually, inboundDomain, sendRaw, startSmtpTestApp, type SmtpTestApp } from '../helpers/smtp-app.js';

// Receiving for a verified domain, end to end: a DKIM-signed message from a
// sender whose SPF, DKIM and DMARC records are on the test DNS server, sent
// by nodemailer to the MX listener, read back through the inbound API.

const SENDER_DOMAIN = 'sender.test';
const SELECTOR = 'mr2026';
const INBOUND = 'inbound.test';

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const publicDer = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
const CSV = Buffer.from('quarter,revenue\nQ1,100\nQ2,140\n');

async function composed(): Promise<Buffer> {
  const message = new MailComposer({
    from: 'Ann Sender <ann@sender.test>',
    to: 'Help Desk <desk@inbound.test>',
    cc: '"Lee, Bo" <bo@inbound.test>',
    replyTo: 'replies@sender.test',
    subject: 'Quarterly report ✓',
    text: 'The numbers are attached.\n',
    html: '<p>The numbers are <b>attached</b>.</p>',
    messageId: '<q1-report@sender.test>',
    headers: { 'X-Campaign': 'q1' },
    attachments: [{ filename: 'report.csv', content: CSV, contentType: 'text/csv' }],
  });
  const raw = await message.compile().build();
  // mailauth signs with the entries of signatureData only; its typings ask for top-level fields it ignores.
  const signed = await dkimSign(raw, {
    signatureData: [{ signingDomain: SENDER_DOMAIN, selector: SELECTOR, privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) }],
  } as DKIMSignOptions);
  if (signed.errors.length > 0 || !signed.signatures.startsWith('DKIM-Signature:')) throw new Error(`signing failed: ${JSON.stringify(signed.errors)}`);
  return Buffer.concat([Buffer.from(signed.signatures), raw]);
}

describe('inbound mail for a verified domain', () => {
  let dns: TestDns;
  let t: SmtpTestApp;
  let domainId: string;
  let inboundId: string;

  beforeAll(async () => {
    dns = await startDns([
      { type: 'TXT', name: SENDER_DOMAIN, value: 'v=spf1 ip4:127.0.0.1 -all' },
      { type: 'TXT', name: `${SELECTOR}._domainkey.${SENDER_DOMAIN}`, value: `v=DKIM1; k=rsa; p=${publicDer}` },
      { type: 'TXT', name: `_dmarc.${SENDER_DOMAIN}`, value: 'v=DMARC1; p=reject' },
    ]);
    // TLS required: the listeners then offer STARTTLS (with their self-signed certificate) even on loopback,
    // and the message arrives as it would from another MTA, over TLS.
    t = await startSmtpTestApp({ env: { MAILROOM_DNS_SERVERS: dns.server, MAILROOM_SUBMISSION_REQUIRE_TLS: 'true' } });
    domainId = (await inboundDomain(t, INBOUND)).id;

    const reply = await sendRaw(t.mxPort, { from: 'ann@sender.test', to: ['desk@inbound.test', 'bo@inbound.test'] }, await composed());
    expect(reply).toMatch(/^250 2\.0\.0 Ok: queued as in_/);
    inboundId = /queued as (in_\w+)/.exec(reply)![1];
  });

  afterAll(async () => {
    await t?.close();
    await dns?.stop();
  });

  it('stores the parsed message with its envelope and attachments', async () => {
    // Listed from its 250 on; processed soon after.
    const list = await eventually(async () => {
      const r = await t.api.get('/v1/inbound');
      return r.body.data[0]?.status === 'processed' ? r.body : undefined;
    }, 10_000, 'the message to be processed');
    expect(list.data).toHaveLength(1);
    expect(list.data[0]).toMatchObject({
      id: inboundId, status: 'processed', failure_reason: null, domain_id: domainId, subject: 'Quarterly report ✓', attachment_count: 1,
    });

    const { status, body } = await t.api.get(`/v1/inbound/${inboundId}`);
    expect(status).toBe(200);
    expect(body).toMatchObject({
      object: 'inbound_email',
      status: 'processed',
      from: 'Ann Sender <ann@sender.test>',
      to: ['Help Desk <desk@inbound.test>'],
      cc: ['"Lee, Bo" <bo@inbound.test>'],
      reply_to: ['replies@sender.test'],
      message_id: '<q1-report@sender.test>',
      text: 'The numbers are attached.\n',
      html: '<p>The numbers are <b>attached</b>.</p>',
      envelope: { mail_from: 'ann@sender.test', rcpt_to: ['desk@inbound.test', 'bo@inbound.test'] },
      // nodemailer upgrades with STARTTLS when offered; the certificate was made on first start.
      tls: true,
      attachments: [{ index: 0, filename: 'report.csv', content_type: 'text/csv', size: CSV.length, content_id: null, disposition: 'attachment' }],
    });
    const names = body.headers.map((h: { name: string }) => h.name.toLowerCase());
    expect(names.slice(0, 2)).toEqual(['return-path', 'received']);
    expect(body.headers.find((h: { name: string }) => h.name === 'X-Campaign')?.value).toBe('q1');
  });

  it('reports SPF, DKIM and DMARC as checked through the configured resolver', async () => {
    const { body } = await t.api.get(`/v1/inbound/${inboundId}`);
    expect(body.auth.spf).toEqual({ result: 'pass', domain: SENDER_DOMAIN });
    expect(body.auth.dkim).toEqual([{ result: 'pass', domain: SENDER_DOMAIN, selector: SELECTOR, aligned: true }]);
    expect(body.auth.dmarc).toEqual({ result: 'pass', policy: 'reject', domain: SENDER_DOMAIN });
    expect(body.auth.authentication_results).toMatch(/^mx\.mailroom\.test;.*dkim=pass.*spf=pass.*dmarc=pass/);
  });

  it('serves the raw message and the attachment as downloads', async () => {
    const raw = await fetch(`${t.url}/v1/inbound/${inboundId}/raw`, { headers: { Authorization: `Bearer ${t.token}` } });
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toBe('message/rfc822');
    expect(raw.headers.get('content-disposition')).toContain(`filename="${inboundId}.eml"`);
    const text = await raw.text();
    expect(text).toMatch(/^Return-Path: <ann@sender\.test>\r\nReceived: from \S+ \(\[127\.0\.0\.1\]\)\r\n\tby mx\.mailroom\.test with ESMTPS id /);
    expect(text).toContain('DKIM-Signature: ');
    expect(text.replace(/\r\n/g, '')).not.toMatch(/[\r\n]/);

    const file = await fetch(`${t.url}/v1/inbound/${inboundId}/attachments/0`, { headers: { Authorization: `Bearer ${t.token}` } });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(file.headers.get('content-disposition')).toContain('filename="report.csv"');
    expect(file.headers.get('x-content-type-options')).toBe('nosniff');
    expect(Buffer.from(await file.arrayBuffer())).toEqual(CSV);
  });

  it('writes an email.received event for the receiving workspace', async () => {
    const { body } = await t.api.get(`/v1/events?email_id=${inboundId}`);
    expect(body.data).toHaveLength(1);
    expect(body.data[0]).toMatchObject({
      type: 'email.received', email_id: inboundId,
      data: { from: 'Ann Sender <ann@sender.test>', to: ['desk@inbound.test', 'bo@inbound.test'], subject: 'Quarterly report ✓', attachment_count: 1 },
    });
  });

  it('filters the list by recipient, sender, domain and time', async () => {
    const ids = async (query: string) => (await t.api.get(`/v1/inbound?${query}`)).body.data.map((m: { id: string }) => m.id);
    expect(await ids('to=DESK@inbound')).toEqual([inboundId]);
    expect(await ids('to=nobody')).toEqual([]);
    expect(await ids('from=ann@sender')).toEqual([inboundId]);
    expect(await ids('from=mallory')).toEqual([]);
    expect(await ids(`domain_id=${domainId}`)).toEqual([inboundId]);
    expect(await ids('domain_id=dom_other')).toEqual([]);
    expect(await ids('received_after=2000-01-01T00:00:00Z')).toEqual([inboundId]);
    expect(await ids('received_before=2000-01-01T00:00:00Z')).toEqual([]);
    // A literal % is searched for, not taken as a wildcard.
    expect(await ids('to=%25')).toEqual([]);
  });

  it('answers bad requests with the error object', async () => {
    expect((await t.api.get('/v1/inbound?received_after=yesterday')).status).toBe(400);
    expect((await t.api.get('/v1/inbound?limit=0')).status).toBe(400);
    expect((await t.api.get('/v1/inbound?starting_after=forged')).body.error.code).toBe('invalid_cursor');
    expect((await t.api.get('/v1/inbound/in_missing')).status).toBe(404);
    expect((await t.api.get(`/v1/inbound/${inboundId}/attachments/1`)).status).toBe(404);
    expect((await t.api.get(`/v1/inbound/${inboundId}/attachments/first`)).status).toBe(404);
    expect((await t.api.get('/v1/inbound/in_missing/raw')).status).toBe(404);
  });

  it('needs inbound:read, and keeps other workspaces out', async () => {
    const sendOnly = await t.seed.key({ scopes: ['emails:send'] });
    const denied = await t.api.as(sendOnly.token).get('/v1/inbound');
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('forbidden');
    expect((await t.api.as(null).get('/v1/inbound')).status).toBe(401);

    const other = await t.seed.workspace();
    const outsider = t.api.as((await t.seed.key({ workspaceId: other.id })).token);
    expect((await outsider.get('/v1/inbound')).body.data).toEqual([]);
    expect((await outsider.get(`/v1/inbound/${inboundId}`)).status).toBe(404);
    expect((await outsider.get(`/v1/inbound/${inboundId}/raw`)).status).toBe(404);
  });
});
