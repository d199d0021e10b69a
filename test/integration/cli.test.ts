import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { apiClient, SENDING_ENV, startTestApp, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/child-server.js';
import { createTestDatabase, testDatabaseUrl } from '../helpers/database.js';
import { openStore } from '../../src/store/db.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));

/** The CLI on the data dir and database of a test app. */
async function mailroom(args: string[], app: Pick<TestApp, 'dataDir' | 'databaseUrl'>, env: Record<string, string> = {}) {
  return run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
    cwd: root, env: { ...process.env, MAILROOM_DATA_DIR: app.dataDir, MAILROOM_DATABASE_URL: app.databaseUrl, MAILROOM_LOG_LEVEL: 'silent', ...env },
    timeout: 60_000,
  });
}

// Each CLI run is a process that compiles the sources it loads: seconds each on a machine loaded by other work.
describe('mailroom CLI', { timeout: 120_000 }, () => {
  it('creates a key in the store of a running server, which then lists API keys', async () => {
    await using t = await startTestApp();
    const { stdout } = await mailroom(['keys', 'create', '--name', 'from-cli', '--json'], t);
    const created = JSON.parse(stdout);
    expect(created.token).toMatch(/^svc_live_/);
    expect(created.workspace_id).toBe(t.workspaceId);
    const list = await apiClient(t.url, created.token).get('/v1/api-keys');
    expect(list.status).toBe(200);
    expect(list.body.data.map((k: { id: string }) => k.id)).toContain(created.id);
  });

  it('manages workspaces, test keys with scopes, and prints the config with secrets masked', async () => {
    await using t = await startTestApp();
    const ws = JSON.parse((await mailroom(['workspaces', 'create', '--name', 'acme', '--plan', 'pro', '--json'], t)).stdout);
    expect(ws).toMatchObject({ name: 'acme', plan: 'pro' });
    const key = JSON.parse((await mailroom(['keys', 'create', '--name', 'k', '--workspace', 'acme', '--test', '--scopes', 'emails:send,emails:read', '--json'], t)).stdout);
    expect(key).toMatchObject({ mode: 'test', scopes: ['emails:send', 'emails:read'], workspace_id: ws.id });
    const list = JSON.parse((await mailroom(['workspaces', 'list', '--json'], t)).stdout);
    expect(list.map((w: { name: string }) => w.name)).toEqual(['default', 'acme']);

    const config = (await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'config'], {
      cwd: root, env: { ...process.env, MAILROOM_DATA_DIR: t.dataDir, MAILROOM_SECRET: 's'.repeat(40), MAILROOM_RELAY_URL: 'smtp://u:hunter2@relay.test:587' },
    })).stdout;
    expect(config).toContain('MAILROOM_SECRET=****');
    expect(config).toContain('smtp://u:****@relay.test:587');
    expect(config).not.toContain('hunter2');
  });

  it('moves a workspace to another plan, clearing its send quota counts', async () => {
    const plans = JSON.stringify({ tiny: { dailySendQuota: 2, monthlySendQuota: 3 }, tiny2: { dailySendQuota: 2, monthlySendQuota: 3 } });
    await using t = await startTestApp({ env: { MAILROOM_PLANS: plans } });
    const ws = await t.seed.workspace({ plan: 'tiny' });
    const { token } = await t.seed.key({ workspaceId: ws.id });
    await t.seed.activeDomain('acme.test', { workspaceId: ws.id });
    const api = t.api.as(token);
    const send = () => api.post('/v1/emails', { from: 'a@acme.test', to: 'reader@example.test', subject: 'Hi', text: 'x' });
    expect((await send()).status).toBe(201);
    expect((await send()).status).toBe(201);
    const over = await send();
    expect(over.status).toBe(429);
    expect(over.body.error.code).toBe('daily_quota_exceeded');

    const env = { MAILROOM_PLANS: plans };
    const cli = (args: string[]) => run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
      cwd: root, env: { ...process.env, ...env, MAILROOM_DATA_DIR: t.dataDir, MAILROOM_DATABASE_URL: t.databaseUrl, MAILROOM_LOG_LEVEL: 'silent' }, timeout: 60_000,
    });
    const moved = JSON.parse((await cli(['workspaces', 'set-plan', ws.name, 'tiny2', '--json'])).stdout);
    expect(moved).toMatchObject({ id: ws.id, plan: 'tiny2' });
    // The same limits, but the counts start again.
    expect((await send()).status).toBe(201);

    await expect(cli(['workspaces', 'set-plan', ws.name, 'tiny2'])).rejects.toMatchObject({ stderr: expect.stringContaining("already on plan 'tiny2'") });
    await expect(cli(['workspaces', 'set-plan', ws.name, 'gold'])).rejects.toMatchObject({ stderr: expect.stringContaining("Unknown plan 'gold'") });
    await expect(cli(['workspaces', 'set-plan', 'nobody', 'tiny'])).rejects.toMatchObject({ stderr: expect.stringContaining("No workspace 'nobody'") });
    await expect(cli(['workspaces', 'set-plan', ws.name])).rejects.toMatchObject({ code: 64 });
  });

  it('answers --version and -v, -h and each command\'s --help, and refuses unknown options with 64', async () => {
    await using t = await startTestApp();
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    // Each run is a process of its own, and none depends on another: they run at once.
    const refused = (args: string[]) => mailroom(args, t).then(() => undefined, (e: { code: number; stderr: string }) => e);
    const [longVersion, shortVersion, help, keysHelp, unknownLong, unknownShort, config] = await Promise.all([
      mailroom(['--version'], t), mailroom(['-v'], t), mailroom(['-h'], t), mailroom(['keys', '--help'], t),
      refused(['keys', 'list', '--frobnicate']), refused(['-x']), mailroom(['config', '--http-port', '4321'], t),
    ]);
    expect(longVersion.stdout.trim()).toBe(`mailroom ${version}`);
    expect(shortVersion.stdout.trim()).toBe(`mailroom ${version}`);
    expect(help.stdout).toContain('mailroom backup FILE');
    expect(help.stdout).toContain('mailroom restore FILE');
    expect(help.stdout).toContain('mailroom keys list');
    expect(keysHelp.stdout.split('\n').filter((l) => l.startsWith('  mailroom'))).toEqual([
      expect.stringContaining('mailroom keys create'), expect.stringContaining('mailroom keys list'), expect.stringContaining('mailroom keys revoke'),
    ]);
    expect(unknownLong).toMatchObject({ code: 64, stderr: expect.stringContaining('unknown option --frobnicate') });
    // The usage shown is the command's.
    expect(unknownLong?.stderr.split('\n').filter((l) => l.startsWith('  mailroom'))).toEqual(keysHelp.stdout.split('\n').filter((l) => l.startsWith('  mailroom')));
    expect(unknownShort).toMatchObject({ code: 64, stderr: expect.stringContaining('unknown option -x') });
    // Configuration flags are still flags.
    expect(config.stdout).toContain('MAILROOM_HTTP_PORT=4321');
  });

  it('lists and revokes keys', async () => {
    await using t = await startTestApp();
    const made = JSON.parse((await mailroom(['keys', 'create', '--name', 'doomed', '--json'], t)).stdout);
    const listed = JSON.parse((await mailroom(['keys', 'list', '--json'], t)).stdout) as Array<{ id: string; name: string; token: string }>;
    expect(listed.map((k) => k.name)).toEqual(expect.arrayContaining(['harness', 'doomed']));
    expect(listed.find((k) => k.id === made.id)!.token).not.toBe(made.token);
    expect((await mailroom(['keys', 'list'], t)).stdout).toContain(made.id);
    // The API refuses a name with an escape sequence and a line break; one kept from before that rule is shown written out, not obeyed.
    expect((await t.api.post('/v1/api-keys', { name: 'evil\u001b[2J\nforged line' })).status).toBe(422);
    await t.seed.key({ name: 'evil\u001b[2J\nforged line' });
    const text = (await mailroom(['keys', 'list'], t)).stdout;
    expect(text).toContain('evil\\u001b[2J\\u000aforged line');
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
    expect((await apiClient(t.url, made.token).get('/v1/api-keys')).status).toBe(200);
    expect((await mailroom(['keys', 'revoke', made.id], t)).stdout).toContain(`Revoked key ${made.id} of workspace default; anything using it stops working within 5 seconds on a running server.`);
    // The server's key cache holds a verified key for at most 5 s.
    let status = 200;
    for (const deadline = Date.now() + 8_000; Date.now() < deadline && status === 200; await new Promise((r) => setTimeout(r, 200))) {
      status = (await apiClient(t.url, made.token).get('/v1/api-keys')).status;
    }
    expect(status).toBe(401);
    await expect(mailroom(['keys', 'revoke', 'key_nope'], t)).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('key_nope') });
    await expect(mailroom(['keys', 'revoke'], t)).rejects.toMatchObject({ code: 64 });
  });

  it('lists no keys on a new store without making a workspace: only keys create makes the default one', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-cli-'));
    const database = testDatabaseUrl ? await createTestDatabase() : undefined;
    const store = { dataDir, databaseUrl: database?.url ?? `sqlite:${join(dataDir, 'mailroom.db')}` };
    try {
      expect((await mailroom(['keys', 'list'], store)).stdout).toContain('No keys yet: keys create makes the first, in workspace default.');
      expect(JSON.parse((await mailroom(['keys', 'list', '--json'], store)).stdout)).toEqual([]);
      expect(JSON.parse((await mailroom(['workspaces', 'list', '--json'], store)).stdout)).toEqual([]);
      await expect(mailroom(['keys', 'revoke', 'key_nope'], store)).rejects.toMatchObject({ stderr: expect.stringContaining("no workspace 'default'") });
    } finally {
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('lists the outbound queue per destination, and retries, holds and releases a destination in the store of a running server', async () => {
    // The relay refuses connections: mail waits, deferred.
    await using t = await startTestApp({ env: SENDING_ENV });
    await t.seed.activeDomain('acme.test');
    const sent = await t.api.post('/v1/emails', { from: 'ann@acme.test', to: ['a@far.test', 'b@far.test'], subject: 'Hi', text: 'x' });
    expect(sent.status).toBe(201);
    const waiting = () => t.api.get('/v1/queue/items?domain=far.test').then((r) => r.body.data[0]);
    await until('a deferral', async () => ((await waiting())?.state === 'deferred' ? true : undefined));

    const listed = JSON.parse((await mailroom(['queue', '--json'], t)).stdout);
    expect(listed).toEqual([{
      workspace_id: t.workspaceId, workspace: 'default',
      destinations: [expect.objectContaining({ domain: 'far.test', queued: 0, deferred: 2, emails: 1, held: false, last_reply: expect.objectContaining({ text: expect.any(String) }) })],
    }]);
    const table = (await mailroom(['queue'], t)).stdout.split('\n');
    expect(table[0]).toBe(`Workspace default (${t.workspaceId})`);
    expect(table[1]).toMatch(/^ {2}DOMAIN +QUEUED +DEFERRED +LEASED +LEASE ENDS +EMAILS +OLDEST +NEXT ATTEMPT +LAST REPLY$/);
    expect(table[2]).toMatch(/^ {2}far\.test +0 +2 +0 +1 +\d{4}-\d\d-\d\dT/);

    expect((await mailroom(['queue', 'hold', 'far.test'], t)).stdout).toContain('Mail to far.test is held in 1 workspace');
    expect((await t.api.get('/v1/queue')).body.data[0]).toMatchObject({ domain: 'far.test', held: true, next_attempt_at: null });
    expect((await mailroom(['queue'], t)).stdout).toMatch(/far\.test +0 +2 +0 +1 +\S+ +held since \d{4}-/);
    expect((await mailroom(['queue', 'release', 'far.test', '--json'], t)).stdout).toContain('"held":false');
    expect((await t.api.get('/v1/queue')).body.data[0]).toMatchObject({ held: false });
    const refused = (args: string[]) => mailroom(args, t).then(() => undefined, (e: { code: number; stderr: string }) => e);

    // The relay could not be reached, so the server rests it until the row's retry time, minutes away; a retry
    // asked here (another process) makes the row due and ends that rest: the server tries again at once.
    expect(Date.parse((await waiting()).next_attempt_at) - Date.now()).toBeGreaterThan(60_000);
    expect(JSON.parse((await mailroom(['queue', 'retry', 'far.test', '--json'], t)).stdout)).toEqual({ object: 'queue_retry', retried: 1, leased: 0, lease_ends_at: null });
    await until('a second attempt', async () => ((await waiting())?.attempts === 2 ? true : undefined));

    expect(await refused(['queue', 'release', 'far.test'])).toMatchObject({ code: 1, stderr: 'mailroom: Mail to far.test is not held in any workspace.\n' });

    expect(await refused(['queue', 'hold'])).toMatchObject({ code: 64, stderr: expect.stringContaining('queue hold takes the DOMAIN') });
    expect(await refused(['queue', 'flush'])).toMatchObject({ code: 64, stderr: expect.stringContaining("queue takes items, retry, hold or release, not 'flush'") });
    expect(await refused(['queue', 'hold', 'not a domain'])).toMatchObject({ code: 1, stderr: expect.stringMatching(/^mailroom: 'not a domain' is not a domain name/) });
    // A name that is not there is a failed command, not a misuse: exit 1, without the usage text.
    const missing = await refused(['queue', '--workspace', 'nowhere']);
    expect(missing).toMatchObject({ code: 1, stderr: "mailroom: no workspace 'nowhere' (workspaces list shows them)\n" });
  });

  it('counts mail leased by a node that stopped as leased, as /metrics does, with when its lease ends, and retry leaves it to its lease', async () => {
    await using t = await startTestApp({ env: SENDING_ENV });
    await t.seed.activeDomain('acme.test');
    const sent = await t.api.post('/v1/emails', { from: 'ann@acme.test', to: ['a@far.test', 'b@far.test'], subject: 'Hi', text: 'x' });
    expect(sent.status).toBe(201);
    const waiting = () => t.api.get('/v1/queue/items?domain=far.test').then((r) => r.body.data[0]);
    await until('a deferral', async () => ((await waiting())?.state === 'deferred' ? true : undefined));
    // What a node on another host leaves when it dies during an attempt: the row leased to it for two minutes.
    const leaseEnds = Date.now() + 120_000;
    const { db } = t.mailroom.services.store;
    await db.updateTable('outbound_queue').set({ lease_owner: 'other-host/4026531836:4242:0badf00d', locked_until: leaseEnds, next_attempt_at: leaseEnds })
      .where('email_id', '=', sent.body.id).execute();
    const leaseEndsAt = new Date(leaseEnds).toISOString();

    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toMatch(/^mailroom_outbound_queue_rows\{state="leased"\} 1$/m);
    expect(metrics).toMatch(/^mailroom_outbound_queue_rows\{state="deferred"\} 0$/m);
    const [listed] = JSON.parse((await mailroom(['queue', '--json'], t)).stdout);
    expect(listed.destinations).toEqual([expect.objectContaining({ domain: 'far.test', queued: 0, deferred: 0, leased: 2, lease_ends_at: leaseEndsAt, emails: 1 })]);
    expect((await mailroom(['queue'], t)).stdout).toMatch(new RegExp(`far\\.test +0 +0 +2 +${leaseEndsAt} +1 `));
    expect((await t.api.get('/v1/queue/items?domain=far.test')).body.data[0]).toMatchObject({ state: 'sending' });

    // Its attempt may still be under way on a live node: a retry does not free it, and says until when it waits.
    expect(JSON.parse((await mailroom(['queue', 'retry', 'far.test', '--json'], t)).stdout))
      .toEqual({ object: 'queue_retry', retried: 0, leased: 1, lease_ends_at: leaseEndsAt });
    expect((await mailroom(['queue', 'retry'], t)).stdout).toBe('0 waiting emails to every destination made due now.\n'
      + `1 leased email was left alone (an attempt under way, or a node that stopped during one): its lease ends at ${leaseEndsAt}, `
      + 'and what an attempt has not finished by then is tried again (a node restarted on its host takes its own back at once).\n');
    const row = await db.selectFrom('outbound_queue').select(['lease_owner', 'locked_until', 'next_attempt_at']).where('email_id', '=', sent.body.id).executeTakeFirstOrThrow();
    expect(row).toEqual({ lease_owner: 'other-host/4026531836:4242:0badf00d', locked_until: leaseEnds, next_attempt_at: leaseEnds });
  });

  it('lists the emails waiting for one destination, with their workspace, and refuses a missing domain, workspace or bad limit', async () => {
    await using t = await startTestApp({ env: SENDING_ENV });
    await t.seed.activeDomain('acme.test');
    const sent = await t.api.post('/v1/emails', { from: 'ann@acme.test', to: ['a@far.test', 'b@far.test'], subject: 'Hi', text: 'x' });
    const waiting = () => t.api.get('/v1/queue/items?domain=far.test').then((r) => r.body.data);
    await until('a deferral', async () => ((await waiting())[0]?.state === 'deferred' ? true : undefined));
    const second = await t.api.post('/v1/emails', { from: 'ann@acme.test', to: 'c@far.test', subject: 'Again', text: 'y' });
    await until('both emails waiting', async () => ((await waiting()).length === 2 ? true : undefined));
    const items = JSON.parse((await mailroom(['queue', 'items', 'far.test', '--json'], t)).stdout);
    expect(items).toEqual([
      expect.objectContaining({ workspace_id: t.workspaceId, workspace: 'default', email_id: second.body.id, recipients: ['c@far.test'] }),
      expect.objectContaining({
        workspace_id: t.workspaceId, workspace: 'default', email_id: sent.body.id, recipients: ['a@far.test', 'b@far.test'],
        state: 'deferred', attempts: 1, next_attempt_at: expect.stringMatching(/^\d{4}-/), last_reply: expect.objectContaining({ text: expect.any(String) }),
      }),
    ]);
    const itemLines = (await mailroom(['queue', 'items', 'FAR.test', '--workspace', 'default', '--limit', '1'], t)).stdout.trimEnd().split('\n');
    expect(itemLines).toEqual([
      expect.stringMatching(/^ {2}EMAIL +RECIPIENTS +WORKSPACE +STATUS +ATTEMPTS +NEXT ATTEMPT +LAST REPLY$/),
      expect.stringMatching(new RegExp(`^ {2}${second.body.id} +c@far\\.test +default +(queued|deferred|sending) +\\d+ +`)),
      'The first 1 shown; more wait (--limit N shows more).',
    ]);
    expect((await mailroom(['queue', 'items', 'near.test'], t)).stdout).toBe('Nothing waits for near.test.\n');

    const refused = (args: string[]) => mailroom(args, t).then(() => undefined, (e: { code: number; stderr: string }) => e);
    expect(await refused(['queue', 'items'])).toMatchObject({ code: 64, stderr: expect.stringContaining('queue items takes the DOMAIN') });
    expect(await refused(['queue', 'items', 'far.test', '--workspace', 'nowhere'])).toMatchObject({ code: 1, stderr: expect.stringContaining("no workspace 'nowhere'") });
    for (const limit of ['0', 'ten']) {
      expect(await refused(['queue', 'items', 'far.test', `--limit=${limit}`])).toMatchObject({ code: 64, stderr: expect.stringContaining(`--limit takes a whole number of emails from 1, not '${limit}'`) });
    }
    expect(await refused(['queue', 'items', 'not a domain'])).toMatchObject({ code: 1, stderr: expect.stringMatching(/^mailroom: 'not a domain' is not a domain name/) });
  });

  it('says in one line that the HTTP port is taken, and warns of a host name that is not fully qualified', async () => {
    await using t = await startTestApp();
    const port = new URL(t.url).port;
    const err = await mailroom(['serve', '--http-port', port, '--smtp-port', '0', '--submission-port', '0', '--hostname', 'mailbox'], t)
      .then(() => undefined, (e: { code: number; stderr: string }) => e);
    expect(err?.code).toBe(1);
    const lines = err!.stderr.trim().split('\n');
    expect(lines).toEqual([
      expect.stringContaining("MAILROOM_HOSTNAME is 'mailbox', not a fully qualified name"),
      `mailroom: the HTTP port 127.0.0.1:${port} is in use (another Mailroom?): stop that, or set MAILROOM_HTTP_PORT`,
    ]);

    // The same for an SMTP port: here the HTTP port itself, taken by the test server, is given as the MX port.
    const smtp = await mailroom(['serve', '--http-port', '0', '--smtp-port', port, '--submission-port', '0', '--smtp-host', '127.0.0.1', '--hostname', 'mx.mailroom.test'], t)
      .then(() => undefined, (e: { code: number; stderr: string }) => e);
    expect(smtp?.code).toBe(1);
    expect(smtp!.stderr.trim()).toMatch(new RegExp(`^mailroom: the SMTP MX listener cannot listen on 127\\.0\\.0\\.1:${port} \\(EADDRINUSE\\): .*; or set MAILROOM_SMTP_PORT=0 to run without it$`));
  });

  it('fails with a clear message on bad usage and bad configuration', async () => {
    await using t = await startTestApp();
    await expect(mailroom(['keys', 'create'], t)).rejects.toMatchObject({ code: 64, stderr: expect.stringContaining('--name NAME is required') });
    await expect(mailroom(['keys', 'create', '--name', 'two\nlines'], t)).rejects.toMatchObject({ code: 64, stderr: expect.stringContaining('--name must be one line') });
    await expect(mailroom(['keys', 'create', '--name', 'x', '--workspace', 'nope'], t)).rejects.toMatchObject({ stderr: expect.stringContaining("no workspace 'nope'") });
    await expect(mailroom(['keys', 'create', '--name', 'x', '--scopes', 'root'], t)).rejects.toMatchObject({ stderr: expect.stringContaining("unknown scope 'root'") });
    await expect(mailroom(['config', '--http-port', '99999'], t)).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('MAILROOM_HTTP_PORT must be a whole number') });
    await expect(mailroom(['frobnicate'], t)).rejects.toMatchObject({ stderr: expect.stringContaining("unknown command 'frobnicate'") });
  });
});

describe('nodes sharing one database', { timeout: 120_000 }, () => {
  it('refuse to start under a master secret other than the one the database was set up under', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-secret-'));
    const database = testDatabaseUrl === undefined ? undefined : await createTestDatabase();
    const app = { dataDir, databaseUrl: database?.url ?? `sqlite:${join(dataDir, 'mailroom.db')}` };
    try {
      const first = { MAILROOM_SECRET: 'a'.repeat(40) };
      await mailroom(['workspaces', 'list'], app, first);
      const err = await mailroom(['workspaces', 'list'], app, { MAILROOM_SECRET: 'b'.repeat(40) })
        .then(() => undefined, (e: { code: number; stderr: string }) => e);
      expect(err?.code).toBe(1);
      expect(err!.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^mailroom: This database was set up under another master secret: set the same MAILROOM_SECRET on every node/)]);
      // The first secret still opens it.
      await expect(mailroom(['workspaces', 'list'], app, first)).resolves.toMatchObject({ stderr: '' });
    } finally {
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
  it('refuse, in one line, a database a newer Mailroom migrated, which doctor names', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-newer-'));
    const database = testDatabaseUrl === undefined ? undefined : await createTestDatabase();
    const app = { dataDir, databaseUrl: database?.url ?? `sqlite:${join(dataDir, 'mailroom.db')}` };
    try {
      await mailroom(['migrate'], app);
      const store = openStore(app.databaseUrl);
      try {
        await sql`INSERT INTO kysely_migration (name, timestamp) VALUES ('9999_from_a_newer_version', ${new Date().toISOString()})`.execute(store.db);
      } finally {
        await store.close();
      }
      for (const command of [['migrate'], ['workspaces', 'list']]) {
        const err = await mailroom(command, app).then(() => undefined, (e: { code: number; stderr: string }) => e);
        expect(err?.code, command.join(' ')).toBe(1);
        expect(err!.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^mailroom: This database was migrated by a newer Mailroom: 9999_from_a_newer_version is not among this version's migrations/)]);
      }
      const doctor = await mailroom(['doctor'], app).then((r) => r.stdout, (e: { stdout: string }) => e.stdout);
      expect(doctor).toMatch(/migrations: 1 from a newer Mailroom: 9999_from_a_newer_version/);
    } finally {
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

/** Node as an ordinary user runs it: as root, without the capability that binds ports below 1024. */
function nodeWithoutLowPorts(): string[] {
  return process.getuid?.() === 0 ? ['setpriv', '--bounding-set', '-net_bind_service', '--inh-caps', '-net_bind_service', process.execPath] : [process.execPath];
}

/** The first line an SMTP server at 127.0.0.1:`port` says. */
function smtpGreeting(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let said = '';
    socket.setEncoding('utf8').on('data', (c: string) => {
      said += c;
      if (said.includes('\r\n')) {
        socket.end('QUIT\r\n');
        resolve(said.slice(0, said.indexOf('\r\n')));
      }
    });
    socket.once('error', reject);
  });
}

/** The output of `bin/mailroom serve` once it says where the dashboard is, and a way to stop it (expecting exit 0). */
async function serve(env: Record<string, string>, privilege: 'as is' | 'without low ports' = 'as is') {
  const [command, ...prefix] = privilege === 'without low ports' ? nodeWithoutLowPorts() : [process.execPath];
  const inherited = { ...process.env };
  for (const name of ['MAILROOM_SMTP_PORT', 'MAILROOM_SUBMISSION_PORT']) delete inherited[name];
  const child = spawn(command, [...prefix, 'bin/mailroom', 'serve'], {
    cwd: root, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...inherited, MAILROOM_HTTP_HOST: '127.0.0.1', MAILROOM_HTTP_PORT: '0', MAILROOM_DELIVERY: 'sink', MAILROOM_LOG_LEVEL: 'silent', ...env },
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  let output = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
  const stop = async () => {
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  };
  try {
    const dashboardUrl = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no dashboard line in time; output so far:\n${output}`)), 20_000);
      child.stdout.setEncoding('utf8').on('data', (c: string) => {
        output += c;
        const found = /Then open the dashboard: (http:\/\/127\.0\.0\.1:\d+\/dashboard\/)/.exec(output);
        if (found) {
          clearTimeout(timer);
          resolve(found[1]);
        }
      });
      void exited.then((code) => reject(new Error(`exited with ${code} before it was ready:\n${output}`)));
    });
    // The log lines, written asynchronously, may follow the dashboard's.
    return { output, dashboardUrl, stop, outputNow: () => output };
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
}

/** Whether an ordinary user may not bind port 25 here (net.ipv4.ip_unprivileged_port_start, 1024 unless lowered). */
const lowPortsNeedPrivilege = Number(readFileSync('/proc/sys/net/ipv4/ip_unprivileged_port_start', 'utf8')) > 25;

describe('mailroom serve, as npm start runs it', () => {
  it('starts from the built files, says where the dashboard is, serves it, and stops on SIGTERM', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-serve-'));
    try {
      const first = await serve({ MAILROOM_DATA_DIR: dataDir, MAILROOM_SMTP_PORT: '0', MAILROOM_SUBMISSION_PORT: '0' });
      try {
        // Where the data is, and the first key as the README's first steps make it: a test key, which sends before any domain is verified.
        expect(first.output).toContain(`(data in ${dataDir}).`);
        expect(first.output).toContain('Create an API key with:  npx mailroom keys create --name my-first-key --test\n');
        // No SMTP listener, no line about one.
        expect(first.output).not.toContain('SMTP:');
        const page = await fetch(first.dashboardUrl);
        expect(page.status).toBe(200);
        expect(await page.text()).toContain('/dashboard/app.js');
        expect((await fetch(new URL('app.js', first.dashboardUrl))).status).toBe(200);
      } finally {
        await first.stop();
      }
      // Once the store holds a key, the hint to create one is not given again.
      await mailroom(['keys', 'create', '--name', 'first', '--test'], { dataDir, databaseUrl: `sqlite:${join(dataDir, 'mailroom.db')}` });
      const again = await serve({ MAILROOM_DATA_DIR: dataDir, MAILROOM_SMTP_PORT: '0', MAILROOM_SUBMISSION_PORT: '0' });
      await again.stop();
      expect(again.output).toContain(`(data in ${dataDir}).`);
      expect(again.output).not.toContain('Create an API key');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it.skipIf(!lowPortsNeedPrivilege)('listens for SMTP on 2525 and 2587 when its default ports need a privilege the user lacks, and says so', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-serve-'));
    try {
      const started = await serve({ MAILROOM_DATA_DIR: dataDir, MAILROOM_SMTP_HOST: '127.0.0.1', MAILROOM_LOG_LEVEL: 'warn' }, 'without low ports');
      try {
        expect(started.output).toContain('SMTP: mail for your domains on 127.0.0.1:2525, submission (an API key as password) on 127.0.0.1:2587.\n');
        await expect.poll(started.outputNow).toContain('SMTP MX listener: port 25 needs root or the CAP_NET_BIND_SERVICE capability, so it listens on 2525 instead; set MAILROOM_SMTP_PORT to choose its port');
        await expect.poll(started.outputNow).toContain('SMTP submission listener: port 587 needs root or the CAP_NET_BIND_SERVICE capability, so it listens on 2587 instead; set MAILROOM_SUBMISSION_PORT to choose its port');
        for (const port of [2525, 2587]) expect(await smtpGreeting(port)).toMatch(/^220 /);
      } finally {
        await started.stop();
      }
      // A port set by the operator is theirs: refused, the start stops and says why, rather than listening elsewhere.
      const [command, ...prefix] = nodeWithoutLowPorts();
      const refused = await run(command, [...prefix, 'bin/mailroom', 'serve'], {
        cwd: root, env: { ...process.env, MAILROOM_DATA_DIR: dataDir, MAILROOM_HTTP_PORT: '0', MAILROOM_SMTP_PORT: '25', MAILROOM_SUBMISSION_PORT: '0', MAILROOM_LOG_LEVEL: 'silent' },
        timeout: 60_000,
      }).then(() => undefined, (err: { code: number; stderr: string }) => err);
      expect(refused?.code).toBe(1);
      expect(refused?.stderr).toContain('mailroom: the SMTP MX listener cannot listen on 127.0.0.1:25 (EACCES)');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
