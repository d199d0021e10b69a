import { Writable } from 'node:stream';
import { sql } from 'kysely';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { onPostgres } from '../helpers/database.js';
import { eventually, inboundDomain, sendRaw, startSmtpTestApp } from '../helpers/smtp-app.js';

// A full store (the disk under SQLite; here SQLite's own page limit, which
// fails a commit with the same SQLITE_FULL) refuses new work with a clear,
// retryable answer on every door, keeps everything it had accepted, and
// takes work again as soon as there is room.

describe.skipIf(onPostgres)('a full store', () => {
  it('answers 503 storage_full and SMTP 452 4.3.1, loses nothing, and recovers', async () => {
    const logged: Array<{ level: number; msg: string; code?: string; refused_since_last?: number }> = [];
    const logger = pino({ level: 'warn' }, new Writable({ write(chunk, _enc, done) { logged.push(JSON.parse(String(chunk))); done(); } }));
    await using t = await startSmtpTestApp({ logger });
    await t.seed.activeDomain('example.test');
    await inboundDomain(t, 'inbound.test');
    const { db } = t.mailroom.services.store;
    const send = (subject: string) => t.api.post('/v1/emails', { from: 'ann@example.test', to: 'reader@remote.test', subject, html: 'x'.repeat(4000) });

    const { rows: [{ page_count: pages }] } = await sql<{ page_count: number }>`PRAGMA page_count`.execute(db);
    await sql.raw(`PRAGMA max_page_count = ${Number(pages) + 20}`).execute(db);
    const accepted: string[] = [];
    let refused;
    for (let i = 0; i < 200 && !refused; i++) {
      const r = await send(`before ${i}`);
      if (r.status === 201) accepted.push(r.body.id);
      else refused = r;
    }
    expect(accepted.length).toBeGreaterThan(0);
    expect(refused?.status).toBe(503);
    expect(refused?.headers.get('retry-after')).toBe('30');
    expect(refused?.body.error).toMatchObject({ code: 'storage_full', message: expect.stringMatching(/storage is full: nothing of this request was kept/) });
    // Every request is refused while the store is full: the log says so once, not a line a request.
    for (let i = 0; i < 3; i++) expect((await send(`refused ${i}`)).status).toBe(503);
    const refusals = logged.filter((l) => l.msg.startsWith('requests refused'));
    expect(refusals).toEqual([expect.objectContaining({ level: 40, code: 'storage_full', refused_since_last: 0 })]);
    expect(logged.filter((l) => l.msg === 'request failed')).toEqual([]);

    const message = 'From: someone@outside.test\r\nTo: desk@inbound.test\r\nSubject: while full\r\n\r\n' + 'y'.repeat(60_000) + '\r\n';
    await expect(sendRaw(t.mxPort, { from: 'someone@outside.test', to: ['desk@inbound.test'] }, message))
      .rejects.toMatchObject({ responseCode: 452, response: expect.stringMatching(/^452 4\.3\.1 Insufficient system storage/) });
    const submitted = 'From: ann@example.test\r\nTo: reader@remote.test\r\nSubject: while full\r\n\r\n' + 'z'.repeat(60_000) + '\r\n';
    await expect(sendRaw(t.submissionPort, { from: 'ann@example.test', to: ['reader@remote.test'] }, submitted, { user: 'apikey', pass: t.token }))
      .rejects.toMatchObject({ responseCode: 452 });

    // Room again: the same request goes through, and every email accepted before is there and is delivered.
    await sql`PRAGMA max_page_count = 1073741823`.execute(db);
    expect((await send('after')).status).toBe(201);
    for (const id of accepted) {
      await eventually(async () => ((await t.api.get(`/v1/emails/${id}`)).body.status === 'delivered' ? true : undefined), 10_000, `${id} delivered`);
    }
  });
});
