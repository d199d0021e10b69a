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
export type DestinationVerdict = 'answered' | 'unreachable' | 'unknown';

/**
 * A destination whose rest ended this long ago with no probe since has
 * nothing queued any more: it is forgotten.
 */
const FORGET_AFTER_REST_MS = 3_600_000;

interface DestinationState {
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
    if (!s) this.states.set(destination, (s = { active: 0, transacting: 0, waiting: [], restUntil: 0, probing: false }));
    return s;
  }

  /** How many more attempts to `destination` may start at `now`. */
  allowance(destination: string, now: number): number {
    const s = this.states.get(destination);
    const share = this.limits.concurrency + this.limits.readyAhead;
    if (!s) return share;
    if (s.restUntil > now) return 0;
    return Math.max(0, (s.probing ? 1 : share) - s.active);
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
   * one of its transactions is free; undefined, without running it, when the
   * destination was found unreachable meanwhile (it is resting at `now()`).
   */
  async transact<T>(destination: string, now: () => number, transaction: () => Promise<T>): Promise<T | undefined> {
    const s = this.state(destination);
    if (s.transacting >= this.limits.concurrency) await new Promise<void>((resolve) => s.waiting.push(resolve));
    else s.transacting += 1;
    try {
      return s.restUntil > now() ? undefined : await transaction();
    } finally {
      const next = s.waiting.shift();
      if (next) next(); // the transaction passes straight to the next waiter
      else s.transacting -= 1;
    }
  }

  /**
   * An attempt ended. `retryAt` is when the attempt's own retry falls due:
   * an unreachable destination rests until then.
   */
  finished(destination: string, verdict: DestinationVerdict, retryAt: number): void {
    const s = this.state(destination);
    s.active -= 1;
    if (verdict === 'answered') {
      s.restUntil = 0;
      s.probing = false;
    } else if (verdict === 'unreachable') {
      s.restUntil = Math.max(s.restUntil, retryAt);
      s.probing = true;
    }
    // A healthy destination with nothing under way is forgotten, so the map holds only what matters now.
    if (s.active === 0 && !s.probing) this.states.delete(destination);
  }

  /** When the destination's rest ends; 0 when it is not resting. */
  restingUntil(destination: string): number {
    return this.states.get(destination)?.restUntil ?? 0;
  }

  /** Whether the destination is resting or being probed after a rest (for logs and tests). */
  isSuspect(destination: string): boolean {
    return this.states.get(destination)?.probing ?? false;
  }
}
