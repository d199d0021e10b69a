import { describe, expect, it } from 'vitest';
import { DestinationGate } from '../../../src/delivery/destinations.js';

describe('the destination gate', () => {
  it('gives each destination its share of attempts and closes it at the share', () => {
    const gate = new DestinationGate({ concurrency: 2, readyAhead: 0 });
    expect(gate.allowance('a.test', 0)).toBe(2);
    gate.started('a.test');
    gate.started('a.test');
    gate.started('b.test');
    expect(gate.allowance('a.test', 0)).toBe(0);
    expect(gate.allowance('b.test', 0)).toBe(1);
    expect(gate.closed(0)).toEqual(['a.test']);
    gate.finished('a.test', 'answered', 0);
    expect(gate.closed(0)).toEqual([]);
  });

  it('rests an unreachable destination until its retry time, then lets one probe through until a server answers', () => {
    const gate = new DestinationGate({ concurrency: 5, readyAhead: 0 });
    gate.started('down.test');
    gate.started('down.test');
    gate.finished('down.test', 'unreachable', 1_000);
    // The attempt still under way ends later, with a later retry: the rest lasts until then.
    gate.finished('down.test', 'unreachable', 2_000);
    expect(gate.allowance('down.test', 1_500)).toBe(0);
    expect(gate.closed(1_500)).toEqual(['down.test']);
    expect(gate.nextOpening(1_500)).toBe(2_000);

    expect(gate.allowance('down.test', 2_000)).toBe(1);
    gate.started('down.test');
    expect(gate.closed(2_000)).toEqual(['down.test']);
    gate.finished('down.test', 'answered', 0);
    expect(gate.isSuspect('down.test')).toBe(false);
    expect(gate.allowance('down.test', 2_000)).toBe(5);
  });

  it('keeps the rest when an attempt says nothing of the destination (a local failure)', () => {
    const gate = new DestinationGate({ concurrency: 3, readyAhead: 0 });
    gate.started('x.test');
    gate.started('x.test');
    gate.finished('x.test', 'unreachable', 500);
    gate.finished('x.test', 'unknown', 0);
    expect(gate.allowance('x.test', 100)).toBe(0);
    expect(gate.isSuspect('x.test')).toBe(true);
  });

  it('forgets a rested destination an hour after its rest ended with nothing sent to it', () => {
    const gate = new DestinationGate({ concurrency: 3, readyAhead: 0 });
    gate.started('gone.test');
    gate.finished('gone.test', 'unreachable', 1_000);
    expect(gate.closed(2_000)).toEqual([]);
    expect(gate.isSuspect('gone.test')).toBe(true);
    gate.closed(1_000 + 3_600_001);
    expect(gate.isSuspect('gone.test')).toBe(false);
    expect(gate.allowance('gone.test', 1_000 + 3_600_001)).toBe(3);
  });

  it('builds a few messages ahead of the transactions, which never run more than the concurrency at once', async () => {
    const gate = new DestinationGate({ concurrency: 2, readyAhead: 1 });
    expect(gate.allowance('a.test', 0)).toBe(3);
    let talking = 0;
    let most = 0;
    const release: Array<() => void> = [];
    const transaction = () => gate.transact('a.test', () => 0, async () => {
      most = Math.max(most, ++talking);
      await new Promise<void>((resolve) => release.push(resolve));
      talking--;
    });
    for (let i = 0; i < 3; i++) gate.started('a.test');
    const all = Promise.all([transaction(), transaction(), transaction()]);
    await new Promise((r) => setImmediate(r));
    expect(release.length).toBe(2);
    release.shift()!();
    await new Promise((r) => setImmediate(r));
    expect(release.length).toBe(2);
    release.splice(0).forEach((r) => r());
    await all;
    expect(most).toBe(2);
  });
});
