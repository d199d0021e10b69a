import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDns, type TestDns } from '../helpers/dns.js';
import { eventually, inboundDomain, sendRaw, startSmtpTestApp, type SmtpTestApp } from '../helpers/smtp-app.js';

// Replies linked to what was sent: a received message whose In-Reply-To or
// References names the Message-ID of an email sent from the same workspace
// names that email, the email's timeline gains email.replied, and the reply
// counts as the replier's engagement. Made-up and foreign ids link nothing.

const DOMAIN = 'shop.test';

describe('replies to sent email', () => {
  let dns: TestDns;
  let t: SmtpTestApp;

  beforeAll(async () => {
    dns = await startDns([]);
    t = await startSmtpTestApp({ env: { MAILROOM_DNS_SERVERS: dns.server } });
    await inboundDomain(t, DOMAIN);
  });
  afterAll(async () => {
    await t?.close();
    await dns?.stop();
  });

  const sendEmail = async (api = t.api, from = `orders@${DOMAIN}`) => {
    const res = await api.post('/v1/emails', { from, to: 'Kim <kim@customer.test>', subject: 'Your order', text: 'Shipped.' });
    expect(res.status).toBe(201);
    return res.body as { id: string; message_id: string };
  };

  /** Kim's answer, threaded to `inReplyTo` and `references`, received on the MX listener; resolves with its inbound record once processed. */
  async function reply(headers: { inReplyTo?: string; references?: string[] }, subject = 'Re: Your order') {
    const raw = await new MailComposer({
      from: 'Kim <kim@customer.test>', to: `orders@${DOMAIN}`, subject, text: 'Thanks!',
      ...(headers.inReplyTo && { inReplyTo: headers.inReplyTo }), ...(headers.references && { references: headers.references }),
    }).compile().build();
    await sendRaw(t.mxPort, { from: 'kim@customer.test', to: [`orders@${DOMAIN}`] }, raw);
    return eventually(async () => {
      const list = (await t.api.get(`/v1/inbound?limit=1`)).body.data;
      return list[0]?.subject === subject && list[0].status === 'processed' ? list[0] : undefined;
    }, 10_000, 'the reply to be processed');
  }

  const eventTypes = async (emailId: string, api = t.api) =>
    (await api.get(`/v1/emails/${emailId}/events?limit=100`)).body.data.map((e: { type: string }) => e.type);

  it('links a reply by In-Reply-To, adds email.replied to the email, and lists the replies of one email', async () => {
    const sent = await sendEmail();
    const received = await reply({ inReplyTo: sent.message_id }, 'Re: Your order (1)');
    expect(received.in_reply_to_email_id).toBe(sent.id);
    expect((await t.api.get(`/v1/inbound/${received.id}`)).body.in_reply_to_email_id).toBe(sent.id);

    const events = (await t.api.get(`/v1/emails/${sent.id}/events?limit=100`)).body.data;
    const replied = events.find((e: { type: string }) => e.type === 'email.replied');
    expect(replied.data).toEqual({
      to: 'kim@customer.test', from: `orders@${DOMAIN}`, subject: 'Your order',
      reply_from: 'Kim <kim@customer.test>', reply_subject: 'Re: Your order (1)', inbound_id: received.id,
    });

    const other = await sendEmail();
    // A mail client threading a longer conversation: References, nearest last.
    const second = await reply({ references: ['<unrelated@elsewhere.test>', sent.message_id, other.message_id] }, 'Re: Your order (2)');
    expect(second.in_reply_to_email_id).toBe(other.id);

    const replies = (await t.api.get(`/v1/inbound?in_reply_to_email_id=${sent.id}`)).body.data;
    expect(replies.map((r: { id: string }) => r.id)).toEqual([received.id]);
    expect(await eventTypes(other.id)).toContain('email.replied');
  });

  it('counts a reply as engagement for the replier\'s contact', async () => {
    const contact = (await t.api.post('/v1/contacts', { email: 'kim@customer.test' })).body;
    const sent = await sendEmail();
    await reply({ inReplyTo: sent.message_id }, 'Re: engagement');
    const tier = await eventually(async () => {
      await t.mailroom.services.contacts.foldEvents();
      const now = (await t.api.get(`/v1/contacts/${contact.id}`)).body.engagement_tier;
      return now === 'engaged' ? now : undefined;
    }, 10_000, 'the contact to be engaged');
    expect(tier).toBe('engaged');
  });

  it('links nothing for a made-up id, an id of another workspace, or a mangled id of ours', async () => {
    const sent = await sendEmail();
    const other = await t.seed.workspace();
    const { token } = await t.seed.key({ workspaceId: other.id });
    await t.seed.activeDomain('other.test', { workspaceId: other.id });
    const foreign = await sendEmail(t.api.as(token), 'news@other.test');

    const forged = `<${sent.id}@evil.test>`;
    for (const [inReplyTo, subject] of [
      ['<em_00000000000000000000000000@shop.test>', 'Re: made up'],
      [foreign.message_id, 'Re: foreign'],
      [forged, 'Re: forged domain'],
    ] as const) {
      const received = await reply({ inReplyTo }, subject);
      expect(received.in_reply_to_email_id).toBeNull();
    }
    expect(await eventTypes(sent.id)).not.toContain('email.replied');
    expect(await eventTypes(foreign.id, t.api.as(token))).not.toContain('email.replied');
    // The other workspace cannot list our replies, nor we its.
    expect((await t.api.as(token).get(`/v1/inbound?in_reply_to_email_id=${sent.id}`)).body.data).toEqual([]);
  });

  it('looks at the nearest 50 ids of a long thread: a sent email named nearer is linked, one named further back is not', async () => {
    const sent = await sendEmail();
    // References run oldest first; the nearest id is the last.
    const forged = (n: number) => Array.from({ length: n }, (_, i) => `<em_${String(i).padStart(26, '0')}@${DOMAIN}>`);
    const near = await reply({ references: [sent.message_id, ...forged(49)] }, 'Re: long thread (near)');
    expect(near.in_reply_to_email_id).toBe(sent.id);
    const far = await reply({ references: [sent.message_id, ...forged(50)] }, 'Re: long thread (far)');
    expect(far.in_reply_to_email_id).toBeNull();
  });
});
