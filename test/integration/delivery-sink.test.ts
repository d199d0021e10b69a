import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as delay } from 'node:timers/promises';
import { simpleParser } from 'mailparser';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { ManualClock } from '../../src/core/clock.js';
import { sinkMessagesFor } from '../../src/delivery/sink.js';
import { dueRows, enqueue, holdDestination, leaseRows, nextDueAt, type DueRow, type EnqueueInput } from '../../src/delivery/queue.repo.js';
import { outboundEmails } from '../../src/emails/index.js';
import { parseReturnPath } from '../../src/inbound/return-path.js';
import type { Tx } from '../../src/store/db.js';
import { startTestApp, type ApiClient, type TestApp } from '../helpers/app.js';
import { onPostgres } from '../helpers/database.js';
import { useTempStore } from '../helpers/store.js';

// The sink: every message is built, signed and kept, nothing connects out;
// test keys get simulated outcomes by recipient. And the due poller: a
// scheduled email is handed to delivery on time.

const eventTypes = async (api: ApiClient, id: string) =>
  (await api.get(`/v1/emails/${id}/events?limit=100`)).body.data.map((e: { type: string }) => e.type).reverse();

describe('the sink with simulated outcomes', () => {
  const clock = new ManualClock();
  let t: TestApp;
  let testApi: ApiClient;
  let testToken: string;
  beforeAll(async () => {
    t = await startTestApp({ clock });
    testToken = (await t.seed.key({ mode: 'test' })).token;
    testApi = t.api.as(testToken);
  });
  afterAll(() => t.close());

  it('delivers, bounces, delays and complains by local part on mailroom.test', async () => {
    const res = await testApi.post('/v1/emails', {
      from: 'dev@myapp.test', subject: 'Simulate', text: 'x',
      to: ['delivered@mailroom.test', 'bounced+1@mailroom.test', 'delayed@mailroom.test', 'Complained@Mailroom.test', 'someone@real.example'],
    });
    const id = res.body.id;
    await t.mailroom.delivery.drain();
    let email = (await testApi.get(`/v1/emails/${id}`)).body;
    expect(email.status).toBe('sent');
    expect(email.recipients.map((r: { status: string; smtp_code: number }) => [r.status, r.smtp_code])).toEqual([
      ['delivered', 250], ['bounced', 550], ['deferred', 451], ['delivered', 250], ['delivered', 250],
    ]);
    const events = (await testApi.get(`/v1/emails/${id}/events?limit=100`)).body.data;
    const of = (type: string) => events.filter((e: { type: string }) => e.type === type);
    expect(of('email.bounced')[0].data).toMatchObject({
      to: 'bounced+1@mailroom.test', bounce_type: 'hard', bounce_subtype: 'no_mailbox', smtp_code: 550, enhanced_status_code: '5.1.1',
      recommended_action: 'suppress_recipient',
    });
    expect(of('email.delayed')[0].data).toMatchObject({ to: 'delayed@mailroom.test', attempt: 1, smtp_code: 451 });
    expect(of('email.complained')[0].data).toMatchObject({ to: 'Complained@Mailroom.test', feedback_type: 'abuse' });
    expect(of('email.delivered')).toHaveLength(3);

    // The retry comes on the schedule (5 minutes, with jitter).
    const retryAt = Date.parse(of('email.delayed')[0].data.next_attempt_at);
    expect(retryAt - clock.now()).toBeGreaterThanOrEqual(270_000);
    clock.set(retryAt);
    await t.mailroom.delivery.drain();
    email = (await testApi.get(`/v1/emails/${id}`)).body;
    expect(email.status).toBe('delivered');
    expect(email.recipients[2]).toMatchObject({ status: 'delivered', smtp_code: 250 });

    // Simulations never touch the suppression list, so they can be repeated.
    expect((await t.mailroom.services.suppressions.check(t.workspaceId, ['bounced+1@mailroom.test', 'complained@mailroom.test'])).size).toBe(0);
    const kept = await sinkMessagesFor(t.mailroom.services.store.db, id);
    expect(kept.map((m) => m.recipients.length)).toEqual([4, 1, 1]);
  });

  it('serves the source the sink kept, as an .eml download, to the email\'s own workspace only', async () => {
    const res = await testApi.post('/v1/emails', { from: 'Dev <dev@myapp.test>', to: 'delivered@mailroom.test', subject: 'Source, please', text: 'Body text.' });
    const id = res.body.id as string;
    const later = await testApi.post('/v1/emails', { from: 'dev@myapp.test', to: 'delivered@mailroom.test', subject: 'Later', text: 'x', scheduled_at: 'in 1 hour' });
    const early = await testApi.get(`/v1/emails/${later.body.id}/raw`);
    expect(early.status).toBe(404);
    expect(early.body.error.message).toContain('once it is delivered');
    await t.mailroom.delivery.drain();
    const raw = await fetch(`${t.url}/v1/emails/${id}/raw`, { headers: { Authorization: `Bearer ${testToken}` } });
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toBe('message/rfc822');
    expect(raw.headers.get('content-disposition')).toBe(`attachment; filename="${id}.eml"; filename*=UTF-8''${id}.eml`);
    const text = await raw.text();
    expect(text).toMatch(/^Subject: Source, please\r$/m);
    expect(text).toContain('Body text.');
    const other = await t.seed.workspace();
    const stranger = t.api.as((await t.seed.key({ workspaceId: other.id, mode: 'test' })).token);
    expect((await stranger.get(`/v1/emails/${id}/raw`)).status).toBe(404);
    expect((await testApi.get('/v1/emails/em_nope/raw')).status).toBe(404);
  });

  it('fails an email whose every recipient bounces', async () => {
    const res = await testApi.post('/v1/emails', { from: 'dev@myapp.test', to: 'bounced@mailroom.test', subject: 'x', text: 'x' });
    await t.mailroom.delivery.drain();
    expect((await testApi.get(`/v1/emails/${res.body.id}`)).body.status).toBe('failed');
    expect(await eventTypes(testApi, res.body.id)).toEqual(['email.queued', 'email.sent', 'email.bounced']);
  });
});

describe('messages kept by the sink', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('are built with the headers asked for, a return path naming the email, and a DKIM signature that verifies', async () => {
    const domain = await t.seed.activeDomain('acme.test');
    const res = await t.api.post('/v1/emails', {
      from: 'Ann Lee <ann@acme.test>', to: 'Bob <bob@example.org>', cc: 'carol@example.org', bcc: 'secret@example.org',
      reply_to: 'help@acme.test', subject: 'Grüße', html: '<p>Hallo</p>', text: 'Hallo\nWelt',
      headers: { 'X-Campaign': 'fall', 'List-Unsubscribe': '<https://acme.test/u/1>', 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
      attachments: [{ content: Buffer.from('a,b\n1,2\n').toString('base64'), filename: 'data.csv' }],
    });
    const id = res.body.id;
    const deadline = Date.now() + 5000;
    while ((await t.api.get(`/v1/emails/${id}`)).body.status !== 'delivered') {
      if (Date.now() > deadline) throw new Error('not delivered in time');
      await delay(20);
    }
    const [kept] = await sinkMessagesFor(t.mailroom.services.store.db, id);
    expect(kept.recipients).toEqual(['bob@example.org', 'carol@example.org', 'secret@example.org']);
    expect(parseReturnPath(kept.mailFrom)).toEqual({ emailId: id });
    expect(kept.mailFrom.endsWith('@bounces.acme.test')).toBe(true);

    const parsed = await simpleParser(kept.raw);
    expect(parsed.messageId).toBe(`<${id}@acme.test>`);
    expect(parsed.subject).toBe('Grüße');
    expect(parsed.text?.trim()).toBe('Hallo\nWelt');
    expect(parsed.headers.get('bcc')).toBeUndefined();
    expect(parsed.headers.get('x-campaign')).toBe('fall');
    const head = kept.raw.toString('latin1').split('\r\n\r\n')[0];
    expect(head).toContain('\r\nList-Unsubscribe: <https://acme.test/u/1>\r\n');
    expect(head).toContain('\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n');
    expect(parsed.attachments.map((a) => [a.filename, a.contentType, a.content.toString()])).toEqual([['data.csv', 'text/csv', 'a,b\n1,2\n']]);

    // The public key as the domain asks it to be published, served to the verifier.
    const records = new Map(domain.records.filter((r) => r.type === 'TXT').map((r) => [r.name, r.value]));
    const { results } = await dkimVerify(kept.raw, {
      resolver: async (name: string) => {
        const value = records.get(name);
        if (!value) throw Object.assign(new Error('no record'), { code: 'ENOTFOUND' });
        return [[value]];
      },
    });
    expect(results).toEqual([expect.objectContaining({ signingDomain: 'acme.test', status: expect.objectContaining({ result: 'pass' }) })]);
  });
});

describe('the outbound emails port', () => {
  it('builds the message once, with the HTML rewriter of the composition root (tracking), for known domains only', async () => {
    // A long send delay keeps the app's own worker away from these rows.
    await using t = await startTestApp({ env: { MAILROOM_SEND_DELAY: '600' } });
    await t.seed.activeDomain('acme.test');
    const { store, domains, suppressions, keyring } = t.mailroom.services;
    const seen: string[] = [];
    const outbound = outboundEmails({
      store, clock: t.clock, senders: domains.senders(), suppressions, returnPathKey: keyring.returnPathKey,
      rewriteHtml: async ({ emailId, html, domain }) => {
        seen.push(`${emailId} ${domain.name}`);
        return html.replace('</p>', '<img src="https://t.example/o"></p>');
      },
    });
    const testApi = t.api.as((await t.seed.key({ mode: 'test' })).token);
    const known = (await t.api.post('/v1/emails', { from: 'ann@acme.test', to: 'bob@example.org', subject: 'x', html: '<p>Hi</p>' })).body.id;
    const unknown = (await testApi.post('/v1/emails', { from: 'dev@elsewhere.test', to: 'bob@example.org', subject: 'x', html: '<p>Hi</p>' })).body.id;

    const now = Date.now() + 600_000;
    const items = await store.write(async (tx) => {
      const due = await dueRows(tx, { now, limit: 10, skipDomains: [] });
      const claimed = await leaseRows(tx, due.map((r) => r.id), { now, until: now + 60_000, owner: 'test' });
      await outbound.handOff(tx, claimed, now);
      return claimed;
    });
    const loaded = await outbound.load(items);
    const jobs = new Map(items.map((i) => [i.emailId, loaded.get(i.id)]));
    const raw = (emailId: string) => {
      const message = jobs.get(emailId)?.message;
      return message && 'raw' in message ? message.raw.toString('latin1') : '';
    };
    expect(raw(known)).toContain('<p>Hi<img src="https://t.example/o"></p>');
    expect(raw(unknown)).toContain('<p>Hi</p>');
    expect(raw(unknown)).not.toContain('t.example');
    expect(seen).toEqual([`${known} acme.test`]);
    expect((await t.api.get(`/v1/emails/${known}`)).body.status).toBe('sent');
  });
});

describe('scheduled emails', () => {
  it('are handed to delivery within a second of their time', async () => {
    await using t = await startTestApp();
    await t.seed.activeDomain('acme.test');
    const at = new Date(Date.now() + 1500);
    const res = await t.api.post('/v1/emails', { from: 'ann@acme.test', to: 'bob@example.org', subject: 'Later', text: 'x', scheduled_at: at.toISOString() });
    expect(res.body).toMatchObject({ status: 'scheduled', scheduled_at: at.toISOString() });
    const deadline = Date.now() + 5000;
    let email = res.body;
    while (email.status !== 'delivered') {
      if (Date.now() > deadline) throw new Error(`still ${email.status}`);
      await delay(20);
      email = (await t.api.get(`/v1/emails/${res.body.id}`)).body;
    }
    const late = Date.parse(email.sent_at) - at.getTime();
    expect(late).toBeGreaterThanOrEqual(0);
    expect(late).toBeLessThan(1000);
    expect(await eventTypes(t.api, res.body.id)).toEqual(['email.scheduled', 'email.queued', 'email.sent', 'email.delivered']);
  });

  it('wait for their time on a manual clock, and accept the relative forms', async () => {
    const clock = new ManualClock();
    await using t = await startTestApp({ clock });
    await t.seed.activeDomain('acme.test');
    const res = await t.api.post('/v1/emails', { from: 'ann@acme.test', to: 'bob@example.org', subject: 'Later', text: 'x', scheduled_at: 'in 1 hour' });
    expect(res.body.scheduled_at).toBe(new Date(clock.now() + 3600_000).toISOString());
    clock.advance(3600_000 - 1);
    expect(await t.mailroom.services.emails.promoteDue()).toBe(0);
    await t.mailroom.delivery.drain();
    expect((await t.api.get(`/v1/emails/${res.body.id}`)).body.status).toBe('scheduled');
    clock.advance(1);
    // The scheduler's own poll, on a real timer, may promote it first: either way it is promoted once.
    expect(await t.mailroom.services.emails.promoteDue()).toBeLessThanOrEqual(1);
    await t.mailroom.delivery.drain();
    expect((await t.api.get(`/v1/emails/${res.body.id}`)).body.status).toBe('delivered');
    expect(await eventTypes(t.api, res.body.id)).toEqual(['email.scheduled', 'email.queued', 'email.sent', 'email.delivered']);
  });
});

describe('the claim\'s choice of due rows', () => {
  const temp = useTempStore();
  const T = 1_000_000;
  /** `count` emails of `ws` to `domain`, the first due at `dueAt` and each a millisecond after the one before. */
  const queued = (ws: string, domain: string, count: number, dueAt: number): EnqueueInput[] => Array.from({ length: count }, (_, i) => ({
    workspaceId: ws, emailId: `${ws}-${domain}-${i}`, domains: [domain], dueAt: dueAt + i, lifetimeMs: 86_400_000, now: T,
  }));
  const queue = (...emails: EnqueueInput[][]) => temp.store.write((tx) => enqueue(tx, emails.flat()));
  const due = (c: { now: number; limit: number; enough?: number; perDestination?: number; skipDomains?: string[] }) =>
    temp.store.write((tx) => dueRows(tx, { skipDomains: [], ...c }));
  const names = (rows: Array<{ domain: string }>) => rows.map((r) => r.domain);

  it('takes the earliest due rows from the head of the queue, whoever they go to, while the head is not all left out', async () => {
    await queue(queued('ws1', 'big.test', 200, T), queued('ws1', 'late.test', 3, T + 500), queued('ws1', 'soon.test', 2, T + 300),
      queued('ws1', 'future.test', 5, T + 60_000));
    expect(names(await due({ now: T + 1000, limit: 10, perDestination: 4 }))).toEqual(Array(10).fill('big.test'));
    // A head the claim leaves out all of walks the queue by destination, earliest due first.
    expect(names(await due({ now: T + 1000, limit: 10, skipDomains: ['big.test'] })))
      .toEqual(['soon.test', 'soon.test', 'late.test', 'late.test', 'late.test']);
  });

  it('walking by destination, takes at most perDestination of each and keeps the destinations due soonest', async () => {
    // The skipped backlog fills the head (16 times the limit), so the claim walks by destination.
    await queue(queued('ws1', 'skipped.test', 200, T - 500), queued('ws1', 'big.test', 200, T), queued('ws1', 'late.test', 3, T + 500),
      queued('ws1', 'soon.test', 2, T + 300), queued('ws1', 'future.test', 5, T + 60_000));
    const rows = await due({ now: T + 1000, limit: 10, perDestination: 4, skipDomains: ['skipped.test'] });
    expect(names(rows)).toEqual([...Array(4).fill('big.test'), 'soon.test', 'soon.test', 'late.test', 'late.test', 'late.test']);
    // The limit keeps the earliest destinations: a destination due later waits for the next claim.
    expect(names(await due({ now: T + 1000, limit: 5, perDestination: 4, skipDomains: ['skipped.test'] })))
      .toEqual([...Array(4).fill('big.test'), 'soon.test']);
  });

  it('tells when the next row falls due: none with nothing queued, none with every row left out, else the earliest open one', async () => {
    expect(await nextDueAt(temp.store.db)).toBeUndefined();
    await queue(queued('ws1', 'skipped.test', 3, T - 500), queued('ws1', 'later.test', 2, T + 300));
    expect(await nextDueAt(temp.store.db, ['skipped.test', 'later.test'])).toBeUndefined();
    expect(await nextDueAt(temp.store.db, ['skipped.test'])).toBe(T + 300);
    expect(await nextDueAt(temp.store.db)).toBe(T - 500);
  });

  it('counts one workspace\'s mail to a domain as a destination of its own', async () => {
    await queue(queued('ws1', 'skipped.test', 400, T - 500), queued('ws3', 'aa.test', 1, T + 300), queued('ws1', 'shared.test', 10, T),
      queued('ws2', 'shared.test', 10, T + 100), queued('ws3', 'shared.test', 1, T + 200), queued('ws2', 'zz.test', 2, T + 400));
    const rows = await due({ now: T + 1000, limit: 20, perDestination: 3, skipDomains: ['skipped.test'] });
    expect(names(rows)).toEqual([...Array(7).fill('shared.test'), 'aa.test', 'zz.test', 'zz.test']);
    expect(names(await due({ now: T + 1000, limit: 20, perDestination: 3, skipDomains: ['skipped.test', 'shared.test'] })))
      .toEqual(['aa.test', 'zz.test', 'zz.test']);
    expect(await nextDueAt(temp.store.db, ['skipped.test', 'shared.test', 'aa.test'])).toBe(T + 400);
  });

  it('serves a claim from the head when it holds enough open rows, and walks when it holds fewer', async () => {
    // The head a claim of 8 reads (128 rows): 126 left out, 2 open; open rows of another destination beyond it.
    await queue(queued('ws1', 'skipped.test', 126, T - 500), queued('ws1', 'open.test', 2, T + 100), queued('ws1', 'beyond.test', 4, T + 200));
    expect(names(await due({ now: T + 1000, limit: 8, enough: 2, skipDomains: ['skipped.test'] }))).toEqual(['open.test', 'open.test']);
    expect(names(await due({ now: T + 1000, limit: 8, enough: 3, skipDomains: ['skipped.test'] })))
      .toEqual(['open.test', 'open.test', ...Array(4).fill('beyond.test')]);
  });

  it('leaves out skipped domains, held destinations and leased rows, whatever their backlog, and rows not due yet', async () => {
    await queue(queued('ws1', 'busy.test', 3000, T), queued('ws2', 'held.test', 3000, T), queued('ws1', 'held.test', 2, T + 2000),
      queued('ws1', 'open.test', 3, T + 1000), queued('ws1', 'future.test', 1, T + 60_000));
    await temp.store.write((tx) => holdDestination(tx, 'ws2', 'held.test', T));
    const now = T + 10_000;
    const [leased] = await temp.store.write(async (tx: Tx) => {
      const [first] = await dueRows(tx, { now, limit: 1, skipDomains: ['busy.test', 'held.test'] });
      return leaseRows(tx, [first.id], { now, until: now + 60_000, owner: 'other' });
    });
    expect(leased.domain).toBe('open.test');

    const rows = await due({ now, limit: 50, perDestination: 20, skipDomains: ['busy.test'] });
    expect(names(rows)).toEqual(['open.test', 'open.test', 'held.test', 'held.test']);
    expect(rows.map((r) => r.id)).not.toContain(leased.id);
    expect(names(await due({ now, limit: 50, skipDomains: ['busy.test', 'open.test', 'held.test'] }))).toEqual([]);
    // Nothing is due before now but what is left out.
    expect(await nextDueAt(temp.store.db, ['busy.test', 'open.test', 'held.test'])).toBe(T + 60_000);
    expect(await nextDueAt(temp.store.db, ['busy.test'])).toBe(T + 1001);
    expect(await nextDueAt(temp.store.db, [])).toBe(T);
  });

  it('finds nothing due, and no next time, in an empty queue', async () => {
    expect(await due({ now: T, limit: 10 })).toEqual([]);
    expect(await nextDueAt(temp.store.db, ['a.test'])).toBeUndefined();
  });

  /** A claim whose transaction stays open with its rows locked while `second` claims; returns both claims' rows. */
  async function claimBesideAnother(first: Parameters<typeof dueRows>[1], second: Parameters<typeof dueRows>[1]) {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: (rows: DueRow[]) => void;
    const lockedRows = new Promise<DueRow[]>((resolve) => (locked = resolve));
    const open = temp.store.db.transaction().execute(async (tx) => {
      locked(await dueRows(tx, first));
      await released;
    });
    const taken = await lockedRows;
    const got = await temp.store.write((tx) => dueRows(tx, second));
    release();
    await open;
    return { taken, got };
  }

  it.runIf(onPostgres)('passes over rows another claim has locked, in the head of the queue', async () => {
    await queue(queued('ws1', 'busy.test', 10, T), queued('ws1', 'other.test', 2, T + 100));
    const now = T + 1000;
    const { taken, got } = await claimBesideAnother({ now, limit: 5, skipDomains: [] }, { now, limit: 10, skipDomains: [] });
    expect(taken).toHaveLength(5);
    expect(got.map((r) => r.id).filter((id) => taken.some((t) => t.id === id))).toEqual([]);
    expect(names(got)).toEqual([...Array(5).fill('busy.test'), 'other.test', 'other.test']);
  });

  it.runIf(onPostgres)('passes over rows another claim has locked when walking by destination, and takes the destination\'s next ones', async () => {
    await queue(queued('ws1', 'skipped.test', 200, T - 500), queued('ws1', 'busy.test', 10, T), queued('ws1', 'other.test', 2, T + 100));
    const now = T + 1000;
    const claim = (limit: number) => ({ now, limit, perDestination: 3, skipDomains: ['skipped.test'] });
    const { taken, got } = await claimBesideAnother(claim(5), claim(10));
    expect(names(taken)).toEqual(['busy.test', 'busy.test', 'busy.test', 'other.test', 'other.test']);
    expect(got.map((r) => r.id).filter((id) => taken.some((t) => t.id === id))).toEqual([]);
    expect(names(got)).toEqual(['busy.test', 'busy.test', 'busy.test']);
  });
});
