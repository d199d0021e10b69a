import { execFile } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { createServer, type AddressInfo, type Socket as TcpSocket } from 'node:net';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CheckResult, DoctorReport } from '../../src/doctor/report.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDatabase, onPostgres } from '../helpers/database.js';
import { startDns, type DnsRecord, type TestDns } from '../helpers/dns.js';
import { startScriptedMx } from '../helpers/mx.js';

// `mailroom doctor` as an operator runs it: a child process on the store of a
// running server, asking a real DNS server (dnsmasq on loopback) about the
// server's name and a domain made through the API, with certificates made by
// openssl for the occasion.

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));

const HOST = 'mx.mailroom.test';
const HOST_IP = '192.0.2.10';
const HOST_IP6 = '2001:db8::10';
const DOMAIN = 'acme.test';
const DAY_MS = 24 * 3600_000;

interface ApiRecord { record: string; type: string; name: string; value: string; priority?: number }

/** The zone of a server set up as the README says: its name with reverse DNS, and every record the domain lists. */
function goodZone(records: ApiRecord[]): DnsRecord[] {
  const zone: DnsRecord[] = [
    { type: 'A', name: HOST, address: HOST_IP },
    { type: 'PTR', name: HOST_IP, target: HOST },
    { type: 'AAAA', name: HOST, address: HOST_IP6 },
    { type: 'PTR', name: HOST_IP6, target: HOST },
  ];
  for (const r of records) {
    if (r.type === 'TXT') zone.push({ type: 'TXT', name: r.name, value: r.record === 'DMARC' ? 'v=DMARC1; p=quarantine; rua=mailto:dmarc@acme.test' : r.value });
    if (r.type === 'MX') zone.push({ type: 'MX', name: r.name, exchange: r.value, priority: r.priority ?? 10 });
  }
  return zone;
}

/** The zone with the records at `name` of `type` replaced. */
const replacing = (zone: DnsRecord[], type: DnsRecord['type'], name: string, ...records: DnsRecord[]): DnsRecord[] =>
  [...zone.filter((r) => !(r.type === type && r.name === name)), ...records];

/** A self-signed certificate for `host` valid from `from` to `to`: `openssl ca`, since `openssl req` cannot date one in the past. */
async function certificate(dir: string, host: string, from: Date, to: Date): Promise<{ cert: string; key: string }> {
  const stamp = (d: Date) => `${d.toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`;
  writeFileSync(join(dir, 'ca.cnf'), [
    '[ca]', 'default_ca = here', '[here]', `database = ${join(dir, 'index.txt')}`, `new_certs_dir = ${dir}`, `serial = ${join(dir, 'serial')}`,
    'default_md = sha256', 'policy = any', 'copy_extensions = copy', 'unique_subject = no', '[any]', 'commonName = supplied', '',
  ].join('\n'));
  writeFileSync(join(dir, 'index.txt'), '');
  writeFileSync(join(dir, 'serial'), '01\n');
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  await run('openssl', ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key,
    '-subj', `/CN=${host}`, '-addext', `subjectAltName=DNS:${host}`, '-out', join(dir, 'csr.pem')]);
  await run('openssl', ['ca', '-batch', '-config', join(dir, 'ca.cnf'), '-selfsign', '-keyfile', key, '-in', join(dir, 'csr.pem'),
    '-startdate', stamp(from), '-enddate', stamp(to), '-notext', '-out', cert]);
  return { cert, key };
}

/** A UDP port that takes queries and never answers: a resolver that is down. */
async function deadResolver(): Promise<Socket> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return socket;
}

describe('mailroom doctor', () => {
  let dns: TestDns;
  let t: TestApp;
  let records: ApiRecord[];
  let zone: DnsRecord[];
  let certs: string;
  let tls: { cert: string; key: string };

  beforeAll(async () => {
    dns = await startDns();
    t = await startTestApp({ env: { MAILROOM_DNS_SERVERS: dns.server } });
    records = (await t.api.post('/v1/domains', { name: DOMAIN })).body.records;
    zone = goodZone(records);
    certs = mkdtempSync(join(tmpdir(), 'mailroom-doctor-'));
    tls = await certificate(certs, HOST, new Date(Date.now() - DAY_MS), new Date(Date.now() + 90 * DAY_MS));
  });
  afterAll(async () => {
    await t?.close();
    await dns?.stop();
    if (certs) rmSync(certs, { recursive: true, force: true });
  });

  /** The command's JSON report and exit status, with the settings of a server on the public network. */
  async function doctor(env: Record<string, string> = {}, args: string[] = []): Promise<{ code: number; report: DoctorReport; ms: number }> {
    const started = Date.now();
    const outcome = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'doctor', '--json', ...args], {
      cwd: root,
      env: {
        ...process.env, MAILROOM_DATA_DIR: t.dataDir, MAILROOM_DATABASE_URL: t.databaseUrl, MAILROOM_LOG_LEVEL: 'silent',
        MAILROOM_DNS_SERVERS: dns.server, MAILROOM_HOSTNAME: HOST, MAILROOM_PUBLIC_URL: `https://${HOST}`,
        MAILROOM_HTTP_HOST: '0.0.0.0', MAILROOM_SMTP_HOST: '0.0.0.0', MAILROOM_TLS_CERT: tls.cert, MAILROOM_TLS_KEY: tls.key, ...env,
      },
      timeout: 30_000,
    }).then((r) => ({ code: 0, stdout: r.stdout }), (e: { code: number; stdout: string; stderr: string }) => {
      if (typeof e.code !== 'number') throw e;
      return { code: e.code, stdout: e.stdout };
    });
    return { code: outcome.code, report: JSON.parse(outcome.stdout) as DoctorReport, ms: Date.now() - started };
  }

  const find = (report: DoctorReport, check: string): CheckResult => {
    const found = report.checks.find((c) => c.check === check);
    if (!found) throw new Error(`no check '${check}' among ${report.checks.map((c) => c.check).join(', ')}`);
    return found;
  };
  const notOk = (report: DoctorReport) => report.checks.filter((c) => c.status !== 'ok').map((c) => `${c.check}: ${c.status}`);

  const dkim = () => records.find((r) => r.record === 'DKIM')!;

  it('says ok to everything on a server set up as the README says, and exits 0', async () => {
    await dns.set(zone);
    const { code, report } = await doctor();
    // The free space is this machine's; everything else is the setup's.
    expect(notOk(report).filter((c) => !c.startsWith('free space'))).toEqual([]);
    expect(code).toBe(0);
    expect(report.checks.map((c) => c.check)).toEqual(expect.arrayContaining([
      'host name', `PTR ${HOST_IP}`, `PTR ${HOST_IP6}`, `DKIM ${dkim().name}`, `SPF bounces.${DOMAIN}`, `MX_BOUNCE bounces.${DOMAIN}`, `DMARC _dmarc.${DOMAIN}`,
      'key', 'name', 'expiry', 'public URL', 'database', 'migrations',
    ]));
    // The free space is looked at for a SQLite store; PostgreSQL's disk is its server's.
    expect(report.checks.some((c) => c.check === 'free space')).toBe(t.databaseUrl.startsWith('sqlite:'));
    expect(find(report, `PTR ${HOST_IP}`).found).toBe(`${HOST_IP} points back to ${HOST}, which resolves to it`);
    expect(find(report, `SPF bounces.${DOMAIN}`).found).toMatch(new RegExp(`^passes for ${HOST_IP}, ${HOST_IP6}`));
    expect(find(report, `DKIM ${dkim().name}`)).toMatchObject({ domain: DOMAIN, workspace_id: t.workspaceId });
    expect(report.counts.fail).toBe(0);
  });

  it('warns when much of the SQLite file is free pages, and says how to give them back', async () => {
    if (!t.databaseUrl.startsWith('sqlite:')) {
      // PostgreSQL's space is its own to manage (autovacuum).
      expect((await doctor()).report.checks.some((c) => c.check === 'free pages')).toBe(false);
      return;
    }
    await dns.set(zone);
    expect(find((await doctor()).report, 'free pages')).toMatchObject({ status: 'ok', found: expect.stringMatching(/^\d+ MiB of the \d+ MiB database are free pages, which new rows reuse$/) });
    // As after a retention period was first set on a grown store: 80 MiB of rows written, then deleted.
    const { db } = t.mailroom.services.store;
    await sql`CREATE TABLE filler (b BLOB)`.execute(db);
    for (let i = 0; i < 20; i++) await sql`INSERT INTO filler SELECT randomblob(65536) FROM (WITH n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 64) SELECT i FROM n)`.execute(db);
    await sql`DROP TABLE filler`.execute(db);
    const { code, report } = await doctor();
    expect(find(report, 'free pages')).toMatchObject({
      status: 'warn', found: expect.stringMatching(/^8\d MiB of the \d+ MiB database are free pages/),
      fix: 'to give them back to the disk, stop Mailroom and run mailroom store compact',
    });
    expect(code).toBe(0);
    // The other checks of this file see the store as it was.
    await sql`VACUUM`.execute(db);
  });

  it('fails an address without reverse DNS, naming the PTR record to set', async () => {
    await dns.set(replacing(zone, 'A', HOST, { type: 'A', name: HOST, address: HOST_IP, reverse: false }).filter((r) => r.type !== 'PTR'));
    const { code, report } = await doctor();
    expect(code).toBe(1);
    expect(find(report, `PTR ${HOST_IP}`)).toMatchObject({
      status: 'fail', found: `${HOST_IP} has no reverse DNS (PTR) record`, fix: expect.stringContaining(`PTR 10.2.0.192.in-addr.arpa ${HOST}`),
    });
  });

  it('fails a PTR whose name does not resolve back to the address, and warns of one that names another host', async () => {
    await dns.set([...zone.filter((r) => r.type !== 'PTR'), { type: 'PTR', name: HOST_IP, target: 'static-10.isp.test' }]);
    const unconfirmed = await doctor();
    expect(unconfirmed.code).toBe(1);
    expect(find(unconfirmed.report, `PTR ${HOST_IP}`)).toMatchObject({
      status: 'fail', found: expect.stringContaining('static-10.isp.test, which does not resolve to 192.0.2.10 (not forward-confirmed)'),
    });

    await dns.set([...zone.filter((r) => r.type !== 'PTR'), { type: 'PTR', name: HOST_IP, target: 'static-10.isp.test' },
      { type: 'A', name: 'static-10.isp.test', address: HOST_IP, reverse: false }]);
    const other = await doctor();
    expect(find(other.report, `PTR ${HOST_IP}`)).toMatchObject({ status: 'warn', found: expect.stringContaining('not to MAILROOM_HOSTNAME') });
    expect(other.code).toBe(0);
  });

  it('evaluates SPF for the server\'s address: fails a record that excludes it, passes one that includes it another way', async () => {
    const spfName = `bounces.${DOMAIN}`;
    await dns.set(replacing(zone, 'TXT', spfName, { type: 'TXT', name: spfName, value: 'v=spf1 ip4:198.51.100.0/24 -all' }));
    const excluded = await doctor();
    expect(excluded.code).toBe(1);
    expect(find(excluded.report, `SPF ${spfName}`)).toMatchObject({
      status: 'fail', found: expect.stringContaining(`fail for ${HOST_IP}`), fix: `publish TXT ${spfName} "v=spf1 a:${HOST} ~all", or add a:${HOST} before the "all" of the record there`,
    });

    // Not the record the domain page asks for, but one that passes: what receivers evaluate is what counts.
    await dns.set([...replacing(zone, 'TXT', spfName, { type: 'TXT', name: spfName, value: `v=spf1 include:_spf.${DOMAIN} -all` }),
      { type: 'TXT', name: `_spf.${DOMAIN}`, value: 'v=spf1 ip4:192.0.2.0/24 ip6:2001:db8::/32 -all' }]);
    const included = await doctor();
    expect(find(included.report, `SPF ${spfName}`).status).toBe('ok');
    expect(included.code).toBe(0);
  });

  it('fails a DKIM record that holds an old key', async () => {
    const old = (await t.api.post('/v1/domains', { name: 'old-key.test' })).body.records.find((r: ApiRecord) => r.record === 'DKIM').value as string;
    await dns.set(replacing(zone, 'TXT', dkim().name, { type: 'TXT', name: dkim().name, value: old }));
    const { code, report } = await doctor({}, ['--domain', DOMAIN]);
    expect(code).toBe(1);
    expect(find(report, `DKIM ${dkim().name}`)).toMatchObject({
      status: 'fail', found: expect.stringContaining('different public key'), fix: `publish TXT ${dkim().name} "${dkim().value.slice(0, 255)}" "${dkim().value.slice(255)}"`,
    });
    // --domain keeps to that domain.
    expect(new Set(report.checks.filter((c) => c.area === 'domain').map((c) => c.domain))).toEqual(new Set([DOMAIN]));
  });

  it('warns of the new key of a DKIM rotation until its record is published, and exits 0', async () => {
    const { body: created } = await t.api.post('/v1/domains', { name: 'rotating.test' });
    const { body: rotated } = await t.api.post(`/v1/domains/${created.id}/dkim/rotate`);
    const pending = rotated.records.filter((r: ApiRecord & { key_state?: string }) => r.key_state === 'pending') as ApiRecord[];
    expect(pending.map((r) => r.record).sort()).toEqual(['DKIM', 'DKIM_ED25519']);
    const domainZone = goodZone(rotated.records).filter((r) => r.name.endsWith('rotating.test') && !pending.some((p) => p.name === r.name));
    await dns.set([...zone, ...domainZone]);
    const { code, report } = await doctor({}, ['--domain', 'rotating.test']);
    expect(report.checks.filter((c) => c.status !== 'ok' && c.check !== 'free space').map((c) => c.check).sort()).toEqual(pending.map((r) => `${r.record} ${r.name}`).sort());
    expect(find(report, `DKIM ${pending.find((r) => r.record === 'DKIM')!.name}`)).toMatchObject({
      status: 'warn', found: expect.stringContaining('the new key of a rotation'),
    });
    expect(code).toBe(0);
  });

  it('warns of DMARC p=none and exits 0', async () => {
    await dns.set(replacing(zone, 'TXT', `_dmarc.${DOMAIN}`, { type: 'TXT', name: `_dmarc.${DOMAIN}`, value: 'v=DMARC1; p=none;' }));
    const { code, report } = await doctor({}, ['--domain', DOMAIN]);
    expect(find(report, `DMARC _dmarc.${DOMAIN}`)).toMatchObject({ status: 'warn', fix: expect.stringContaining('p=quarantine') });
    expect(report.status).toBe('warn');
    expect(code).toBe(0);
  });

  it('fails an expired certificate, warns of one expiring within 14 days, and of none on a public listener', async () => {
    await dns.set(zone);
    const expiredDir = mkdtempSync(join(certs, 'expired-'));
    const expired = await certificate(expiredDir, HOST, new Date(Date.now() - 100 * DAY_MS), new Date(Date.now() - DAY_MS));
    const soonDir = mkdtempSync(join(certs, 'soon-'));
    const soon = await certificate(soonDir, HOST, new Date(Date.now() - 80 * DAY_MS), new Date(Date.now() + 5 * DAY_MS));
    const [gone, expiring, none, wrongName] = await Promise.all([
      doctor({ MAILROOM_TLS_CERT: expired.cert, MAILROOM_TLS_KEY: expired.key }, ['--domain', DOMAIN]),
      doctor({ MAILROOM_TLS_CERT: soon.cert, MAILROOM_TLS_KEY: soon.key }, ['--domain', DOMAIN]),
      doctor({ MAILROOM_TLS_CERT: '', MAILROOM_TLS_KEY: '' }, ['--domain', DOMAIN]),
      doctor({ MAILROOM_TLS_CERT: soon.cert, MAILROOM_TLS_KEY: tls.key, MAILROOM_HOSTNAME: 'mail.elsewhere.test' }, ['--domain', DOMAIN]),
    ]);
    expect(gone.code).toBe(1);
    expect(find(gone.report, 'expiry')).toMatchObject({ status: 'fail', found: expect.stringMatching(/^expired on /) });
    expect(expiring.code).toBe(0);
    expect(find(expiring.report, 'expiry')).toMatchObject({ status: 'warn', found: expect.stringMatching(/^expires in [45] days/) });
    expect(none.code).toBe(0);
    expect(find(none.report, 'certificate')).toMatchObject({ status: 'warn', found: expect.stringContaining('self-signed') });
    expect(find(wrongName.report, 'key')).toMatchObject({ status: 'fail' });
    expect(find(wrongName.report, 'name')).toMatchObject({ status: 'fail', found: expect.stringContaining(`not mail.elsewhere.test`) });
  });

  it('warns, within its time bound, when the resolver does not answer', async () => {
    const socket = await deadResolver();
    try {
      const { code, report, ms } = await doctor({ MAILROOM_DNS_SERVERS: `127.0.0.1:${socket.address().port}` });
      const dnsChecks = report.checks.filter((c) => c.area === 'identity' || c.area === 'domain');
      expect(dnsChecks.length).toBeGreaterThan(0);
      expect(dnsChecks.every((c) => c.status === 'warn' && c.found.includes('could not be checked'))).toBe(true);
      expect(code).toBe(0);
      // The CLI's own start (a few seconds under tsx) plus at most one check's bound.
      expect(ms).toBeLessThan(20_000);
    } finally {
      socket.close();
    }
  });

  it('fails a data dir without a database, and leaves it as it was', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'mailroom-doctor-empty-'));
    try {
      const { code, report } = await doctor({ MAILROOM_DATA_DIR: empty, MAILROOM_DATABASE_URL: `sqlite:${join(empty, 'mailroom.db')}` });
      expect(code).toBe(1);
      expect(find(report, 'database')).toMatchObject({ status: 'fail', found: `no database at ${join(empty, 'mailroom.db')}` });
      expect(find(report, 'domains')).toMatchObject({ status: 'warn', found: 'could not be checked: there is no database' });
      // No database, WAL or master key made by looking.
      expect(readdirSync(empty)).toEqual([]);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('says in one line that a database no Mailroom has migrated has no schema yet, and to run mailroom migrate', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-doctor-unmigrated-'));
    // An empty database, as made for Mailroom before its first start: on PostgreSQL by CREATE DATABASE, on SQLite an empty file.
    const database = onPostgres ? await createTestDatabase() : undefined;
    const url = database?.url ?? `sqlite:${join(dataDir, 'mailroom.db')}`;
    if (!database) writeFileSync(join(dataDir, 'mailroom.db'), '');
    try {
      const { code, report } = await doctor({ MAILROOM_DATA_DIR: dataDir, MAILROOM_DATABASE_URL: url });
      expect(code).toBe(1);
      expect(find(report, 'database')).toMatchObject({ status: 'ok' });
      expect(find(report, 'migrations')).toEqual(expect.objectContaining({
        status: 'fail', found: 'none run: the database has no Mailroom schema yet', fix: 'run mailroom migrate (mailroom serve runs the migrations too as it starts)',
      }));
      expect(find(report, 'domains')).toMatchObject({ status: 'warn', found: 'could not be checked: the database has no Mailroom schema yet' });
      // No driver's words (42P01, SQLITE_ERROR, relation … does not exist) anywhere.
      for (const c of report.checks) expect(`${c.found} ${c.fix ?? ''}`).not.toMatch(/42P01|SQLITE_|does not exist|no such table/);
    } finally {
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('fails a database server that takes the connection and never answers, within its bound', async () => {
    const held: TcpSocket[] = [];
    const silent = createServer((socket) => void held.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const url = `postgres://mailroom:secret@127.0.0.1:${(silent.address() as AddressInfo).port}/mailroom`;
      const { code, report, ms } = await doctor({ MAILROOM_DATABASE_URL: url });
      expect(code).toBe(1);
      expect(find(report, 'database')).toMatchObject({ status: 'fail', found: expect.stringContaining('cannot be read') });
      expect(find(report, 'domains')).toMatchObject({ status: 'warn', found: expect.stringMatching(/^could not be checked/) });
      expect(ms).toBeLessThan(20_000);
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('checks a relay by logging in to it, and judges neither SPF nor reverse DNS on this server\'s addresses then', async () => {
    // The zone fails both for this server's addresses: neither matters when a relay sends.
    await dns.set(replacing(replacing(zone, 'PTR', HOST_IP), 'TXT', `bounces.${DOMAIN}`, { type: 'TXT', name: `bounces.${DOMAIN}`, value: 'v=spf1 -all' }));
    await using relay = await startScriptedMx({
      tls: true,
      server: {
        authOptional: false,
        onAuth: (auth, _session, callback) => (auth.username === 'app' && auth.password === 'right'
          ? callback(null, { user: auth.username })
          : callback(Object.assign(new Error('5.7.8 Authentication credentials invalid'), { responseCode: 535 }))),
      },
    });
    const relayEnv = (pass: string, port = relay.port) => ({ MAILROOM_DELIVERY: 'relay', MAILROOM_RELAY_URL: `smtp://app:${pass}@127.0.0.1:${port}` });

    const good = await doctor(relayEnv('right'), ['--domain', DOMAIN]);
    expect(find(good.report, `relay 127.0.0.1:${relay.port}`)).toMatchObject({ status: 'ok', found: '[127.0.0.1] takes a session, logged in as app' });
    expect(find(good.report, `SPF bounces.${DOMAIN}`)).toMatchObject({ status: 'ok', found: expect.stringMatching(/^not evaluated: mail leaves through the relay/) });
    expect(find(good.report, 'reverse DNS')).toMatchObject({ status: 'ok' });
    expect(good.report.checks.some((c) => c.check.startsWith('PTR '))).toBe(false);
    expect(notOk(good.report).filter((c) => !c.startsWith('free space'))).toEqual([]);
    expect(good.code).toBe(0);
    // The session ended with QUIT and sent no mail.
    expect(relay.commands.map((c) => c.line.split(' ')[0].toUpperCase())).toEqual(expect.arrayContaining(['EHLO', 'STARTTLS', 'AUTH', 'QUIT']));
    expect(relay.received).toEqual([]);

    const refused = await doctor(relayEnv('wrong'), ['--domain', DOMAIN]);
    expect(refused.code).toBe(1);
    expect(find(refused.report, `relay 127.0.0.1:${relay.port}`)).toMatchObject({
      status: 'fail', found: expect.stringContaining('535'), fix: expect.stringContaining('MAILROOM_RELAY_URL'),
    });

    const closed = await new Promise<number>((resolve) => {
      const probe = createServer();
      probe.listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const nobody = await doctor(relayEnv('right', closed), ['--domain', DOMAIN]);
    expect(find(nobody.report, `relay 127.0.0.1:${closed}`)).toMatchObject({ status: 'fail', found: expect.stringContaining('ECONNREFUSED') });
  });

  it('warns that a mail catcher sends nothing, and does not evaluate SPF for it', async () => {
    await dns.set(zone);
    const { code, report } = await doctor({ MAILROOM_DELIVERY: 'sink' }, ['--domain', DOMAIN]);
    expect(find(report, 'mode')).toMatchObject({ area: 'delivery', status: 'warn', fix: expect.stringContaining('MAILROOM_DELIVERY=direct') });
    expect(find(report, `SPF bounces.${DOMAIN}`).found).toBe('not evaluated: nothing is sent (MAILROOM_DELIVERY=sink)');
    expect(code).toBe(0);
  });

  it('says whether this node has the master secret the store was set up under, without making one', async () => {
    await dns.set(zone);
    expect(find((await doctor()).report, 'master secret')).toMatchObject({ status: 'ok', found: expect.stringContaining('is the secret the store was set up under') });

    const other = await doctor({ MAILROOM_SECRET: 'another secret of this deployment, not the first node\'s' });
    expect(other.code).toBe(1);
    expect(find(other.report, 'master secret')).toMatchObject({
      status: 'fail', found: 'MAILROOM_SECRET is not the secret the store was set up under: this node refuses to start on it',
      fix: expect.stringContaining('MAILROOM_SECRET'),
    });

    // A second node's data dir, sharing the database but holding no master.key yet.
    const bare = mkdtempSync(join(tmpdir(), 'mailroom-doctor-node-'));
    try {
      const second = await doctor({ MAILROOM_DATA_DIR: bare });
      expect(find(second.report, 'master secret')).toMatchObject({ status: 'fail', found: expect.stringContaining('this node does not have') });
      expect(readdirSync(bare)).toEqual([]);
    } finally {
      rmSync(bare, { recursive: true, force: true });
    }
  });

  it('prints the checks as text, and fails a domain no workspace has', async () => {
    await dns.set(zone);
    const text = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'doctor', '--domain', 'nowhere.test'], {
      cwd: root, env: { ...process.env, MAILROOM_DATA_DIR: t.dataDir, MAILROOM_DATABASE_URL: t.databaseUrl, MAILROOM_DNS_SERVERS: dns.server, MAILROOM_HOSTNAME: HOST },
    }).then(() => undefined, (e: { code: number; stdout: string }) => e);
    expect(text?.code).toBe(1);
    expect(text!.stdout).toContain(`  ok    PTR ${HOST_IP}: ${HOST_IP} points back to ${HOST}, which resolves to it`);
    expect(text!.stdout).toContain('  fail  domains: no workspace has the domain nowhere.test');
    expect(text!.stdout).toMatch(/\n\d+ ok, \d+ warnings?, 1 failed\.\n$/);

    const usage = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'doctor', '--domain'], { cwd: root })
      .then(() => undefined, (e: { code: number; stderr: string }) => e);
    expect(usage).toMatchObject({ code: 64, stderr: expect.stringContaining('--domain needs a value') });
  });
});
