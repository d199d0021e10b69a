import { sql, type Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { Db } from '../../src/store/db.js';
import type { RecipientStatus } from '../../src/emails/emails.tables.js';
import { listRecipients, markSent } from '../../src/emails/emails.repo.js';
import { recordRecipientOutcomes } from '../../src/emails/outcomes.js';
import type { Services } from '../../src/main.js';
import { appendEvents } from '../../src/events/index.js';
import * as statsMigration from '../../src/store/migrations/0027_broadcast_stats.js';
import * as recipientBroadcastMigration from '../../src/store/migrations/0031_recipient_broadcast.js';
import * as unsubscribeRaceMigration from '../../src/store/migrations/0035_unsubscribe_race.js';
import * as slotsMigration from '../../src/store/migrations/0036_broadcast_stats_slots.js';
import * as skipsMigration from '../../src/store/migrations/0037_broadcast_skips.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { onPostgres } from '../helpers/database.js';
import { openTwoNodes, type TwoNodes } from '../helpers/nodes.js';
import { eventually } from '../helpers/smtp-app.js';

// A broadcast's stats are counters the database keeps as its emails change.
// Each step below moves the broadcast's emails one way (an outcome at SMTP
// time, a bounce report after delivery, a failure, a suppression at send
// time, opens and clicks, a complaint, a contact unsubscribing, coming back
// and unsubscribing again, a cancel) and checks the counters against the
// scan of the emails they replace; the migration's own count of existing
// broadcasts is checked the same way.

const DOMAIN = 'news.test';
const FROM = `Acme News <hello@${DOMAIN}>`;

/** The stats as counted from the broadcast's emails on every read, before they were kept. */
async function scannedCounts(db: Db, ws: string, broadcastId: string) {
  const count = (status: RecipientStatus) => sql<number>`sum(case when r.status = ${status} then 1 else 0 end)`;
  const outcomes = await db.selectFrom('emails as e').innerJoin('email_recipients as r', 'r.email_id', 'e.id')
    .select((eb) => [
      eb.fn.countAll<number>().as('created'),
      sql<number>`sum(case when e.sent_at is not null then 1 else 0 end)`.as('sent'),
      count('delivered').as('delivered'), count('bounced').as('bounced'), count('failed').as('failed'), count('suppressed').as('suppressed'),
    ])
    .where('e.workspace_id', '=', ws).where('e.broadcast_id', '=', broadcastId).executeTakeFirstOrThrow();
  const engaged = await db.selectFrom('events as ev').innerJoin('emails as e', 'e.id', 'ev.email_id')
    .select((eb) => ['ev.type', eb.fn.count<number>('ev.email_id').distinct().as('n')])
    .where('e.workspace_id', '=', ws).where('e.broadcast_id', '=', broadcastId)
    .where('ev.type', 'in', ['email.opened', 'email.clicked', 'email.complained']).groupBy('ev.type').execute();
  const byType = new Map(engaged.map((r) => [r.type, Number(r.n)]));
  const unsubscribed = await db.selectFrom('emails as e').innerJoin('contacts as c', 'c.id', 'e.contact_id')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('e.workspace_id', '=', ws).where('e.broadcast_id', '=', broadcastId)
    .whereRef('c.unsubscribed_at', '>=', 'e.created_at').executeTakeFirstOrThrow();
  return {
    emails_created: Number(outcomes.created), sent: Number(outcomes.sent ?? 0), delivered: Number(outcomes.delivered ?? 0),
    bounced: Number(outcomes.bounced ?? 0), failed: Number(outcomes.failed ?? 0), suppressed: Number(outcomes.suppressed ?? 0),
    opened: byType.get('email.opened') ?? 0, clicked: byType.get('email.clicked') ?? 0, complained: byType.get('email.complained') ?? 0,
    unsubscribed: Number(unsubscribed.n),
  };
}

/** The broadcast's contacts that got no email, counted from their rows. */
async function scannedSkips(db: Db, ws: string, broadcastId: string): Promise<number> {
  const { n } = await db.selectFrom('broadcast_skips').select((eb) => eb.fn.countAll<number>().as('n'))
    .where('workspace_id', '=', ws).where('broadcast_id', '=', broadcastId).executeTakeFirstOrThrow();
  return Number(n);
}

describe('broadcast stats', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  async function start(env: Record<string, string> = {}) {
    t = await startTestApp({ env });
    await t.seed.activeDomain(DOMAIN);
    return t;
  }

  async function contact(app: TestApp, email: string, tag: string) {
    const res = await app.api.post('/v1/contacts', { email, tags: [tag] });
    expect(res.status).toBe(201);
    return res.body as { id: string; email: string };
  }

  async function sendBroadcast(app: TestApp, tag: string, pace: Record<string, number> = {}) {
    const tagId = ((await app.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>).find((x) => x.name === tag)!.id;
    const b = (await app.api.post('/v1/broadcasts', { name: 'Stats', from: FROM, subject: 'Hi', html: '<p>Hi</p>', audience: { tag_ids: [tagId] }, ...pace })).body;
    expect((await app.api.post(`/v1/broadcasts/${b.id}/send`, {})).status).toBe(200);
    return b.id as string;
  }

  /** The stats the API shows, which must be what the scan counts; returns them. */
  async function expectKept(app: TestApp, broadcastId: string, step: string) {
    const { stats } = (await app.api.get(`/v1/broadcasts/${broadcastId}`)).body;
    const { audience_size: _, ...kept } = stats;
    const { db } = app.mailroom.services.store;
    expect(kept, step).toEqual({
      ...await scannedCounts(db, app.workspaceId, broadcastId), skipped: await scannedSkips(db, app.workspaceId, broadcastId),
    });
    return kept as Awaited<ReturnType<typeof scannedCounts>> & { skipped: number };
  }

  /**
   * The counters migrations 0027 to 0036 keep, summed from the table, which
   * must be what the scan counts: the steps that undo migration 0037 (whose
   * `skipped` the API reads) check the migrations before it this way.
   */
  async function expectStored(app: TestApp, broadcastId: string, step: string) {
    const row = await app.mailroom.services.store.db.selectFrom('broadcast_stats')
      .select((eb) => statsMigration.COUNTERS.map((c) => eb.fn.sum<number | string>(sql.ref(c)).as(c)))
      .where('broadcast_id', '=', broadcastId).executeTakeFirstOrThrow() as Record<string, number | string | null>;
    const stored = Object.fromEntries(statsMigration.COUNTERS.map((c) => [c, Number(row[c] ?? 0)]));
    expect(stored, step).toEqual(await scannedCounts(app.mailroom.services.store.db, app.workspaceId, broadcastId));
    return stored;
  }

  async function recipientsOf(app: TestApp, broadcastId: string) {
    const rows = await app.mailroom.services.store.db.selectFrom('emails as e').innerJoin('email_recipients as r', 'r.email_id', 'e.id')
      .select(['e.id as emailId', 'e.domain_id as domainId', 'e.contact_id as contactId', 'r.id as recipientId', 'r.address', 'r.status'])
      .where('e.broadcast_id', '=', broadcastId).execute();
    return new Map(rows.map((r) => [r.address.split('+')[1].split('@')[0], r]));
  }

  it('follow every change of the emails, as a scan of them counts it', async () => {
    const app = await start();
    const { store, suppressions, emails } = app.mailroom.services;
    for (const local of ['delivered+d', 'bounced+b', 'complained+c', 'delivered+r', 'delayed+y', 'delivered+u']) {
      await contact(app, `${local}@mailroom.test`, 'stats');
    }
    const id = await sendBroadcast(app, 'stats');
    const settled = await eventually(async () => {
      const r = await recipientsOf(app, id);
      const done = r.size === 6 && r.get('y')!.status === 'deferred' && [...r.values()].filter((x) => x.status !== 'deferred').every((x) => x.status !== 'queued');
      const complained = await store.db.selectFrom('events').select('id').where('type', '=', 'email.complained').execute();
      return done && complained.length === 1 ? r : undefined;
    }, 15_000, 'the first attempts');
    let kept = await expectKept(app, id, 'first attempts');
    expect(kept).toMatchObject({ emails_created: 6, sent: 6, delivered: 4, bounced: 1, failed: 0, complained: 1 });

    const report = (key: string, outcome: Record<string, unknown>) => {
      const r = settled.get(key)!;
      return store.write((tx) => recordRecipientOutcomes(tx, suppressions, [{
        emailId: r.emailId, outcomes: [{ recipientId: r.recipientId, address: r.address, ...outcome } as never],
      }], Date.now()));
    };
    // A bounce report for a recipient who was delivered to.
    await report('r', {
      kind: 'bounced', smtpCode: 550, enhancedStatusCode: '5.1.1', provider: null, response: '550 5.1.1 no such user',
      bounce: { bounce_type: 'hard', bounce_subtype: 'no_such_user', recommended_action: 'remove' },
    });
    kept = await expectKept(app, id, 'bounce report after delivery');
    expect(kept).toMatchObject({ delivered: 3, bounced: 2 });

    await report('y', { kind: 'failed', reason: 'given up' });
    kept = await expectKept(app, id, 'deferred, then failed');
    expect(kept).toMatchObject({ failed: 1 });

    // Suppressed at send time: the recipient is inserted suppressed.
    const late = await contact(app, 'delivered+s@mailroom.test', 'late');
    expect((await app.api.post('/v1/suppressions', { email: late.email })).status).toBe(201);
    await emails.sendForBroadcast({ workspaceId: app.workspaceId, plan: 'free', mode: 'live' }, id,
      [{ contactId: late.id, body: { from: FROM, to: [late.email], subject: 'Hi', html: '<p>Hi</p>' } }], async () => undefined);
    kept = await expectKept(app, id, 'suppressed at send time');
    expect(kept).toMatchObject({ emails_created: 7, suppressed: 1 });

    const engage = (key: string, kind: 'opened' | 'clicked' | 'complained') => store.write((tx) => appendEvents(tx, [{
      workspaceId: app.workspaceId, emailId: settled.get(key)!.emailId, domainId: settled.get(key)!.domainId, kind,
      from: FROM, subject: 'Hi', data: {}, now: Date.now(),
    }]));
    await engage('d', 'opened');
    expect(await expectKept(app, id, 'opened')).toMatchObject({ opened: 1 });
    await engage('d', 'opened');
    expect(await expectKept(app, id, 'opened again')).toMatchObject({ opened: 1 });
    await engage('u', 'opened');
    await engage('d', 'clicked');
    expect(await expectKept(app, id, 'clicked')).toMatchObject({ opened: 2, clicked: 1 });
    await engage('c', 'complained');
    expect(await expectKept(app, id, 'complained again')).toMatchObject({ complained: 1 });
    await engage('d', 'complained');
    expect(await expectKept(app, id, 'complained')).toMatchObject({ complained: 2 });

    const contactU = settled.get('u')!.contactId!;
    expect((await app.api.post(`/v1/contacts/${contactU}/unsubscribe`, {})).status).toBe(200);
    expect(await expectKept(app, id, 'unsubscribed')).toMatchObject({ unsubscribed: 1 });
    // No route resubscribes a contact: set as the store would.
    const setUnsubscribedAt = (at: number | null) => store.write((tx) => tx.updateTable('contacts')
      .set({ status: at === null ? 'subscribed' : 'unsubscribed', unsubscribed_at: at }).where('id', '=', contactU).execute());
    await setUnsubscribedAt(null);
    expect(await expectKept(app, id, 'resubscribed')).toMatchObject({ unsubscribed: 0 });
    expect((await app.api.post(`/v1/contacts/${contactU}/unsubscribe`, {})).status).toBe(200);
    expect(await expectKept(app, id, 'unsubscribed again')).toMatchObject({ unsubscribed: 1 });
    // Moved before the email was made: it no longer counts; moved back after, it does.
    const made = await store.db.selectFrom('emails').select('created_at').where('id', '=', settled.get('u')!.emailId).executeTakeFirstOrThrow();
    await setUnsubscribedAt(Number(made.created_at) - 1);
    expect(await expectKept(app, id, 'unsubscribed before the email')).toMatchObject({ unsubscribed: 0 });
    await setUnsubscribedAt(Number(made.created_at));
    expect(await expectKept(app, id, 'unsubscribed as the email was made')).toMatchObject({ unsubscribed: 1 });
    // A deleted contact's emails still count, as the scan counts them.
    expect((await app.api.delete(`/v1/contacts/${contactU}`)).status).toBe(204);
    expect(await expectKept(app, id, 'contact deleted')).toMatchObject({ unsubscribed: 1 });

    // An email made for a contact who had already unsubscribed counts at once.
    const gone = await contact(app, 'delivered+g@mailroom.test', 'late');
    await store.write((tx) => tx.updateTable('contacts').set({ unsubscribed_at: Date.now() + 60_000 }).where('id', '=', gone.id).execute());
    await emails.sendForBroadcast({ workspaceId: app.workspaceId, plan: 'free', mode: 'live' }, id,
      [{ contactId: gone.id, body: { from: FROM, to: [gone.email], subject: 'Hi', html: '<p>Hi</p>' } }], async () => undefined);
    expect(await expectKept(app, id, 'made for an unsubscribed contact')).toMatchObject({ emails_created: 8, unsubscribed: 2 });
    await eventually(async () => ((await recipientsOf(app, id)).get('g')!.status === 'delivered' ? true : undefined), 10_000, 'the last delivery');
    const last = await expectKept(app, id, 'last delivery');
    expect(last).toMatchObject({ sent: 7, delivered: 4 });
    const { skipped: _, ...lastCounters } = last;

    // The migration counts the broadcasts it finds as the scan did, and the
    // later one names each recipient's broadcast on the rows already there.
    const plain = await app.api.post('/v1/emails', { from: FROM, to: ['plain@mailroom.test'], subject: 'Not a broadcast', text: 'Hi' });
    expect(plain.status).toBe(201);
    const db = store.db as unknown as Kysely<unknown>;
    // Undone latest first: the skips' counter is a column of the slot rows.
    await db.transaction().execute((tx) => skipsMigration.down(tx));
    await db.transaction().execute((tx) => slotsMigration.down(tx));
    expect(await expectStored(app, id, 'summed back into one row a broadcast')).toEqual(lastCounters);
    await recipientBroadcastMigration.down(db);
    await statsMigration.down(db);
    await statsMigration.up(db);
    expect(await expectStored(app, id, 'counted by the migration')).toEqual(lastCounters);
    await recipientBroadcastMigration.up(db);
    const named = await store.db.selectFrom('email_recipients').innerJoin('emails', 'emails.id', 'email_recipients.email_id')
      .select(['emails.broadcast_id as ofEmail', 'email_recipients.broadcast_id as ofRecipient']).execute();
    expect(named.filter((r) => r.ofEmail === id)).toHaveLength(8);
    expect(named.filter((r) => r.ofEmail === null)).toHaveLength(1);
    for (const row of named) expect(row.ofRecipient).toBe(row.ofEmail);
    expect(await expectStored(app, id, 'after the recipients name their broadcast')).toEqual(lastCounters);
    // A counter an unsubscribe and an email made side by side left short is counted again.
    await unsubscribeRaceMigration.down(db);
    await store.write((tx) => tx.updateTable('broadcast_stats').set({ unsubscribed: 0 }).where('broadcast_id', '=', id).execute());
    await db.transaction().execute((tx) => unsubscribeRaceMigration.up(tx));
    expect(await expectStored(app, id, 'counted again')).toEqual(lastCounters);
    // The counters of a broadcast already there move into its first slot, and go on from there.
    await db.transaction().execute((tx) => slotsMigration.up(tx));
    await db.transaction().execute((tx) => skipsMigration.up(tx));
    expect(await store.db.selectFrom('broadcast_stats').select(['slot', 'emails_created']).where('broadcast_id', '=', id).execute())
      .toEqual([{ slot: 0, emails_created: 8 }]);
    expect(await expectKept(app, id, 'moved into slots')).toEqual(last);
    await engage('u', 'clicked');
    expect(await expectKept(app, id, 'clicked after the move')).toMatchObject({ clicked: 2 });
  });

  it('count the emails a cancel stops, and no broadcast before its first email', async () => {
    const app = await start({ MAILROOM_SEND_DELAY: '600' });
    for (const local of ['delivered+a', 'delivered+b', 'delivered+c']) await contact(app, `${local}@mailroom.test`, 'held');
    const tagId = ((await app.api.get('/v1/tags')).body.data as Array<{ id: string }>)[0].id;
    const draft = (await app.api.post('/v1/broadcasts', { name: 'Draft', from: FROM, subject: 'Hi', html: '<p>Hi</p>', audience: { tag_ids: [tagId] } })).body;
    expect(await expectKept(app, draft.id, 'draft')).toMatchObject({ emails_created: 0, sent: 0 });

    // Paced, so it is still sending, its first email waiting out the send delay.
    const id = await sendBroadcast(app, 'held', { send_rate_per_minute: 60 });
    await eventually(async () => ((await recipientsOf(app, id)).size >= 1 ? true : undefined), 10_000, 'the first email');
    expect(await expectKept(app, id, 'waiting for the send delay')).toMatchObject({ sent: 0 });
    expect((await app.api.post(`/v1/broadcasts/${id}/cancel`, {})).status).toBe(200);
    const made = [...(await recipientsOf(app, id)).values()];
    expect(made.map((r) => r.status)).toEqual(made.map(() => 'cancelled'));
    expect(await expectKept(app, id, 'cancelled')).toEqual({
      emails_created: made.length, sent: 0, delivered: 0, bounced: 0, failed: 0, suppressed: 0, opened: 0, clicked: 0, complained: 0, unsubscribed: 0, skipped: 0,
    });
  });

  /** A broadcast of `count` sent emails, one a contact, made on both nodes at once; its id and emails, each with its recipient. */
  async function sentBroadcast(nodes: TwoNodes, count: number) {
    const ws = nodes.workspaceId;
    const sender = { workspaceId: ws, plan: 'default', mode: 'test' } as const;
    const { id } = await nodes.a.broadcasts.create(ws, { name: 'Busy', from: 'ann@acme.test', subject: 'News', text: 'Hello.' });
    const contacts = await Promise.all(Array.from({ length: count }, (_, i) => nodes.a.contacts.create(ws, { email: `busy${i}@rcpt.test` })));
    // Made in batches on both nodes at once, so their creation counts land side by side too.
    await Promise.all([0, 1, 2, 3].map((batch) => (batch % 2 ? nodes.a : nodes.b).emails.sendForBroadcast(sender, id,
      contacts.filter((_, i) => i % 4 === batch).map((c) => ({ contactId: c.id, body: { from: 'ann@acme.test', to: [c.email], subject: 'News', text: 'Hello.' } })),
      async () => undefined)));
    const emails = await nodes.a.store.db.selectFrom('emails').select(['id', 'contact_id', 'domain_id']).where('broadcast_id', '=', id).execute();
    expect(emails).toHaveLength(contacts.length);
    await nodes.a.store.write((tx) => markSent(tx, emails.map((e) => e.id), Date.now()));
    const recipients = await Promise.all(emails.map(async (e) => ({ ...e, recipient: (await listRecipients(nodes.a.store.db, e.id))[0] })));
    return { id, recipients };
  }

  /** The broadcast's stats as kept, which must be what the scan counts; returns the scan. */
  async function expectKeptOnNodes(nodes: TwoNodes, broadcastId: string) {
    const counted = await scannedCounts(nodes.a.store.db, nodes.workspaceId, broadcastId);
    const { audience_size: _, ...kept } = (await nodes.b.broadcasts.get(nodes.workspaceId, broadcastId)).stats;
    expect(kept).toEqual({ ...counted, skipped: await scannedSkips(nodes.a.store.db, nodes.workspaceId, broadcastId) });
    return counted;
  }

  it('stay exact when two nodes record outcomes, opens and unsubscribes of one broadcast at once', async () => {
    await using nodes = await openTwoNodes();
    const ws = nodes.workspaceId;
    const { id, recipients } = await sentBroadcast(nodes, 48);

    const nodeOf = (i: number) => (i % 2 ? nodes.a : nodes.b);
    const outcome = (i: number, kind: 'delivered' | 'bounced' | 'failed') => {
      const { id: emailId, recipient } = recipients[i];
      const moved = kind === 'delivered'
        ? { kind, smtpCode: 250, mxHost: 'mx.rcpt.test', response: '250 ok' }
        : kind === 'bounced'
          ? { kind, smtpCode: 550, enhancedStatusCode: '5.1.1', provider: null, response: '550 5.1.1 no such user',
              bounce: { bounce_type: 'hard', bounce_subtype: 'no_such_user', recommended_action: 'remove' } }
          : { kind, reason: 'no route' };
      return nodeOf(i).store.write((tx) => recordRecipientOutcomes(tx, nodeOf(i).suppressions,
        [{ emailId, outcomes: [{ recipientId: recipient.id, address: recipient.email, ...moved } as never] }], Date.now()));
    };
    const opened = (i: number) => nodeOf(i).store.write((tx) => appendEvents(tx, [{ workspaceId: ws, emailId: recipients[i].id,
      domainId: recipients[i].domain_id, kind: 'opened', from: 'ann@acme.test', subject: 'News', data: {}, now: Date.now() }]));
    const unsubscribed = (i: number) => nodeOf(i + 1).contacts.unsubscribe(ws, recipients[i].contact_id!);

    // First outcomes for all, every third contact unsubscribing meanwhile; then
    // bounce reports after delivery, opens and more unsubscribes; then opens again.
    // (An email's second open goes in after its first has committed: written without
    // tracking's counter lock, two opens of one email side by side on PostgreSQL
    // would each see no earlier open and both count.)
    await Promise.all(recipients.flatMap((_, i) => [outcome(i, i % 5 === 0 ? 'failed' : 'delivered'), ...(i % 3 === 0 ? [unsubscribed(i)] : [])]));
    await Promise.all(recipients.flatMap((_, i) => [
      ...(i % 4 === 1 ? [outcome(i, 'bounced')] : []), opened(i), ...(i % 3 === 1 ? [unsubscribed(i)] : []),
    ]));
    await Promise.all(recipients.flatMap((_, i) => (i % 2 ? [opened(i), outcome(i, 'failed')] : [])));

    expect(await expectKeptOnNodes(nodes, id)).toMatchObject({ emails_created: 48, sent: 48, failed: 10, opened: 48, unsubscribed: 32 });
    // Spread over slots on PostgreSQL, where the writers run side by side; SQLite's one writer keeps one.
    const slots = await nodes.a.store.db.selectFrom('broadcast_stats').select('slot').where('broadcast_id', '=', id).execute();
    if (onPostgres) expect(slots.length).toBeGreaterThan(1);
    else expect(slots).toEqual([{ slot: 0 }]);
  });

  it('count an email\'s complaint, open, click and unsubscribe once when two nodes record each at once', async () => {
    await using nodes = await openTwoNodes();
    const ws = nodes.workspaceId;
    const { id, recipients } = await sentBroadcast(nodes, 48);
    // Each email's open pixel and link, as its message carries them.
    const tokens = await Promise.all(recipients.map(async (r) => {
      const html = await nodes.a.tracking.instrument({ workspaceId: ws, emailId: r.id, html: '<p><a href="https://acme.test/news">News</a></p>',
        openTracking: true, clickTracking: true, baseUrl: 'http://127.0.0.1' });
      return { open: /\/t\/o\/([^"]+)/.exec(html)![1], click: /\/t\/c\/([^"]+)/.exec(html)![1] };
    }));
    const visit = { ip: '127.0.0.1', userAgent: 'Mozilla/5.0' };
    // Each kind the stats count once an email, recorded the way Mailroom records it: a
    // complaint as a feedback report (or the sink) does, opens and clicks through tracking.
    const record: Record<'complained' | 'opened' | 'clicked' | 'unsubscribed', (node: Services, i: number) => Promise<unknown>> = {
      complained: (node, i) => node.store.write((tx) => recordRecipientOutcomes(tx, node.suppressions, [{ emailId: recipients[i].id,
        outcomes: [{ kind: 'complained', recipientId: recipients[i].recipient.id, address: recipients[i].recipient.email, feedbackType: 'abuse' }],
      }], Date.now())),
      opened: (node, i) => node.tracking.recordOpen(tokens[i].open, visit),
      clicked: (node, i) => node.tracking.recordClick(tokens[i].click, visit),
      unsubscribed: (node, i) => node.contacts.unsubscribe(ws, recipients[i].contact_id!),
    };

    // Rounds of a few emails, each kind of each recorded by both nodes at the same moment.
    const EMAILS_A_ROUND = 4;
    for (let first = 0; first < recipients.length; first += EMAILS_A_ROUND) {
      await Promise.all(recipients.slice(first, first + EMAILS_A_ROUND).flatMap((_, j) =>
        Object.values(record).flatMap((recordOnce) => [nodes.a, nodes.b].map((node) => recordOnce(node, first + j)))));
    }

    const twice = await nodes.a.store.db.selectFrom('events').select((eb) => ['type', eb.fn.countAll<number>().as('n')])
      .where('workspace_id', '=', ws).where('type', 'in', ['email.complained', 'email.opened', 'email.clicked']).groupBy('type').execute();
    expect(Object.fromEntries(twice.map((r) => [r.type, Number(r.n)])))
      .toEqual({ 'email.complained': 96, 'email.opened': 96, 'email.clicked': 96 });
    expect(await expectKeptOnNodes(nodes, id)).toMatchObject({ complained: 48, opened: 48, clicked: 48, unsubscribed: 48 });
  });
});
