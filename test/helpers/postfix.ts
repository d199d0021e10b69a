// A private Postfix: its own configuration, queue and log under a temp
// directory, smtpd on a loopback port, and only the services mail needs to
// pass through it. Its daemons run as the postfix user, so starting one needs
// root and Debian's postfix package (which .ci/run installs). The bench
// measures against it; tests use it as a real SMTP peer.

import { execFile } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { freePort } from './ports.js';

const run = promisify(execFile);
const POSTFIX = '/usr/sbin/postfix';

export interface PostfixOptions {
  /** Domains it is the final destination of: what they receive is discarded. */
  domains: string[];
  /** Other mail goes, unsigned, to this loopback port instead of being discarded. */
  relayTo?: number;
  /** What smtpd accepts waits in the hold queue until `postsuper -H ALL` releases it. */
  hold?: boolean;
  /** Further main.cf lines (restrictions, say), after the ones above. */
  mainCf?: string;
}

export interface PostfixInstance {
  /** smtpd's port on 127.0.0.1. */
  port: number;
  /** Runs a Postfix command (postconf, postsuper, postqueue) on this instance's configuration. */
  command(args: string[]): Promise<void>;
  /** Messages in the instance's queue. */
  queued(): number;
  /** Deliveries the instance has logged as sent. */
  delivered(): number;
  /** Its whole log. */
  logText(): string;
  /** The last lines of its log. */
  log(): string;
  stop(): Promise<void>;
}

/** Resolves once something answers SMTP on the port, or throws after ~2 s of tries. */
export async function waitForSmtp(port: number, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await run('/usr/sbin/smtp-source', ['-m', '1', `127.0.0.1:${port}`], { timeout: 2000 }).then(() => true, () => false)) return;
    await sleep(20);
  }
  throw new Error(`${what} did not start`);
}

const masterCf = (port: number) => `127.0.0.1:${port} inet n - n - 100 smtpd
smtp unix - - n - - smtp
pickup unix n - n 60 1 pickup
cleanup unix n - n - 0 cleanup
qmgr unix n - n 300 1 qmgr
rewrite unix - - n - - trivial-rewrite
bounce unix - - n - 0 bounce
defer unix - - n - 0 bounce
trace unix - - n - 0 bounce
verify unix - - n - 1 verify
flush unix n - n 1000? 0 flush
proxymap unix - - n - - proxymap
showq unix n - n - - showq
error unix - - n - - error
retry unix - - n - - error
discard unix - - n - - discard
anvil unix - - n - 1 anvil
scache unix - - n - 1 scache
postlog unix-dgram n - n - 1 postlogd
`;

const mainCf = (dir: string, o: PostfixOptions) => `compatibility_level = 3.6
config_directory = ${dir}/conf
queue_directory = ${dir}/queue
data_directory = ${dir}/data
command_directory = /usr/sbin
daemon_directory = /usr/lib/postfix/sbin
shlib_directory = /usr/lib/postfix
mail_owner = postfix
setgid_group = postdrop
myhostname = mx.postfix.example
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mydestination = ${o.domains.join(', ')}
mynetworks = 127.0.0.0/8
local_transport = discard:
default_transport = discard:
relay_transport = discard:
local_recipient_maps =
alias_maps =
alias_database =
biff = no
maillog_file = ${dir}/maillog
maillog_file_prefixes = ${dir}
${o.relayTo === undefined ? '' : `relayhost = [127.0.0.1]:${o.relayTo}
default_transport = smtp
relay_transport = smtp
smtp_dns_support_level = disabled
smtp_tls_security_level = none
default_destination_concurrency_limit = 20
`}${o.hold ? 'smtpd_client_restrictions = check_client_access static:HOLD\n' : ''}${o.mainCf ?? ''}`;

function uidOf(user: string): number {
  const line = readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith(`${user}:`));
  if (!line) throw new Error(`no ${user} user: is Postfix installed?`);
  return Number(line.split(':')[2]);
}

/** A master still running after `postfix stop` (it refused, or timed out) is ended by its PID. */
function killMaster(pidFile: string): void {
  let pid: number;
  try { pid = Number(readFileSync(pidFile, 'utf8').trim()); } catch { return; }
  if (!Number.isInteger(pid) || pid <= 1) return;
  try { process.kill(pid, 0); } catch { return; }
  try { process.kill(pid, 'SIGTERM'); } catch { /* gone meanwhile */ }
}

/**
 * Starts a private Postfix. It writes its errors to its log file (not to a
 * non-terminal stderr), so a failure to start quotes the log.
 */
export async function startPostfix(o: PostfixOptions): Promise<PostfixInstance> {
  const dir = mkdtempSync(join(tmpdir(), 'mailroom-postfix-'));
  // Postfix's daemons run as the postfix user and must reach their directories.
  chmodSync(dir, 0o755);
  for (const sub of ['conf', 'queue', 'data']) mkdirSync(join(dir, sub));
  const port = await freePort();
  writeFileSync(join(dir, 'conf', 'main.cf'), mainCf(dir, o));
  writeFileSync(join(dir, 'conf', 'master.cf'), masterCf(port));
  const postfix = (command: string) => run(POSTFIX, ['-c', join(dir, 'conf'), command], { timeout: 30_000 });
  const logText = () => { try { return readFileSync(join(dir, 'maillog'), 'utf8'); } catch { return ''; } };
  const log = () => logText().trim().split('\n').slice(-5).join('\n') || '(no log)';
  const stop = async () => {
    await postfix('stop').catch(() => undefined);
    killMaster(join(dir, 'queue', 'pid', 'master.pid'));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    chownSync(join(dir, 'data'), uidOf('postfix'), -1);
    await postfix('set-permissions');
    await postfix('check');
    await postfix('start');
    await waitForSmtp(port, 'Postfix');
  } catch (err) {
    const message = `Postfix did not start: ${(err as Error).message}\n${log()}`;
    await stop();
    throw new Error(message);
  }
  return {
    port,
    command: async ([program, ...args]) => { await run(program, ['-c', join(dir, 'conf'), ...args], { timeout: 30_000 }); },
    delivered: () => (logText().match(/ status=sent /g) ?? []).length,
    logText,
    log,
    queued: () => ['incoming', 'active', 'deferred', 'maildrop', 'hold']
      .reduce((n, q) => n + readdirSync(join(dir, 'queue', q), { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length, 0),
    stop,
  };
}
