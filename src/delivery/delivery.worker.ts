import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import { newLeaseOwner } from '../core/lease-owner.js';
import { workLoop } from '../core/work-loop.js';
import { sharedPause } from '../core/shared-pause.js';
import { isStoreFull, isStoreRefusingWrites, type Store, type Tx } from '../store/db.js';
import { extendLeases, freeGoneLeases, heldBy } from '../store/lease.js';
import {
  MessageWithdrawn, nextAttemptDelayMs, parseReply, classifyBounce,
  type BounceClassification, type DkimKey, type DkimSigner, type DomainDelivery, type RecipientVerdict,
} from './index.js';
import {
  completeItems, dueRows, leaseRows, nextDueAt, postponeDestination, retryItem, retryMark, type QueueItem,
} from './queue.repo.js';
import { DestinationGate, type DestinationStatus, type DestinationVerdict } from './destinations.js';
import { isSlowDownReply } from './retry-schedule.js';
import { keepMessage, sinkDeliver, type KeptMessage } from './sink.js';
import { coalescedWrite } from '../store/coalesced-write.js';

// The delivery worker: claims due queue rows with a lease, builds and signs
// the message, hands it to the transport (or the sink), and records what
// became of each recipient in one transaction with the queue change. Network
// I/O happens between transactions, never inside one.
//
// It knows nothing of emails or events: the `emails` port (OutboundEmails,
// which the emails area implements)
// says what to send and writes the outcomes.

/** What one queue row asks to send. */
export interface DeliveryJob {
  /** Test-mode emails only ever go to the sink. */
  mode: 'live' | 'test';
  /**
   * The message as built at hand-off (RFC 5322, CRLF line ends), signed at
   * each attempt; or why it cannot be built, which fails its recipients.
   * Absent when no recipient is left to send to.
   */
  message?: { raw: Buffer; builtNow: boolean } | { unbuildable: string };
  mailFrom: string;
  /** Keys to sign with (none: the message goes out unsigned, for test mode without a known domain). */
  dkim: DkimKey[];
  /** Recipients of this row's domain still waiting for an outcome. */
  recipients: Array<{ id: string; address: string }>;
  /** Recipients to fail without trying, with the reason (suppressed since the email was accepted). */
  skipped: Array<{ id: string; address: string; reason: string }>;
}

export type AttemptOutcome =
  | { kind: 'delivered'; recipientId: string; address: string; smtpCode: number; mxHost: string; response: string; complained?: boolean }
  | { kind: 'deferred'; recipientId: string; address: string; smtpCode: number | null; response: string; attempt: number; nextAttemptAt: number }
  | {
      kind: 'bounced'; recipientId: string; address: string; smtpCode: number | null; enhancedStatusCode: string;
      bounce: BounceClassification; provider: string | null; response: string;
    }
  /** Temporary failures until the lifetime ran out: a soft bounce, and the recipient failed. */
  | {
      kind: 'expired'; recipientId: string; address: string; smtpCode: number | null; enhancedStatusCode: string;
      bounce: BounceClassification; response: string; queuedAt: number;
    }
  | { kind: 'failed'; recipientId: string; address: string; reason: string };

/** What became of the recipients of one queue row in one attempt. */
export interface RowOutcome {
  item: QueueItem;
  outcomes: AttemptOutcome[];
  /** The message, when this attempt's load built it: kept if the email has attempts left. */
  built?: Buffer;
}

/** The emails area, seen from the worker. */
export interface OutboundEmails {
  /** Inside the claim transaction: the emails of these rows are now handed to delivery. */
  handOff(tx: Tx, items: QueueItem[], now: number): Promise<void>;
  /**
   * What to send for each row, by row id; a row without an entry has nothing
   * left to send (it is then dropped). Rows of one email share one message.
   */
  load(items: QueueItem[]): Promise<Map<string, DeliveryJob>>;
  /** Inside the outcome transaction: recipient outcomes, events and the emails' status, for several rows at once. */
  record(tx: Tx, rows: RowOutcome[], now: number): Promise<void>;
}

export interface DeliveryWorkerDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  emails: OutboundEmails;
  signer: DkimSigner;
  /** Direct-to-MX or relay delivery of one message to the recipients of one domain. */
  transport(delivery: DomainDelivery): Promise<RecipientVerdict[]>;
  /** MAILROOM_DELIVERY=sink: nothing leaves the machine, live mail included. */
  sinkOnly: boolean;
  /** Attempts under way at once (default 64); a row whose attempt is over and whose outcome is being written takes no slot. */
  concurrency?: number;
  /** Attempts under way at once to one destination (default 20); rows beyond it wait in the queue, taking no slot. */
  destinationConcurrency?: number;
  /** Relay mode: every message goes to this smarthost, which is then the one destination. Otherwise each recipient domain is one. */
  relay?: string;
  /** Told of each row's outcomes once they are committed (metrics). */
  observe?(item: QueueItem, outcomes: readonly AttemptOutcome[], attemptMs: number): void;
  /** Lease on a claimed row, renewed while the delivery runs (default 2 min). */
  leaseMs?: number;
  /** Longest sleep when nothing is due (default 250 ms). */
  idleMs?: number;
  rng?: () => number;
}

export interface DeliveryWorker {
  /** Runs until `signal` aborts; in-flight deliveries get a grace period, the rest is picked up again after the lease. */
  run(signal: AbortSignal): Promise<void>;
  /** Claims what is due now and processes it; returns how many rows it took. */
  runOnce(): Promise<number>;
  /** Processes until nothing is due and nothing is in flight (tests with a manual clock). */
  drain(): Promise<void>;
  /** The destinations with deliveries under way, slowed down, resting or probed. */
  destinations(): DestinationStatus[];
  /** Rows were made due now by a person: a resting destination (one, or every one) gets its probe at once, and the worker looks. */
  retryNow(domain?: string): void;
}

const DEFAULT_CONCURRENCY = 64;
/** Postfix's default_destination_concurrency_limit. */
const DEFAULT_DESTINATION_CONCURRENCY = 20;
/**
 * Messages of a destination built and signed ahead of its transactions, as a
 * share of its concurrency (20 -> 10): its connections then never wait for
 * a message, and one stalled destination still holds at most 30 slots.
 */
const READY_AHEAD_SHARE = 2;
/**
 * A claim reads this many due rows per free slot to choose from, so that rows
 * of a destination at its share do not hide the rows of others behind them.
 */
const CANDIDATES_PER_SLOT = 4;
const DEFAULT_LEASE_MS = 120_000;
const DEFAULT_IDLE_MS = 250;
/** While a destination rests, how often the worker looks whether another process was asked to retry. */
const RETRY_MARK_CHECK_MS = 1_000;
/** Waiting for in-flight deliveries at shutdown; their leases cover whatever does not finish. */
const SHUTDOWN_GRACE_MS = 10_000;
const DRAIN_MAX_ROUNDS = 1000;
/** Shortest idle sleep, so a clock that does not move cannot make the loop spin. */
const MIN_SLEEP_MS = 10;
/**
 * A finished delivery wakes the claim loop only once this share of the slots
 * is free (or none is in flight): one claim transaction, with its hand-off,
 * then serves many slots instead of one each. A slot left empty waits at
 * most idleMs.
 */
const REFILL_SHARE = 4;
/**
 * Finished rows recorded by one write unit at most: each row adds a few
 * bound parameters to the shared statements, and SQLite caps those per
 * statement (32,766).
 */
const MAX_ROWS_PER_RECORD = 256;
/**
 * Claimed rows whose outcome is not yet written, at most, as a multiple of
 * the concurrency: a store slow to take outcomes holds back new claims.
 */
const MAX_UNRECORDED_SHARE = 4;
/** While the store is full or cannot be reached: how often an outcome waiting to be written, or a claim, is tried again. */
const STORE_RETRY_MS = 2_000;
/**
 * A transaction begins, and its message is handed over, only while more
 * than this share of its row's lease is left. Renewals come every third of
 * a lease, so less than that left means one has failed (the store out of
 * reach): a message sent then could outlive the lease, and another node
 * that claims the row would send it too.
 */
const LEASE_LEFT_TO_SEND_SHARE = 1 / 3;

/** A row's lease had nearly run out when its transaction was to begin: it was not sent (when its message was to go: MessageWithdrawn). */
class LeaseInDoubt extends Error {}

/** A finished delivery waiting for its outcome to be written. */
interface Finished {
  item: QueueItem;
  /** When the row is due again if it is retried. */
  retryAt: number;
  /** Why the destination's other mail waits, when the attempt found it unreachable or was told to slow down. */
  destinationTrouble?: string;
  /** Not tried: its destination was found unreachable while the message waited; the row waits with it. */
  suspended?: boolean;
  /**
   * Not tried either: the row's lease had nearly run out (renewals failing),
   * so another node may hold it now. Its outcome is written only if this
   * worker still holds it.
   */
  leaseInDoubt?: boolean;
  /** Not tried either: what to send could not be read, the store out of reach. Due again once the store takes the write. */
  unread?: boolean;
  /** False when there was nothing to send: the row is only dropped. */
  loaded: boolean;
  outcomes: AttemptOutcome[];
  kept?: Omit<KeptMessage, 'now'>;
  /** The message, when loading the row built it. */
  built?: Buffer;
  /**
   * Its outcome is being written again after a write that failed as the
   * store went away: that write may have committed all the same (its answer
   * lost with the connection).
   */
  writtenAgain?: boolean;
}

// RFC 7505 §4.2 asks for 556 with 5.1.10 on null MX; other permanent failures
// without a reply (DNS) get the generic 550 so every bounce carries a code.
const codeForStatus = (status: string): number => (status === '5.1.10' ? 556 : Number(status[0]) * 100 + 50);

export function createDeliveryWorker(deps: DeliveryWorkerDeps): DeliveryWorker {
  const { store, clock, logger, emails } = deps;
  const concurrency = deps.concurrency ?? DEFAULT_CONCURRENCY;
  const leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS;
  const idleMs = deps.idleMs ?? DEFAULT_IDLE_MS;
  const rng = deps.rng ?? Math.random;
  const refillAt = Math.max(1, Math.floor(concurrency / REFILL_SHARE));
  const owner = newLeaseOwner();
  // Nothing leaves the machine in sink mode, so no destination needs sparing there.
  const destinationConcurrency = deps.sinkOnly ? Infinity : deps.destinationConcurrency ?? DEFAULT_DESTINATION_CONCURRENCY;
  const gate = new DestinationGate({ concurrency: destinationConcurrency, readyAhead: Math.ceil(destinationConcurrency / READY_AHEAD_SHARE) });
  const destinationRefillAt = Math.max(1, Math.floor(destinationConcurrency / REFILL_SHARE));
  const destinationOf = (item: { domain: string }) => deps.relay ?? item.domain;
  /** Claimed rows until their outcome is written (they stay leased that long), with the work that ends then. */
  const inFlight = new Map<string, Promise<void>>();
  /** When the lease of each row in flight runs out, as far as this worker knows: from its claim, then its last renewal. */
  const leasedUntil = new Map<string, number>();
  /** Of those, the rows whose attempt is under way: the slots `concurrency` counts. */
  let attempting = 0;
  // Claiming and starting run one at a time in this process (the loop and a
  // drain() may both claim), so a drain never looks between a claim and the
  // start of its deliveries, when the claimed rows are neither due nor in
  // flight (on PostgreSQL a claim under way locks them, and a claim beside it
  // passes over them).
  let turn: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(work: () => Promise<T>): Promise<T> => {
    const result = turn.then(work);
    turn = result.catch(() => undefined);
    return result;
  };
  const unrecordedRoom = () => concurrency * MAX_UNRECORDED_SHARE - inFlight.size;
  /** Finished rows whose outcome the store, full or unreachable, refused: nothing more is claimed until they are written. */
  let outcomesWaitingForStore = 0;
  /** When a claim last found the store full or unreachable (undefined once one goes through). */
  let claimFoundStoreRefusing: number | undefined;
  /** Aborted as the worker stops: outcomes waiting for the store give up, and their rows' leases cover them. */
  const stopping = new AbortController();
  /** Outcomes waiting for the store try again together: up to concurrency × MAX_UNRECORDED_SHARE rows wait at once. */
  const untilStoreRetry = sharedPause(STORE_RETRY_MS, stopping.signal);

  /** Logs the pause once, as it begins: the outcomes and claims tried again meanwhile say nothing new. */
  function noteStorePause(err: unknown): void {
    if (outcomesWaitingForStore > 0 || claimFoundStoreRefusing !== undefined) return;
    logger.error({ err }, `${isStoreFull(err) ? 'the store is full' : 'the store cannot be reached'}: delivery pauses until it takes writes again`);
  }
  const freeSlots = () => Math.min(concurrency - attempting, unrecordedRoom());

  /** The retry mark last read, and when: a retry asked of another process ends this worker's rests (retryMark). */
  let retrySeen: { mark: string | undefined; at: number } | undefined;
  async function endRestsOnRetryElsewhere(now: number): Promise<void> {
    if (!gate.anyResting(now)) {
      // A retry asked before a rest began does not end it.
      retrySeen = undefined;
      return;
    }
    if (retrySeen && now - retrySeen.at < RETRY_MARK_CHECK_MS) return;
    const mark = await retryMark(store.db);
    if (retrySeen && mark !== retrySeen.mark) gate.wakeAll();
    retrySeen = { mark, at: now };
  }

  /** Domains a claim leaves out now: those at their share or resting (in relay mode the smarthost is all of them). */
  function closedDomains(now: number): string[] | 'all' {
    const closed = gate.closed(now);
    if (deps.relay) return closed.length > 0 ? 'all' : [];
    return closed;
  }

  /**
   * Leases up to `limit` due rows, earliest first, no destination beyond its
   * allowance; rows of a destination at its share stay in the queue, where
   * they hold no slot.
   */
  async function claim(limit: number): Promise<QueueItem[]> {
    const now = clock.now();
    const skip = closedDomains(now);
    if (skip === 'all') return [];
    return store.write(async (tx) => {
      const candidates = await dueRows(tx, {
        now, limit: limit * CANDIDATES_PER_SLOT, enough: limit, perDestination: Math.min(limit, gate.fullShare), skipDomains: skip,
      });
      const allowance = new Map<string, number>();
      const chosen: string[] = [];
      for (const row of candidates) {
        if (chosen.length === limit) break;
        const destination = destinationOf(row);
        const left = allowance.get(destination) ?? gate.allowance(destination, now);
        if (left <= 0) continue;
        allowance.set(destination, left - 1);
        chosen.push(row.id);
      }
      const items = await leaseRows(tx, chosen, { now, until: now + leaseMs, owner });
      for (const item of items) leasedUntil.set(item.id, now + leaseMs);
      if (items.length) await emails.handOff(tx, items, now);
      return items;
    // At once: outcomes gathering meanwhile go in the same commit, and the
    // store's commits already wait for a sync under way.
    });
  }

  async function sign(raw: Buffer, job: DeliveryJob): Promise<Buffer> {
    if (job.dkim.length === 0) return raw;
    // Every key signs the same message; receivers use the strongest they understand (RFC 8463 §4).
    const headers = await deps.signer.signatureHeaders(raw, job.dkim);
    return Buffer.concat([Buffer.from(headers.join(''), 'latin1'), raw]);
  }

  /** Turns the transport's verdicts into outcomes; temporary failures past the lifetime expire. */
  function outcomesOf(item: QueueItem, job: DeliveryJob, results: RecipientVerdict[], complained: Set<string>, nextAttemptAt: number): AttemptOutcome[] {
    const byAddress = new Map(results.map((r) => [r.recipient, r]));
    const attempt = item.attempt + 1;
    return job.recipients.map(({ id, address }): AttemptOutcome => {
      const r = byAddress.get(address) ?? { recipient: address, status: 'deferred', response: 'no verdict for this recipient' };
      if (r.status === 'delivered') {
        return {
          kind: 'delivered', recipientId: id, address, smtpCode: r.smtp_code ?? 250, mxHost: r.mx_host ?? item.domain,
          response: r.response, ...(complained.has(address) && { complained: true }),
        };
      }
      if (r.status === 'bounced') {
        const enhanced = r.enhanced_status_code ?? '5.0.0';
        return {
          kind: 'bounced', recipientId: id, address, smtpCode: r.smtp_code ?? codeForStatus(enhanced), enhancedStatusCode: enhanced,
          bounce: r.bounce ?? classifyBounce({ code: r.smtp_code, enhanced, text: r.response }),
          provider: r.bounce?.provider ?? null, response: r.response,
        };
      }
      if (nextAttemptAt > item.expiresAt) {
        const reply = parseReply(r.response);
        const enhanced = r.enhanced_status_code ?? reply.enhanced ?? '4.4.7'; // 4.4.7: delivery time expired (RFC 3463)
        return {
          kind: 'expired', recipientId: id, address, smtpCode: r.smtp_code ?? null, enhancedStatusCode: enhanced,
          bounce: { ...classifyBounce({ code: r.smtp_code, enhanced, text: r.response }), bounce_type: 'soft' }, response: r.response,
          queuedAt: item.createdAt,
        };
      }
      return { kind: 'deferred', recipientId: id, address, smtpCode: r.smtp_code ?? null, response: r.response, attempt, nextAttemptAt };
    });
  }

  /** Writes the outcomes of finished rows: the emails' records, kept sink messages and the queue changes. */
  async function writeOutcomes(tx: Tx, finished: Finished[]): Promise<void> {
    const rows = await withoutOutcomesWritten(tx, finished);
    const now = clock.now();
    for (const r of rows) if (r.kept) await keepMessage(tx, { ...r.kept, now });
    for (const r of rows) {
      const until = gate.restingUntil(destinationOf(r.item));
      if (r.destinationTrouble === undefined || until <= now) continue;
      const domain = deps.relay ? undefined : r.item.domain;
      const postponed = await postponeDestination(tx, { domain, now, until, reason: r.destinationTrouble });
      if (postponed > 0) {
        logger.warn({ destination: destinationOf(r.item), postponed, until: new Date(until).toISOString(), reason: r.destinationTrouble },
          'destination rests: its queued mail waits');
      }
    }
    // A suspended row was not tried: it has no outcome, but the message built for it is kept.
    await emails.record(tx, rows.filter((r) => r.loaded && (!r.suspended || r.built))
      .map(({ item, outcomes, built }) => ({ item, outcomes, ...(built && { built }) })), now);
    const done: string[] = [];
    for (const { item, outcomes, suspended, leaseInDoubt, unread, retryAt } of rows) {
      if (suspended) {
        const lastError = leaseInDoubt ? 'not sent: the delivery lease nearly ran out while the store was out of reach'
          : unread ? 'not sent: the message could not be read while the store was out of reach'
            : 'delivery temporarily suspended: destination unreachable';
        await retryItem(tx, item.id, { attempt: item.attempt, nextAttemptAt: retryAt, lastError });
        continue;
      }
      const deferred = outcomes.find((o): o is Extract<AttemptOutcome, { kind: 'deferred' }> => o.kind === 'deferred');
      if (deferred) await retryItem(tx, item.id, { attempt: deferred.attempt, nextAttemptAt: deferred.nextAttemptAt, lastError: deferred.response });
      else done.push(item.id);
    }
    await completeItems(tx, done);
  }

  /**
   * `rows` less those written again whose outcome is in the store already:
   * a row this worker no longer holds had its outcome committed by the write
   * whose answer was lost (the row is gone or released), or was claimed by
   * another node once its lease ran out, which writes what its own attempt
   * found. Writing it again would add a second email.delayed, say.
   */
  async function withoutOutcomesWritten(tx: Tx, rows: Finished[]): Promise<Finished[]> {
    const doubted = (r: Finished) => r.writtenAgain || r.leaseInDoubt;
    const again = rows.filter(doubted).map((r) => r.item.id);
    if (again.length === 0) return rows;
    const held = await heldBy(tx, 'outbound_queue', again, owner);
    return rows.filter((r) => !doubted(r) || held.has(r.item.id));
  }

  // An outcome is written at once: a message the remote took but whose outcome
  // is not committed goes out again after a crash, so the window stays as
  // short as a commit. Rows that finish while the store is busy with a commit
  // join one unit, with a few multi-row statements (and a failed one is retried
  // a row per unit, so a row the store refuses cannot hold back the others).
  const recordOutcomes = coalescedWrite(store, writeOutcomes, { maxRows: MAX_ROWS_PER_RECORD });

  /** When a row is tried again after these results (the schedule, or later when a server asked for it). */
  function retryTime(item: QueueItem, results: RecipientVerdict[]): number {
    const hint = Math.max(0, ...results.map((r) => r.retry_after_ms ?? 0));
    return clock.now() + nextAttemptDelayMs(item.attempt + 1, rng, hint || undefined);
  }

  /** What a transport's results say of the destination, as opposed to the message. */
  function verdictOf(results: RecipientVerdict[]): DestinationVerdict {
    if (results.some((r) => r.status === 'deferred' && isSlowDownReply(r.smtp_code, r.response))) return 'throttled';
    if (results.some((r) => r.status === 'delivered')) return 'accepted';
    if (results.some((r) => r.smtp_code !== undefined)) return 'answered';
    // No reply from any server (DNS, refused or timed-out connections, no greeting): the destination is at fault.
    if (results.length > 0 && results.every((r) => r.status === 'deferred')) return 'unreachable';
    return 'unknown';
  }

  /** One attempt at a row: builds, signs and hands over the message; returns what the outcome write needs. */
  async function attempt(item: QueueItem, job: DeliveryJob | undefined): Promise<Finished> {
    let retryAt: number | undefined;
    let destinationTrouble: string | undefined;
    if (!job) return { item, loaded: false, outcomes: [], retryAt: clock.now() };
    const built = job.message && 'raw' in job.message && job.message.builtNow ? job.message.raw : undefined;
    const outcomes: AttemptOutcome[] = job.skipped.map((s) => ({ kind: 'failed', recipientId: s.id, address: s.address, reason: s.reason }));
    let kept: Omit<KeptMessage, 'now'> | undefined;
    if (job.recipients.length) {
      const addresses = job.recipients.map((r) => r.address);
      let results: RecipientVerdict[];
      let complained = new Set<string>();
      let raw: Buffer | undefined;
      if (!job.message || 'unbuildable' in job.message) {
        const reason = job.message?.unbuildable ?? 'The message was not built.';
        outcomes.push(...job.recipients.map((r): AttemptOutcome => ({ kind: 'failed', recipientId: r.id, address: r.address, reason })));
      } else {
        raw = job.message.raw;
      }
      if (raw) {
        try {
          raw = await sign(raw, job);
          if (deps.sinkOnly || job.mode === 'test') {
            ({ outcomes: results, complained } = sinkDeliver(addresses, item.attempt));
            kept = { workspaceId: item.workspaceId, emailId: item.emailId, domain: item.domain, mailFrom: job.mailFrom, recipients: addresses, raw };
          } else {
            // Asked again as the message is about to go: a remote that stalled the session meanwhile may have outlasted the lease.
            const mayHandOver = () => (leasedUntil.get(item.id) ?? 0) - clock.now() > leaseMs * LEASE_LEFT_TO_SEND_SHARE;
            const message = { domain: item.domain, mailFrom: job.mailFrom, recipients: addresses, raw: raw!, mayHandOver };
            const destination = destinationOf(item);
            const answer = await gate.transact(destination, () => clock.now(), () => {
              if (!mayHandOver()) throw new LeaseInDoubt();
              return deps.transport(message);
            }, (answered) => {
              const verdict = verdictOf(answered);
              retryAt = retryTime(item, answered);
              if (verdict === 'throttled' || verdict === 'unreachable') {
                destinationTrouble = answered.find((r) => r.status === 'deferred')?.response ?? 'no reply';
                if (verdict === 'throttled' && gate.restingUntil(destination) <= clock.now()) {
                  logger.warn({ destination, email_id: item.emailId, reply: destinationTrouble }, 'destination asks to slow down: fewer connections, and a pause');
                }
              }
              return { verdict, retryAt };
            });
            if (answer === undefined) {
              return { item, loaded: true, outcomes: [], retryAt: gate.restingUntil(destination), suspended: true, ...(built && { built }) };
            }
            results = answer;
          }
        } catch (err) {
          if (err instanceof LeaseInDoubt || err instanceof MessageWithdrawn) {
            if (!leaseDoubtLogged) {
              logger.warn({ email_id: item.emailId, job_id: item.id }, 'delivery leases nearly run out (renewals failing): claimed mail is not sent until the store is back');
              leaseDoubtLogged = true;
            }
            return { item, loaded: true, outcomes: [], retryAt: clock.now(), suspended: true, leaseInDoubt: true, ...(built && { built }) };
          }
          // The transport reports SMTP and DNS failures as outcomes; anything thrown (a key
          // that does not sign, a bug) is local, and worth another try once it is fixed.
          logger.error({ err, email_id: item.emailId, job_id: item.id }, 'delivery attempt failed locally');
          results = addresses.map((recipient) => ({ recipient, status: 'deferred', response: `local error: ${(err as Error).message}` }));
        }
        retryAt ??= retryTime(item, results);
        outcomes.push(...outcomesOf(item, job, results, complained, retryAt));
      }
    }
    return {
      item, loaded: true, outcomes, retryAt: retryAt ?? clock.now(), ...(built && { built }),
      ...(destinationTrouble !== undefined && { destinationTrouble }), ...(kept && { kept }),
    };
  }

  /** Starts the deliveries of claimed rows; what to send is read for all of them at once. */
  function start(items: QueueItem[]): void {
    if (items.length === 0) return;
    const jobs = emails.load(items);
    attempting += items.length;
    for (const item of items) {
      const destination = destinationOf(item);
      gate.started(destination);
      inFlight.set(item.id, deliverRow(item, destination, jobs));
    }
  }

  /** One claimed row from its attempt to its written outcome; the row stays in `inFlight` (and leased) all along. */
  async function deliverRow(item: QueueItem, destination: string, jobs: Promise<Map<string, DeliveryJob>>): Promise<void> {
    try {
      let finished: Finished;
      let attemptMs: number;
      try {
        const began = performance.now();
        const loaded = await jobs.then((byId) => ({ job: byId.get(item.id) }), (err: unknown) => {
          if (!isStoreRefusingWrites(err)) throw err;
          return undefined;
        });
        // Unread for want of the store, the row goes back to the queue, due at once, when the store takes that write,
        // rather than staying leased, and untried, for the rest of its lease.
        finished = loaded ? await attempt(item, loaded.job)
          : { item, loaded: true, outcomes: [], retryAt: clock.now(), suspended: true, unread: true };
        attemptMs = performance.now() - began;
      } finally {
        // The slot frees as the attempt ends; the row stays leased until its outcome is written.
        attempting--;
        gate.finished(destination, clock.now());
        // Worth a claim once the destination, too, can take a few more: rows of a destination at its share stay queued.
        if (attempting === 0 || (freeSlots() >= refillAt && gate.allowance(destination, clock.now()) >= destinationRefillAt)) loop.wake();
      }
      await recordOutcome(finished);
      if (finished.outcomes.length) deps.observe?.(item, finished.outcomes, attemptMs);
    } catch (err) {
      // A failure here (the store, a bug) leaves the row leased: it is tried again when the lease lapses.
      logger.error({ err, email_id: item.emailId, job_id: item.id }, 'delivery attempt could not be recorded');
    } finally {
      inFlight.delete(item.id);
      leasedUntil.delete(item.id);
      // Rows waiting for their outcome bound claims only when the store falls behind; then a written batch makes room.
      if (inFlight.size === 0 || (unrecordedRoom() <= concurrency - attempting && unrecordedRoom() >= refillAt)) loop.wake();
    }
  }

  /**
   * Writes a finished row's outcome; while the store is full or cannot be
   * reached, tries again every STORE_RETRY_MS, the row kept in flight with
   * its lease renewed. The remote may have the message: an outcome given up
   * on would send it again once the lease lapsed.
   */
  async function recordOutcome(finished: Finished): Promise<void> {
    let waiting = false;
    try {
      for (;;) {
        try {
          return await recordOutcomes([finished]);
        } catch (err) {
          if (!isStoreRefusingWrites(err) || stopping.signal.aborted) throw err;
          finished.writtenAgain = true;
          if (!waiting) {
            noteStorePause(err);
            waiting = true;
            outcomesWaitingForStore++;
          }
          await untilStoreRetry();
        }
      }
    } finally {
      if (waiting) outcomesWaitingForStore--;
    }
  }

  /** Whether the last claim found nothing: the next round then reads before it claims. */
  let idle = false;

  // A finished delivery, a destination reopening or a retry asked for wakes the loop.
  const loop = workLoop({
    idleMs,
    // The sleep after a round is until the next row falls due at most, and a
    // round claims for every free slot.
    wakesDuringRound: 'dropped',
    onError: (err) => logger.error({ err }, 'could not claim delivery work'),
    async round() {
      // A store that takes no outcome (full, or out of reach) is sent nothing more until it takes writes again.
      if (outcomesWaitingForStore > 0) return STORE_RETRY_MS;
      if (claimFoundStoreRefusing !== undefined && clock.now() - claimFoundStoreRefusing < STORE_RETRY_MS) return STORE_RETRY_MS;
      let free: number;
      let claimed: QueueItem[];
      try {
        await endRestsOnRetryElsewhere(clock.now());
        if (idle && freeSlots() > 0) {
          // An idle worker reads before it claims (a write transaction): an idle round is this one read.
          const now = clock.now();
          const skip = closedDomains(now);
          const due = skip === 'all' ? undefined : await nextDueAt(store.db, skip);
          claimFoundStoreRefusing = undefined;
          if (due === undefined || due > now) return sleepUntil(due, now);
        }
        ({ free, claimed } = await exclusive(async () => {
          const slots = freeSlots();
          const items = slots > 0 ? await claim(slots) : [];
          start(items);
          return { free: slots, claimed: items };
        }));
      } catch (err) {
        if (!isStoreRefusingWrites(err)) throw err;
        noteStorePause(err);
        claimFoundStoreRefusing = clock.now();
        return STORE_RETRY_MS;
      }
      claimFoundStoreRefusing = undefined;
      if (free > 0) idle = claimed.length === 0;
      if (claimed.length > 0 && claimed.length === free) return 0;
      if (free === 0) return undefined;
      const now = clock.now();
      const skip = closedDomains(now);
      return sleepUntil(skip === 'all' ? undefined : await nextDueAt(store.db, skip).catch(() => undefined), now);
    },
  });

  /** The sleep until a delivery finishes, the next row falls due (`due`), a destination opens, or idleMs (rows queued meanwhile are seen then). */
  function sleepUntil(due: number | undefined, now: number): number {
    let wait = idleMs;
    for (const at of [due, gate.nextOpening(now)]) {
      if (at !== undefined) wait = Math.min(wait, Math.max(MIN_SLEEP_MS, at - now));
    }
    return wait;
  }

  // Leases are renewed while deliveries run, so a slow MX (RFC 5321 allows
  // minutes per command) never lets a second worker take the same row.
  // While the store cannot take them, renewals fail one after another: the
  // first failure is logged, the rest until one succeeds are not.
  let renewalFailing = false;
  /** Rows left unsent for a lease in doubt are logged once, until a renewal goes through again. */
  let leaseDoubtLogged = false;
  async function renewLeases(): Promise<void> {
    if (inFlight.size === 0) return;
    const until = clock.now() + leaseMs;
    try {
      const renewed = await store.write((tx) => extendLeases(tx, 'outbound_queue', [...inFlight.keys()], owner, until));
      for (const id of renewed) if (leasedUntil.has(id)) leasedUntil.set(id, until);
      renewalFailing = false;
      leaseDoubtLogged = false;
    } catch (err) {
      if (!renewalFailing || !isStoreRefusingWrites(err)) logger.error({ err }, 'could not renew delivery leases');
      renewalFailing = true;
    }
  }

  const worker: DeliveryWorker = {
    async run(signal) {
      // Rows a crashed process of this host held would otherwise wait out their lease.
      await freeGoneLeases(store, 'outbound_queue', logger, () => clock.now());
      const renewal = setInterval(() => void renewLeases(), Math.max(1000, leaseMs / 3));
      try {
        await loop.run(signal);
      } finally {
        clearInterval(renewal);
        stopping.abort();
        await Promise.race([Promise.allSettled(inFlight.values()), sleep(SHUTDOWN_GRACE_MS, undefined, { ref: false })]);
      }
    },

    async runOnce() {
      const items = await exclusive(async () => {
        const claimed = await claim(concurrency);
        start(claimed);
        return claimed;
      });
      await Promise.allSettled(items.map((i) => inFlight.get(i.id)));
      return items.length;
    },

    async drain() {
      for (let round = 0; round < DRAIN_MAX_ROUNDS; round++) {
        await Promise.allSettled(inFlight.values());
        if ((await worker.runOnce()) === 0 && inFlight.size === 0) return;
      }
      throw new Error(`delivery queue did not drain in ${DRAIN_MAX_ROUNDS} rounds`);
    },

    destinations: () => gate.statuses(clock.now()),

    retryNow(domain) {
      // In relay mode the smarthost is the one destination, whatever the domain.
      const destinations = deps.relay !== undefined ? [deps.relay] : domain !== undefined ? [domain] : gate.statuses(clock.now()).map((s) => s.destination);
      for (const d of destinations) gate.wake(d);
      loop.wake();
    },
  };
  return worker;
}
