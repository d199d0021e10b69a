import { createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTagList } from '../../src/domains/tag-list.js';
import { startTestApp, type ApiClient, type TestApp } from '../helpers/app.js';

// The Domains API without DNS: creation, settings, listing, deletion rules and
// every 4xx. Verification against a DNS server is in domains-verify.test.ts.

describe('domains API', () => {
  let t: TestApp;
  let seq = 0;
  /** A fresh name per test, so tests do not depend on each other's domains. */
  const fresh = (label = 'd') => `${label}${++seq}.example.test`;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  const expect422 = async (res: Promise<{ status: number; body: any }>, param: string | undefined, code = 'validation_error') => {
    const { status, body } = await res;
    expect({ status, code: body.error.code, param: body.error.param }).toEqual({ status: 422, code, param });
  };

  describe('POST /v1/domains', () => {
    it('creates an unverified domain with its DKIM keys and the records to publish', async () => {
      const name = fresh('shop');
      const res = await t.api.post('/v1/domains', { name });
      expect(res.status).toBe(201);
      const d = res.body;
      expect(d).toMatchObject({
        object: 'domain', name, status: 'unverified', status_reason: null, region: 'local', return_path: 'bounces',
        open_tracking: false, click_tracking: false, tracking_subdomain: 'track', inbound_enabled: false, last_checked_at: null,
      });
      expect(d.id).toMatch(/^dom_/);
      const month = new Date().toISOString().slice(0, 7).replace('-', '');
      expect(d.records.map((r: any) => [r.record, r.type, r.name, r.required, r.status])).toEqual([
        ['DKIM', 'TXT', `mr${month}._domainkey.${name}`, true, 'pending'],
        ['DKIM_ED25519', 'TXT', `mr${month}e._domainkey.${name}`, false, 'pending'],
        ['SPF', 'TXT', `bounces.${name}`, true, 'pending'],
        ['MX_BOUNCE', 'MX', `bounces.${name}`, true, 'pending'],
        ['DMARC', 'TXT', `_dmarc.${name}`, false, 'pending'],
      ]);
      const byKind = Object.fromEntries(d.records.map((r: any) => [r.record, r]));
      expect(byKind.SPF.value).toBe('v=spf1 a:mx.mailroom.test ~all');
      expect(byKind.MX_BOUNCE).toMatchObject({ value: 'mx.mailroom.test', priority: 10 });
      expect(byKind.DKIM).not.toHaveProperty('priority');
      expect(parseTagList(byKind.DKIM.value)?.get('k')).toBe('rsa');
      expect(parseTagList(byKind.DKIM_ED25519.value)?.get('k')).toBe('ed25519');
      // The same domain read back is the same document.
      expect((await t.api.get(`/v1/domains/${d.id}`)).body).toEqual(d);
    });

    it('normalises the name: case, spaces, a trailing dot, and IDN to punycode', async () => {
      const a = await t.api.post('/v1/domains', { name: '  Mixed-Case.Example.TEST. ' });
      expect(a.status).toBe(201);
      expect(a.body.name).toBe('mixed-case.example.test');
      const b = await t.api.post('/v1/domains', { name: 'Bücher.example.test' });
      expect(b.status).toBe(201);
      expect(b.body.name).toBe('xn--bcher-kva.example.test');
      expect(b.body.records[0].name).toMatch(/\._domainkey\.xn--bcher-kva\.example\.test$/);
    });

    it('takes the return path, tracking and inbound settings, adding their records', async () => {
      const name = fresh();
      const { status, body } = await t.api.post('/v1/domains', {
        name, region: 'eu-1', return_path: 'Mail.Bounce', tracking_subdomain: 'links', open_tracking: true, click_tracking: false, inbound_enabled: true,
      });
      expect(status).toBe(201);
      expect(body).toMatchObject({ region: 'eu-1', return_path: 'mail.bounce', tracking_subdomain: 'links', open_tracking: true, inbound_enabled: true });
      const byKind = Object.fromEntries(body.records.map((r: any) => [r.record, r]));
      expect(byKind.SPF.name).toBe(`mail.bounce.${name}`);
      expect(byKind.MX_INBOUND).toMatchObject({ type: 'MX', name, value: 'mx.mailroom.test', priority: 10, required: false });
      // The public URL of the test server is an IP address, so the CNAME points at the host name.
      expect(byKind.TRACKING).toMatchObject({ type: 'CNAME', name: `links.${name}`, value: 'mx.mailroom.test', required: false });
    });

    it.each([
      ['an empty name', ''],
      ['blanks only', '   '],
      ['an IPv4 address', '127.0.0.1'],
      ['an IPv6 literal', '[::1]'],
      ['a bare IPv6 address', '2001:db8::1'],
      ['a single label', 'localhost'],
      ['a numeric last label', 'example.123'],
      ['a hex IPv4 in disguise', '0x7f.1'],
      ['a space', 'exa mple.test'],
      ['a leading hyphen', '-bad.example.test'],
      ['an empty label', 'a..example.test'],
      ['a label over 63 characters', `${'a'.repeat(64)}.test`],
      ['a URL', 'https://example.test/'],
      ['an address', 'me@example.test'],
      ['a wildcard', '*.example.test'],
      ['an underscore', 'bad_label.example.test'],
    ])('refuses %s with 422', async (_, name) => {
      await expect422(t.api.post('/v1/domains', { name }), 'name');
    });

    it.each([
      ['a missing name', {}, 'name'],
      ['a name that is not a string', { name: 42 }, 'name'],
      ['an unknown field', { name: 'x.example.test', dkim: 'mine' }, 'dkim'],
      ['a bad region', { name: 'x.example.test', region: 'EU West' }, 'region'],
      ['a boolean given as text', { name: 'x.example.test', open_tracking: 'yes' }, 'open_tracking'],
      ['a bad return path', { name: 'x.example.test', return_path: 'bad_label' }, 'return_path'],
      ['a return path given as the full name', { name: 'x.example.test', return_path: 'bounces.x.example.test' }, 'return_path'],
      ['an empty tracking subdomain', { name: 'x.example.test', tracking_subdomain: '' }, 'tracking_subdomain'],
      ['a tracking subdomain equal to the return path', { name: 'x.example.test', tracking_subdomain: 'bounces' }, 'tracking_subdomain'],
    ])('refuses %s with 422', async (_, body, param) => {
      await expect422(t.api.post('/v1/domains', body), param);
    });

    it('refuses malformed JSON with 400', async () => {
      const res = await t.api.request('POST', '/v1/domains', { rawBody: '{"name":', headers: { 'Content-Type': 'application/json' } });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_json');
    });

    it('refuses a name already in the workspace, in any spelling, but not in another workspace', async () => {
      const name = fresh();
      expect((await t.api.post('/v1/domains', { name })).status).toBe(201);
      await expect422(t.api.post('/v1/domains', { name: name.toUpperCase() + '.' }), 'name', 'already_exists');

      const other = await t.seed.workspace();
      const them = t.api.as((await t.seed.key({ workspaceId: other.id })).token);
      expect((await them.post('/v1/domains', { name })).status).toBe(201);
    });

    it('lets only one of two concurrent requests for the same name through', async () => {
      const name = fresh();
      const results = await Promise.all([t.api.post('/v1/domains', { name }), t.api.post('/v1/domains', { name })]);
      expect(results.map((r) => r.status).sort()).toEqual([201, 422]);
      expect(results.find((r) => r.status === 422)!.body.error.code).toBe('already_exists');
    });

    it('needs the domains:write scope', async () => {
      const reader = t.api.as((await t.seed.key({ scopes: ['domains:read'] })).token);
      const res = await reader.post('/v1/domains', { name: fresh() });
      expect(res.status).toBe(403);
      expect((await reader.get('/v1/domains')).status).toBe(200);
    });
  });

  describe('GET /v1/domains', () => {
    it('pages newest first and filters by status', async () => {
      const ws = await t.seed.workspace();
      const api = t.api.as((await t.seed.key({ workspaceId: ws.id })).token);
      const names = ['one.example.test', 'two.example.test', 'three.example.test'];
      for (const name of names) expect((await api.post('/v1/domains', { name })).status).toBe(201);
      const active = await t.seed.activeDomain('four.example.test', { workspaceId: ws.id });

      const seen: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 10; page++) {
        const res = await api.get(`/v1/domains?limit=2${cursor ? `&starting_after=${cursor}` : ''}`);
        expect(res.status).toBe(200);
        seen.push(...res.body.data.map((d: any) => d.name));
        cursor = res.body.next_cursor;
        if (!res.body.has_more) break;
      }
      expect(seen).toEqual(['four.example.test', ...names.reverse()]);

      const onlyActive = await api.get('/v1/domains?status=active');
      expect(onlyActive.body.data.map((d: any) => d.id)).toEqual([active.id]);
      const unverified = await api.get('/v1/domains?status=unverified');
      expect(unverified.body.data).toHaveLength(3);
      expect((await api.get('/v1/domains?status=verifying')).body).toEqual({ data: [], has_more: false });
    });

    it.each([
      ['an unknown status', '?status=pending', 'status'],
      ['a limit over 100', '?limit=101', 'limit'],
      ['a forged cursor', '?starting_after=abc', 'starting_after'],
    ])('refuses %s with 400', async (_, query, param) => {
      const res = await t.api.get(`/v1/domains${query}`);
      expect(res.status).toBe(400);
      expect(res.body.error.param).toBe(param);
    });
  });

  describe('PATCH /v1/domains/{id}', () => {
    it('changes tracking and inbound settings, and the records follow', async () => {
      const { body: d } = await t.api.post('/v1/domains', { name: fresh() });
      const res = await t.api.patch(`/v1/domains/${d.id}`, { click_tracking: true, tracking_subdomain: 'Clicks', inbound_enabled: true });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ open_tracking: false, click_tracking: true, tracking_subdomain: 'clicks', inbound_enabled: true });
      expect(res.body.records.map((r: any) => r.record)).toEqual(['DKIM', 'DKIM_ED25519', 'SPF', 'MX_BOUNCE', 'MX_INBOUND', 'DMARC', 'TRACKING']);
      expect(res.body.records.at(-1).name).toBe(`clicks.${d.name}`);

      // Fields left out keep their value; turning tracking off drops the CNAME.
      const off = await t.api.patch(`/v1/domains/${d.id}`, { click_tracking: false });
      expect(off.body).toMatchObject({ click_tracking: false, tracking_subdomain: 'clicks', inbound_enabled: true });
      expect(off.body.records.map((r: any) => r.record)).not.toContain('TRACKING');
      expect((await t.api.patch(`/v1/domains/${d.id}`, {})).body).toEqual(off.body);
    });

    it.each([
      ['a boolean given as a number', { open_tracking: 1 }, 'open_tracking'],
      ['null', { inbound_enabled: null }, 'inbound_enabled'],
      ['an empty tracking subdomain', { tracking_subdomain: '' }, 'tracking_subdomain'],
      ['a tracking subdomain with an underscore', { tracking_subdomain: 'bad_label' }, 'tracking_subdomain'],
      ['a tracking subdomain with a space', { tracking_subdomain: 'my links' }, 'tracking_subdomain'],
      ['the return path as tracking subdomain', { tracking_subdomain: 'Bounces' }, 'tracking_subdomain'],
      ['a field that is not a setting', { name: 'other.example.test' }, 'name'],
    ])('refuses %s with 422', async (_, body, param) => {
      const { body: d } = await t.api.post('/v1/domains', { name: fresh() });
      await expect422(t.api.patch(`/v1/domains/${d.id}`, body), param);
      expect((await t.api.get(`/v1/domains/${d.id}`)).body).toEqual(d);
    });
  });

  describe('DELETE /v1/domains/{id}', () => {
    it('deletes an unverified domain', async () => {
      const { body: d } = await t.api.post('/v1/domains', { name: fresh() });
      const res = await t.api.delete(`/v1/domains/${d.id}`);
      expect(res.status).toBe(204);
      expect(res.body).toBeUndefined();
      expect((await t.api.get(`/v1/domains/${d.id}`)).status).toBe(404);
      // The name is free again.
      expect((await t.api.post('/v1/domains', { name: d.name })).status).toBe(201);
    });

    it('refuses to delete a domain with emails still to be sent', async () => {
      const { body: d } = await t.api.post('/v1/domains', { name: fresh() });
      const { db } = t.mailroom.services.store;
      const now = Date.now();
      // An email row as the emails area stores one, written directly so the
      // rule is tested on its own.
      await db.insertInto('emails').values({
        id: 'em_pendingdomaintest0000000000', workspace_id: t.workspaceId, domain_id: d.id, mode: 'live',
        from_address: `a@${d.name}`, from_domain: d.name, to_list: '["b@remote.test"]', cc_list: '[]', bcc_list: '[]',
        reply_to_list: '[]', subject: 'Later', tags: '[]', attachments: '[]',
        status: 'scheduled', scheduled_at: now + 3600_000, sent_at: null, message_id: `<x@${d.name}>`, resent_from: null,
        search_to: 'b@remote.test', search_from: `a@${d.name}`, search_subject: 'later', created_at: now, updated_at: now,
      }).execute();
      await expect422(t.api.delete(`/v1/domains/${d.id}`), undefined, 'domain_in_use');

      await db.updateTable('emails').set({ status: 'pending' }).where('domain_id', '=', d.id).execute();
      await expect422(t.api.delete(`/v1/domains/${d.id}`), undefined, 'domain_in_use');

      await db.updateTable('emails').set({ status: 'sent' }).where('domain_id', '=', d.id).execute();
      expect((await t.api.delete(`/v1/domains/${d.id}`)).status).toBe(204);
    });

    it('refuses to delete the only active domain of the workspace', async () => {
      const ws = await t.seed.workspace();
      const api = t.api.as((await t.seed.key({ workspaceId: ws.id })).token);
      const first = await t.seed.activeDomain('first.example.test', { workspaceId: ws.id });
      await expect422(api.delete(`/v1/domains/${first.id}`), undefined, 'last_active_domain');

      const second = await t.seed.activeDomain('second.example.test', { workspaceId: ws.id });
      expect((await api.delete(`/v1/domains/${first.id}`)).status).toBe(204);
      await expect422(api.delete(`/v1/domains/${second.id}`), undefined, 'last_active_domain');
      // An unverified domain next to it does not count.
      const { body: other } = await api.post('/v1/domains', { name: 'third.example.test' });
      await expect422(api.delete(`/v1/domains/${second.id}`), undefined, 'last_active_domain');
      expect((await api.delete(`/v1/domains/${other.id}`)).status).toBe(204);
    });
  });

  describe('unknown ids and other workspaces', () => {
    let mine: any;
    let them: ApiClient;
    beforeAll(async () => {
      mine = (await t.api.post('/v1/domains', { name: fresh() })).body;
      const other = await t.seed.workspace();
      them = t.api.as((await t.seed.key({ workspaceId: other.id })).token);
    });

    const calls = (api: () => ApiClient, id: () => string) => [
      ['GET', () => api().get(`/v1/domains/${id()}`)],
      ['PATCH', () => api().patch(`/v1/domains/${id()}`, { open_tracking: true })],
      ['DELETE', () => api().delete(`/v1/domains/${id()}`)],
      ['POST verify', () => api().post(`/v1/domains/${id()}/verify`)],
    ] as const;

    it.each(calls(() => t.api, () => 'dom_00000000000000000000000000'))('%s of an unknown id is 404', async (_, call) => {
      const res = await call();
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    });

    it.each(calls(() => them, () => mine.id))('%s of another workspace\'s domain is 404', async (_, call) => {
      const res = await call();
      expect(res.status).toBe(404);
      expect((await t.api.get(`/v1/domains/${mine.id}`)).body).toEqual(mine);
    });

    it('lists nothing of another workspace', async () => {
      expect((await them.get('/v1/domains')).body.data.map((d: any) => d.id)).not.toContain(mine.id);
    });
  });

  describe('the senders port', () => {
    it('finds a domain by any spelling of its name, with a working DKIM key kept sealed at rest', async () => {
      const d = await t.seed.activeDomain('Sender.Example.Test');
      const senders = t.mailroom.services.domains.senders();
      const found = await senders.find(t.workspaceId, 'SENDER.example.test.');
      expect(found).toMatchObject({
        id: d.id, name: 'sender.example.test', status: 'active', returnPathDomain: 'bounces.sender.example.test',
        openTracking: false, clickTracking: false, trackingHost: null,
      });
      // Until its record is seen published, the Ed25519 key is left out.
      expect(found!.dkim.map((k) => [k.selector, k.algorithm])).toEqual([[d.records[0].name.split('.')[0], 'rsa']]);

      const spki = Buffer.from(parseTagList(d.records[0].value)!.get('p')!, 'base64');
      const data = Buffer.from('header hash input');
      const signature = sign('sha256', data, createPrivateKey(found!.dkim[0].privateKeyPem));
      expect(verify('sha256', data, createPublicKey({ key: spki, format: 'der', type: 'spki' }), signature)).toBe(true);

      const row = await t.mailroom.services.store.db.selectFrom('domains').select('dkim_keys').where('id', '=', d.id).executeTakeFirstOrThrow();
      expect(row.dkim_keys).not.toContain('PRIVATE KEY');
      expect(JSON.parse(row.dkim_keys).map((k: any) => k.private_key)).toEqual([expect.stringMatching(/^v1\./), expect.stringMatching(/^v1\./)]);
    });

    it('finds nothing for an unknown name, a bad name, or another workspace', async () => {
      await t.seed.activeDomain('mine-only.example.test');
      const senders = t.mailroom.services.domains.senders();
      expect(await senders.find(t.workspaceId, 'nobody.example.test')).toBeUndefined();
      expect(await senders.find(t.workspaceId, '127.0.0.1')).toBeUndefined();
      const other = await t.seed.workspace();
      expect(await senders.find(other.id, 'mine-only.example.test')).toBeUndefined();
    });
  });
});
