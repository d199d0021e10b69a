import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { sharedPause } from '../../src/core/shared-pause.js';

// Many waits on one long-lived signal: the listeners on it stay bounded
// whether the waits overlap or follow one another.

const abortListeners = (signal: AbortSignal) => getEventListeners(signal, 'abort').length;

describe('a shared pause', () => {
  it('holds one abort listener however many wait at once, and none once it has ended', async () => {
    const stop = new AbortController();
    const pause = sharedPause(5, stop.signal);
    const waits = Array.from({ length: 50 }, () => pause());
    expect(abortListeners(stop.signal)).toBe(1);
    await Promise.all(waits);
    expect(abortListeners(stop.signal)).toBe(0);
  });

  it('leaves no listener behind after many waits one after another', async () => {
    const stop = new AbortController();
    const pause = sharedPause(1, stop.signal);
    for (let i = 0; i < 30; i++) {
      await pause();
      expect(abortListeners(stop.signal)).toBe(0);
    }
  });

  it('ends every wait under way when the signal aborts, and removes its listener', async () => {
    const stop = new AbortController();
    const pause = sharedPause(60_000, stop.signal);
    const waits = Array.from({ length: 20 }, () => pause());
    stop.abort();
    for (const wait of waits) await expect(wait).rejects.toMatchObject({ name: 'AbortError' });
    expect(abortListeners(stop.signal)).toBe(0);
  });
});
