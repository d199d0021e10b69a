import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startMailroom, type Mailroom } from '../../src/main.js';
import { apiClient } from '../helpers/app.js';
import { startChildServer, until, type ChildServer } from '../helpers/child-server.js';

// Killed with SIGKILL while it turns a 10,000-contact audience into emails,
// and started again, Mailroom ends with exactly one email per contact: each
// chunk's emails and the broadcast's progress commit together, and the
// unique key on (broadcast, contact) stands behind that.

const CONTACTS = 10_000;

describe('a server killed while a broadcast is being sent', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-bc-kill-'));
  let child: ChildServer | undefined;
  let restarted: Mailroom | undefined;

  afterAll(async () => {
    await child?.kill();
    await restarted?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('makes one email per contact, no more and no fewer, after the restart', async () => {
    const env = {
      MAILROOM_DATA_DIR: dataDir, MAILROOM_HTTP_HOST: '127.0.0.1', MAILROOM_HTTP_PORT: '0', MAILROOM_SMTP_PORT: '0',
      MAILROOM_SUBMISSION_PORT: '0', MAILROOM_DELIVERY: 'sink', MAILROOM_LOG_LEVEL: 'silent', MAILROOM_HOSTNAME: 'mx.mailroom.test',
      MAILROOM_DEFAULT_PLAN: 'unlimited',
      // The emails wait out a long send delay: this is about making them, not delivering them.
      MAILROOM_SEND_DELAY: '3600',
    };
    child = await startChildServer(env, 'acme.test');
    const api = apiClient(child.url, child.token);
    for (let start = 0; start < CONTACTS; start += 1000) {
      const res = await api.post('/v1/contacts/bulk', {
        contacts: Array.from({ length: 1000 }, (_, i) => ({ email: `reader${start + i}@example.com`, name: `Reader ${start + i}` })),
      });
      expect(res.status).toBe(200);
      expect(res.body.created).toBe(1000);
    }
    const b = (await api.post('/v1/broadcasts', { name: 'Everyone', from: 'Acme <news@acme.test>', subject: 'Hi {{ contact.first_name }}', text: 'Hello.' })).body;
    expect((await api.post(`/v1/broadcasts/${b.id}/send`, {})).body.stats.audience_size).toBe(CONTACTS);

    const atKill = await until('a part of the emails made', async () => {
      const made = (await api.get(`/v1/broadcasts/${b.id}`)).body.stats.emails_created as number;
      return made >= CONTACTS / 5 ? made : undefined;
    }, 60_000);
    await child.kill();
    child = undefined;
    expect(atKill).toBeLessThan(CONTACTS);

    restarted = await startMailroom(loadConfig(env), { logger: pino({ level: 'silent' }) });
    const db = restarted.services.store.db;
    await until('the broadcast sent after the restart', async () =>
      (await db.selectFrom('broadcasts').select('status').where('id', '=', b.id).executeTakeFirstOrThrow()).status === 'sent', 120_000);
    const counts = await db.selectFrom('emails').where('broadcast_id', '=', b.id)
      .select((eb) => [eb.fn.countAll<number>().as('emails'), eb.fn.count<number>('contact_id').distinct().as('contacts')])
      .executeTakeFirstOrThrow();
    expect({ emails: Number(counts.emails), contacts: Number(counts.contacts) }).toEqual({ emails: CONTACTS, contacts: CONTACTS });
    const row = await db.selectFrom('broadcasts').select(['emails_created', 'audience_size']).where('id', '=', b.id).executeTakeFirstOrThrow();
    expect(row).toEqual({ emails_created: CONTACTS, audience_size: CONTACTS });
    console.log(`killed with ${atKill} of ${CONTACTS} emails made; all ${CONTACTS} made once after the restart`);
  }, 240_000);
});
