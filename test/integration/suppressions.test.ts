import { describe, expect, it } from 'vitest';
import { startTestApp } from '../helpers/app.js';

describe('suppressions', () => {
  it('adds a manual suppression with a normalised address, once', async () => {
    await using t = await startTestApp();
    const created = await t.api.post('/v1/suppressions', { email: ' Block@Example.com ' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ object: 'suppression', email: 'block@example.com', reason: 'manual' });
    expect(created.body.id).toMatch(/^sup_/);

    const dup = await t.api.post('/v1/suppressions', { email: 'BLOCK@example.com' });
    expect(dup.status).toBe(422);
    expect(dup.body.error).toMatchObject({ code: 'already_exists', param: 'email', suppression_id: created.body.id });
    for (const body of [{}, { email: 'nope' }, { email: 'a@example.com', reason: 'manual' }, { email: 7 }]) {
      const r = await t.api.post('/v1/suppressions', body);
      expect(r.status, JSON.stringify(body)).toBe(422);
    }
    expect((await t.api.get('/v1/suppressions')).body.data).toHaveLength(1);
  });

  it('filters by reason and exact address, with cursor walks both ways', async () => {
    await using t = await startTestApp();
    const { store, suppressions } = t.mailroom.services;
    for (let i = 0; i < 3; i++) await t.api.post('/v1/suppressions', { email: `m${i}@example.com` });
    for (let i = 0; i < 3; i++) {
      await store.write((tx) => suppressions.addFromBounce(tx, t.workspaceId, `hb${i}@example.com`, 'hard_bounce'));
      await store.write((tx) => suppressions.addFromBounce(tx, t.workspaceId, `c${i}@example.com`, 'complaint'));
      const contact = (await t.api.post('/v1/contacts', { email: `u${i}@example.com` })).body;
      await t.api.post(`/v1/contacts/${contact.id}/unsubscribe`);
    }
    const all = (await t.api.get('/v1/suppressions?limit=100')).body.data;
    expect(all).toHaveLength(12);

    for (const reason of ['manual', 'hard_bounce', 'complaint', 'unsubscribe']) {
      const want = all.filter((s: { reason: string }) => s.reason === reason).map((s: { id: string }) => s.id);
      expect(want).toHaveLength(3);
      const p1 = (await t.api.get(`/v1/suppressions?reason=${reason}&limit=2`)).body;
      expect(p1.has_more).toBe(true);
      const p2 = (await t.api.get(`/v1/suppressions?reason=${reason}&limit=2&starting_after=${p1.next_cursor}`)).body;
      expect(p2.has_more).toBe(false);
      expect([...p1.data, ...p2.data].map((s: { id: string }) => s.id)).toEqual(want);
      const back = (await t.api.get(`/v1/suppressions?reason=${reason}&limit=2&ending_before=${p1.next_cursor}`)).body;
      expect(back.data.map((s: { id: string }) => s.id)).toEqual(want.slice(0, 1));
      expect(back.has_more).toBe(false);
    }
    const one = (await t.api.get(`/v1/suppressions?email=${encodeURIComponent('HB1@example.com')}`)).body.data;
    expect(one).toMatchObject([{ email: 'hb1@example.com', reason: 'hard_bounce' }]);
    // Exact, not partial.
    expect((await t.api.get('/v1/suppressions?email=hb1')).body.data).toEqual([]);
    expect((await t.api.get('/v1/suppressions?reason=spam')).status).toBe(400);
    expect((await t.api.get('/v1/suppressions?starting_after=xyz')).status).toBe(400);
  });

  it('lifts a suppression by id or by URL-encoded address', async () => {
    await using t = await startTestApp();
    const a = (await t.api.post('/v1/suppressions', { email: 'a+tag@example.com' })).body;
    const b = (await t.api.post('/v1/suppressions', { email: 'b@example.com' })).body;
    expect((await t.api.delete(`/v1/suppressions/${a.id}`)).status).toBe(204);
    expect((await t.api.delete(`/v1/suppressions/${a.id}`)).status).toBe(404);
    expect((await t.api.delete(`/v1/suppressions/${encodeURIComponent('B@Example.com')}`)).status).toBe(204);
    expect((await t.api.delete(`/v1/suppressions/${encodeURIComponent('b@example.com')}`)).status).toBe(404);
    expect((await t.api.delete(`/v1/suppressions/${b.id}`)).status).toBe(404);
    // An address that looks like an id is still an address.
    const odd = (await t.api.post('/v1/suppressions', { email: 'sup_x@example.com' })).body;
    expect((await t.api.delete('/v1/suppressions/sup_x@example.com')).status).toBe(204);
    expect((await t.api.delete(`/v1/suppressions/${odd.id}`)).status).toBe(404);
    expect((await t.api.get('/v1/suppressions')).body.data).toEqual([]);
    const { check } = t.mailroom.services.suppressions;
    expect(await check(t.workspaceId, ['a+tag@example.com', 'b@example.com'])).toEqual(new Map());
  });

  it('hard bounces and complaints suppress the address and clean its contact; the first reason is kept', async () => {
    await using t = await startTestApp();
    const { store, suppressions } = t.mailroom.services;
    const hb = (await t.api.post('/v1/contacts', { email: 'hb@example.com' })).body;
    const cp = (await t.api.post('/v1/contacts', { email: 'cp@example.com' })).body;
    const un = (await t.api.post('/v1/contacts', { email: 'un@example.com' })).body;
    await t.api.post(`/v1/contacts/${un.id}/unsubscribe`);

    await store.write(async (tx) => {
      await suppressions.addFromBounce(tx, t.workspaceId, 'HB@example.com', 'hard_bounce');
      await suppressions.addFromBounce(tx, t.workspaceId, ' cp@example.com', 'complaint');
      await suppressions.addFromBounce(tx, t.workspaceId, 'un@example.com', 'complaint');
      await suppressions.addFromBounce(tx, t.workspaceId, 'nocontact@example.com', 'hard_bounce');
    });
    expect((await t.api.get(`/v1/contacts/${hb.id}`)).body.status).toBe('cleaned');
    expect((await t.api.get(`/v1/contacts/${cp.id}`)).body.status).toBe('cleaned');
    expect((await t.api.get(`/v1/contacts/${un.id}`)).body.status).toBe('cleaned');

    const found = await suppressions.check(t.workspaceId, ['hb@example.com', 'CP@example.com', 'un@example.com', 'nocontact@example.com', 'free@example.com']);
    expect(Object.fromEntries(found)).toEqual({
      'hb@example.com': 'hard_bounce', 'cp@example.com': 'complaint', 'un@example.com': 'unsubscribe', 'nocontact@example.com': 'hard_bounce',
    });
    // An unsubscribe of a cleaned contact leaves it cleaned.
    expect((await t.api.post(`/v1/contacts/${hb.id}/unsubscribe`)).body.status).toBe('cleaned');
  });

  it('make a send skip the suppressed recipient with a failed event naming the reason', async () => {
    await using t = await startTestApp();
    await t.seed.activeDomain('sender.example');
    await t.api.post('/v1/suppressions', { email: 'Blocked@Remote.example' });
    const sent = await t.api.post('/v1/emails', { from: 'a@sender.example', to: ['ok@remote.example', 'blocked@remote.example'], subject: 'Hi', text: 'x' });
    expect(sent.status).toBe(201);
    const deadline = Date.now() + 5_000;
    let failed: Array<{ data: Record<string, unknown> }> = [];
    while (Date.now() < deadline && failed.length === 0) {
      const events = (await t.api.get(`/v1/emails/${sent.body.id}/events`)).body.data as Array<{ type: string; data: Record<string, unknown> }>;
      failed = events.filter((e) => e.type === 'email.failed');
      if (failed.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(failed).toHaveLength(1);
    expect(failed[0].data).toMatchObject({ to: 'blocked@remote.example', suppression_reason: 'manual' });
  });

  it('are workspace-wide and private to their workspace', async () => {
    await using t = await startTestApp();
    const other = await t.seed.workspace();
    const them = t.api.as((await t.seed.key({ workspaceId: other.id })).token);
    const mine = (await t.api.post('/v1/suppressions', { email: 'x@example.com' })).body;

    expect((await them.get('/v1/suppressions')).body.data).toEqual([]);
    expect((await them.delete(`/v1/suppressions/${mine.id}`)).status).toBe(404);
    expect((await them.delete('/v1/suppressions/x@example.com')).status).toBe(404);
    expect(await t.mailroom.services.suppressions.check(other.id, ['x@example.com'])).toEqual(new Map());
    expect((await them.post('/v1/suppressions', { email: 'x@example.com' })).status).toBe(201);
    expect((await t.api.get('/v1/suppressions')).body.data).toEqual([mine]);
  });

  it('answer checks made at the same moment each for its own workspace and addresses', async () => {
    await using t = await startTestApp();
    const other = await t.seed.workspace();
    const them = t.api.as((await t.seed.key({ workspaceId: other.id })).token);
    for (const email of ['a1@example.com', 'shared@example.com']) await t.api.post('/v1/suppressions', { email });
    for (const email of ['b1@example.com', 'shared@example.com']) await them.post('/v1/suppressions', { email });
    const { suppressions } = t.mailroom.services;
    const checks = await Promise.all([
      suppressions.check(t.workspaceId, ['a1@example.com', 'b1@example.com', 'ok@example.com']),
      suppressions.check(other.id, ['A1@Example.com', ' b1@example.com']),
      suppressions.check(t.workspaceId, ['shared@example.com']),
      suppressions.check(other.id, []),
    ]);
    expect(checks).toEqual([
      new Map([['a1@example.com', 'manual']]), new Map([['b1@example.com', 'manual']]), new Map([['shared@example.com', 'manual']]), new Map(),
    ]);
  });

  it('needs the suppressions scopes', async () => {
    await using t = await startTestApp();
    const reader = t.api.as((await t.seed.key({ scopes: ['suppressions:read'] })).token);
    const contactsOnly = t.api.as((await t.seed.key({ scopes: ['contacts:read', 'contacts:write'] })).token);
    expect((await reader.get('/v1/suppressions')).status).toBe(200);
    expect((await reader.post('/v1/suppressions', { email: 'a@example.com' })).status).toBe(403);
    expect((await reader.delete('/v1/suppressions/a@example.com')).status).toBe(403);
    expect((await contactsOnly.get('/v1/suppressions')).status).toBe(403);
  });
});
