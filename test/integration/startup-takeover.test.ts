import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { newId } from '../../src/core/ids.js';
import { startMailroom, type Mailroom } from '../../src/main.js';
import { openStore } from '../../src/store/db.js';
import { insertDeliveries, type NewDelivery } from '../../src/webhooks/webhooks.repo.js';
import { apiClient } from '../helpers/app.js';
import { goneLocalOwner } from '../helpers/lease-owners.js';
import { eventually } from '../helpers/smtp-app.js';

// A start on the data a crashed process left: its leased webhook deliveries
// are freed at once and sent together, each POST listening for the stop.
// That is many listeners on one signal, and Node warned of a leak
// (MaxListenersExceededWarning) at the eleventh.

const ENDPOINTS = 6;
const DELIVERIES_PER_ENDPOINT = 8;

describe('a start that takes over leased work', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-takeover-'));
  const env = {
    MAILROOM_DATA_DIR: dataDir, MAILROOM_HTTP_HOST: '127.0.0.1', MAILROOM_HTTP_PORT: '0', MAILROOM_SMTP_PORT: '0',
    MAILROOM_SUBMISSION_PORT: '0', MAILROOM_DELIVERY: 'sink', MAILROOM_LOG_LEVEL: 'silent', MAILROOM_HOSTNAME: 'mx.mailroom.test',
    MAILROOM_WEBHOOK_ALLOW_PRIVATE: 'true',
  };
  let receiver: Server | undefined;
  let mailroom: Mailroom | undefined;
  const warnings: Error[] = [];
  const onWarning = (w: Error) => warnings.push(w);

  afterAll(async () => {
    process.off('warning', onWarning);
    await mailroom?.close();
    await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('sends the backlog at once, with no MaxListenersExceededWarning', async () => {
    // An endpoint that takes its time, so the POSTs overlap.
    let open = 0;
    let mostOpen = 0;
    receiver = createServer((req, res) => {
      mostOpen = Math.max(mostOpen, ++open);
      req.resume();
      setTimeout(() => {
        open--;
        res.end('ok');
      }, 150);
    });
    await new Promise<void>((resolve) => receiver!.listen(0, '127.0.0.1', () => resolve()));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

    // A first run sets up the endpoints.
    const first = await startMailroom(loadConfig(env), { logger: pino({ level: 'silent' }) });
    const ws = await first.services.workspaces.ensureDefault();
    const { token } = await first.services.apiKeys.create({ workspaceId: ws.id, name: 'takeover test' });
    const api = apiClient(first.httpUrl, token);
    const webhookIds: string[] = [];
    for (let i = 0; i < ENDPOINTS; i++) {
      const res = await api.post('/v1/webhooks', { url: `${receiverUrl}/hook${i}`, event_types: ['email.delivered'] });
      expect(res.status).toBe(201);
      webhookIds.push(res.body.id);
    }
    await first.close();

    // What a crash leaves: deliveries in flight, leased by a process of this host that is gone.
    const store = openStore(`sqlite:${join(dataDir, 'mailroom.db')}`);
    const now = Date.now();
    const gone = goneLocalOwner();
    const rows: NewDelivery[] = webhookIds.flatMap((webhookId) => Array.from({ length: DELIVERIES_PER_ENDPOINT }, () => ({
      id: newId('whd', now), workspace_id: ws.id, webhook_id: webhookId, message_id: newId('msg', now), event_id: null,
      event_type: 'email.delivered', payload: JSON.stringify({ type: 'email.delivered', created_at: new Date(now).toISOString(), data: {} }),
      status: 'pending' as const, is_test: 0, attempt_count: 1, next_attempt_at: now + 600_000, lease_owner: gone,
      last_error: null, replay_of: null, created_at: now, updated_at: now,
    })));
    await store.write((tx) => insertDeliveries(tx, rows));
    await store.close();

    process.on('warning', onWarning);
    mailroom = await startMailroom(loadConfig(env), { logger: pino({ level: 'silent' }) });
    const db = mailroom.services.store.db;
    await eventually(async () => {
      const pending = await db.selectFrom('webhook_deliveries').select('id').where('status', '!=', 'succeeded').execute();
      return pending.length === 0 ? true : undefined;
    }, 20_000, 'the deliveries taken over to succeed');
    // The backlog went out together, well past ten POSTs at once.
    expect(mostOpen).toBeGreaterThan(10);
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message)).toEqual([]);
  });
});
