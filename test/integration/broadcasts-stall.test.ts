import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { apiClient } from '../helpers/app.js';
import { startChildServer, until, type ChildServer } from '../helpers/child-server.js';

// A server that stops running for a moment now and then (a loaded machine,
// a pause of the process) while it turns an audience into emails still
// makes one email per contact: a message whose render the pause pushed past
// the render time limit is rendered again, not left out. The pauses here are
// SIGSTOP and SIGCONT, each longer than the limit.

const CONTACTS = 2_000;
/** Longer than a message's render limit (RENDER_LIMIT_MS). */
const STALL_MS = 150;
const MAX_STALLS = 60;

describe('a server that stalls while a broadcast is being sent', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-bc-stall-'));
  let child: ChildServer | undefined;

  afterAll(async () => {
    if (child && child.child.exitCode === null) child.child.kill('SIGCONT');
    await child?.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('makes one email per contact, none left out for a render the stall ran over time', async () => {
    child = await startChildServer({
      MAILROOM_DATA_DIR: dataDir, MAILROOM_HTTP_HOST: '127.0.0.1', MAILROOM_HTTP_PORT: '0', MAILROOM_SMTP_PORT: '0',
      MAILROOM_SUBMISSION_PORT: '0', MAILROOM_DELIVERY: 'sink', MAILROOM_LOG_LEVEL: 'silent', MAILROOM_HOSTNAME: 'mx.mailroom.test',
      MAILROOM_DEFAULT_PLAN: 'unlimited', MAILROOM_SEND_DELAY: '3600',
    }, 'acme.test');
    const api = apiClient(child.url, child.token);
    for (let start = 0; start < CONTACTS; start += 1000) {
      const res = await api.post('/v1/contacts/bulk', {
        contacts: Array.from({ length: 1000 }, (_, i) => ({ email: `reader${start + i}@example.com`, name: `Reader ${start + i}` })),
      });
      expect(res.body.created).toBe(1000);
    }
    // An idle loop makes each message take a few milliseconds, so that most
    // stalls land in the middle of a render rather than between them.
    const b = (await api.post('/v1/broadcasts', {
      name: 'Everyone', from: 'Acme <news@acme.test>', subject: 'Hi {{ contact.first_name }}', text: 'Hello.{% for i in (1..2000) %}{% endfor %}',
    })).body;
    expect((await api.post(`/v1/broadcasts/${b.id}/send`, {})).body.stats.audience_size).toBe(CONTACTS);

    // The stalls keep their own time, not the server's: one that waited for an
    // answer would only ever land between two chunks' renders.
    let stalls = 0;
    let sending = true;
    const stalling = (async () => {
      while (sending && stalls < MAX_STALLS) {
        child!.child.kill('SIGSTOP');
        await delay(STALL_MS);
        child!.child.kill('SIGCONT');
        stalls++;
        await delay(10 + ((stalls * 17) % 50));
      }
    })();
    const done = await until('the broadcast sent', async () => {
      const now = (await api.get(`/v1/broadcasts/${b.id}`)).body;
      if (now.status === 'sent') return now;
      // A stall in each of one message's renders: the broadcast waits, saying why, and a resume goes on.
      if (now.status === 'paused') {
        expect(now.status_reason).toContain('ran out of render time on each of 3 tries');
        expect((await api.post(`/v1/broadcasts/${b.id}/resume`, {})).body.status).toBe('sending');
      }
      return undefined;
    }, 120_000).finally(() => (sending = false));
    await stalling;
    expect(stalls).toBeGreaterThan(0);
    expect(done.stats).toMatchObject({ audience_size: CONTACTS, emails_created: CONTACTS });
  }, 180_000);
});
