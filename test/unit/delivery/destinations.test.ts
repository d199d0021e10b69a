import { describe, expect, it } from 'vitest';
import { DestinationGate, SLOWDOWN_PAUSE_MS, type DestinationVerdict } from '../../../src/delivery/destinations.js';

/** One whole attempt: started, a transaction judged `verdict` at `now`, finished. */
async function attempt(gate: DestinationGate, destination: string, verdict: DestinationVerdict, now: number, retryAt = now) {
  gate.started(destination);
  const result = await gate.transact(destination, () => now, async () => 'done', () => ({ verdict, retryAt }));
  gate.finished(destination, now);
  return result;
}

/** An attempt started now, whose transaction ends when the returned function is called with its verdict. */
function pending(gate: DestinationGate, destination: string, now: number) {
  gate.started(destination);
  let end!: (verdict: DestinationVerdict, retryAt?: number) => Promise<string | undefined>;
  const answered = new Promise<{ verdict: DestinationVerdict; retryAt: number }>((resolve) => {
    end = async (verdict, retryAt = now) => {
      resolve({ verdict, retryAt });
      const result = await running;
      gate.finished(destination, now);
      return result;
    };
  });
  let judged: { verdict: DestinationVerdict; retryAt: number };
  const running = gate.transact(destination, () => now, async () => {
    judged = await answered;
    return 'done';
  }, () => judged);
  return end;
}

describe('the destination gate', () => {
  it('gives each destination its share of attempts and closes it at the share', async () => {
    const gate = new DestinationGate({ concurrency: 2, readyAhead: 0 });
    expect(gate.allowance('a.test', 0)).toBe(2);
    const first = pending(gate, 'a.test', 0);
    pending(gate, 'a.test', 0);
    pending(gate, 'b.test', 0);
    expect(gate.allowance('a.test', 0)).toBe(0);
    expect(gate.allowance('b.test', 0)).toBe(1);
    expect(gate.closed(0)).toEqual(['a.test']);
    await first('accepted');
    expect(gate.closed(0)).toEqual([]);
  });

  it('rests an unreachable destination until its retry time, then lets one probe through until a server answers', async () => {
    const gate = new DestinationGate({ concurrency: 5, readyAhead: 0 });
    const later = pending(gate, 'down.test', 0);
    await attempt(gate, 'down.test', 'unreachable', 0, 1_000);
    // The attempt still under way ends later, with a later retry: the rest lasts until then.
    await later('unreachable', 2_000);
    expect(gate.allowance('down.test', 1_500)).toBe(0);
    expect(gate.closed(1_500)).toEqual(['down.test']);
    expect(gate.nextOpening(1_500)).toBe(2_000);

    expect(gate.allowance('down.test', 2_000)).toBe(1);
    const probe = pending(gate, 'down.test', 2_000);
    expect(gate.closed(2_000)).toEqual(['down.test']);
    await probe('answered');
    expect(gate.statuses(2_000)).toEqual([]);
    expect(gate.allowance('down.test', 2_000)).toBe(5);
  });

  it('does not start a waiting transaction once the destination was found unreachable', async () => {
    const gate = new DestinationGate({ concurrency: 1, readyAhead: 1 });
    const first = pending(gate, 'down.test', 0);
    gate.started('down.test');
    const waiting = gate.transact('down.test', () => 0, async () => 'sent', () => ({ verdict: 'accepted', retryAt: 0 }));
    await first('unreachable', 5_000);
    expect(await waiting).toBeUndefined();
    gate.finished('down.test', 0);
    expect(gate.statuses(0)).toEqual([{ destination: 'down.test', concurrency: 1, active: 0, probing: true, pausedUntil: 5_000 }]);
  });

  it('keeps the rest when an attempt says nothing of the destination (a local failure)', async () => {
    const gate = new DestinationGate({ concurrency: 3, readyAhead: 0 });
    await attempt(gate, 'x.test', 'unreachable', 0, 500);
    // A local failure: the attempt never reached the transaction.
    gate.started('x.test');
    gate.finished('x.test', 0);
    expect(gate.allowance('x.test', 100)).toBe(0);
    expect(gate.statuses(100)).toEqual([{ destination: 'x.test', concurrency: 1, active: 0, probing: true, pausedUntil: 500 }]);
  });

  it('forgets a rested destination an hour after its rest ended with nothing sent to it', async () => {
    const gate = new DestinationGate({ concurrency: 3, readyAhead: 0 });
    await attempt(gate, 'gone.test', 'unreachable', 0, 1_000);
    expect(gate.closed(2_000)).toEqual([]);
    expect(gate.statuses(2_000).map((d) => d.probing)).toEqual([true]);
    gate.closed(1_000 + 3_600_001);
    expect(gate.statuses(1_000 + 3_600_001)).toEqual([]);
    expect(gate.allowance('gone.test', 1_000 + 3_600_001)).toBe(3);
  });

  it('builds a few messages ahead of the transactions, which never run more than the concurrency at once', async () => {
    const gate = new DestinationGate({ concurrency: 2, readyAhead: 1 });
    expect(gate.allowance('a.test', 0)).toBe(3);
    const ends = [pending(gate, 'a.test', 0), pending(gate, 'a.test', 0), pending(gate, 'a.test', 0)];
    await new Promise((r) => setImmediate(r));
    expect(gate.statuses(0)).toEqual([{ destination: 'a.test', concurrency: 2, active: 3, probing: false }]);
    expect(await Promise.all(ends.map((end) => end('accepted')))).toEqual(['done', 'done', 'done']);
  });

  it('halves the concurrency of a destination that asks to slow down, pauses it, and gives one back per round of accepted messages', async () => {
    const gate = new DestinationGate({ concurrency: 8, readyAhead: 4 });
    const underWay = [pending(gate, 'busy.test', 1_000), pending(gate, 'busy.test', 1_000)];
    pending(gate, 'calm.test', 1_000);
    await attempt(gate, 'busy.test', 'throttled', 1_000);
    // An attempt under way answers the same: one halving per pause.
    await underWay[0]('throttled');
    expect(gate.allowance('busy.test', 1_020)).toBe(0);
    expect(gate.allowance('calm.test', 1_020)).toBe(12 - 1);
    expect(gate.statuses(1_020).find((d) => d.destination === 'busy.test')).toEqual({
      destination: 'busy.test', concurrency: 4, active: 1, probing: false, pausedUntil: 1_000 + SLOWDOWN_PAUSE_MS,
    });
    const after = 1_000 + SLOWDOWN_PAUSE_MS;
    // Four transactions and two built ahead, less the one under way.
    expect(gate.allowance('busy.test', after)).toBe(4 + 2 - 1);
    // A round of four accepted transactions gives one back, the next round of five another, and so on.
    await underWay[1]('accepted');
    for (let i = 0; i < 2; i++) await attempt(gate, 'busy.test', 'accepted', after);
    expect(gate.statuses(after).find((d) => d.destination === 'busy.test')).toMatchObject({ concurrency: 4 });
    await attempt(gate, 'busy.test', 'accepted', after);
    expect(gate.statuses(after).find((d) => d.destination === 'busy.test')).toMatchObject({ concurrency: 5 });
    for (let i = 0; i < 5 + 6 + 7; i++) await attempt(gate, 'busy.test', 'accepted', after);
    // Back to its full concurrency and nothing under way: forgotten.
    expect(gate.statuses(after).map((d) => d.destination)).toEqual(['calm.test']);
  });
});
