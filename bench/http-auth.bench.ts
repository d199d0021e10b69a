import Koa from 'koa';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { startMailroom } from '../src/main.js';
import { compare, load } from './lib.js';

/** Authenticated cheap GET (list one API key) against a bare Koa route answering the same JSON. */
export async function benchAuthenticatedGet(rounds: number) {
  const bare = new Koa();
  bare.use((ctx) => { ctx.body = { data: [], has_more: false }; });
  const bareServer = bare.listen(0, '127.0.0.1');
  await new Promise((r) => bareServer.once('listening', r));
  const bareUrl = `http://127.0.0.1:${(bareServer.address() as AddressInfo).port}/v1/api-keys?limit=1`;

  const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-bench-'));
  const mailroom = await startMailroom(loadConfig({
    MAILROOM_DATA_DIR: dataDir, MAILROOM_HTTP_PORT: '0', MAILROOM_SMTP_PORT: '0', MAILROOM_SUBMISSION_PORT: '0',
    MAILROOM_DELIVERY: 'sink', MAILROOM_DEFAULT_PLAN: 'unlimited', MAILROOM_LOG_LEVEL: 'silent',
  }), { logger: pino({ level: 'silent' }) });
  try {
    const ws = await mailroom.services.workspaces.ensureDefault();
    const { token } = await mailroom.services.apiKeys.create({ workspaceId: ws.id, name: 'bench' });
    const headers = { Authorization: `Bearer ${token}` };
    return await compare('authenticated GET /v1/api-keys?limit=1 vs bare Koa', rounds,
      () => load({ url: bareUrl, headers }),
      () => load({ url: `${mailroom.httpUrl}/v1/api-keys?limit=1`, headers }));
  } finally {
    await mailroom.close();
    bareServer.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
