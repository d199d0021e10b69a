import { Writable } from 'node:stream';
import pg from 'pg';
import pino from 'pino';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { useTempStore } from '../../helpers/store.js';
import { onPostgres } from '../../helpers/database.js';
import { systemClock } from '../../../src/core/clock.js';
import { createDeliveryWorker, type OutboundEmails } from '../../../src/delivery/delivery.worker.js';
import { deliverViaRelay, SmtpPool } from '../../../src/delivery/index.js';
import { startScriptedMx } from '../../helpers/mx.js';
import { enqueue } from '../../../src/delivery/queue.repo.js';
import type { DkimSigner } from '../../../src/delivery/index.js';
import type { Store, Tx } from '../../../src/store/db.js';

// A message the remote took must not go out again because the store was too
// full to write its outcome. SQLite's page limit fails a write exactly as a
// full disk does (SQLITE_FULL).

const temp = useTempStore();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * `count` emails queued for one domain, and the worker's view of them: each
 * loads as a small message to one recipient; `record` counts each outcome
 * written (after `extra`, which runs in the outcome's transaction).
 */
async function queuedEmails(store: Store, count: number, extra: (tx: Tx, emailId: string) => Promise<void> = async () => undefined) {
  await store.write(async (tx) => {
    for (let i = 0; i < count; i++) await enqueue(tx, [{ workspaceId: 'ws_1', emailId: `em_${i}`, domains: ['rcpt.example'], dueAt: Date.now(), lifetimeMs: 86_400_000, now: Date.now() }]);
  });
  const sent = new Map<string, number>();
  const recorded = new Map<string, number>();
  const emails: OutboundEmails = {
    async handOff() {},
    async load(items) {
      return new Map(items.map((item) => [item.id, {
        mode: 'live' as const, message: { raw: Buffer.from('Subject: Hi\r\n\r\nx\r\n'), builtNow: false }, mailFrom: 'b@send.example',
        dkim: [], recipients: [{ id: `rcpt_${item.emailId}`, address: `${item.emailId}@rcpt.example` }], skipped: [],
      }]));
    },
    async record(tx, done) {
      for (const { item } of done) {
        await extra(tx, item.emailId);
        recorded.set(item.emailId, (recorded.get(item.emailId) ?? 0) + 1);
      }
    },
  };
  /** Counts a message the transport was given, by its email. */
  const send = (recipient: string) => {
    const emailId = recipient.replace(/@.*/, '');
    sent.set(emailId, (sent.get(emailId) ?? 0) + 1);
  };
  return { emails, sent, recorded, send };
}

/**
 * Runs `worker` for `refusingMs` while the store refuses writes, checks what
 * happened meanwhile, lets the store take writes again, and waits (10 s at
 * most) for the outcome of each of the three emails.
 */
async function runThroughRefusal(worker: { run(signal: AbortSignal): Promise<void> }, recorded: Map<string, number>, refusingMs: number,
  meanwhile: () => void, restore: () => Promise<unknown> | void): Promise<void> {
  const stop = new AbortController();
  const running = worker.run(stop.signal);
  try {
    await sleep(refusingMs);
    meanwhile();
    await restore();
    for (const deadline = Date.now() + 10_000; Date.now() < deadline && recorded.size < 3;) await sleep(20);
  } finally {
    stop.abort();
    await running;
  }
}

describe.skipIf(onPostgres)('the delivery worker on a full store', () => {
  it('holds a delivered row\'s outcome until the store takes it, claims nothing meanwhile, and sends each message once', async () => {
    const { store } = temp;
    await sql`CREATE TABLE outcome_log (email_id TEXT, body TEXT)`.execute(store.db);
    // An outcome that needs new pages, as events and records do.
    const { emails, sent, recorded, send } = await queuedEmails(store, 3, async (tx, emailId) => {
      await sql`INSERT INTO outcome_log (email_id, body) VALUES (${emailId}, ${'x'.repeat(20_000)})`.execute(tx);
    });
    let full = false;
    const worker = createDeliveryWorker({
      store, clock: systemClock, logger: pino({ level: 'silent' }), emails, sinkOnly: false, concurrency: 1, idleMs: 20,
      signer: {} as DkimSigner,
      async transport(d) {
        send(d.recipients[0]);
        if (!full) {
          // The disk fills while the first message is on the wire.
          const { rows: [{ page_count: pages }] } = await sql<{ page_count: number }>`PRAGMA page_count`.execute(store.db);
          await sql.raw(`PRAGMA max_page_count = ${Number(pages)}`).execute(store.db);
          full = true;
        }
        return d.recipients.map((recipient) => ({ recipient, status: 'delivered' as const, smtp_code: 250, response: '250 ok', mx_host: 'mx' }));
      },
    });
    await runThroughRefusal(worker, recorded, 3_000, () => {
      expect([...sent.values()]).toEqual([1]);
      expect(recorded.size).toBe(0);
    }, () => sql`PRAGMA max_page_count = 1073741823`.execute(store.db));
    expect(recorded.size).toBe(3);
    expect([...sent.values()]).toEqual([1, 1, 1]);
    expect([...recorded.values()]).toEqual([1, 1, 1]);
  });
});

/** What node-postgres throws while nothing listens where the database was (as a stopped pooler leaves it). */
async function connectionRefused(): Promise<unknown> {
  const client = new pg.Client({ connectionString: 'postgres://u:p@127.0.0.1:1/db' });
  return client.connect().then(() => { throw new Error('port 1 answered'); }, (err: unknown) => err);
}

describe('the delivery worker while the store cannot be reached', () => {
  it('holds a delivered row\'s outcome until the store is back, claims nothing meanwhile, logs the pause once, and sends each message once', async () => {
    const refused = await connectionRefused();
    let down = false;
    let refusedWrites = 0;
    const store: Store = {
      ...temp.store,
      write: (work, options) => {
        if (!down) return temp.store.write(work, options);
        refusedWrites++;
        return Promise.reject(refused);
      },
    };
    const { emails, sent, recorded, send } = await queuedEmails(store, 3);
    const logged: string[] = [];
    const sink = new Writable({ write(chunk, _enc, done) { logged.push(JSON.parse(String(chunk)).msg); done(); } });
    const worker = createDeliveryWorker({
      store, clock: systemClock, logger: pino({ level: 'error' }, sink), emails, sinkOnly: false, concurrency: 1, idleMs: 20,
      signer: {} as DkimSigner,
      async transport(d) {
        send(d.recipients[0]);
        // The store goes away while the first message is on the wire.
        if (refusedWrites === 0) down = true;
        return d.recipients.map((recipient) => ({ recipient, status: 'delivered' as const, smtp_code: 250, response: '250 ok', mx_host: 'mx' }));
      },
    });
    await runThroughRefusal(worker, recorded, 4_500, () => {
      expect([...sent.values()]).toEqual([1]);
      expect(recorded.size).toBe(0);
      // The held outcome was tried again, and nothing else was claimed meanwhile.
      expect(refusedWrites).toBeGreaterThanOrEqual(2);
    }, () => {
      down = false;
    });
    expect(recorded.size).toBe(3);
    expect([...sent.values()]).toEqual([1, 1, 1]);
    expect([...recorded.values()]).toEqual([1, 1, 1]);
    expect(logged).toEqual(['the store cannot be reached: delivery pauses until it takes writes again']);
  });
});

describe('the delivery worker whose claimed rows cannot be read', () => {
  it('puts them back in the queue, due at once, instead of leaving them leased for the rest of their lease', async () => {
    const refused = await connectionRefused();
    const { emails, sent, recorded, send } = await queuedEmails(temp.store, 3);
    let refusedLoads = 0;
    const load = emails.load;
    // The store goes away as the claimed rows' messages are read, and is back by the time their return is written.
    emails.load = (items) => (refusedLoads++ === 0 ? Promise.reject(refused) : load(items));
    const worker = createDeliveryWorker({
      store: temp.store, clock: systemClock, logger: pino({ level: 'silent' }), emails, sinkOnly: false, concurrency: 3, idleMs: 20,
      signer: {} as DkimSigner,
      async transport(d) {
        send(d.recipients[0]);
        return d.recipients.map((recipient) => ({ recipient, status: 'delivered' as const, smtp_code: 250, response: '250 ok', mx_host: 'mx' }));
      },
    });
    const stop = new AbortController();
    const running = worker.run(stop.signal);
    try {
      // Well within the two minutes of a lease.
      for (const deadline = Date.now() + 10_000; Date.now() < deadline && recorded.size < 3;) await sleep(20);
    } finally {
      stop.abort();
      await running;
    }
    expect(refusedLoads).toBeGreaterThanOrEqual(2);
    expect([...sent.values()]).toEqual([1, 1, 1]);
    expect([...recorded.values()]).toEqual([1, 1, 1]);
  });
});

describe('the delivery worker holding many outcomes while the store cannot be reached', () => {
  it('waits for the store with one listener on its stop signal, not one a row', async () => {
    const refused = await connectionRefused();
    let down = false;
    const store: Store = { ...temp.store, write: (work, options) => (down ? Promise.reject(refused) : temp.store.write(work, options)) };
    const rows = 20;
    const { emails, sent, recorded, send } = await queuedEmails(store, rows);
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    const worker = createDeliveryWorker({
      store, clock: systemClock, logger: pino({ level: 'silent' }), emails, sinkOnly: false, concurrency: rows, idleMs: 20,
      signer: {} as DkimSigner,
      async transport(d) {
        send(d.recipients[0]);
        // The store goes away while the messages are on the wire: every row's outcome waits for it.
        down = true;
        return d.recipients.map((recipient) => ({ recipient, status: 'delivered' as const, smtp_code: 250, response: '250 ok', mx_host: 'mx' }));
      },
    });
    const stop = new AbortController();
    const running = worker.run(stop.signal);
    try {
      for (const deadline = Date.now() + 5_000; Date.now() < deadline && sent.size < rows;) await sleep(10);
      // Past one retry of the outcomes, each refused again.
      await sleep(2_500);
      down = false;
      for (const deadline = Date.now() + 10_000; Date.now() < deadline && recorded.size < rows;) await sleep(20);
    } finally {
      stop.abort();
      await running;
      process.off('warning', onWarning);
    }
    expect(sent.size).toBe(rows);
    expect([...recorded.values()]).toEqual(Array(rows).fill(1));
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });
});

/** Waits until `down()`, then until two lease renewals (every second of a 3 s lease) have failed. */
async function pastTwoRenewals(down: () => boolean): Promise<void> {
  for (const deadline = Date.now() + 5_000; !down() && Date.now() < deadline;) await sleep(10);
  await sleep(2_300);
}

/** Another node claims the row of `emailId`, as it may once the row's lease has run out. */
const claimedByAnotherNode = (emailId: string) => temp.store.write((tx) => tx.updateTable('outbound_queue')
  .set({ lease_owner: 'another-node', locked_until: Date.now() + 60_000 }).where('email_id', '=', emailId).execute());

/** The row is the other node's, as it took it: no outcome of this worker's was written to it. */
async function expectLeftToAnotherNode(emailId: string): Promise<void> {
  const row = await temp.store.db.selectFrom('outbound_queue').select(['lease_owner', 'attempt', 'last_error']).where('email_id', '=', emailId)
    .executeTakeFirstOrThrow();
  expect(row).toEqual({ lease_owner: 'another-node', attempt: 0, last_error: null });
}

describe('the delivery worker when a lease runs out while the store cannot be reached', () => {
  it('does not send a row whose lease has nearly run out, and leaves it to the node that took it meanwhile', async () => {
    const refused = await connectionRefused();
    let down = false;
    const store: Store = { ...temp.store, write: (work, options) => (down ? Promise.reject(refused) : temp.store.write(work, options)) };
    const { emails, sent, recorded, send } = await queuedEmails(store, 3);
    let releaseFirst!: () => void;
    const firstOnTheWire = new Promise<void>((resolve) => (releaseFirst = resolve));
    const worker = createDeliveryWorker({
      store, clock: systemClock, logger: pino({ level: 'silent' }), emails, sinkOnly: false, concurrency: 2, idleMs: 20,
      // One transaction at a time: the second row waits for the first one's. Renewals come every second.
      destinationConcurrency: 1, leaseMs: 3_000, signer: {} as DkimSigner,
      async transport(d) {
        send(d.recipients[0]);
        if (sent.size === 1) {
          // The store goes away while the first message is on the wire, and stays away past the leases.
          down = true;
          await firstOnTheWire;
        }
        return d.recipients.map((recipient) => ({ recipient, status: 'delivered' as const, smtp_code: 250, response: '250 ok', mx_host: 'mx' }));
      },
    });
    const stop = new AbortController();
    const running = worker.run(stop.signal);
    try {
      // Less than a third of the second row's lease is left when its turn comes.
      await pastTwoRenewals(() => down);
      releaseFirst();
      await sleep(1_000);
      await claimedByAnotherNode('em_1');
      down = false;
      for (const deadline = Date.now() + 10_000; Date.now() < deadline && recorded.size < 2;) await sleep(20);
    } finally {
      stop.abort();
      await running;
    }
    expect([...sent.keys()].sort()).toEqual(['em_0', 'em_2']);
    expect([...recorded.keys()].sort()).toEqual(['em_0', 'em_2']);
    await expectLeftToAnotherNode('em_1');
  });
});

describe('the delivery worker when a lease runs low while a remote stalls the session', () => {
  it('withdraws the message as it is about to go, so none of it reaches the remote, and leaves the row to the node that took it', async () => {
    const refused = await connectionRefused();
    let down = false;
    const store: Store = { ...temp.store, write: (work, options) => (down ? Promise.reject(refused) : temp.store.write(work, options)) };
    const { emails, recorded, send } = await queuedEmails(store, 3);
    let releaseGreeting!: () => void;
    const greeting = new Promise<void>((resolve) => (releaseGreeting = resolve));
    // The first connection's greeting waits; the store goes away meanwhile, and stays away past the lease.
    const mx = await startScriptedMx({
      hold: async (stage, ctx) => {
        if (stage !== 'connect' || ctx.connection !== 1) return;
        down = true;
        await greeting;
      },
    });
    const pool = new SmtpPool();
    const worker = createDeliveryWorker({
      store, clock: systemClock, logger: pino({ level: 'silent' }), emails, sinkOnly: false, concurrency: 2, idleMs: 20,
      destinationConcurrency: 1, leaseMs: 3_000, signer: {} as DkimSigner,
      transport(d) {
        send(d.recipients[0]);
        return deliverViaRelay(`smtp://127.0.0.1:${mx.port}`, d, { heloName: 'out.sender.test', pool });
      },
    });
    const stop = new AbortController();
    const running = worker.run(stop.signal);
    try {
      // Less than a third of the lease is left when the server speaks at last.
      await pastTwoRenewals(() => down);
      releaseGreeting();
      for (const deadline = Date.now() + 5_000; Date.now() < deadline && !mx.commands.some((c) => c.connection === 1 && c.line === 'DATA');) await sleep(10);
      await sleep(200);
      await claimedByAnotherNode('em_0');
      down = false;
      for (const deadline = Date.now() + 10_000; Date.now() < deadline && recorded.size < 2;) await sleep(20);
    } finally {
      stop.abort();
      await running;
      pool.close();
      await mx.stop();
    }
    // The session went as far as DATA: the question that stopped it was the one asked at the hand-over.
    expect(mx.commands.filter((c) => c.connection === 1).map((c) => c.line.split(/[: ]/)[0])).toEqual(['EHLO', 'MAIL', 'RCPT', 'DATA']);
    expect(mx.received.flatMap((m) => m.rcptTo).sort()).toEqual(['em_1@rcpt.example', 'em_2@rcpt.example']);
    expect([...recorded.keys()].sort()).toEqual(['em_1', 'em_2']);
    await expectLeftToAnotherNode('em_0');
  });
});

describe('the delivery worker when the answer to an outcome\'s commit is lost', () => {
  it('writes a deferral once: the write that went through is not made again', async () => {
    const refused = await connectionRefused();
    // The first outcome write commits, then fails as a dropped connection would after COMMIT was sent.
    let answersToLose = 0;
    let writesAfterLoss = 0;
    const store: Store = {
      ...temp.store,
      write: async (work, options) => {
        if (answersToLose === 0) {
          if (writesAfterLoss > 0) writesAfterLoss++;
          return temp.store.write(work, options);
        }
        answersToLose--;
        await temp.store.write(work, options);
        writesAfterLoss = 1;
        throw refused;
      },
    };
    const { emails, sent, recorded, send } = await queuedEmails(store, 3);
    const worker = createDeliveryWorker({
      store, clock: systemClock, logger: pino({ level: 'silent' }), emails, sinkOnly: false, concurrency: 1, idleMs: 20,
      signer: {} as DkimSigner,
      async transport(d) {
        send(d.recipients[0]);
        if (sent.size === 1 && writesAfterLoss === 0) answersToLose = 1;
        return d.recipients.map((recipient) => ({ recipient, status: 'deferred' as const, smtp_code: 450, response: '450 4.2.1 mailbox unavailable' }));
      },
    });
    await runThroughRefusal(worker, recorded, 2_500, () => {
      // The lost answer made the worker write again, and that write found the outcome there.
      expect(writesAfterLoss).toBeGreaterThan(1);
    }, () => undefined);
    expect([...sent.values()]).toEqual([1, 1, 1]);
    expect([...recorded.values()]).toEqual([1, 1, 1]);
    const attempts = await temp.store.db.selectFrom('outbound_queue').select(['email_id', 'attempt', 'lease_owner']).orderBy('email_id').execute();
    expect(attempts).toEqual(['em_0', 'em_1', 'em_2'].map((email_id) => ({ email_id, attempt: 1, lease_owner: null })));
  });
});
