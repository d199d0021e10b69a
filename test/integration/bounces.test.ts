import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Migrator } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { legacyRecipientTag, recipientTag, returnPathFor } from '../../src/inbound/return-path.js';
import { migrations } from '../../src/store/migrations/index.js';
import { failureReport } from '../helpers/dsn.js';
import { eventually, sendRaw, startSmtpTestApp, type SmtpTestApp } from '../helpers/smtp-app.js';

// Bounces and complaints that come back to the return path of a sent email:
// the fixtures are delivered to the MX listener at the address the email was
// sent from, and become bounced and complained events and suppressions.

const DOMAIN = 'example.test';
const RETURN_PATH_DOMAIN = `bounces.${DOMAIN}`;
const fixture = (name: string) => readFileSync(new URL(`../fixtures/${name}`, import.meta.url));

/** A DSN saying that mail to `recipient` could not be delivered: 550 5.1.1, no such user. */
const userUnknown = (recipient: string) => failureReport({
  mta: 'mx.remote.test', recipient, diagnostic: `550 5.1.1 <${recipient}>: Recipient address rejected: User unknown`,
});

/** The return path of an email id with any tag at all, as anyone who saw the id can write it. */
const withTag = (emailId: string, tag: string, domain = RETURN_PATH_DOMAIN) => `b-${emailId.slice(3)}-${tag}@${domain}`;

/** What the listener answers to a report for a return path: its last reply, or the refusal. */
const attempt = (port: number, to: string, raw: string | Buffer) =>
  sendRaw(port, { from: '', to: [to] }, raw).catch((err: { response?: string }) => err.response ?? String(err));

describe('bounces and complaints', () => {
  let t: SmtpTestApp;

  beforeAll(async () => {
    t = await startSmtpTestApp();
    await t.seed.activeDomain(DOMAIN);
  });

  afterAll(async () => {
    await t?.close();
  });

  const returnPath = (emailId: string, recipient: string | null, domain = RETURN_PATH_DOMAIN) =>
    returnPathFor(t.mailroom.services.keyring.returnPathKey, emailId, recipient, domain);

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
    await processed(await report(returnPath(id, 'nobody@remote.test'), 'dsn-postfix-user-unknown.eml'));
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
    const detail = await processed(await report(returnPath(id, null), 'dsn-gmail-no-such-user.eml'));
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
    await processed(await report(returnPath(id, 'full@outlook.test'), 'dsn-exchange-mailbox-full.eml'));
    const [bounced] = await eventsOf(id, 'email.bounced');
    expect(bounced.data).toMatchObject({ to: 'full@outlook.test', bounce_type: 'soft', bounce_subtype: 'mailbox_full', provider: 'Microsoft' });
    expect(await suppression('full@outlook.test')).toBeUndefined();
  });

  it('writes nothing for a delay warning', async () => {
    const id = await send(['slow@remote.test']);
    const detail = await processed(await report(returnPath(id, 'slow@remote.test'), 'dsn-delayed.eml'));
    expect(detail).toBe(`${id}: no failed recipient of this email in the report`);
    expect(await eventsOf(id, 'email.bounced')).toEqual([]);
  });

  it('turns an ARF report into a complaint and a suppression', async () => {
    const id = await send(['reader@yahoo.test']);
    // The email went to its one recipient under the tagged return path: a report to the untagged one is not from its MX.
    expect(await processed(await report(returnPath(id, null), 'arf-abuse.eml'))).toBe(`${id}: complaint names none of the email's recipients`);
    expect(await eventsOf(id, 'email.complained')).toEqual([]);
    const detail = await processed(await report(returnPath(id, 'reader@yahoo.test'), 'arf-abuse.eml'));
    expect(detail).toBe(`${id}: complaint (abuse, Yahoo!-Mail-Feedback/2.0) from reader@yahoo.test`);
    const [complained] = await eventsOf(id, 'email.complained');
    expect(complained.data).toEqual({ to: 'reader@yahoo.test', from: `Ann <ann@${DOMAIN}>`, subject: 'Welcome', feedback_type: 'abuse', provider: 'Yahoo' });
    expect(await suppression('reader@yahoo.test')).toMatchObject({ reason: 'complaint' });
  });

  it('finds the recipient of a redacted complaint through the return path', async () => {
    const id = await send(['first@hotmail.test', 'second@hotmail.test']);
    await processed(await report(returnPath(id, 'second@hotmail.test'), 'arf-redacted.eml'));
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
    // The return paths of the other workspace's domain, naming this workspace's email: the tagged one
    // is refused outright (its tag names no recipient of an email there), the untagged one leads nowhere.
    expect(await attempt(t.mxPort, returnPath(id, 'stranger@remote.test', 'bounces.other.test'), fixture('dsn-postfix-user-unknown.eml')))
      .toMatch(/^550 5\.1\.1 /);
    const detail = await processed(await report(returnPath(id, null, 'bounces.other.test'), 'dsn-postfix-user-unknown.eml'));
    expect(detail).toBe(`${id}: no such email in this workspace`);
    expect(await eventsOf(id, 'email.bounced')).toEqual([]);

    const autoReply = await sendRaw(t.mxPort, { from: 'reader@remote.test', to: [returnPath(id, null)] },
      'From: reader@remote.test\r\nSubject: Out of office\r\nAuto-Submitted: auto-replied\r\n\r\nAway until Monday.\r\n');
    const inboundId = /queued as (in_\w+)/.exec(autoReply)![1];
    expect(await processed(inboundId)).toBe('not a delivery status or feedback report: nothing recorded');
  });

  it('refuses a bounce that one recipient makes up for another, and takes the real one', async () => {
    // Two destinations: each recipient gets the message under its own tagged return path, and sees the email id.
    const id = await send(['victim@gmail.test', 'mallory@yahoo.test']);
    const forged = userUnknown('victim@gmail.test');
    // The unkeyed tag of the victim's address, as tags were once made; a tag of the victim under another key; any tag.
    for (const tag of [legacyRecipientTag('victim@gmail.test'), recipientTag(randomBytes(32), id, 'victim@gmail.test'), '0'.repeat(13)]) {
      expect(await attempt(t.mxPort, withTag(id, tag), forged), tag).toMatch(/^550 5\.1\.1 /);
    }
    // Case folded by a relay changes nothing.
    expect(await attempt(t.mxPort, withTag(id, legacyRecipientTag('victim@gmail.test')).toUpperCase(), forged)).toMatch(/^550 5\.1\.1 /);
    // The untagged return path only speaks for recipients that shared a transaction: the victim had its own.
    expect(await processed(await report(returnPath(id, null), 'dsn-gmail-no-such-user.eml'))).toBe(`${id}: no failed recipient of this email in the report`);
    const viaUntagged = /queued as (in_\w+)/.exec(await attempt(t.mxPort, returnPath(id, null), forged))![1];
    expect(await processed(viaUntagged)).toBe(`${id}: no failed recipient of this email in the report`);
    // Mallory's own return path settles the recipient as Mallory, whatever the report names.
    expect(await processed(/queued as (in_\w+)/.exec(await attempt(t.mxPort, returnPath(id, 'mallory@yahoo.test'), forged))![1]))
      .toBe(`${id}: bounced mallory@yahoo.test`);
    expect((await eventsOf(id, 'email.bounced')).map((e: { data: { to: string } }) => e.data.to)).toEqual(['mallory@yahoo.test']);
    expect(await suppression('victim@gmail.test')).toBeUndefined();

    // The victim's real return path, upper-cased by a relay on the way, still brings its bounce home.
    const real = /queued as (in_\w+)/.exec(await attempt(t.mxPort, returnPath(id, 'victim@gmail.test').toUpperCase(), forged))![1];
    expect(await processed(real)).toBe(`${id}: bounced victim@gmail.test`);
    expect(await suppression('victim@gmail.test')).toMatchObject({ reason: 'hard_bounce' });
  });
});

describe('return paths of emails sent before their recipient tags were keyed', () => {
  let t: SmtpTestApp;

  beforeAll(async () => {
    t = await startSmtpTestApp();
    await t.seed.activeDomain(DOMAIN);
  });

  afterAll(async () => {
    await t?.close();
  });

  const send = async (to: string) => (await t.api.post('/v1/emails', { from: `ann@${DOMAIN}`, to, subject: 'Hi', text: 'Hello!' })).body.id as string;
  const bounced = async (emailId: string) => (await t.api.get(`/v1/emails/${emailId}/events`)).body.data
    .filter((e: { type: string }) => e.type === 'email.bounced').map((e: { data: { to: string } }) => e.data.to);
  const suppressed = async (address: string) => (await t.api.get(`/v1/suppressions?email=${encodeURIComponent(address)}`)).body.data.length > 0;

  it('still take the legacy tag of an email from before the upgrade, and of no later one', async () => {
    const before = await send('old@remote.test');
    // The upgrade: the store is taken back before keyed tags and brought forward again, with this email in it.
    const migrator = new Migrator({ db: t.mailroom.services.store.db, provider: { getMigrations: async () => migrations } });
    expect((await migrator.migrateTo('0037_broadcast_skips')).error).toBeUndefined();
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    // Emails from now on are newer than it (their creation times are this clock's).
    const olderCreatedAt = Date.parse((await t.api.get(`/v1/emails/${before}`)).body.created_at);
    await eventually(async () => (t.clock.now() > olderCreatedAt ? true : undefined), 1_000, 'the clock to pass the older email');
    const after = await send('new@remote.test');

    // A legacy tag of the newer email is no return path of ours, just as a made-up address is not.
    expect(await attempt(t.mxPort, withTag(after, legacyRecipientTag('new@remote.test')), userUnknown('new@remote.test'))).toMatch(/^550 5\.1\.1 /);
    expect(await bounced(after)).toEqual([]);
    expect(await suppressed('new@remote.test')).toBe(false);

    // The older email's legacy return path, as the relay saw it when it was sent: its bounce counts.
    const reply = await attempt(t.mxPort, withTag(before, legacyRecipientTag('old@remote.test')).toUpperCase(), userUnknown('old@remote.test'));
    expect(reply).toMatch(/^250 /);
    await eventually(async () => ((await bounced(before)).length > 0 ? true : undefined), 10_000, 'the legacy bounce to be recorded');
    expect(await bounced(before)).toEqual(['old@remote.test']);
    expect(await suppressed('old@remote.test')).toBe(true);
    // The keyed return path serves the older email as well (a retry after the upgrade is sent under it).
    expect(await attempt(t.mxPort, returnPathFor(t.mailroom.services.keyring.returnPathKey, before, 'old@remote.test', RETURN_PATH_DOMAIN),
      userUnknown('old@remote.test'))).toMatch(/^250 /);
  });
});
