import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadContract } from '../../src/contract/contract.js';
import { SENDING_ENV, type ApiClient } from '../helpers/app.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { eventually, inboundDomain, sendRaw, startSmtpTestApp, type SmtpTestApp } from '../helpers/smtp-app.js';

// Every operation of the contract that names a record, called by another
// workspace with the ids of this one's records: each is 404, and afterwards
// every record reads as it did before. The operations are taken from the
// contract itself, so one added later is swept too (or the test says which
// id it lacks).

const DOMAIN = 'owner.test';
const PNG = Buffer.from('not really a picture').toString('base64');

/** Bodies the other workspace sends: valid on their own, so only the foreign id can refuse them. */
const BODIES: Record<string, unknown> = {
  updateBroadcast: { name: 'Taken over' },
  previewBroadcastAudience: {},
  previewBroadcast: { contact_id: 'ct_none' },
  sendBroadcastTest: { to: ['probe@elsewhere.test'] },
  sendBroadcast: {},
  updateContact: { name: 'Taken over' },
  unsubscribeContact: {},
  updateDomain: { open_tracking: true },
  updateEmail: { scheduled_at: 'in 2 hours' },
  updateTemplate: { name: 'Taken over' },
  publishTemplate: {},
  duplicateTemplate: {},
  renderTemplate: {},
  updateWebhook: { enabled: false },
};

/** Operations that name no record of another workspace by design. */
const NOT_BY_ID = new Set([
  // An address, not an id: the other workspace upserts a contact of its own.
  'upsertContactByEmail',
]);

describe('workspace isolation, every operation', () => {
  let dns: TestDns;
  let t: SmtpTestApp;

  beforeAll(async () => {
    dns = await startDns([]);
    t = await startSmtpTestApp({ env: { ...SENDING_ENV, MAILROOM_DNS_SERVERS: dns.server } });
  });
  afterAll(async () => {
    await t?.close();
    await dns?.stop();
  });

  async function created(res: Promise<{ status: number; body: any }>) {
    const r = await res;
    if (r.status >= 300) throw new Error(`seeding failed: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }

  it('answers 404 to every operation that names another workspace\'s record, and changes none of them', async () => {
    const a = t.api;
    const domain = await inboundDomain(t, DOMAIN);
    const hook = await created(a.post('/v1/webhooks', { url: 'https://hooks.owner.test/in', event_types: ['email.queued', 'email.scheduled', 'email.received'] }));
    const tag = await created(a.post('/v1/tags', { name: 'customers' }));
    const contact = await created(a.post('/v1/contacts', { email: 'kim@customer.test', name: 'Kim', tags: ['customers'] }));
    const template = await created(a.post('/v1/templates', { name: 'Welcome', alias: 'welcome', subject: 'Hi', html: '<p>Hello</p>' }));
    await created(a.post(`/v1/templates/${template.id}/publish`, {}));
    const broadcast = await created(a.post('/v1/broadcasts', {
      name: 'News', from: `news@${DOMAIN}`, subject: 'News', html: '<p>News</p>', audience: { tag_ids: [tag.id] },
    }));
    const upload = await created(a.post('/v1/attachments', { filename: 'c.png', content: PNG }));
    await created(a.post('/v1/suppressions', { email: 'gone@customer.test' }));
    const key = await created(a.post('/v1/api-keys', { name: 'second' }));
    const sent = await created(a.post('/v1/emails', { from: `news@${DOMAIN}`, to: 'kim@customer.test', subject: 'Sent', text: 'Hi' }));
    const scheduled = await created(a.post('/v1/emails', {
      from: `news@${DOMAIN}`, to: 'kim@customer.test', subject: 'Later', text: 'Hi', scheduled_at: 'in 1 hour',
      attachments: [{ filename: 'a.png', content: PNG }],
    }));
    const reply = await new MailComposer({
      from: 'kim@customer.test', to: `news@${DOMAIN}`, subject: 'Re: Sent', text: 'Thanks', inReplyTo: sent.message_id,
      attachments: [{ filename: 'b.png', content: Buffer.from(PNG, 'base64') }],
    }).compile().build();
    await sendRaw(t.mxPort, { from: 'kim@customer.test', to: [`news@${DOMAIN}`] }, reply);
    const inbound = await eventually(async () => {
      const first = (await a.get('/v1/inbound?limit=1')).body.data[0];
      return first?.status === 'processed' ? first : undefined;
    }, 10_000, 'the reply to be processed');
    expect(inbound.in_reply_to_email_id).toBe(sent.id);
    await t.mailroom.services.webhookDispatcher.drain();
    const delivery = (await a.get(`/v1/webhooks/${hook.id}/deliveries?limit=1`)).body.data[0];
    expect(delivery).toBeDefined();
    const event = (await a.get(`/v1/events?email_id=${sent.id}&limit=1`)).body.data[0];
    expect(event).toBeDefined();

    const ids: Record<string, string> = {
      broadcast_id: broadcast.id, contact_id: contact.id, tag_id: tag.id, domain_id: domain.id, email_id: scheduled.id,
      index: '0', event_id: event.id, inbound_id: inbound.id, suppression: 'gone@customer.test', template_id: template.id,
      version: '1', webhook_id: hook.id, delivery_id: delivery.id, key_id: key.id,
    };

    // What the owner sees of each record, before and after.
    const views = [
      `/v1/domains/${domain.id}`, `/v1/webhooks/${hook.id}`, `/v1/tags`,
      `/v1/contacts/${contact.id}`, `/v1/templates/${template.id}`, `/v1/templates/${template.id}/versions`,
      `/v1/broadcasts/${broadcast.id}`, `/v1/suppressions`, `/v1/api-keys/${key.id}`, `/v1/emails/${scheduled.id}`,
      `/v1/inbound/${inbound.id}`, `/v1/templates?name=Welcome`,
    ];
    const look = async () => [
      ...await Promise.all(views.map(async (path) => [path, (await a.get(path)).body])),
      // Attempts move the queue's times and the deliveries' counts; not its holds, nor which deliveries there are.
      (await a.get(`/v1/webhooks/${hook.id}/deliveries`)).body.data.map((d: { id: string }) => d.id),
      (await a.get('/v1/queue')).body.data.map((d: { domain: string; held: boolean }) => [d.domain, d.held]),
    ];
    const before = await look();

    const other = await t.seed.workspace();
    const them: ApiClient = a.as((await t.seed.key({ workspaceId: other.id })).token);
    const answers: string[] = [];
    const paths = loadContract().document.paths as Record<string, Record<string, { operationId?: string; requestBody?: unknown }>>;
    // Every operation with the owner's ids, then those naming a template with its alias.
    for (const [given, only] of [[ids, /\{/], [{ ...ids, template_id: 'welcome' }, /\{template_id\}/]] as const) {
      for (const [pathTemplate, item] of Object.entries(paths)) {
        if (!only.test(pathTemplate)) continue;
        for (const [method, operation] of Object.entries(item)) {
          const id = operation.operationId;
          if (!id || NOT_BY_ID.has(id)) continue;
          const path = '/v1' + pathTemplate.replace(/\{([^}]+)\}/g, (_, name: string) => {
            if (!(name in given)) throw new Error(`no record of the owner for {${name}} of ${id}`);
            return encodeURIComponent(given[name as keyof typeof given]);
          });
          const body = operation.requestBody ? BODIES[id] ?? {} : undefined;
          const res = await them.request(method.toUpperCase(), path, body === undefined ? {} : { body });
          answers.push(`${id} ${path} ${res.status}${res.status === 404 ? '' : ` ${JSON.stringify(res.body)}`}`);
        }
      }
    }
    expect(answers.filter((line) => !/ 404$/.test(line))).toEqual([]);

    // A path that pairs a record of its own with one of the owner's.
    const ownContact = await created(them.post('/v1/contacts', { email: 'lee@elsewhere.test' }));
    const ownHook = await created(them.post('/v1/webhooks', { url: 'https://hooks.elsewhere.test/in', event_types: ['email.sent'] }));
    const mixed = [
      await them.post(`/v1/contacts/${ownContact.id}/tags/${tag.id}`),
      await them.delete(`/v1/contacts/${ownContact.id}/tags/${tag.id}`),
      await them.get(`/v1/webhooks/${ownHook.id}/deliveries/${delivery.id}`),
      await them.post(`/v1/webhooks/${ownHook.id}/deliveries/${delivery.id}/replay`),
    ];
    expect(mixed.map((r) => r.status)).toEqual([404, 404, 404, 404]);

    // Ids given in bodies: another workspace's is answered as one that names nothing.
    const theirTest: ApiClient = a.as((await t.seed.key({ workspaceId: other.id, mode: 'test' })).token);
    const own = await created(them.post('/v1/broadcasts', { name: 'Theirs', from: 'x@elsewhere.test', subject: 'S', html: '<p>S</p>' }));
    const byBodyId: Array<[string, (id: string) => Promise<{ status: number; body: any }>, string]> = [
      ['queue retry', (id) => them.post('/v1/queue/retry', { email_id: id }), sent.id],
      ['email from a template', (id) => theirTest.post('/v1/emails', { from: 'x@elsewhere.test', to: 'y@elsewhere.test', template: { id } }), template.id],
      ['email from a template alias', (id) => theirTest.post('/v1/emails', { from: 'x@elsewhere.test', to: 'y@elsewhere.test', template: { id } }), 'welcome'],
      ['email with an upload', (id) => theirTest.post('/v1/emails', {
        from: 'x@elsewhere.test', to: 'y@elsewhere.test', subject: 'S', text: 'T', attachments: [{ attachment_id: id }],
      }), upload.id],
      ['broadcast preview', (id) => them.post(`/v1/broadcasts/${own.id}/preview`, { contact_id: id }), contact.id],
      ['broadcast audience', (id) => them.post(`/v1/broadcasts/${own.id}/audience`, { audience: { tag_ids: [id] } }), tag.id],
      ['broadcast template', (id) => them.patch(`/v1/broadcasts/${own.id}`, { template: { id } }), template.id],
    ];
    for (const [what, call, ownerId] of byBodyId) {
      const [foreign, madeUp] = [await call(ownerId), await call(ownerId.replace(/.$/, (c) => (c === 'x' ? 'y' : 'x')))];
      expect([what, foreign.status, foreign.body.error?.code], what).toEqual([what, madeUp.status, madeUp.body.error?.code]);
      expect(foreign.status, what).toBeGreaterThanOrEqual(400);
    }
    for (const filter of [`/v1/events?email_id=${sent.id}`, `/v1/events?domain_id=${domain.id}`, `/v1/inbound?in_reply_to_email_id=${sent.id}`,
      `/v1/inbound?domain_id=${domain.id}`, `/v1/emails?domain_id=${domain.id}`, `/v1/emails?template_id=${template.id}`,
      `/v1/emails?broadcast_id=${broadcast.id}`, `/v1/contacts?tag_id=${tag.id}`, `/v1/queue/items?domain=customer.test`]) {
      const res = await them.get(filter);
      expect(res.status === 200 ? res.body.data : res.status, filter).toEqual([]);
    }

    expect(await look()).toEqual(before);
  }, 60_000);
});
