// The SMTP dialogue of pooled sessions: no RSET after a completed transaction
// (RFC 5321 §4.1.1.5), MAIL FROM, RCPT TO and DATA in one write when the server
// offers PIPELINING (RFC 2920), one at a time when it does not.

import { promises as dns } from 'node:dns';
import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { composeMessage, deliverToDomain, SmtpPool, type DirectDeps, type DomainDelivery } from '../../../src/delivery/index.js';
import { startDns, type TestDns } from '../../helpers/dns.js';
import { startScriptedMx, type MxCommand, type ScriptedMx, type ScriptedMxOptions } from '../../helpers/mx.js';

const TIMEOUTS = { connectMs: 2_000, greetingMs: 5_000, commandMs: 5_000, dataBlockMs: 5_000, endOfDataMs: 5_000 };

let testDns: TestDns;
let resolver: dns.Resolver;
const servers: ScriptedMx[] = [];
const pools: SmtpPool[] = [];

beforeAll(async () => {
  testDns = await startDns([]);
  resolver = new dns.Resolver({ timeout: 1_000, tries: 1 });
  resolver.setServers([testDns.server]);
});

afterEach(async () => {
  for (const pool of pools.splice(0)) pool.close();
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

afterAll(async () => {
  await testDns?.stop();
});

/** A scripted MX at `host`, the MX of `domain`. */
async function mxFor(domain: string, host: string, options: ScriptedMxOptions = {}): Promise<ScriptedMx> {
  const server = await startScriptedMx({ host, ...options });
  servers.push(server);
  await testDns.add({ type: 'MX', name: domain, exchange: `mx.${domain}`, priority: 10 }, { type: 'A', name: `mx.${domain}`, address: host });
  return server;
}

function deps(port: number): DirectDeps {
  const pool = new SmtpPool({ idleMs: 2_000 });
  pools.push(pool);
  return { resolver, port, heloName: 'out.sender.test', allowPrivate: true, timeouts: TIMEOUTS, pool };
}

async function delivery(domain: string, recipients: string[]): Promise<DomainDelivery> {
  const { raw } = await composeMessage({ from: 'news@sender.test', to: recipients, subject: 'Hi', text: 'Hello.\n', messageIdDomain: 'sender.test' });
  return { domain, mailFrom: 'bounces@sender.test', recipients, raw };
}

/** The transaction commands of one connection, as verb (and address), with the read each came in. */
function dialogue(commands: MxCommand[], connection = 1): Array<[string, number]> {
  return commands
    .filter((c) => c.connection === connection && !/^(EHLO|QUIT)/i.test(c.line))
    .map((c) => [c.line.replace(/^(MAIL FROM|RCPT TO):<([^>]*)>.*$/i, '$1 $2'), c.read]);
}

describe('SMTP sessions', () => {
  it('sends the next MAIL FROM straight after a completed transaction, the envelope and DATA in one write', async () => {
    const server = await mxFor('pipe.test', '127.0.0.20');
    const shared = deps(server.port);

    const first = await deliverToDomain(await delivery('pipe.test', ['a@pipe.test', 'b@pipe.test']), shared);
    const second = await deliverToDomain(await delivery('pipe.test', ['c@pipe.test']), shared);

    expect([...first, ...second].map((o) => o.status)).toEqual(['delivered', 'delivered', 'delivered']);
    expect(server.connections).toBe(1);
    const steps = dialogue(server.commands);
    expect(steps.map(([line]) => line)).toEqual([
      'MAIL FROM bounces@sender.test', 'RCPT TO a@pipe.test', 'RCPT TO b@pipe.test', 'DATA',
      'MAIL FROM bounces@sender.test', 'RCPT TO c@pipe.test', 'DATA',
    ]);
    const reads = steps.map(([, read]) => read);
    expect(new Set(reads.slice(0, 4)).size).toBe(1);
    expect(new Set(reads.slice(4)).size).toBe(1);
    expect(reads[4]).toBeGreaterThan(reads[3]);
  });

  it('gives a recipient refused inside a pipeline its own outcome and the message to the others', async () => {
    const server = await mxFor('refused.test', '127.0.0.21', {
      reply: (stage, ctx) => (stage === 'rcpt' && ctx.address === 'gone@refused.test' ? '550 5.1.1 User unknown' : undefined),
    });

    const outcomes = await deliverToDomain(await delivery('refused.test', ['here@refused.test', 'gone@refused.test', 'also@refused.test']), deps(server.port));

    expect(outcomes.map((o) => [o.recipient, o.status, o.smtp_code])).toEqual([
      ['here@refused.test', 'delivered', 250],
      ['gone@refused.test', 'bounced', 550],
      ['also@refused.test', 'delivered', 250],
    ]);
    expect(server.received.map((m) => m.rcptTo)).toEqual([['here@refused.test', 'also@refused.test']]);
    expect(new Set(dialogue(server.commands).map(([, read]) => read)).size).toBe(1);
  });

  it('sends no message text when no RCPT was accepted, and RSETs before the next transaction', async () => {
    const server = await mxFor('nobody.test', '127.0.0.22', {
      reply: (stage, ctx) => {
        if (stage !== 'rcpt' || ctx.address === 'ok@nobody.test') return undefined;
        return ctx.address === 'full@nobody.test' ? '452 4.2.2 Mailbox full' : '550 5.1.1 User unknown';
      },
    });
    const shared = deps(server.port);

    const refused = await deliverToDomain(await delivery('nobody.test', ['gone@nobody.test', 'full@nobody.test']), shared);
    const next = await deliverToDomain(await delivery('nobody.test', ['ok@nobody.test']), shared);

    // RFC 2920 §3.1: the server refuses the DATA sent along (503 here); each recipient keeps its own reply.
    expect(refused.map((o) => [o.recipient, o.status, o.smtp_code])).toEqual([
      ['gone@nobody.test', 'bounced', 550],
      ['full@nobody.test', 'deferred', 452],
    ]);
    expect(next.map((o) => o.status)).toEqual(['delivered']);
    expect(server.connections).toBe(1);
    expect(server.received.map((m) => m.rcptTo)).toEqual([['ok@nobody.test']]);
    // The refused transaction was begun by an accepted MAIL FROM: RSET ends it (RFC 5321 §4.1.1.5).
    expect(dialogue(server.commands).map(([line]) => line)).toEqual([
      'MAIL FROM bounces@sender.test', 'RCPT TO gone@nobody.test', 'RCPT TO full@nobody.test', 'DATA',
      'RSET', 'MAIL FROM bounces@sender.test', 'RCPT TO ok@nobody.test', 'DATA',
    ]);
  });

  it('waits for each reply when the server does not offer PIPELINING', async () => {
    const server = await mxFor('lockstep.test', '127.0.0.23', { pipelining: false });

    const outcomes = await deliverToDomain(await delivery('lockstep.test', ['a@lockstep.test', 'b@lockstep.test']), deps(server.port));

    expect(outcomes.map((o) => o.status)).toEqual(['delivered', 'delivered']);
    const steps = dialogue(server.commands);
    expect(steps.map(([line]) => line)).toEqual(['MAIL FROM bounces@sender.test', 'RCPT TO a@lockstep.test', 'RCPT TO b@lockstep.test', 'DATA']);
    expect(new Set(steps.map(([, read]) => read)).size).toBe(4);
  });

  it('replaces a pooled session that the server drops at the next MAIL FROM, without a second attempt', async () => {
    const server = await droppingMx('127.0.0.24');
    try {
      await testDns.add({ type: 'MX', name: 'drop.test', exchange: 'mx.drop.test', priority: 10 }, { type: 'A', name: 'mx.drop.test', address: '127.0.0.24' });
      const shared = { ...deps(server.port), maxConnectionAttempts: 1 };

      const first = await deliverToDomain(await delivery('drop.test', ['one@drop.test']), shared);
      const second = await deliverToDomain(await delivery('drop.test', ['two@drop.test']), shared);

      expect([...first, ...second].map((o) => o.status)).toEqual(['delivered', 'delivered']);
      expect(server.connections()).toBe(2);
      expect(server.messages()).toBe(2);
    } finally {
      await new Promise<void>((resolve) => server.close(resolve));
    }
  });
});

/**
 * An MX without PIPELINING that takes one message per connection and closes
 * the connection, without a reply, on a second MAIL FROM: a session the client
 * still holds as open. Spoken by hand, as smtp-server always answers.
 */
async function droppingMx(host: string): Promise<{ port: number; connections: () => number; messages: () => number; close: (cb: () => void) => void }> {
  let connections = 0;
  let messages = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    let mails = 0;
    let inData = false;
    let buffer = '';
    socket.write('220 dropping ESMTP\r\n');
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1');
      for (;;) {
        if (inData) {
          const end = buffer.indexOf('\r\n.\r\n');
          if (end < 0) return;
          buffer = buffer.slice(end + 5);
          inData = false;
          messages += 1;
          socket.write('250 2.0.0 queued\r\n');
          continue;
        }
        const end = buffer.indexOf('\r\n');
        if (end < 0) return;
        const command = buffer.slice(0, end).toUpperCase();
        buffer = buffer.slice(end + 2);
        if (command.startsWith('MAIL') && ++mails > 1) {
          socket.destroy();
          return;
        }
        if (command.startsWith('DATA')) {
          inData = true;
          socket.write('354 go ahead\r\n');
        } else if (command.startsWith('QUIT')) {
          socket.end('221 bye\r\n');
        } else {
          socket.write(command.startsWith('EHLO') ? '250 dropping\r\n' : '250 ok\r\n');
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => connections,
    messages: () => messages,
    close: (cb) => {
      for (const s of sockets) s.destroy();
      server.close(cb);
    },
  };
}
