import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startMailroom, type Mailroom } from '../../src/main.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { startScriptedMx, type ScriptedMx } from '../helpers/mx.js';
import { apiClient } from '../helpers/app.js';
import { startChildServer, until, type ChildServer } from '../helpers/child-server.js';

// A server killed with SIGKILL in the middle of a delivery, then started again
// on the same data: nothing accepted is lost, and nothing the MX already took
// is delivered twice. The second start comes at once, on the same host, so it
// frees the leases of the killed server and takes up the delivery in flight
// without waiting for the lease to run out; then its clock moves two hours on,
// for the email scheduled in an hour.

const MX_HOST = '127.0.0.2';
/** Accepts connections and never greets: a delivery to it stays in flight. */
const HOLE_HOST = '127.0.0.3';

describe('a killed and restarted server', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-restart-'));
  let testDns: TestDns | undefined;
  let mx: ScriptedMx | undefined;
  let hole: Server | undefined;
  const holeSockets = new Set<Socket>();
  let child: ChildServer | undefined;
  let restarted: Mailroom | undefined;

  afterAll(async () => {
    await child?.kill();
    await restarted?.close();
    for (const s of holeSockets) s.destroy();
    await new Promise<void>((resolve) => (hole ? hole.close(() => resolve()) : resolve()));
    await mx?.stop();
    await testDns?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('neither loses nor re-delivers', async () => {
    testDns = await startDns([
      { type: 'MX', name: 'fast.test', exchange: 'mx.fast.test', priority: 10 }, { type: 'A', name: 'mx.fast.test', address: MX_HOST },
      { type: 'MX', name: 'hole.test', exchange: 'mx.hole.test', priority: 10 }, { type: 'A', name: 'mx.hole.test', address: HOLE_HOST },
    ]);
    mx = await startScriptedMx({ host: MX_HOST });
    hole = createServer((socket) => {
      holeSockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => holeSockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      hole!.once('error', reject);
      hole!.listen(mx!.port, HOLE_HOST, () => resolve());
    });

    const env = {
      MAILROOM_DATA_DIR: dataDir, MAILROOM_HTTP_HOST: '127.0.0.1', MAILROOM_HTTP_PORT: '0', MAILROOM_SMTP_PORT: '0',
      MAILROOM_SUBMISSION_PORT: '0', MAILROOM_DELIVERY: 'direct', MAILROOM_SEND_DELAY: '0', MAILROOM_LOG_LEVEL: 'silent',
      MAILROOM_HOSTNAME: 'mx.mailroom.test', MAILROOM_DNS_SERVERS: testDns.server, MAILROOM_ALLOW_PRIVATE_MX: 'true',
      MAILROOM_OUTBOUND_PORT: String(mx.port),
    };
    const first = await startChildServer(env, 'acme.test');
    child = first;
    let api = apiClient(first.url, first.token);
    const send = async (to: string, extra: Record<string, unknown> = {}) => {
      const res = await api.post('/v1/emails', { from: 'ann@acme.test', to, subject: to, text: 'x', ...extra });
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    const status = async (id: string) => (await api.get(`/v1/emails/${id}`)).body.status as string;

    // Delivered and recorded before the kill: must not go out again.
    const done = await send('one@fast.test');
    await until('the first email to be delivered', async () => (await status(done)) === 'delivered');
    // In flight at the kill: the MX has the connection but has not answered.
    const inFlight = await send('two@hole.test');
    await until('the connection to the silent MX', () => holeSockets.size > 0);
    expect(await status(inFlight)).toBe('sent');
    // Accepted, not yet due.
    const later = await send('three@fast.test', { scheduled_at: 'in 1 hour' });

    await child.kill();
    child = undefined;
    expect(mx.received.map((m) => m.rcptTo)).toEqual([['one@fast.test']]);

    // The silent host is fixed, and the server comes back at once.
    await testDns.set([
      { type: 'MX', name: 'fast.test', exchange: 'mx.fast.test', priority: 10 }, { type: 'A', name: 'mx.fast.test', address: MX_HOST },
      { type: 'MX', name: 'hole.test', exchange: 'mx.hole.test', priority: 10 }, { type: 'A', name: 'mx.hole.test', address: MX_HOST },
    ]);
    let skewMs = 0;
    restarted = await startMailroom(loadConfig(env), { clock: { now: () => Date.now() + skewMs }, logger: pino({ level: 'silent' }) });
    api = apiClient(restarted.httpUrl, first.token);
    // Well within the two minutes of the killed server's lease.
    await until('the email in flight at the kill to be delivered', async () => (await status(inFlight)) === 'delivered', 15_000);
    expect(await status(later)).toBe('scheduled');
    skewMs = 2 * 3600_000;
    await until('the scheduled email to be delivered', async () => (await status(later)) === 'delivered');

    expect(mx.received.map((m) => m.rcptTo).sort()).toEqual([['one@fast.test'], ['three@fast.test'], ['two@hole.test']]);
    expect(await status(done)).toBe('delivered');
    const types = (await api.get(`/v1/emails/${inFlight}/events`)).body.data.map((e: { type: string }) => e.type);
    expect(types).toEqual(['email.delivered', 'email.sent', 'email.queued']);
  }, 60_000);
});
