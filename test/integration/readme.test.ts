import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/ports.js';
import { eventually } from '../helpers/smtp-app.js';

// The README, walked through as a new user would: every fenced block of
// commands is run here, in order, against Mailroom started from the built
// files as `npm start` starts it, or is one of the commands .ci/run runs
// itself. A block added to the README and not named below fails this test.
// What differs on a test machine is replaced, and only that: the ports (the
// README's 3000 and 587), the URL of the webhook endpoint (a receiver here),
// the backup's file (in the test's scratch directory), and the token where
// the README says "svc_test_…" (the one the first command printed). The
// server runs without the send delay, so the README's wait for delivery ends
// at once.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);
/**
 * The README's commands run as a reader's shell would: a dozen `npx mailroom`
 * commands, each a process that starts and opens the store, take a few
 * seconds each on PostgreSQL on a busy machine.
 */
const SHELL_TIMEOUT_MS = 180_000;

interface Block { lang: string; code: string; firstLine: string }

function readmeBlocks(): Block[] {
  const text = readFileSync(join(ROOT, 'README.md'), 'utf8');
  return [...text.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1], code: m[2], firstLine: m[2].split('\n')[0] }));
}

/** Blocks this test does not run, by their first line, and who runs them instead. */
const RUN_ELSEWHERE: Record<string, string> = {
  'npm install && npm start': '.ci/run installs with npm ci (the same install from the lock file); cli.test.ts runs npm start and stops it with signals',
  'npm test': '.ci/run runs npm test',
  'MAILROOM_DATABASE_URL=postgres://mailroom:PASSWORD@db.internal:5432/mailroom \\':
    'cluster.test.ts starts three nodes this way on one database of the private PostgreSQL cluster that .ci/run starts (npm run test:postgres)',
  'npx mailroom store copy --to postgres://mailroom:PASSWORD@db.internal:5432/mailroom':
    'store-copy.test.ts runs mailroom store copy into a database of that cluster, and starts Mailroom on it',
  'pg_dump -Fc -f mailroom-$(date +%F).dump postgres://mailroom:PASSWORD@db.internal:5432/mailroom':
    'store-copy.test.ts dumps a running node\'s database of that cluster with pg_dump, restores it with pg_restore into a new one, and starts Mailroom on it',
  'npx mailroom doctor                       # add --domain example.com for one domain, --json for a script':
    'doctor.test.ts runs mailroom doctor against a DNS server of its own (dnsmasq), which the checks need',
  'Server identity (MAILROOM_HOSTNAME)': 'the output of mailroom doctor, not a command; doctor.test.ts checks the lines of that output',
  'npm run typecheck      # tsc, no emit': '.ci/run runs the typecheck, npm test, npm run test:postgres and itself; contract.test.ts runs the generator of npm run contract:types; npm run bench is a measurement that takes minutes, not a test',
};

describe('the README, command by command', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-readme-'));
  const scratch = mkdtempSync(join(ROOT, 'test', '.readme-'));
  let server: ChildProcess | undefined;
  let httpPort = 0;
  let submissionPort = 0;
  const posts: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => {
      posts.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  const env = () => ({
    ...process.env, MAILROOM_DATA_DIR: dataDir, MAILROOM_HTTP_HOST: '127.0.0.1', MAILROOM_HTTP_PORT: String(httpPort),
    MAILROOM_SMTP_PORT: '0', MAILROOM_SUBMISSION_PORT: String(submissionPort), MAILROOM_SEND_DELAY: '0', MAILROOM_LOG_LEVEL: 'silent',
    MAILROOM_WEBHOOK_ALLOW_PRIVATE: 'true', MAILROOM_HOSTNAME: 'mx.mailroom.test',
  });

  beforeAll(async () => {
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    [httpPort, submissionPort] = [await freePort(), await freePort()];
    server = spawn(process.execPath, ['bin/mailroom', 'serve'], { cwd: ROOT, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    server.stderr!.on('data', (c: Buffer) => (output += c));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the server did not start:\n${output}`)), 20_000);
      server!.stdout!.on('data', (c: Buffer) => {
        output += c;
        if (output.includes('/dashboard/')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
  }, 30_000);

  afterAll(async () => {
    // Its data dir goes once it has stopped: a server shutting down still writes there (its last checkpoint).
    if (server && server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((resolve) => server!.once('exit', resolve));
      server.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 15_000))]);
    }
    receiver.close();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
  });

  /** What differs here: the ports, the webhook endpoint, the token the first command printed. */
  const localise = (code: string, token: string) => code
    .replaceAll('127.0.0.1:3000', `127.0.0.1:${httpPort}`).replaceAll('127.0.0.1:587', `127.0.0.1:${submissionPort}`)
    .replaceAll('port: 587', `port: ${submissionPort}`)
    .replaceAll('https://example.com/hooks/mailroom', `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/mailroom`)
    .replaceAll('svc_test_…', token)
    .replaceAll('/var/backups/mailroom-$(date +%F).db', join(scratch, 'mailroom-backup.db'));

  it('runs every block, and each does what the README says', async () => {
    const blocks = readmeBlocks();
    const runHere = blocks.filter((b) => RUN_ELSEWHERE[b.firstLine] === undefined);
    expect(blocks.filter((b) => RUN_ELSEWHERE[b.firstLine] !== undefined).map((b) => b.firstLine).sort()).toEqual(Object.keys(RUN_ELSEWHERE).sort());
    expect(runHere.every((b) => b.lang === 'sh' || b.lang === 'js')).toBe(true);

    // One shell for the sh blocks, as a reader's terminal: variables set by one block are there for the next.
    let token = '';
    const shell: string[] = ['set -euo pipefail'];
    const outputs: string[] = [];
    const js: Block[] = [];
    const runShell = async () => {
      if (shell.length === 1) return;
      const { stdout } = await run('bash', ['-c', shell.join('\n')], { cwd: ROOT, env: env(), timeout: SHELL_TIMEOUT_MS, maxBuffer: 8 * 1024 * 1024 });
      outputs.push(...stdout.split('\n@@block@@\n').slice(0, -1));
      shell.splice(1);
    };
    for (const block of runHere) {
      if (block.lang === 'js') {
        js.push(block);
        continue;
      }
      if (block.code.includes('svc_test_…')) {
        // The token the first command printed, which a reader copies.
        await runShell();
        token = /svc_test_\w+/.exec(outputs.join('\n'))![0];
      }
      shell.push(localise(block.code, token), 'echo; echo @@block@@');
    }
    await runShell();
    const all = outputs.join('\n');

    // Keys, and the first email: sent, delivered to the sink, its events, its source.
    expect(all).toMatch(/Created test key key_\w+ in workspace default/);
    expect(all).toContain('"status": "delivered"');
    expect(all).toMatch(/"email\.delivered"/);
    expect(all).toMatch(/^Subject: Hello from Mailroom\r?$/m);
    // SMTP with swaks.
    expect(all).toMatch(/<-\s+250 2\.0\.0 Ok: queued as em_\w+/);
    // The domain: its records (the inbound MX among them), verification under way, the inbound list.
    expect(all).toMatch(/"record": "DKIM"/);
    expect(all).toContain(`"record": "MX_INBOUND"`);
    expect(all).toMatch(/^"(?:verifying|unverified)"$/m);
    // A webhook with its secret, shown once.
    expect(all).toMatch(/"secret": "whsec_[\w+/=]+"/);
    // The command line: workspaces, a key listed then revoked, a backup, migrations, the configuration.
    expect(all).toMatch(/acme/);
    expect(existsSync(join(scratch, 'mailroom-backup.db'))).toBe(true);
    expect(all).toMatch(/MAILROOM_DATA_DIR|dataDir/);
    // Templates and broadcasts.
    expect(all).toMatch(/"subject": ?"Welcome, Ann"/);
    expect(all).toMatch(/"status": "(?:sending|sent)"/);

    // The JavaScript: nodemailer with its defaults, and the webhook check on a real POST.
    const [nodemailerBlock, verifyBlock] = js;
    expect(nodemailerBlock.code).toContain("import nodemailer from 'nodemailer'");
    writeFileSync(join(scratch, 'send.mjs'), localise(nodemailerBlock.code, token));
    const sent = await run(process.execPath, [join(scratch, 'send.mjs')], { cwd: ROOT, env: { ...env(), MAILROOM_API_KEY: token }, timeout: 20_000 });
    expect(sent.stdout).toMatch(/^250 2\.0\.0 Ok: queued as em_\w+/);

    expect(verifyBlock.code).toContain('export function verifyWebhook');
    writeFileSync(join(scratch, 'verify.mjs'), verifyBlock.code);
    const { verifyWebhook } = await import(pathToFileURL(join(scratch, 'verify.mjs')).href) as
      { verifyWebhook(secret: string, headers: IncomingHttpHeaders, body: string): boolean };
    const secret = /"secret": "(whsec_[\w+/=]+)"/.exec(all)![1];
    const post = await eventually(async () => posts.find((p) => JSON.parse(p.body).type === 'email.delivered'), 15_000, 'a webhook POST');
    expect(verifyWebhook(secret, post.headers, post.body)).toBe(true);
    expect(verifyWebhook(secret, post.headers, post.body.replace('email.delivered', 'email.bounced'))).toBe(false);
    expect(verifyWebhook(`whsec_${Buffer.alloc(24, 7).toString('base64')}`, post.headers, post.body)).toBe(false);
  }, 2 * SHELL_TIMEOUT_MS + 60_000);
});
