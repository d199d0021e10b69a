import { describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../src/core/clock.js';
import { idempotency, IN_FLIGHT_TTL_MS, requestHash } from '../../src/http/idempotency.js';
import type { Services } from '../../src/main.js';
import { openTwoNodes } from '../helpers/nodes.js';

// Writes that read rows, decide and write them back, each put through two
// nodes on one database at the same moment. On SQLite one writer orders
// them; on PostgreSQL (READ COMMITTED, a pool per node) they run side by
// side, and each must still see what the other committed.

const settledCodes = (results: PromiseSettledResult<unknown>[]) =>
  results.map((r) => (r.status === 'fulfilled' ? 'ok' : (r.reason as { code?: string }).code ?? String(r.reason)));

describe('an Idempotency-Key given to two nodes at once', () => {
  const on = (s: Services, clock = systemClock) => idempotency({ store: s.store, clock, sealKey: s.keyring.sealKey });

  it('runs the request on one node; the other answers 409 and, once it is done, replays its answer', async () => {
    await using nodes = await openTwoNodes();
    const [x, y] = [on(nodes.a), on(nodes.b)];
    const ws = nodes.workspaceId;
    const hash = requestHash('createEmail', {}, { subject: 'Once' });
    const begun = await Promise.allSettled([x.begin(ws, 'send-once', 'createEmail', hash), y.begin(ws, 'send-once', 'createEmail', hash)]);
    expect(settledCodes(begun).sort()).toEqual(['idempotency_conflict', 'ok']);
    expect(begun.find((r) => r.status === 'fulfilled')).toEqual({ status: 'fulfilled', value: undefined });

    const [winner, loser] = begun[0].status === 'fulfilled' ? [x, y] : [y, x];
    await winner.finish(ws, 'send-once', 'createEmail', hash, { status: 201, body: { id: 'em_1' } });
    expect(await loser.begin(ws, 'send-once', 'createEmail', hash)).toEqual({ status: 201, body: { id: 'em_1' } });
  });

  it('gives the key up after a server error, and takes it from a node that died mid-request once its hold runs out', async () => {
    await using nodes = await openTwoNodes();
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const [x, y] = [on(nodes.a, clock), on(nodes.b, clock)];
    const ws = nodes.workspaceId;
    const hash = requestHash('createEmail', {}, { subject: 'Retry' });
    expect(await x.begin(ws, 'k1', 'createEmail', hash)).toBeUndefined();
    await x.finish(ws, 'k1', 'createEmail', hash, { status: 500, body: {} });
    expect(await y.begin(ws, 'k1', 'createEmail', hash)).toBeUndefined();

    // y "dies" holding k1: no finish.
    await expect(x.begin(ws, 'k1', 'createEmail', hash)).rejects.toMatchObject({ code: 'idempotency_conflict' });
    clock.advance(IN_FLIGHT_TTL_MS);
    expect(await x.begin(ws, 'k1', 'createEmail', hash)).toBeUndefined();
  });
});
