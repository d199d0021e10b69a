import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { SLOWDOWN_PAUSE_MS } from '../../src/delivery/destinations.js';
import { startDns, type DnsRecord, type TestDns } from '../helpers/dns.js';
import { directDeliveryEnv, startScriptedMx, type ScriptedMx } from '../helpers/mx.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

// One destination must never hold the whole queue: deliveries to a domain
// take at most its own share of the worker's slots, rows beyond it wait in
// the queue holding none, and a destination that cannot be reached rests as
// a whole (its queued mail waits without attempts) until a probe gets through.

const DESTINATION_SHARE = 20;

/** A TCP server that accepts connections and then does what `onConnection` says (never greets, or hangs up). */
async function rawServer(host: string, port: number, onConnection: (socket: net.Socket) => void) {
  const sockets = new Set<net.Socket>();
  let open = 0;
  let mostOpen = 0;
  let accepted = 0;
  const server = net.createServer((socket) => {
    accepted += 1;
    mostOpen = Math.max(mostOpen, ++open);
    sockets.add(socket);
    socket.on('close', () => {
      open -= 1;
      sockets.delete(socket);
    });
    socket.on('error', () => socket.destroy());
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return {
    get accepted() { return accepted; },
    get mostOpen() { return mostOpen; },
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const mxRecords = (domain: string, address: string): DnsRecord[] => [
  { type: 'MX', name: domain, exchange: `mx.${domain}`, priority: 10 },
  { type: 'A', name: `mx.${domain}`, address },
];

async function until(condition: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  for (const deadline = Date.now() + ms; Date.now() < deadline;) {
    if (await condition()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}`);
}

describe('delivery per destination', () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function setUp(records: DnsRecord[], port: number, clock?: ManualClock): Promise<{ t: TestApp; dns: TestDns }> {
    const dns = await startDns(records);
    cleanup.push(() => dns.stop());
    const t = await startTestApp({
      ...(clock && { clock }),
      env: directDeliveryEnv(dns.server, port),
    });
    cleanup.push(() => t.close());
    await t.seed.activeDomain('acme.test');
    return { t, dns };
  }

  const sendBatch = async (t: TestApp, to: (i: number) => string, count: number) => {
    const res = await t.api.post('/v1/emails/batch', { emails: Array.from({ length: count }, (_, i) => ({
      from: 'ann@acme.test', to: to(i), subject: `Message ${i}`, text: 'Hello.',
    })) });
    expect(res.status).toBe(200);
    return res.body.data.map((r: { id: string }) => r.id) as string[];
  };

  it('keeps delivering to other domains while 100 emails wait on an MX that accepts and never greets', async () => {
    const healthy: ScriptedMx = await startScriptedMx({ host: '127.0.0.41' });
    cleanup.push(() => healthy.stop());
    const stalled = await rawServer('127.0.0.42', healthy.port, () => {}); // a connection, then silence
    // Stopped first: hung-up sessions let the app's shutdown end at once instead of waiting for them.
    const { t } = await setUp([...mxRecords('healthy.test', '127.0.0.41'), ...mxRecords('stalled.test', '127.0.0.42')], healthy.port);
    cleanup.push(() => stalled.stop());

    await sendBatch(t, (i) => `user${i}@stalled.test`, 100);
    await until(() => stalled.accepted >= DESTINATION_SHARE, 10_000, 'the stalled MX to take its share of connections');

    const started = Date.now();
    const ids = await sendBatch(t, (i) => `friend${i}@healthy.test`, 5);
    await healthy.waitFor(5, 10_000);
    const waited = Date.now() - started;
    for (const id of ids) {
      await until(async () => (await t.api.get(`/v1/emails/${id}`)).body.status === 'delivered', 5_000, `${id} to be delivered`);
    }

    // The stalled destination holds its share and no more: its other 80 emails wait in the queue.
    expect(stalled.accepted).toBe(DESTINATION_SHARE);
    expect(stalled.mostOpen).toBe(DESTINATION_SHARE);
    expect(waited).toBeLessThan(5_000);
  });

  it('rests a destination that hangs up on every connection, then probes it alone and delivers the rest once it answers', async () => {
    const clock = new ManualClock();
    // The port comes from a scripted MX on another address, so both can later share it.
    const spare = await startScriptedMx({ host: '127.0.0.43' });
    cleanup.push(() => spare.stop());
    const port = spare.port;
    let hangingUp: Awaited<ReturnType<typeof rawServer>> | undefined = await rawServer('127.0.0.44', port, (socket) => socket.destroy());
    cleanup.push(async () => hangingUp?.stop());
    const { t } = await setUp(mxRecords('down.test', '127.0.0.44'), port, clock);
    const db = t.mailroom.services.store.db;
    const queue = () => db.selectFrom('outbound_queue').select(['attempt', 'next_attempt_at', 'locked_until', 'last_error']).execute();

    const ids = await sendBatch(t, (i) => `user${i}@down.test`, 60);
    // Settled: no row leased and none due, every row waiting for a later time.
    await until(async () => {
      const rows = await queue();
      return rows.length === 60 && rows.every((r) => r.locked_until <= clock.now() && r.next_attempt_at > clock.now());
    }, 10_000, 'the queue to settle after the first wave');

    const rows = await queue();
    const tried = rows.filter((r) => r.attempt === 1);
    const rested = rows.filter((r) => r.attempt === 0);
    // Only the destination's share was tried; the rest waits without an attempt counted against it.
    expect(hangingUp.accepted).toBe(tried.length);
    expect(tried.length).toBeGreaterThan(0);
    expect(tried.length).toBeLessThanOrEqual(DESTINATION_SHARE);
    expect(rested.length).toBe(60 - tried.length);
    expect(rested.every((r) => r.last_error?.startsWith('delivery temporarily suspended'))).toBe(true);
    const restUntil = Math.min(...rested.map((r) => r.next_attempt_at));
    expect(restUntil).toBeGreaterThan(clock.now() + 60_000);

    // New mail to it while it rests waits too.
    const [late] = await sendBatch(t, () => 'late@down.test', 1);
    await new Promise((r) => setTimeout(r, 600));
    expect(hangingUp.accepted).toBe(tried.length);

    // The destination recovers; after the rest one probe goes alone, then the others follow.
    await hangingUp.stop();
    hangingUp = undefined;
    const mx = await startScriptedMx({ host: '127.0.0.44', port });
    cleanup.push(() => mx.stop());
    const latest = Math.max(...(await queue()).map((r) => r.next_attempt_at));
    clock.advance(latest - clock.now() + 60_000);
    await mx.waitFor(61, 20_000);
    for (const id of [...ids, late]) {
      await until(async () => (await t.api.get(`/v1/emails/${id}`)).body.status === 'delivered', 5_000, `${id} to be delivered`);
    }
    const firstData = mx.commands.findIndex((c) => c.connection === 1 && c.line.toUpperCase() === 'DATA');
    const secondConnection = mx.commands.findIndex((c) => c.connection === 2);
    expect(firstData).toBeGreaterThanOrEqual(0);
    expect(secondConnection).toBeGreaterThan(firstData);
    expect(await queue()).toEqual([]);
  });

  it('slows a destination down when it says 421, pauses it, and leaves other domains at full speed', async () => {
    const clock = new ManualClock();
    let saidSlowDown = false;
    let active = 0;
    let mostActive = 0;
    const busy = await startScriptedMx({
      host: '127.0.0.45',
      reply: (stage) => {
        if (stage === 'mail') {
          if (!saidSlowDown) {
            saidSlowDown = true;
            return '421 4.7.0 Too many messages, slow down';
          }
          mostActive = Math.max(mostActive, ++active);
        }
        if (stage === 'data') active -= 1;
        return undefined;
      },
    });
    cleanup.push(() => busy.stop());
    const calm = await startScriptedMx({ host: '127.0.0.46', port: busy.port });
    cleanup.push(() => calm.stop());
    const { t } = await setUp([...mxRecords('busy.test', '127.0.0.45'), ...mxRecords('calm.test', '127.0.0.46')], busy.port, clock);
    const db = t.mailroom.services.store.db;
    const settled = async () => (await db.selectFrom('outbound_queue').select(['locked_until', 'next_attempt_at']).execute())
      .every((r) => r.locked_until <= clock.now() && r.next_attempt_at > clock.now());

    const ids = await sendBatch(t, (i) => `user${i}@busy.test`, 40);
    await until(settled, 10_000, 'the first wave to settle');
    const [slowed] = t.mailroom.delivery.destinations().filter((d) => d.destination === 'busy.test');
    // Halved from 20, and at most one back from the transactions that were already under way.
    expect(slowed.concurrency).toBeGreaterThanOrEqual(10);
    expect(slowed.concurrency).toBeLessThanOrEqual(11);
    expect(slowed.pausedUntil).toBe(clock.now() + SLOWDOWN_PAUSE_MS);
    const firstWave = busy.received.length;
    expect(firstWave).toBeLessThan(39);

    // Another domain is not slowed: it is delivered during the pause.
    const calmIds = await sendBatch(t, (i) => `friend${i}@calm.test`, 5);
    await calm.waitFor(5, 5_000);
    expect(busy.received.length).toBe(firstWave);

    // After the pause the rest goes out at the lower concurrency, growing by one a round.
    mostActive = 0;
    clock.advance(SLOWDOWN_PAUSE_MS + 1_000);
    await busy.waitFor(39, 10_000);
    expect(mostActive).toBeLessThanOrEqual(slowed.concurrency + 2);
    // The message that was told to slow down comes back on its own retry.
    clock.advance(6 * 60_000);
    await busy.waitFor(40, 10_000);
    for (const id of [...ids, ...calmIds]) {
      await until(async () => (await t.api.get(`/v1/emails/${id}`)).body.status === 'delivered', 5_000, `${id} to be delivered`);
    }
  });
});
