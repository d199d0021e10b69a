import { generateKeyPairSync } from 'node:crypto';
import { promises as dns } from 'node:dns';
import net from 'node:net';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  composeMessage,
  deliverToDomain,
  deliverViaRelay,
  DkimSigner,
  SmtpPool,
  type DirectDeps,
  type DomainDelivery,
} from '../../../src/delivery/index.js';
import { startDns, type DnsRecord, type TestDns } from '../../helpers/dns.js';
import { startScriptedMx, type ScriptedMx, type ScriptedMxOptions } from '../../helpers/mx.js';

const TIMEOUTS = { connectMs: 2_000, greetingMs: 5_000, commandMs: 5_000, dataBlockMs: 5_000, endOfDataMs: 5_000 };
/** Listens nowhere: connections to it are refused. */
const DEAD_ADDRESS = '127.0.0.250';

const dkimKeys = generateKeyPairSync('rsa', { modulusLength: 2048 });
const dkimPem = dkimKeys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const dkimTxt = `v=DKIM1; k=rsa; p=${dkimKeys.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`;

let testDns: TestDns;
let resolver: dns.Resolver;
let signer: DkimSigner;
const servers: ScriptedMx[] = [];
const pools: SmtpPool[] = [];

beforeAll(async () => {
  testDns = await startDns([{ type: 'TXT', name: 'mr1._domainkey.sender.test', value: dkimTxt }]);
  resolver = new dns.Resolver({ timeout: 1_000, tries: 1 });
  resolver.setServers([testDns.server]);
  signer = new DkimSigner({ poolSize: 1 });
});

afterEach(async () => {
  for (const pool of pools.splice(0)) pool.close();
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

afterAll(async () => {
  await signer?.close();
  await testDns?.stop();
});

async function mx(options: ScriptedMxOptions): Promise<ScriptedMx> {
  const server = await startScriptedMx(options);
  servers.push(server);
  return server;
}

function deps(port: number, extra: Partial<DirectDeps> = {}): DirectDeps {
  const pool = new SmtpPool({ idleMs: 2_000 });
  pools.push(pool);
  return { resolver, port, heloName: 'out.sender.test', allowPrivate: true, timeouts: TIMEOUTS, pool, ...extra };
}

async function message(to: string[], subject = 'Hello'): Promise<Buffer> {
  const { raw } = await composeMessage({
    from: { email: 'news@sender.test', name: 'Sender' },
    to,
    subject,
    text: 'Hi there.\n',
    messageIdDomain: 'sender.test',
  });
  return signer.sign(raw, { domain: 'sender.test', selector: 'mr1', privateKey: dkimPem });
}

async function delivery(domain: string, recipients: string[]): Promise<DomainDelivery> {
  return { domain, mailFrom: 'bounces@sender.test', recipients, raw: await message(recipients) };
}

function mxRecords(domain: string, ...hosts: Array<[exchange: string, priority: number, address: string]>): DnsRecord[] {
  return hosts.flatMap(([exchange, priority, address]) => [
    { type: 'MX', name: domain, exchange, priority } as const,
    { type: 'A', name: exchange, address } as const,
  ]);
}

describe('deliverToDomain', () => {
  it('delivers to the MX found through DNS over STARTTLS, with a DKIM signature that verifies', async () => {
    const server = await mx({ host: '127.0.0.2', tls: true });
    await testDns.add(...mxRecords('ok.test', ['mx.ok.test', 10, '127.0.0.2']));

    const outcomes = await deliverToDomain(await delivery('ok.test', ['ann@ok.test']), deps(server.port));

    expect(outcomes).toEqual([
      expect.objectContaining({ recipient: 'ann@ok.test', status: 'delivered', smtp_code: 250, mx_host: 'mx.ok.test' }),
    ]);
    await server.waitFor(1);
    const [received] = server.received;
    expect(received).toMatchObject({ mailFrom: 'bounces@sender.test', rcptTo: ['ann@ok.test'], secure: true });
    const { results } = await dkimVerify(received.raw, { resolver: (name: string, type: string) => resolver.resolve(name, type as 'TXT') });
    expect(results).toEqual([expect.objectContaining({ signingDomain: 'sender.test', status: expect.objectContaining({ result: 'pass' }) })]);
  });

  it('defers on 451 with the retry hint of the reply', async () => {
    const server = await mx({ host: '127.0.0.3', reply: (stage) => (stage === 'rcpt' ? '451 4.7.1 Greylisted, please try again in 300 seconds' : undefined) });
    await testDns.add(...mxRecords('grey.test', ['mx.grey.test', 10, '127.0.0.3']));

    const [outcome] = await deliverToDomain(await delivery('grey.test', ['bob@grey.test']), deps(server.port));

    expect(outcome).toMatchObject({ status: 'deferred', smtp_code: 451, enhanced_status_code: '4.7.1', retry_after_ms: 300_000, mx_host: 'mx.grey.test' });
    expect(outcome.bounce).toBeUndefined();
    expect(server.received).toEqual([]);
  });

  it('bounces on 550 5.1.1, classified as a hard bounce with the provider of the MX', async () => {
    const server = await mx({ host: '127.0.0.4', reply: (stage) => (stage === 'rcpt' ? '550 5.1.1 The email account that you tried to reach does not exist.' : undefined) });
    await testDns.add(...mxRecords('gone.test', ['aspmx.l.google.com', 1, '127.0.0.4']));

    const [outcome] = await deliverToDomain(await delivery('gone.test', ['nobody@gone.test']), deps(server.port));

    expect(outcome).toMatchObject({
      status: 'bounced',
      smtp_code: 550,
      enhanced_status_code: '5.1.1',
      mx_host: 'aspmx.l.google.com',
      bounce: { bounce_type: 'hard', bounce_subtype: 'no_mailbox', recommended_action: 'suppress_recipient', provider: 'Google' },
    });
  });

  it('fails at once on a null MX without connecting anywhere', async () => {
    const server = await mx({ host: '127.0.0.5' });
    await testDns.add({ type: 'MX', name: 'nomail.test', exchange: '.', priority: 0 }, { type: 'A', name: 'nomail.test', address: '127.0.0.5' });

    const [outcome] = await deliverToDomain(await delivery('nomail.test', ['x@nomail.test']), deps(server.port));

    expect(outcome).toMatchObject({ status: 'bounced', enhanced_status_code: '5.1.10', bounce: { bounce_type: 'hard', bounce_subtype: 'no_domain' } });
    expect(server.connections).toBe(0);
  });

  it('bounces for a domain that does not exist and defers when DNS fails', async () => {
    const [nx] = await deliverToDomain(await delivery('missing.test', ['x@missing.test']), deps(25));
    expect(nx).toMatchObject({ status: 'bounced', enhanced_status_code: '5.1.2', bounce: { bounce_subtype: 'no_domain' } });

    await testDns.servfail('broken.test');
    const [servfail] = await deliverToDomain(await delivery('broken.test', ['x@broken.test']), deps(25));
    expect(servfail).toMatchObject({ status: 'deferred', enhanced_status_code: '4.4.3' });
  });

  it('refuses an MX on a private address unless allowPrivate', async () => {
    const server = await mx({ host: '127.0.0.6' });
    await testDns.add(...mxRecords('inside.test', ['mx.inside.test', 10, '127.0.0.6']));

    const [refused] = await deliverToDomain(await delivery('inside.test', ['a@inside.test']), deps(server.port, { allowPrivate: false }));
    expect(refused).toMatchObject({ status: 'bounced', enhanced_status_code: '5.4.4' });
    expect(refused.response).toContain('private');
    expect(server.connections).toBe(0);

    const [allowed] = await deliverToDomain(await delivery('inside.test', ['a@inside.test']), deps(server.port, { allowPrivate: true }));
    expect(allowed).toMatchObject({ status: 'delivered' });
  });

  it('fails over to the second MX when the first refuses connections', async () => {
    const server = await mx({ host: '127.0.0.7' });
    await testDns.add(...mxRecords('failover.test', ['mx1.failover.test', 10, DEAD_ADDRESS], ['mx2.failover.test', 20, '127.0.0.7']));

    const [outcome] = await deliverToDomain(await delivery('failover.test', ['c@failover.test']), deps(server.port));

    expect(outcome).toMatchObject({ status: 'delivered', mx_host: 'mx2.failover.test' });
    expect(server.received).toHaveLength(1);
  });

  it('fails over when the first MX greets with 421, and defers when every MX does', async () => {
    const busy = await mx({ host: '127.0.0.8', reply: (stage) => (stage === 'connect' ? '421 4.7.0 Too busy, try again in 2 minutes' : undefined) });
    const good = await mx({ host: '127.0.0.9', port: busy.port });
    await testDns.add(...mxRecords('busy.test', ['mx1.busy.test', 10, '127.0.0.8'], ['mx2.busy.test', 20, '127.0.0.9']));

    const [moved] = await deliverToDomain(await delivery('busy.test', ['d@busy.test']), deps(busy.port));
    expect(moved).toMatchObject({ status: 'delivered', mx_host: 'mx2.busy.test' });
    expect(busy.connections).toBe(1);
    expect(good.received).toHaveLength(1);

    await testDns.add(...mxRecords('allbusy.test', ['mx.allbusy.test', 10, '127.0.0.8']));
    const [stuck] = await deliverToDomain(await delivery('allbusy.test', ['e@allbusy.test']), deps(busy.port));
    expect(stuck).toMatchObject({ status: 'deferred', smtp_code: 421, enhanced_status_code: '4.7.0', retry_after_ms: 120_000 });
  });

  it('passes the recipients to the next MX when the first says 421 mid-transaction', async () => {
    const closing = await mx({ host: '127.0.0.18', reply: (stage) => (stage === 'mail' ? '421 4.3.2 System shutting down' : undefined) });
    const good = await mx({ host: '127.0.0.19', port: closing.port });
    await testDns.add(...mxRecords('closing.test', ['mx1.closing.test', 10, '127.0.0.18'], ['mx2.closing.test', 20, '127.0.0.19']));

    const outcomes = await deliverToDomain(await delivery('closing.test', ['g@closing.test', 'h@closing.test']), deps(closing.port));

    expect(outcomes.map((o) => [o.recipient, o.status, o.mx_host])).toEqual([
      ['g@closing.test', 'delivered', 'mx2.closing.test'],
      ['h@closing.test', 'delivered', 'mx2.closing.test'],
    ]);
    expect(good.received.map((m) => m.rcptTo)).toEqual([['g@closing.test', 'h@closing.test']]);
  });

  it('defers only the recipient that got 452, in one transaction', async () => {
    const server = await mx({ host: '127.0.0.10', reply: (stage, ctx) => (stage === 'rcpt' && ctx.address === 'full@split.test' ? '452 4.2.2 Mailbox full' : undefined) });
    await testDns.add(...mxRecords('split.test', ['mx.split.test', 10, '127.0.0.10']));

    const outcomes = await deliverToDomain(await delivery('split.test', ['ok@split.test', 'full@split.test']), deps(server.port));

    expect(outcomes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ recipient: 'ok@split.test', status: 'delivered', smtp_code: 250 }),
        expect.objectContaining({ recipient: 'full@split.test', status: 'deferred', smtp_code: 452, enhanced_status_code: '4.2.2' }),
      ]),
    );
    expect(server.received.map((m) => m.rcptTo)).toEqual([['ok@split.test']]);
  });

  it('bounces only the recipient refused with 5xx', async () => {
    const server = await mx({ host: '127.0.0.11', reply: (stage, ctx) => (stage === 'rcpt' && ctx.address === 'gone@mixed.test' ? '550 5.1.1 User unknown' : undefined) });
    await testDns.add(...mxRecords('mixed.test', ['mx.mixed.test', 10, '127.0.0.11']));

    const outcomes = await deliverToDomain(await delivery('mixed.test', ['here@mixed.test', 'gone@mixed.test']), deps(server.port));

    expect(Object.fromEntries(outcomes.map((o) => [o.recipient, o.status]))).toEqual({ 'here@mixed.test': 'delivered', 'gone@mixed.test': 'bounced' });
  });

  it('bounces every recipient when the message is refused after DATA', async () => {
    const server = await mx({ host: '127.0.0.12', reply: (stage) => (stage === 'data' ? '554 5.7.1 Message rejected as spam' : undefined) });
    await testDns.add(...mxRecords('spam.test', ['mx.spam.test', 10, '127.0.0.12']));

    const outcomes = await deliverToDomain(await delivery('spam.test', ['a@spam.test', 'b@spam.test']), deps(server.port));

    expect(outcomes.map((o) => [o.status, o.bounce?.bounce_subtype])).toEqual([['bounced', 'policy_rejected'], ['bounced', 'policy_rejected']]);
  });

  it('reuses the pooled connection for the next message to the same host', async () => {
    const server = await mx({ host: '127.0.0.13' });
    await testDns.add(...mxRecords('pool.test', ['mx.pool.test', 10, '127.0.0.13']));
    const shared = deps(server.port);

    const first = await deliverToDomain(await delivery('pool.test', ['one@pool.test']), shared);
    const second = await deliverToDomain(await delivery('pool.test', ['two@pool.test']), shared);

    expect([...first, ...second].map((o) => o.status)).toEqual(['delivered', 'delivered']);
    await server.waitFor(2);
    expect(server.connections).toBe(1);
    expect(server.received.map((m) => m.rcptTo)).toEqual([['one@pool.test'], ['two@pool.test']]);
  });

});

/**
 * An MX that takes the whole message and then never answers the final dot:
 * smtp-server always answers, so this one is spoken by hand.
 */
async function silentAfterData(host: string, port: number): Promise<{ server: net.Server; messages: () => number }> {
  let messages = 0;
  const server = net.createServer((socket) => {
    let inData = false;
    let buffer = '';
    socket.write('220 silent ESMTP\r\n');
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1');
      if (inData) {
        if (buffer.includes('\r\n.\r\n')) messages += 1; // and no reply
        return;
      }
      for (let end = buffer.indexOf('\r\n'); end >= 0 && !inData; end = buffer.indexOf('\r\n')) {
        const command = buffer.slice(0, end).toUpperCase();
        buffer = buffer.slice(end + 2);
        if (command.startsWith('DATA')) {
          inData = true;
          socket.write('354 go ahead\r\n');
        } else {
          socket.write(command.startsWith('EHLO') ? '250 silent\r\n' : '250 ok\r\n');
        }
      }
    });
    socket.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return { server, messages: () => messages };
}

describe('end-of-data timeout', () => {
  it('defers after the end-of-data wait and does not hand the message to another MX', async () => {
    const backup = await mx({ host: '127.0.0.16' });
    const silent = await silentAfterData('127.0.0.17', backup.port);
    try {
      await testDns.add(...mxRecords('slow.test', ['mx1.slow.test', 10, '127.0.0.17'], ['mx2.slow.test', 20, '127.0.0.16']));
      const started = Date.now();

      const [outcome] = await deliverToDomain(
        await delivery('slow.test', ['f@slow.test']),
        deps(backup.port, { timeouts: { ...TIMEOUTS, endOfDataMs: 300 } }),
      );

      expect(outcome).toMatchObject({ status: 'deferred', mx_host: 'mx1.slow.test' });
      expect(outcome.response).toMatch(/after end of data/);
      const elapsed = Date.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(300);
      expect(elapsed).toBeLessThan(TIMEOUTS.commandMs);
      expect(silent.messages()).toBe(1);
      expect(backup.connections).toBe(0);
    } finally {
      await new Promise((resolve) => silent.server.close(resolve));
    }
  });
});

describe('deliverViaRelay', () => {
  it('delivers through a smarthost URL, STARTTLS when offered', async () => {
    const relay = await mx({ host: '127.0.0.15', tls: true });
    const pool = new SmtpPool();
    pools.push(pool);

    const outcomes = await deliverViaRelay(
      `smtp://127.0.0.15:${relay.port}`,
      { mailFrom: 'bounces@sender.test', recipients: ['x@far.example', 'y@other.example'], raw: await message(['x@far.example', 'y@other.example']) },
      { heloName: 'out.sender.test', pool, timeouts: TIMEOUTS },
    );

    expect(outcomes.map((o) => [o.recipient, o.status, o.mx_host])).toEqual([
      ['x@far.example', 'delivered', '127.0.0.15'],
      ['y@other.example', 'delivered', '127.0.0.15'],
    ]);
    await relay.waitFor(1);
    expect(relay.received[0]).toMatchObject({ rcptTo: ['x@far.example', 'y@other.example'], secure: true });
  });

  it('defers when the relay cannot be reached', async () => {
    const pool = new SmtpPool();
    pools.push(pool);
    const [outcome] = await deliverViaRelay(
      `smtp://${DEAD_ADDRESS}:2525`,
      { mailFrom: 'bounces@sender.test', recipients: ['x@far.example'], raw: await message(['x@far.example']) },
      { heloName: 'out.sender.test', pool, timeouts: TIMEOUTS },
    );
    expect(outcome).toMatchObject({ status: 'deferred' });
    expect(outcome.response).toContain('ECONNREFUSED');
  });
});
