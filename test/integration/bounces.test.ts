import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { returnPathFor } from '../../src/inbound/return-path.js';
import { eventually, sendRaw, startSmtpTestApp, type SmtpTestApp } from '../helpers/smtp-app.js';

// Bounces and complaints that come back to the return path of a sent email:
// the fixtures are delivered to the MX listener at the address the email was
// sent from, and become bounced and complained events and suppressions.

const DOMAIN = 'example.test';
const RETURN_PATH_DOMAIN = `bounces.${DOMAIN}`;
const fixture = (name: string) => readFileSync(new URL(`../fixtures/${name}`, import.meta.url));

describe('bounces and complaints', () => {
  let t: SmtpTestApp;

  beforeAll(async () => {
    t = await startSmtpTestApp();
    await t.seed.activeDomain(DOMAIN);
  });

  afterAll(async () => {
    await t?.close();
  });

  async function send(to: string[]): Promise<string> {
    const { status, body } = await t.api.post('/v1/emails', { from: `Ann <ann@${DOMAIN}>`, to, subject: 'Welcome', text: 'Hello!' });
    expect(status).toBe(201);
    return body.id;
  }

  /** Delivers a report to a return path the way a remote MTA does: null sender, to the return path. */
  async function report(returnPath: string, file: string): Promise<string> {
    const reply = await sendRaw(t.mxPort, { from: '', to: [returnPath] }, fixture(file));
    expect(reply).toMatch(/^250 /);
    return /queued as (in_\w+)/.exec(reply)![1];
  }

  const eventsOf = async (emailId: string, type: string) =>
    (await t.api.get(`/v1/emails/${emailId}/events`)).body.data.filter((e: { type: string }) => e.type === type);

  async function processed(inboundId: string): Promise<string> {
    const db = t.mailroom.services.store.db;
    return eventually(async () => {
      const row = await db.selectFrom('inbound_messages').select(['status', 'detail']).where('id', '=', inboundId).executeTakeFirst();
      return row?.status === 'ready' ? row.detail ?? '' : undefined;
    }, 10_000, `report ${inboundId} to be processed`);
  }

  const suppression = async (email: string) => (await t.api.get(`/v1/suppressions?email=${encodeURIComponent(email)}`)).body.data[0];

  it('turns a DSN for a single-recipient email into a hard bounce and a suppression', async () => {
    const id = await send(['nobody@remote.test']);
    await processed(await report(returnPathFor(id, 'nobody@remote.test', RETURN_PATH_DOMAIN), 'dsn-postfix-user-unknown.eml'));
    const [bounced] = await eventsOf(id, 'email.bounced');
    expect(bounced.data).toEqual({
      to: 'nobody@remote.test', from: `Ann <ann@${DOMAIN}>`, subject: 'Welcome',
      bounce_type: 'hard', bounce_subtype: 'no_mailbox', recommended_action: 'suppress_recipient',
      smtp_code: 550, enhanced_status_code: '5.1.1', provider: 'unknown',
      original_error: '550 5.1.1 <nobody@remote.test>: Recipient address rejected: User unknown in local recipient table',
    });
    expect(await suppression('nobody@remote.test')).toMatchObject({ email: 'nobody@remote.test', reason: 'hard_bounce' });
    // The recipient's own outcome follows the report.
    expect((await t.api.get(`/v1/emails/${id}`)).body.recipients).toEqual([expect.objectContaining({
      email: 'nobody@remote.test', status: 'bounced', smtp_code: 550,
      detail: '550 5.1.1 <nobody@remote.test>: Recipient address rejected: User unknown in local recipient table',
    })]);
    // A report is not mail for the inbound API.
    expect((await t.api.get('/v1/inbound')).body.data).toEqual([]);
  });

  it('matches the failed recipient of a shared return path by the report\'s own fields', async () => {
    const id = await send(['ghost@gmail.test', 'friend@gmail.test']);
    const detail = await processed(await report(returnPathFor(id, null, RETURN_PATH_DOMAIN), 'dsn-gmail-no-such-user.eml'));
    expect(detail).toBe(`${id}: bounced ghost@gmail.test`);
    const bounced = await eventsOf(id, 'email.bounced');
    expect(bounced.map((e: { data: { to: string; provider: string } }) => [e.data.to, e.data.provider])).toEqual([['ghost@gmail.test', 'Google']]);
    expect(await suppression('ghost@gmail.test')).toMatchObject({ reason: 'hard_bounce' });
    expect(await suppression('friend@gmail.test')).toBeUndefined();
    const statuses = (await t.api.get(`/v1/emails/${id}`)).body.recipients.map((r: { email: string; status: string }) => [r.email, r.status]);
    expect(statuses).toContainEqual(['ghost@gmail.test', 'bounced']);
    expect(statuses.find(([email]: string[]) => email === 'friend@gmail.test')[1]).not.toBe('bounced');
  });

  it('records a soft bounce without suppressing the address', async () => {
    const id = await send(['full@outlook.test']);
    await processed(await report(returnPathFor(id, 'full@outlook.test', RETURN_PATH_DOMAIN), 'dsn-exchange-mailbox-full.eml'));
    const [bounced] = await eventsOf(id, 'email.bounced');
    expect(bounced.data).toMatchObject({ to: 'full@outlook.test', bounce_type: 'soft', bounce_subtype: 'mailbox_full', provider: 'Microsoft' });
    expect(await suppression('full@outlook.test')).toBeUndefined();
  });

  it('writes nothing for a delay warning', async () => {
    const id = await send(['slow@remote.test']);
    const detail = await processed(await report(returnPathFor(id, 'slow@remote.test', RETURN_PATH_DOMAIN), 'dsn-delayed.eml'));
    expect(detail).toBe(`${id}: no failed recipient of this email in the report`);
    expect(await eventsOf(id, 'email.bounced')).toEqual([]);
  });

  it('turns an ARF report into a complaint and a suppression', async () => {
    const id = await send(['reader@yahoo.test']);
    const detail = await processed(await report(returnPathFor(id, null, RETURN_PATH_DOMAIN), 'arf-abuse.eml'));
    expect(detail).toBe(`${id}: complaint (abuse, Yahoo!-Mail-Feedback/2.0) from reader@yahoo.test`);
    const [complained] = await eventsOf(id, 'email.complained');
    expect(complained.data).toEqual({ to: 'reader@yahoo.test', from: `Ann <ann@${DOMAIN}>`, subject: 'Welcome', feedback_type: 'abuse', provider: 'Yahoo' });
    expect(await suppression('reader@yahoo.test')).toMatchObject({ reason: 'complaint' });
  });

  it('finds the recipient of a redacted complaint through the return path', async () => {
    const id = await send(['first@hotmail.test', 'second@hotmail.test']);
    await processed(await report(returnPathFor(id, 'second@hotmail.test', RETURN_PATH_DOMAIN), 'arf-redacted.eml'));
    const complained = await eventsOf(id, 'email.complained');
    expect(complained.map((e: { data: { to: string; provider: string } }) => [e.data.to, e.data.provider])).toEqual([['second@hotmail.test', 'Microsoft']]);
    expect(await suppression('second@hotmail.test')).toMatchObject({ reason: 'complaint' });
    expect(await suppression('first@hotmail.test')).toBeUndefined();
  });

  it('ignores reports about emails of other workspaces, and mail that is no report', async () => {
    const other = await t.seed.workspace();
    const otherDomain = await t.seed.activeDomain('other.test', { workspaceId: other.id });
    expect(otherDomain.name).toBe('other.test');
    const id = await send(['stranger@remote.test']);
    // The return path of the other workspace's domain, naming this workspace's email.
    const detail = await processed(await report(returnPathFor(id, 'stranger@remote.test', 'bounces.other.test'), 'dsn-postfix-user-unknown.eml'));
    expect(detail).toBe(`${id}: no such email in this workspace`);
    expect(await eventsOf(id, 'email.bounced')).toEqual([]);

    const autoReply = await sendRaw(t.mxPort, { from: 'reader@remote.test', to: [returnPathFor(id, null, RETURN_PATH_DOMAIN)] },
      'From: reader@remote.test\r\nSubject: Out of office\r\nAuto-Submitted: auto-replied\r\n\r\nAway until Monday.\r\n');
    const inboundId = /queued as (in_\w+)/.exec(autoReply)![1];
    expect(await processed(inboundId)).toBe('not a delivery status or feedback report: nothing recorded');
  });
});
