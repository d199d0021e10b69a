import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordRecipientOutcomes } from '../../src/emails/index.js';
import { returnPathFor } from '../../src/inbound/return-path.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { failureReport } from '../helpers/dsn.js';
import { directDeliveryEnv, startScriptedMx, type ScriptedMx } from '../helpers/mx.js';
import { eventually, sendRaw, startSmtpTestApp, type SmtpTestApp } from '../helpers/smtp-app.js';

// A recipient's outcome has one rule, whoever learns it: a 550 the MX gives
// during the SMTP transaction, and a DSN that comes back after the MX took
// the message, give the same recipient status, the same email.bounced data,
// the same suppression and the same email status.

const MX_HOST = '127.0.0.4';
const DOMAIN = 'acme.test';
const RECIPIENT = 'ghost@gone.test';
const REFUSAL = `550 5.1.1 <${RECIPIENT}>: Recipient address rejected: User unknown in local recipient table`;

/** The DSN gone.test's MX sends when it took a message and found no such mailbox afterwards. */
const dsn = (returnPath: string) => failureReport({ mta: 'mx.gone.test', to: returnPath, recipient: RECIPIENT, diagnostic: REFUSAL });

describe('a bounce learnt at SMTP time and from a DSN', () => {
  let dns: TestDns;
  let mx: ScriptedMx;
  let t: SmtpTestApp;
  let refusing = true;

  beforeAll(async () => {
    dns = await startDns([{ type: 'MX', name: 'gone.test', exchange: 'mx.gone.test', priority: 10 }, { type: 'A', name: 'mx.gone.test', address: MX_HOST }]);
    mx = await startScriptedMx({ host: MX_HOST, reply: (stage, ctx) => (refusing && stage === 'rcpt' && ctx.address === RECIPIENT ? REFUSAL : undefined) });
    t = await startSmtpTestApp({ env: directDeliveryEnv(dns.server, mx.port) });
    await t.seed.activeDomain(DOMAIN);
  });
  afterAll(async () => {
    await t?.close();
    await mx?.stop();
    await dns?.stop();
  });

  async function sendAndSettle(): Promise<string> {
    const res = await t.api.post('/v1/emails', { from: `Ann <ann@${DOMAIN}>`, to: RECIPIENT, subject: 'Welcome', text: 'Hello!' });
    expect(res.status).toBe(201);
    const id = res.body.id as string;
    await eventually(async () => {
      const { status } = (await t.api.get(`/v1/emails/${id}`)).body;
      return status === 'delivered' || status === 'failed' ? status : undefined;
    }, 15_000, `email ${id} to settle`);
    return id;
  }

  /** What the API shows of the bounce: the email's and its recipient's status, the event's data and the suppression. */
  async function outcome(id: string) {
    const email = (await t.api.get(`/v1/emails/${id}`)).body;
    const events = (await t.api.get(`/v1/emails/${id}/events`)).body.data as Array<{ type: string; data: Record<string, unknown> }>;
    const suppression = (await t.api.get(`/v1/suppressions?email=${encodeURIComponent(RECIPIENT)}`)).body.data[0];
    const { status, smtp_code, detail } = email.recipients[0];
    return {
      email: email.status,
      recipient: { status, smtp_code, detail },
      bounced: events.filter((e) => e.type === 'email.bounced').map((e) => e.data),
      suppression: suppression && { email: suppression.email, reason: suppression.reason },
    };
  }

  it('records the same outcome for both', async () => {
    const refused = await sendAndSettle();
    const atSmtpTime = await outcome(refused);
    expect(atSmtpTime).toMatchObject({
      email: 'failed',
      recipient: { status: 'bounced', smtp_code: 550, detail: REFUSAL },
      bounced: [expect.objectContaining({ bounce_type: 'hard', bounce_subtype: 'no_mailbox', enhanced_status_code: '5.1.1' })],
      suppression: { email: RECIPIENT, reason: 'hard_bounce' },
    });

    // The address is taken off the list, and the MX now takes the message, to bounce it later.
    expect((await t.api.delete(`/v1/suppressions/${encodeURIComponent(RECIPIENT)}`)).status).toBe(204);
    refusing = false;
    const accepted = await sendAndSettle();
    expect((await outcome(accepted)).email).toBe('delivered');

    const returnPath = returnPathFor(t.mailroom.services.keyring.returnPathKey, accepted, RECIPIENT, `bounces.${DOMAIN}`);
    const reply = await sendRaw(t.mxPort, { from: '', to: [returnPath] }, dsn(returnPath));
    expect(reply).toMatch(/^250 /);
    await eventually(async () => ((await outcome(accepted)).email === 'failed' ? true : undefined), 10_000, 'the DSN to be processed');
    expect(await outcome(accepted)).toEqual(atSmtpTime);
  });
});

describe('an outcome that comes too late', () => {
  it('changes nothing once a report has settled the recipient, and adds no event', async () => {
    // A long send delay keeps the app's own worker away: the outcomes are recorded by hand, in the order of a race.
    await using t = await startTestApp({ env: { MAILROOM_SEND_DELAY: '600' } });
    await t.seed.activeDomain(DOMAIN);
    const id = (await t.api.post('/v1/emails', { from: `ann@${DOMAIN}`, to: RECIPIENT, subject: 'Hi', text: 'x' })).body.id as string;
    const { store, suppressions } = t.mailroom.services;
    // Handed to delivery, as the worker's claim does.
    await store.write((tx) => tx.updateTable('emails').set({ status: 'sent' }).where('id', '=', id).execute());
    const [recipient] = await store.db.selectFrom('email_recipients').select('id').where('email_id', '=', id).execute();
    const record = (outcome: Parameters<typeof recordRecipientOutcomes>[2][number]['outcomes'][number]) =>
      store.write((tx) => recordRecipientOutcomes(tx, suppressions, [{ emailId: id, outcomes: [outcome] }], t.clock.now()));
    const bounce = { bounce_type: 'hard', bounce_subtype: 'no_mailbox', recommended_action: 'suppress_recipient' } as const;

    await record({ kind: 'bounced', recipientId: recipient.id, address: RECIPIENT, smtpCode: 550, enhancedStatusCode: '5.1.1', bounce, provider: 'unknown', response: REFUSAL });
    // The attempt that was under way when the report came, recorded after it.
    await record({ kind: 'deferred', recipientId: recipient.id, address: RECIPIENT, smtpCode: 451, response: '451 later', attempt: 1, nextAttemptAt: t.clock.now() + 60_000 });
    await record({ kind: 'delivered', recipientId: recipient.id, address: RECIPIENT, smtpCode: 250, mxHost: 'mx.gone.test', response: '250 ok' });

    const email = (await t.api.get(`/v1/emails/${id}`)).body;
    expect(email.status).toBe('failed');
    expect(email.recipients[0]).toMatchObject({ status: 'bounced', smtp_code: 550, detail: REFUSAL });
    const types = (await t.api.get(`/v1/emails/${id}/events`)).body.data.map((e: { type: string }) => e.type);
    expect(types.filter((type: string) => ['email.bounced', 'email.delayed', 'email.delivered'].includes(type))).toEqual(['email.bounced']);
  });
});

/**
 * An MX that answers in the bytes given (smtp-server makes a NUL a space):
 * the RCPT reply by recipient, the reply to the end of data, 250 otherwise.
 * Counts the messages it took.
 */
async function rawMx(host: string, replies: { rcpt: (address: string) => string; endOfData: string }) {
  const sockets = new Set<net.Socket>();
  let messages = 0;
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    const reply = (line: string) => socket.write(Buffer.from(`${line}\r\n`, 'latin1'));
    let unread = '';
    let inData = false;
    reply('220 mx ready');
    socket.on('data', (chunk: Buffer) => {
      const lines = (unread + chunk.toString('latin1')).split('\r\n');
      unread = lines.pop()!;
      for (const line of lines) {
        if (inData) {
          if (line !== '.') continue;
          inData = false;
          messages += 1;
          reply(replies.endOfData);
        } else if (/^RCPT TO:/i.test(line)) {
          reply(replies.rcpt(/<(.*)>/.exec(line)![1]));
        } else if (/^DATA/i.test(line)) {
          inData = true;
          reply('354 go on');
        } else if (/^QUIT/i.test(line)) {
          socket.end('221 bye\r\n');
        } else {
          reply('250 ok');
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    get messages() { return messages; },
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('replies worded oddly', () => {
  // PostgreSQL's text cannot hold U+0000: an outcome quoting the reply as it
  // came could not be written, and the row would stay leased and be sent again.
  const REFUSED = 'refused@far.test';
  const TAKEN = 'taken@far.test';
  const VERBOSE = 'verbose@far.test';
  const LONG_REFUSAL = [...Array.from({ length: 200 }, (_, i) => `550-5.1.1 line ${i} ${'x'.repeat(500)}`), '550 5.1.1 the end'].join('\r\n');
  let dns: TestDns;
  let mx: Awaited<ReturnType<typeof rawMx>>;
  let t: TestApp;

  beforeAll(async () => {
    dns = await startDns([{ type: 'MX', name: 'far.test', exchange: 'mx.far.test', priority: 10 }, { type: 'A', name: 'mx.far.test', address: '127.0.0.5' }]);
    mx = await rawMx('127.0.0.5', {
      rcpt: (address) => (address === REFUSED ? '550 5.1.1 no such\0user' : address === VERBOSE ? LONG_REFUSAL : '250 ok'),
      endOfData: '250 2.0.0 queued as\0 42',
    });
    t = await startTestApp({ env: directDeliveryEnv(dns.server, mx.port) });
    await t.seed.activeDomain(DOMAIN);
  });
  afterAll(async () => {
    await t?.close();
    await mx?.stop();
    await dns?.stop();
  });

  async function settle(to: string) {
    const id = (await t.api.post('/v1/emails', { from: `ann@${DOMAIN}`, to, subject: 'Hi', text: 'x' })).body.id as string;
    const email = await eventually(async () => {
      const body = (await t.api.get(`/v1/emails/${id}`)).body;
      return body.status === 'delivered' || body.status === 'failed' ? body : undefined;
    }, 10_000, `email ${id} to settle`);
    const events = (await t.api.get(`/v1/emails/${id}/events`)).body.data.map((e: { type: string }) => e.type);
    return { email, events };
  }

  it('records a 5xx to RCPT as a bounce, the NUL shown as U+FFFD', async () => {
    const { email, events } = await settle(REFUSED);
    expect(email.status).toBe('failed');
    expect(email.recipients[0]).toMatchObject({ status: 'bounced', smtp_code: 550, detail: '550 5.1.1 no such\uFFFDuser' });
    expect(events).toContain('email.bounced');
  });

  it('keeps the first 2,000 characters of a 100 KB refusal, not all of it for every recipient', async () => {
    const { email, events } = await settle(VERBOSE);
    expect(email.recipients[0]).toMatchObject({ status: 'bounced', smtp_code: 550 });
    expect(email.recipients[0].detail).toHaveLength(2000);
    expect(email.recipients[0].detail).toMatch(/^550-5\.1\.1 line 0 x+\n550-5\.1\.1 line 1 x+\n.*…$/s);
    expect(events).toContain('email.bounced');
  });

  it('records a 250 to the message as delivered, sent once, nothing left in the queue', async () => {
    const before = mx.messages;
    const { email, events } = await settle(TAKEN);
    expect(email.status).toBe('delivered');
    expect(email.recipients[0]).toMatchObject({ status: 'delivered', smtp_code: 250, detail: '250 2.0.0 queued as\uFFFD 42' });
    expect(events).toContain('email.delivered');
    expect(mx.messages - before).toBe(1);
    expect(await t.mailroom.services.store.db.selectFrom('outbound_queue').select('id').execute()).toEqual([]);
  });
});
