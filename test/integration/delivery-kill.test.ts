import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
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

// Killed with SIGKILL in the middle of a large delivery, Mailroom loses
// nothing, and sends a message twice only when the remote took it in the
// moment before the kill, before its outcome could be committed: what the MX
// had then and the database did not have as delivered.

const MX_HOST = '127.0.0.2';
const EMAILS = 600;
const DESTINATION_CONCURRENCY = 20;

const messageIdOf = (raw: Buffer) => /^Message-ID:\s*(<[^>\r\n]+>)/im.exec(raw.toString('latin1'))?.[1];

/** How many times the MX took each message, by Message-ID. */
function copiesAt(mx: ScriptedMx): Map<string, number> {
  const copies = new Map<string, number>();
  for (const m of mx.received) {
    const id = messageIdOf(m.raw);
    if (id === undefined) throw new Error('a message reached the MX without a Message-ID');
    copies.set(id, (copies.get(id) ?? 0) + 1);
  }
  return copies;
}

/** The Message-IDs the database of a stopped server has as delivered. */
function deliveredMessageIds(dataDir: string): Set<string> {
  const db = new Database(join(dataDir, 'mailroom.db'));
  try {
    return new Set(db.prepare(`SELECT message_id FROM emails WHERE status = 'delivered'`).pluck().all() as string[]);
  } finally {
    db.close();
  }
}

describe('a server killed during a large delivery', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-kill-'));
  let dns: TestDns | undefined;
  let mx: ScriptedMx | undefined;
  let child: ChildServer | undefined;
  let restarted: Mailroom | undefined;

  afterAll(async () => {
    await child?.kill();
    await restarted?.close();
    await mx?.stop();
    await dns?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('delivers every email, and twice only what was on the wire at the kill', async () => {
    dns = await startDns([{ type: 'MX', name: 'rcpt.test', exchange: 'mx.rcpt.test', priority: 10 }, { type: 'A', name: 'mx.rcpt.test', address: MX_HOST }]);
    mx = await startScriptedMx({ host: MX_HOST });
    const env = {
      MAILROOM_DATA_DIR: dataDir, MAILROOM_HTTP_HOST: '127.0.0.1', MAILROOM_HTTP_PORT: '0', MAILROOM_SMTP_PORT: '0',
      MAILROOM_SUBMISSION_PORT: '0', MAILROOM_DELIVERY: 'direct', MAILROOM_SEND_DELAY: '0', MAILROOM_LOG_LEVEL: 'silent',
      MAILROOM_HOSTNAME: 'mx.mailroom.test', MAILROOM_DNS_SERVERS: dns.server, MAILROOM_ALLOW_PRIVATE_MX: 'true',
      MAILROOM_OUTBOUND_PORT: String(mx.port), MAILROOM_DEFAULT_PLAN: 'unlimited',
      MAILROOM_DESTINATION_CONCURRENCY: String(DESTINATION_CONCURRENCY),
    };
    child = await startChildServer(env, 'acme.test');
    const api = apiClient(child.url, child.token);
    // Scheduled a moment ahead, so that all of them are queued before delivery starts.
    const at = new Date(Date.now() + 1_500).toISOString();
    const ids: string[] = [];
    for (let b = 0; b < EMAILS / 100; b++) {
      const res = await api.post('/v1/emails/batch', {
        emails: Array.from({ length: 100 }, (_, i) => ({
          from: 'ann@acme.test', to: `reader${b * 100 + i}@rcpt.test`, subject: `Note ${b * 100 + i}`, text: 'Hello.', scheduled_at: at,
        })),
      });
      expect(res.status).toBe(200);
      ids.push(...res.body.data.map((r: { id: string }) => r.id));
    }

    await until('a third of the emails at the MX', () => mx!.received.length >= EMAILS / 3, 30_000);
    await child.kill();
    child = undefined;
    // A moment for the last bytes the dead process wrote to reach the MX.
    await new Promise((r) => setTimeout(r, 200));
    const atKill = [...copiesAt(mx).keys()];
    expect(atKill.length).toBeLessThan(EMAILS);
    // On the wire at the kill: taken by the MX, the outcome not yet committed.
    const recorded = deliveredMessageIds(dataDir);
    const onTheWire = new Set(atKill.filter((id) => !recorded.has(id)));
    expect(onTheWire.size).toBeLessThan(atKill.length / 2);

    restarted = await startMailroom(loadConfig(env), { logger: pino({ level: 'silent' }) });
    const db = restarted.services.store.db;
    await until('every email delivered after the restart', async () => {
      const row = await db.selectFrom('emails').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'delivered').executeTakeFirstOrThrow();
      return Number(row.n) === EMAILS;
    }, 60_000);

    const copies = copiesAt(mx);
    expect(copies.size).toBe(EMAILS);
    const twice = [...copies].filter(([, n]) => n > 1).map(([id]) => id);
    // Only what was on the wire at the kill goes out again, and only once more.
    expect(twice.filter((id) => !onTheWire.has(id))).toEqual([]);
    expect(Math.max(...copies.values())).toBeLessThanOrEqual(2);
    console.log(`killed with ${atKill.length} of ${EMAILS} messages at the MX, ${onTheWire.size} of them not recorded yet; ${twice.length} sent twice after the restart`);
  }, 120_000);
});
