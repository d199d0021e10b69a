import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { inboundDomain, sendRaw, startSmtpTestApp } from '../helpers/smtp-app.js';

describe('full probe', () => {
  it('disk full', async () => {
    await using t = await startSmtpTestApp();
    await t.seed.activeDomain('example.test');
    await inboundDomain(t, 'inbound.test');
    const db = t.mailroom.services.store.db;
    const pages = Number((await sql<{ page_count: number }>`PRAGMA page_count`.execute(db)).rows[0].page_count);
    await sql.raw(`PRAGMA max_page_count = ${pages + 5}`).execute(db);
    const statuses: Record<string, number> = {};
    let firstBad: unknown;
    const accepted: string[] = [];
    for (let i = 0; i < 300; i++) {
      const r = await t.api.post('/v1/emails', { from: 'a@example.test', to: 'r@remote.test', subject: `s${i}`, html: 'x'.repeat(2000) });
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      if (r.status === 200 || r.status === 201) accepted.push(r.body.id); else firstBad ??= r.body;
    }
    console.log('STATUSES', JSON.stringify(statuses), JSON.stringify(firstBad));
    const inbound = await sendRaw(t.mxPort, { from: 'x@o.test', to: ['desk@inbound.test'] }, 'Subject: hi\r\n\r\nbig ' + 'y'.repeat(50000) + '\r\n').catch((e) => `ERR ${e.response}`);
    console.log('INBOUND', inbound);
    const sub = await sendRaw(t.submissionPort, { from: 'a@example.test', to: ['r@remote.test'] }, 'From: a@example.test\r\nTo: r@remote.test\r\nSubject: s\r\n\r\n' + 'z'.repeat(50000), { user: 'apikey', pass: t.token }).catch((e) => `ERR ${e.response}`);
    console.log('SUBMISSION', sub);
    const health = await fetch(`${t.url}/health`).then(async (r) => `${r.status} ${await r.text()}`);
    console.log('HEALTH', health);
    await sql.raw(`PRAGMA max_page_count = 1073741823`).execute(db);
    const after = await t.api.post('/v1/emails', { from: 'a@example.test', to: 'r@remote.test', subject: 'after', text: 'x' });
    console.log('AFTER', after.status);
    let missing = 0;
    for (const id of accepted) if ((await t.api.get(`/v1/emails/${id}`)).status !== 200) missing++;
    console.log('MISSING', missing, 'of', accepted.length);
    expect(true).toBe(true);
  });
});
