// Per-destination scheduling for the delivery worker, as Postfix's queue
// manager does it: each destination (a recipient domain, or the smarthost in
// relay mode) gets at most its own share of the worker's slots, and a
// destination that cannot be reached at all is rested as a whole instead of
// taking slots for every message queued to it.
//
// The share is the destination's concurrency (SMTP transactions under way at
// once) plus a few messages built and signed ahead, so its connections never
// wait for the next message to be ready.
//
// A destination that asks to slow down (a 421, or a 4xx speaking of rates or
// too many connections or messages) has its concurrency halved and pauses
// for SLOWDOWN_PAUSE_MS; then each round of accepted transactions (as many as
// its concurrency) gives one back, up to the configured concurrency: halve on
// a complaint, grow by one per round, as TCP does. Other destinations are not
// touched.
//
// A destination is unreachable when an attempt got no SMTP reply from any of
// its hosts (DNS failure, refused or timed-out connections, no greeting). It
// then rests until that attempt's own retry time; after the rest one probe
// at a time goes to it, and it gets its full share back once a server
// answers. The rest is also written to the queue rows (see
// postponeDestination), so other processes and a restart see it.

export interface DestinationLimits {
  /** Transactions under way at once to one destination (Postfix's default_destination_concurrency_limit is 20). */
  concurrency: number;
  /** Messages of one destination built and signed ahead, waiting for one of its transactions. */
  readyAhead: number;
}

/** How an attempt to a destination went, as far as the destination's health goes. */
export type DestinationVerdict = 'accepted' | 'answered' | 'throttled' | 'unreachable' | 'unknown';

/** A destination that asked to slow down takes no new transaction for this long. */
export const SLOWDOWN_PAUSE_MS = 30_000;

/** What the gate knows of one destination, for the queue view and logs. */
export interface DestinationStatus {
  destination: string;
  /** Transactions it may have at once now (lower than configured after a slowdown). */
  concurrency: number;
  /** Attempts under way. */
  active: number;
  /** No new attempt before this time, when it rests or pauses. */
  pausedUntil?: number;
  /** One probe at a time after a rest, until a server answers. */
  probing: boolean;
}

/**
 * A destination whose rest ended this long ago with no probe since has
 * nothing queued any more: it is forgotten.
 */
const FORGET_AFTER_REST_MS = 3_600_000;

interface DestinationState {
  /** Transactions it may have at once; the configured concurrency unless it asked to slow down. */
  limit: number;
  /** Accepted transactions since the limit last grew. */
  credit: number;
  /** Attempts under way, from building the message to the reply. */
  active: number;
  /** Of those, the ones talking to the destination. */
  transacting: number;
  /** Attempts waiting for one of the destination's transactions. */
  waiting: Array<() => void>;
  /** No new attempt before this time (epoch ms); 0 when the destination is not resting. */
  restUntil: number;
  /** After a rest: one attempt at a time until a server answers. */
  probing: boolean;
}

export class DestinationGate {
  private readonly states = new Map<string, DestinationState>();

  constructor(private readonly limits: DestinationLimits) {}

  private state(destination: string): DestinationState {
    let s = this.states.get(destination);
    if (!s) this.states.set(destination, (s = { limit: this.limits.concurrency, credit: 0, active: 0, transacting: 0, waiting: [], restUntil: 0, probing: false }));
    return s;
  }

  /** How many more attempts to `destination` may start at `now`. */
  allowance(destination: string, now: number): number {
    const s = this.states.get(destination);
    if (!s) return this.shareFor(this.limits.concurrency);
    if (s.restUntil > now) return 0;
    return Math.max(0, (s.probing ? 1 : this.shareFor(s.limit)) - s.active);
  }

  /** The most attempts one destination may have under way. */
  get fullShare(): number {
    return this.shareFor(this.limits.concurrency);
  }

  /** Transactions plus messages built ahead of them, in proportion. */
  private shareFor(limit: number): number {
    if (limit === Infinity) return Infinity;
    return limit + Math.ceil((this.limits.readyAhead * limit) / this.limits.concurrency);
  }

  /** The destinations that may start nothing at `now`: at their share, or resting. */
  closed(now: number): string[] {
    const closed: string[] = [];
    for (const [destination, s] of this.states) {
      if (s.active === 0 && s.restUntil + FORGET_AFTER_REST_MS < now) this.states.delete(destination);
      else if (this.allowance(destination, now) === 0) closed.push(destination);
    }
    return closed;
  }

  /** Whether a destination rests now. */
  anyResting(now: number): boolean {
    for (const s of this.states.values()) if (s.restUntil > now) return true;
    return false;
  }

  /** Ends every rest early (see wake). */
  wakeAll(): void {
    for (const destination of this.states.keys()) this.wake(destination);
  }

  /** When the earliest resting destination opens again, if one rests. */
  nextOpening(now: number): number | undefined {
    let earliest: number | undefined;
    for (const s of this.states.values()) {
      if (s.restUntil > now && (earliest === undefined || s.restUntil < earliest)) earliest = s.restUntil;
    }
    return earliest;
  }

  started(destination: string): void {
    this.state(destination).active += 1;
  }

  /**
   * Runs `transaction` (a started attempt's talk with the destination) once
   * one of its transactions is free, and takes `judge`'s word on what its
   * result says of the destination before the next waiter gets the
   * transaction. Undefined, without running it, when the destination was
   * found unreachable or asked to slow down meanwhile (it rests at `now()`).
   * `retryAt` of the judgement is when the attempt's own retry falls due: an
   * unreachable destination rests until then.
   */
  async transact<T>(destination: string, now: () => number, transaction: () => Promise<T>,
    judge: (result: T) => { verdict: DestinationVerdict; retryAt: number }): Promise<T | undefined> {
    const s = this.state(destination);
    if (s.transacting >= s.limit) await new Promise<void>((resolve) => s.waiting.push(resolve));
    else s.transacting += 1;
    try {
      if (s.restUntil > now()) return undefined;
      const result = await transaction();
      const { verdict, retryAt } = judge(result);
      this.learn(s, verdict, now(), retryAt);
      return result;
    } finally {
      // The transaction passes straight to the next waiter, unless a slowdown lowered the limit meanwhile.
      const next = s.transacting <= s.limit ? s.waiting.shift() : undefined;
      if (next) next();
      else s.transacting -= 1;
    }
  }

  private learn(s: DestinationState, verdict: DestinationVerdict, now: number, retryAt: number): void {
    if (verdict === 'accepted' || verdict === 'answered') {
      if (s.probing) s.restUntil = 0;
      s.probing = false;
      if (verdict === 'accepted' && s.limit < this.limits.concurrency && ++s.credit >= s.limit) {
        s.limit += 1;
        s.credit = 0;
      }
    } else if (verdict === 'throttled') {
      s.probing = false;
      // Once per pause: the attempts already under way answer the same, and halving for each would leave one.
      if (s.restUntil <= now) {
        s.limit = Math.max(1, Math.floor(s.limit / 2));
        s.credit = 0;
      }
      s.restUntil = Math.max(s.restUntil, now + SLOWDOWN_PAUSE_MS);
    } else if (verdict === 'unreachable') {
      s.restUntil = Math.max(s.restUntil, retryAt);
      s.probing = true;
    }
  }

  /** A started attempt ended, at `now`. */
  finished(destination: string, now: number): void {
    const s = this.state(destination);
    s.active -= 1;
    // A healthy destination with nothing under way is forgotten, so the map holds only what matters now.
    if (s.active === 0 && !s.probing && s.limit === this.limits.concurrency && s.restUntil <= now) this.states.delete(destination);
  }

  /** The destinations that are busy, slowed down, resting or probed. */
  statuses(now: number): DestinationStatus[] {
    return [...this.states].map(([destination, s]) => ({
      destination, concurrency: s.probing ? 1 : s.limit, active: s.active, probing: s.probing,
      ...(s.restUntil > now && { pausedUntil: s.restUntil }),
    }));
  }

  /**
   * Ends a rest early, because a person asked to retry now: the destination
   * gets a probe at once, and its full share back when a server answers.
   */
  wake(destination: string): void {
    const s = this.states.get(destination);
    if (s && s.restUntil > 0) s.restUntil = 0;
  }

  /** When the destination's rest ends; 0 when it is not resting. */
  restingUntil(destination: string): number {
    return this.states.get(destination)?.restUntil ?? 0;
  }

}
