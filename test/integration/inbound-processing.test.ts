import { Migrator, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { newId } from '../../src/core/ids.js';
import { claimPending, insertInbound } from '../../src/inbound/inbound.repo.js';
import { MAX_PROCESS_ATTEMPTS, PROCESS_LEASE_MS } from '../../src/inbound/inbound.service.js';
import { migrations } from '../../src/store/migrations/index.js';
import { eventually, inboundDomain, sendRaw, startSmtpTestApp } from '../helpers/smtp-app.js';

// The background half of receiving: a message is durable from the 250 on, a
// processor that dies mid-way leaves it to the next one, and old messages go
// after the retention period.

const DAY_MS = 86_400_000;

describe('inbound processing', () => {
  it('takes up a message whose processor died once its lease runs out', async () => {
    const clock = new ManualClock();
    await using t = await startSmtpTestApp({ clock });
    const domain = await inboundDomain(t, 'inbound.test');
    const id = newId('in', clock.now());
    // What a crash leaves behind: the message stored (the client had its 250)
    // and claimed by a processor that is gone.
    await t.mailroom.services.store.write(async (tx) => {
      await insertInbound(tx, [{
        id, workspaceId: t.workspaceId, domainId: domain.id, kind: 'message', mailFrom: 'ann@sender.test', rcptTo: ['desk@inbound.test'],
        remoteIp: '127.0.0.1', helo: 'client.test', tls: false, receivedAt: clock.now(),
        raw: Buffer.from('From: Ann <ann@sender.test>\r\nTo: desk@inbound.test\r\nSubject: survived\r\n\r\nstill here\r\n'),
      }]);
      const claimed = await claimPending(tx, { now: clock.now(), leaseMs: PROCESS_LEASE_MS, owner: 'job_gone', limit: 10 });
      expect(claimed.map((c) => c.id)).toEqual([id]);
    });
    // Visible all along, as received: the client had its 250.
    const waiting = await t.api.get(`/v1/inbound/${id}`);
    expect(waiting.status).toBe(200);
    expect(waiting.body).toMatchObject({ status: 'received', failure_reason: null, subject: '', text: null, headers: [], auth: null });

    clock.advance(PROCESS_LEASE_MS + 1);
    const found = await eventually(async () => {
      const r = await t.api.get(`/v1/inbound/${id}`);
      return r.body.status === 'processed' ? r.body : undefined;
    }, 10_000, 'the message to be processed after the lease');
    expect(found).toMatchObject({ subject: 'survived', text: 'still here\n', from: 'Ann <ann@sender.test>' });
    const events = (await t.api.get(`/v1/events?email_id=${id}`)).body.data;
    expect(events.map((e: { type: string }) => e.type)).toEqual(['email.received']);
  });

  it('gives up on a message whose every attempt was cut short', async () => {
    const clock = new ManualClock();
    await using t = await startSmtpTestApp({ clock });
    const domain = await inboundDomain(t, 'inbound.test');
    const id = newId('in', clock.now());
    const { store } = t.mailroom.services;
    // Stored, then taken up and lost MAX_PROCESS_ATTEMPTS times: what a message that crashes the process leaves.
    await store.write(async (tx) => {
      await insertInbound(tx, [{
        id, workspaceId: t.workspaceId, domainId: domain.id, kind: 'message', mailFrom: 'x@sender.test', rcptTo: ['desk@inbound.test'],
        remoteIp: '127.0.0.1', helo: 'client.test', tls: false, receivedAt: clock.now(), raw: Buffer.from('Subject: poison\r\n\r\nx\r\n'),
      }]);
      for (let i = 0; i < MAX_PROCESS_ATTEMPTS; i++) {
        expect(await claimPending(tx, { now: clock.now(), leaseMs: PROCESS_LEASE_MS, owner: `job_gone${i}`, limit: 10 })).toHaveLength(1);
        clock.advance(PROCESS_LEASE_MS + 1);
      }
    });
    const row = await eventually(async () => {
      const r = await store.db.selectFrom('inbound_messages').select(['status', 'last_error']).where('id', '=', id).executeTakeFirst();
      return r?.status === 'failed' ? r : undefined;
    }, 10_000, 'the message to be given up');
    expect(row.last_error).toBe(`gave up after ${MAX_PROCESS_ATTEMPTS} attempts that did not finish`);
    const failed = await t.api.get(`/v1/inbound/${id}`);
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({ status: 'failed', failure_reason: row.last_error, auth: null });
  });

  it('keeps a NUL that a message carries, raw or encoded, as U+FFFD: the message is processed on either store', async () => {
    await using t = await startSmtpTestApp();
    await inboundDomain(t, 'inbound.test');
    const raw = Buffer.from([
      'From: =?utf-8?q?Ann=00Lee?= <ann@sender.test>', 'To: desk@inbound.test', 'Subject: nul\u0000here', 'X-Odd: a\u0000b',
      'MIME-Version: 1.0', 'Content-Type: multipart/mixed; boundary="b"', '', '--b', 'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: quoted-printable', '', 'body=00end', '--b',
      'Content-Type: application/octet-stream; name="=?utf-8?q?a=00b.bin?="', 'Content-Disposition: attachment', '', 'data', '--b--', '',
    ].join('\r\n'));
    const reply = await sendRaw(t.mxPort, { from: 'ann@sender.test', to: ['desk@inbound.test'] }, raw);
    const id = /queued as (in_\w+)/.exec(reply)![1];
    const found = await eventually(async () => {
      const r = await t.api.get(`/v1/inbound/${id}`);
      return r.body.status === 'processed' ? r.body : undefined;
    }, 10_000, 'the message to be processed');
    expect(found).toMatchObject({ subject: 'nul\uFFFDhere', from: 'Ann\uFFFDLee <ann@sender.test>', text: 'body\uFFFDend' });
    expect(found.headers).toContainEqual({ name: 'X-Odd', value: 'a\uFFFDb' });
    expect(found.attachments[0].filename).toBe('a\uFFFDb.bin');
    // The stored source is the message as it came, NUL and all.
    const source = await fetch(`${t.url}/v1/inbound/${id}/raw`, { headers: { Authorization: `Bearer ${t.token}` } });
    expect(Buffer.from(await source.arrayBuffer()).includes(0)).toBe(true);
  });

  it('deletes messages older than the retention period', async () => {
    const clock = new ManualClock();
    await using t = await startSmtpTestApp({ clock, env: { MAILROOM_INBOUND_RETENTION_DAYS: '30' } });
    await inboundDomain(t, 'inbound.test');
    const receive = async (subject: string) => {
      const reply = await sendRaw(t.mxPort, { from: 'ann@sender.test', to: ['desk@inbound.test'] }, `From: ann@sender.test\r\nSubject: ${subject}\r\n\r\nx\r\n`);
      const id = /queued as (in_\w+)/.exec(reply)![1];
      await eventually(async () => ((await t.api.get(`/v1/inbound/${id}`)).body?.status === 'processed' ? id : undefined));
      return id;
    };
    const old = await receive('old');
    clock.advance(2 * DAY_MS);
    const recent = await receive('recent');
    clock.advance(29 * DAY_MS);
    await t.mailroom.scheduler.tick();
    expect((await t.api.get(`/v1/inbound/${old}`)).status).toBe(404);
    expect((await t.api.get(`/v1/inbound/${recent}`)).status).toBe(200);
    expect((await t.api.get('/v1/inbound')).body.data.map((m: { id: string }) => m.id)).toEqual([recent]);
    // The sources went with their messages.
    const sources = await t.mailroom.services.store.db.selectFrom('inbound_sources').select('id').execute();
    expect(sources.map((s) => s.id)).toEqual([recent]);
  });

  it('keeps every message source when its migration moves the sources out of the message rows and back', async () => {
    await using t = await startSmtpTestApp();
    await inboundDomain(t, 'inbound.test');
    const source = 'From: ann@sender.test\r\nSubject: kept\r\n\r\nthe body\r\n';
    const reply = await sendRaw(t.mxPort, { from: 'ann@sender.test', to: ['desk@inbound.test'] }, source);
    const id = /queued as (in_\w+)/.exec(reply)![1];
    await eventually(async () => ((await t.api.get(`/v1/inbound/${id}`)).body?.status === 'processed' ? id : undefined));
    const raw = async () => Buffer.from(await (await fetch(`${t.url}/v1/inbound/${id}/raw`, { headers: { Authorization: `Bearer ${t.token}` } })).arrayBuffer());
    const before = await raw();
    expect(before.toString()).toMatch(/\r\nSubject: kept\r\n\r\nthe body\r\n$/);

    const { store } = t.mailroom.services;
    const migrator = new Migrator({ db: store.db, provider: { getMigrations: async () => migrations } });
    expect((await migrator.migrateTo('0010_search_tags')).error).toBeUndefined();
    const kept = await store.db.selectFrom('inbound_messages').select(sql<Buffer>`raw`.as('raw')).where('id', '=', id).executeTakeFirstOrThrow();
    expect(kept.raw.equals(before)).toBe(true);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect((await raw()).equals(before)).toBe(true);
  });
});
