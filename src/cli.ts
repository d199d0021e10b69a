import { createRequire } from 'node:module';
import { join } from 'node:path';
import { CONFIG_KEYS, ConfigError, describeConfig, flagsToEnv, loadConfig, type Config } from './config.js';
import { AppError } from './core/errors.js';
import { SecretMismatchError } from './store/secret-check.js';
import { NewerStoreError } from './store/db.js';
import { isScope } from './core/scopes.js';
import { fitsTextFormat } from './contract/contract.js';
import type { Compaction } from './store/compact.js';
import type { QueueDestination, QueueItem, QueueRetryResult } from './queue/index.js';

// The application, the store and the doctor are imported by the commands that use them: `--version`, `--help`,
// `config` and a mistyped command answer without loading them (about a second), and each command loads only its own:
// commands on the store load the store and the services over it (store-services.ts), not the HTTP, SMTP and MIME code.
const openServices = async (config: Config) => (await import('./store-services.js')).openStoreServices(config);

const USAGE = `mailroom — self-hosted email platform

Usage:
  mailroom [serve] [--http-port 3000 …]        run the API, SMTP listeners and engines
  mailroom keys create --name NAME [--workspace NAME_OR_ID] [--test] [--scopes a,b] [--json]
  mailroom keys list [--workspace NAME_OR_ID] [--json]
  mailroom keys revoke KEY_ID [--workspace NAME_OR_ID]
  mailroom workspaces create --name NAME [--plan PLAN] [--json]
  mailroom workspaces list [--json]
  mailroom workspaces set-plan NAME_OR_ID PLAN [--json]   change plan; clears the send quota counts
  mailroom queue [--workspace NAME_OR_ID] [--json]   what waits for delivery, per destination domain (as mailq)
  mailroom queue items DOMAIN [--workspace …] [--limit N] [--json]   the emails waiting for DOMAIN, newest first (default 50)
  mailroom queue retry [DOMAIN] [--workspace …]  make waiting mail due now: every destination, or DOMAIN (leased mail waits for its lease)
  mailroom queue hold DOMAIN [--workspace …]     deliver nothing to DOMAIN until it is released
  mailroom queue release DOMAIN [--workspace …]  deliver to DOMAIN again
  mailroom migrate                             apply database migrations
  mailroom backup FILE                         a consistent copy of the database, also while the server runs
  mailroom restore FILE                        put a backup in place of the database, with the server stopped
  mailroom store copy --to postgres://…         copy this SQLite store into an empty PostgreSQL database
  mailroom store compact                       give the SQLite database's free pages back to the disk, with the server stopped
  mailroom config                              print the effective configuration (secrets masked)
  mailroom doctor [--domain NAME] [--json]      check DNS, reverse DNS, TLS and the store: ready to send and receive?

  mailroom --version | -v                      print the version
  mailroom [COMMAND] --help | -h                this help, or one command's

Every MAILROOM_* variable can also be given as a flag: MAILROOM_HTTP_PORT -> --http-port.`;

/** The usage lines of one command, or everything when it has none of its own. */
function usageOf(command: string): string {
  const lines = USAGE.split('\n').filter((l) => l.startsWith(`  mailroom ${command} `) || l === `  mailroom ${command}`);
  return lines.length > 0 ? `Usage:\n${lines.join('\n')}` : USAGE;
}

/** The configuration flags: each MAILROOM_* variable as --kebab-case. */
const CONFIG_FLAGS = new Set(Object.values(CONFIG_KEYS).map((k) => k.env.replace(/^MAILROOM_/, '').toLowerCase().replace(/_/g, '-')));

const COMMAND_FLAGS = ['name', 'workspace', 'test', 'scopes', 'json', 'plan', 'to', 'domain', 'limit', 'help', 'version'];

const BOOLEAN_FLAGS = new Set(['test', 'json', 'help', 'version']);
const SHORT_FLAGS: Record<string, string> = { '-h': '--help', '-v': '--version' };

/** `--flag value`, `--flag=value` and the boolean flags; unknown flags become config overrides. */
function splitArgs(argv: string[]) {
  const positionals: string[] = [];
  const own: Record<string, string | boolean> = {};
  const configFlags: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = SHORT_FLAGS[argv[i]] ?? argv[i];
    if (arg.startsWith('-') && !arg.startsWith('--')) throw new UsageError(`unknown option ${arg}`);
    if (!arg.startsWith('--')) {
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    if (!COMMAND_FLAGS.includes(name) && !CONFIG_FLAGS.has(name)) throw new UsageError(`unknown option --${name}`);
    let value: string | boolean;
    if (eq !== -1) value = arg.slice(eq + 1);
    else if (BOOLEAN_FLAGS.has(name)) value = true;
    else if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) value = argv[++i];
    else throw new UsageError(`--${name} needs a value`);
    if (COMMAND_FLAGS.includes(name)) own[name] = value;
    else configFlags[name] = String(value);
  }
  return { positionals, own, configFlags };
}

class UsageError extends Error {}

/** A database URL without its password, for messages. */
function describeDatabase(url: string): string {
  const u = new URL(url);
  u.password = '';
  return u.toString();
}
/** A command failed, or Mailroom could not start, for a reason said in one line (exit 1). */
class CommandFailed extends Error {}

/** From package.json, which sits one level above both src/ and dist/. */
const VERSION = (createRequire(import.meta.url)('../package.json') as { version: string }).version;

const print = (json: boolean, value: unknown, text: string) => console.log(json ? JSON.stringify(value) : text);

/**
 * A stored name as a terminal should show it: its control characters (an
 * escape sequence, a line break, a carriage return that overwrites the line)
 * written out as \u escapes. Names come from anyone with a key.
 */
const shown = (name: string) => name.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

async function run(argv: string[]): Promise<number> {
  const { positionals, own, configFlags } = splitArgs(argv);
  const [command = 'serve', sub] = positionals;
  if (own.version) {
    console.log(`mailroom ${VERSION}`);
    return 0;
  }
  if (own.help || command === 'help') {
    console.log(command === 'help' || positionals.length === 0 ? USAGE : usageOf(command));
    return 0;
  }
  const config = loadConfig(process.env, flagsToEnv(configFlags));
  const json = own.json === true;
  const requireName = () => {
    if (typeof own.name !== 'string' || own.name.trim() === '') throw new UsageError('--name NAME is required');
    // The API's rule for names: one line, no control characters.
    if (!fitsTextFormat('single-line', own.name)) throw new UsageError('--name must be one line of text, without control characters');
    return own.name;
  };

  switch (command) {
    case 'serve':
      return serve(config);
    case 'config':
      for (const { env, value, doc } of describeConfig(config)) console.log(`${env}=${value}\n    # ${doc}`);
      return 0;
    case 'doctor': {
      if (own.domain === '') throw new UsageError('--domain needs a domain name');
      const [{ runDoctor }, { formatReport }] = await Promise.all([import('./doctor/doctor.js'), import('./doctor/report.js')]);
      const report = await runDoctor(config, { domain: typeof own.domain === 'string' ? own.domain : undefined });
      print(json, report, formatReport(report, shown));
      // Warnings are worth reading but do not make the server unready.
      return report.status === 'fail' ? 1 : 0;
    }
    case 'migrate': {
      const services = await openServices(config);
      console.log('Database is at the latest migration.');
      await services.store.close();
      return 0;
    }
    case 'backup': {
      const target = positionals[1];
      if (!target) throw new UsageError('backup takes the FILE to write');
      const services = await openServices(config);
      const { BackupRefused } = await import('./store/db.js');
      try {
        await services.store.backup(target).catch((err: unknown) => {
          throw err instanceof BackupRefused ? new CommandFailed(err.message) : err;
        });
      } finally {
        await services.store.close();
      }
      const secret = config.secret ? 'MAILROOM_SECRET, as you give it' : join(config.dataDir, 'master.key');
      console.log(`Backed up the database to ${target}.\n` +
        `Keep the master secret with it (${secret}): API key hashes, cursors, DKIM keys and webhook secrets need it.\n` +
        `To restore: stop Mailroom, then run  npx mailroom restore ${target}  (with that master secret in place).`);
      return 0;
    }
    case 'restore': {
      const source = positionals[1];
      if (!source) throw new UsageError('restore takes the FILE to put in place of the database (one written by mailroom backup)');
      if (!config.databaseUrl.startsWith('sqlite:')) {
        throw new UsageError('restore puts back a SQLite backup: restore PostgreSQL with its own tools (pg_restore, or a base backup)');
      }
      const database = config.databaseUrl.slice('sqlite:'.length);
      if (database === ':memory:') throw new CommandFailed('an in-memory database cannot be restored into');
      const [{ restoreSqlite }, { OfflineRefused }, { existingKeyring }] = await Promise.all([
        import('./store/restore.js'), import('./store/offline.js'), import('./keyring.js'),
      ]);
      let checkKey: Buffer | undefined;
      try {
        checkKey = existingKeyring(config.dataDir, config.secret)?.storeCheckKey;
      } catch (err) {
        throw new CommandFailed((err as Error).message);
      }
      let previous: string | undefined;
      try {
        ({ previous } = restoreSqlite(source, database, { checkKey, dataDir: config.dataDir }));
      } catch (err) {
        throw err instanceof OfflineRefused ? new CommandFailed(err.message) : err;
      }
      console.log(`Restored the database ${database} from ${source}.\n` +
        (previous ? `The database that was there is kept as ${previous}: delete it once the restored one serves as it should.\n` : '') +
        'Start Mailroom.');
      return 0;
    }
    case 'store': {
      if (sub === 'compact') return compactStore(config);
      if (sub !== 'copy') throw new UsageError(sub ? `unknown store command '${sub}'` : 'store takes a command: copy or compact');
      if (typeof own.to !== 'string' || !/^postgres(ql)?:\/\//.test(own.to)) throw new UsageError('--to postgres://USER:PASSWORD@HOST:PORT/DATABASE is required');
      if (!config.databaseUrl.startsWith('sqlite:')) throw new UsageError('store copy copies a SQLite store: MAILROOM_DATABASE_URL names another');
      // One transaction of large batches, run with the server stopped: its statements are not limited, as migrations are not.
      const [{ openStore }, { copySqliteToPostgres, StoreCopyError }] = await Promise.all([import('./store/db.js'), import('./store/copy.js')]);
      const target = openStore(own.to, { postgresTimeouts: { queryMs: 0 } });
      try {
        const copied = await copySqliteToPostgres(config.databaseUrl.replace(/^sqlite:/, ''), target, (line) => console.log(`  ${line}`)).catch((err: unknown) => {
          throw err instanceof StoreCopyError ? new CommandFailed(err.message) : err;
        });
        const rows = copied.reduce((n, t) => n + t.rows, 0);
        console.log(`Copied ${copied.length} tables, ${rows} rows, into ${describeDatabase(own.to)}; every table's count matches.\n` +
          'Start Mailroom with MAILROOM_DATABASE_URL set to that database and the same master secret on every node.');
      } finally {
        await target.close();
      }
      return 0;
    }
    case 'workspaces': {
      const services = await openServices(config);
      try {
        if (sub === 'create') {
          const ws = await services.workspaces.create({ name: requireName(), plan: typeof own.plan === 'string' ? own.plan : undefined });
          print(json, ws, `Created workspace ${shown(ws.name)} (${ws.id}) on plan ${ws.plan}.`);
        } else if (sub === 'list') {
          const list = await services.workspaces.list();
          print(json, list, list.map((w) => `${w.id}  ${shown(w.name)}  ${w.plan}`).join('\n') || 'No workspaces yet.');
        } else if (sub === 'set-plan') {
          const [, , target, plan] = positionals;
          if (!target || !plan) throw new UsageError('workspaces set-plan takes NAME_OR_ID PLAN');
          const { workspace, previousPlan } = await services.workspaces.setPlan(target, plan);
          print(json, workspace, `Workspace ${shown(workspace.name)} moved from plan ${previousPlan} to ${workspace.plan}; its daily and monthly send counts start again from zero.`);
        } else throw new UsageError('workspaces takes create, list or set-plan');
      } finally {
        await services.store.close();
      }
      return 0;
    }
    case 'queue':
      return steerQueue(config, sub, positionals[2], own, json);
    case 'keys': {
      if (sub === 'list' || sub === 'revoke') return manageKeys(config, sub, positionals[2], own, json);
      if (sub !== 'create') throw new UsageError('keys takes create, list or revoke');
      const name = requireName();
      const scopes = typeof own.scopes === 'string' ? own.scopes.split(',').map((s) => s.trim()).filter(Boolean) : undefined;
      const bad = scopes?.find((s) => !isScope(s));
      if (bad) throw new UsageError(`unknown scope '${bad}'`);
      const services = await openServices(config);
      try {
        const ws = typeof own.workspace === 'string'
          ? await services.workspaces.find(own.workspace)
          : await services.workspaces.ensureDefault();
        if (!ws) throw new CommandFailed(`no workspace '${own.workspace}' (workspaces list shows them)`);
        const key = await services.apiKeys.create({ workspaceId: ws.id, name, scopes, mode: own.test ? 'test' : 'live' });
        print(json, { ...key, workspace_id: ws.id },
          `Created ${key.mode} key ${key.id} in workspace ${shown(ws.name)} with scopes ${key.scopes.join(', ')}.\n` +
          `Token (shown only now):\n\n  ${key.token}\n\ncurl -H "Authorization: Bearer ${key.token}" ${config.publicUrl}/v1/api-keys`);
      } finally {
        await services.store.close();
      }
      return 0;
    }
    default:
      throw new UsageError(`unknown command '${command}'`);
  }
}

/** keys list and keys revoke, in the workspace named by --workspace (default: `default`). */
/** `mailroom store compact`: the free pages that deleted rows left in the SQLite file, given back to the disk. */
async function compactStore(config: Config): Promise<number> {
  if (!config.databaseUrl.startsWith('sqlite:')) {
    throw new UsageError('store compact compacts a SQLite database: on PostgreSQL, autovacuum reuses the space of deleted rows and VACUUM FULL gives it back');
  }
  const database = config.databaseUrl.slice('sqlite:'.length);
  if (database === ':memory:') throw new CommandFailed('an in-memory database has no file to compact');
  const [{ compactSqlite, megabytes }, { OfflineRefused }] = await Promise.all([import('./store/compact.js'), import('./store/offline.js')]);
  let done: Compaction;
  try {
    done = compactSqlite(database);
  } catch (err) {
    throw err instanceof OfflineRefused ? new CommandFailed(err.message) : err;
  }
  console.log(done.freePages === 0
    ? `The database ${database} has no free pages: nothing to give back (${megabytes(done.after)}).`
    : `Compacted the database ${database}: ${megabytes(done.before)} before, ${megabytes(done.after)} now.`);
  return 0;
}

async function manageKeys(config: Config, sub: 'list' | 'revoke', keyId: string | undefined, own: Record<string, string | boolean>, json: boolean): Promise<number> {
  if (sub === 'revoke' && !keyId) throw new UsageError('keys revoke takes the KEY_ID (keys list shows them)');
  const services = await openServices(config);
  try {
    // Reading or revoking makes nothing: only keys create makes the default workspace.
    const name = typeof own.workspace === 'string' ? own.workspace : 'default';
    const ws = await services.workspaces.find(name);
    if (!ws && sub === 'list' && typeof own.workspace !== 'string') {
      print(json, [], 'No keys yet: keys create makes the first, in workspace default.');
      return 0;
    }
    if (!ws) throw new CommandFailed(`no workspace '${name}' (workspaces list shows them)`);
    if (sub === 'revoke') {
      await services.apiKeys.revoke(ws.id, keyId!);
      print(json, { id: keyId, revoked: true }, `Revoked key ${keyId} of workspace ${shown(ws.name)}; anything using it stops working within 5 seconds on a running server.`);
      return 0;
    }
    const keys = [];
    for (let after: number | undefined; ;) {
      const page = await services.apiKeys.list(ws.id, {}, { limit: 100, after, cursor: (pos) => String(pos) });
      keys.push(...page.data);
      if (!page.has_more || page.next_cursor === undefined) break;
      after = Number(page.next_cursor);
    }
    print(json, keys, keys.map((k) => `${k.id}  ${k.mode}  ${k.token}  ${shown(k.name)}  ${k.scopes.join(',')}${k.revoked_at ? '  revoked' : ''}`).join('\n')
      || `No keys in workspace ${shown(ws.name)}.`);
    return 0;
  } finally {
    await services.store.close();
  }
}

/**
 * The outbound queue of the workspace named by --workspace, or of every
 * workspace: listed per destination or per email, retried, held or released,
 * straight in the store. A running server sees the change at its next look at
 * the queue, within a second, and a retry ends the rest of a destination it
 * paused.
 */
async function steerQueue(config: Config, sub: string | undefined, domain: string | undefined, own: Record<string, string | boolean>, json: boolean): Promise<number> {
  if (sub !== undefined && !['items', 'retry', 'hold', 'release'].includes(sub)) throw new UsageError(`queue takes items, retry, hold or release, not '${sub}'`);
  if ((sub === 'items' || sub === 'hold' || sub === 'release') && !domain) throw new UsageError(`queue ${sub} takes the DOMAIN`);
  const limit = own.limit === undefined ? DEFAULT_QUEUE_ITEMS : Number(own.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new UsageError(`--limit takes a whole number of emails from 1, not '${own.limit}'`);
  const services = await openServices(config);
  try {
    let workspaces = await services.workspaces.list();
    if (typeof own.workspace === 'string') {
      const ws = await services.workspaces.find(own.workspace);
      if (!ws) throw new CommandFailed(`no workspace '${own.workspace}' (workspaces list shows them)`);
      workspaces = [ws];
    }
    const { queue } = services;
    if (sub === undefined) {
      const listed = [];
      for (const ws of workspaces) {
        const destinations = [];
        for (let offset = 0; ;) {
          const page = await queue.destinations(ws.id, { limit: 100, offset, cursor: String });
          destinations.push(...page.data);
          if (!page.has_more) break;
          offset += page.data.length;
        }
        if (destinations.length > 0) listed.push({ workspace_id: ws.id, workspace: ws.name, destinations });
      }
      print(json, listed, listed.map((w) => queueTable(shown(w.workspace), w.workspace_id, w.destinations)).join('\n\n') || 'Nothing waits for delivery.');
      return 0;
    }
    if (sub === 'items') {
      // One more than the limit says whether the list goes on.
      const listed: WorkspaceQueueItem[] = [];
      for (const ws of workspaces) {
        for (let after: number | undefined; listed.length <= limit;) {
          const page = await queue.items(ws.id, { domain: domain! }, { limit: Math.min(100, limit + 1 - listed.length), after, cursor: String });
          listed.push(...page.data.map((item) => ({ workspace_id: ws.id, workspace: ws.name, ...item })));
          if (!page.has_more || page.next_cursor === undefined) break;
          after = Number(page.next_cursor);
        }
      }
      const cut = listed.length > limit ? `\nThe first ${limit} shown; more wait (--limit N shows more).` : '';
      listed.splice(limit);
      print(json, listed, listed.length === 0 ? `Nothing waits for ${shown(domain!)}.` : `${queueItemsTable(listed)}${cut}`);
      return 0;
    }
    if (sub === 'retry') {
      const done: QueueRetryResult = { object: 'queue_retry', retried: 0, leased: 0, lease_ends_at: null };
      for (const ws of workspaces) {
        const one = await queue.retry(ws.id, domain === undefined ? {} : { domain });
        done.retried += one.retried;
        done.leased += one.leased;
        // ISO times of one clock sort as they fall.
        if (one.lease_ends_at !== null && (done.lease_ends_at === null || one.lease_ends_at > done.lease_ends_at)) done.lease_ends_at = one.lease_ends_at;
      }
      const madeDue = `${done.retried} waiting email${done.retried === 1 ? '' : 's'} to ${domain ?? 'every destination'} made due now.`;
      // A leased email may be in flight on a live node: freeing it here could send it twice, so it waits for its lease.
      const leftLeased = done.leased === 0 ? '' : `\n${done.leased} leased email${done.leased === 1 ? ' was' : 's were'} left alone `
        + `(an attempt under way, or a node that stopped during one): ${done.leased === 1 ? 'its lease ends at' : 'their leases end by'} ${done.lease_ends_at}, `
        + 'and what an attempt has not finished by then is tried again (a node restarted on its host takes its own back at once).';
      print(json, done, madeDue + leftLeased);
      return 0;
    }
    if (sub === 'hold') {
      const held = [];
      for (const ws of workspaces) held.push({ workspace_id: ws.id, ...await queue.hold(ws.id, domain!) });
      print(json, held, `Mail to ${held[0].domain} is held in ${held.length} workspace${held.length === 1 ? '' : 's'}: nothing is delivered to it until it is released.`);
      return 0;
    }
    const released = [];
    for (const ws of workspaces) {
      const done = await queue.release(ws.id, domain!).catch((err: unknown) => {
        if (err instanceof AppError && err.code === 'invalid_state') return undefined;
        throw err;
      });
      if (done) released.push({ workspace_id: ws.id, ...done });
    }
    if (released.length === 0) throw new AppError('invalid_state', `Mail to ${domain} is not held${typeof own.workspace === 'string' ? '' : ' in any workspace'}.`);
    print(json, released, `Mail to ${released[0].domain} is delivered again, in ${released.length} workspace${released.length === 1 ? '' : 's'}.`);
    return 0;
  } finally {
    await services.store.close();
  }
}

/** One workspace's destinations as mailq shows a queue: a line each, with what waits and the last reply. */
function queueTable(workspace: string, workspaceId: string, destinations: QueueDestination[]): string {
  const rows = destinations.map((d) => [
    shown(d.domain), String(d.queued), String(d.deferred), String(d.leased), d.lease_ends_at ?? '', String(d.emails), d.oldest_at,
    d.held ? `held since ${d.held_at}` : (d.next_attempt_at ?? ''), shown(d.last_reply?.text ?? ''),
  ]);
  const header = ['DOMAIN', 'QUEUED', 'DEFERRED', 'LEASED', 'LEASE ENDS', 'EMAILS', 'OLDEST', 'NEXT ATTEMPT', 'LAST REPLY'];
  return `Workspace ${workspace} (${workspaceId})\n${textTable(header, rows)}`;
}

/** Columns padded to their widest cell, two spaces apart and indented by two; the last column runs free. */
function textTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]))).join('  ').trimEnd();
  return [header, ...rows].map((r) => `  ${line(r)}`).join('\n');
}

/** How many waiting emails `queue items` shows without --limit: a screenful. */
const DEFAULT_QUEUE_ITEMS = 50;

type WorkspaceQueueItem = QueueItem & { workspace_id: string; workspace: string };

/** A line per waiting email, as `mailq` lists a queue's messages, with the workspace it was sent in. */
function queueItemsTable(items: WorkspaceQueueItem[]): string {
  return textTable(['EMAIL', 'RECIPIENTS', 'WORKSPACE', 'STATUS', 'ATTEMPTS', 'NEXT ATTEMPT', 'LAST REPLY'], items.map((i) => [
    i.email_id, shown(i.recipients.join(', ')), shown(i.workspace), i.state, String(i.attempts), i.next_attempt_at ?? '', shown(i.last_reply?.text ?? ''),
  ]));
}

async function serve(config: Config): Promise<number> {
  // A name without a dot cannot be the MX target or SPF host the domains' DNS records name.
  if (!config.hostname.includes('.')) {
    console.warn(`mailroom: MAILROOM_HOSTNAME is '${config.hostname}', not a fully qualified name: the MX and SPF records given for your domains name it, so set it to this server's public DNS name.`);
  }
  const [{ startMailroom }, { ListenerError }, { anyUsableKey }] = await Promise.all([import('./main.js'), import('./smtp/listener.js'), import('./api-keys/index.js')]);
  const mailroom = await startMailroom(config).catch((err: NodeJS.ErrnoException) => {
    if (err instanceof ListenerError) throw new CommandFailed(err.message);
    if (err.code === 'EADDRINUSE') {
      throw new CommandFailed(`the HTTP port ${config.httpHost}:${config.httpPort} is in use (another Mailroom?): stop that, or set MAILROOM_HTTP_PORT`);
    }
    throw err;
  });
  // The handlers go in before the ready line: a supervisor may signal the moment it reads it.
  const stopped = new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      console.log(`${signal}: shutting down`);
      void mailroom.close().then(resolve);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  const data = config.databaseUrl.startsWith('sqlite:') ? `data in ${config.dataDir}` : `database ${describeDatabase(config.databaseUrl)}`;
  console.log(`Mailroom is running at ${mailroom.httpUrl} (${data}).`);
  const { mxPort, submissionPort } = mailroom.smtp;
  const smtp = [
    ...(mxPort === undefined ? [] : [`mail for your domains on ${config.smtpHost}:${mxPort}`]),
    ...(submissionPort === undefined ? [] : [`submission (an API key as password) on ${config.smtpHost}:${submissionPort}`]),
  ];
  if (smtp.length > 0) console.log(`SMTP: ${smtp.join(', ')}.`);
  // A test key, as the README's first steps: a live key's first send fails on a domain not yet verified.
  if (!await anyUsableKey(mailroom.services.store.db)) console.log(`Create an API key with:  npx mailroom keys create --name my-first-key --test`);
  console.log(`Then open the dashboard: ${mailroom.httpUrl}/dashboard/`);
  await stopped;
  return 0;
}

run(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (err) => {
    // The usage of the command named, when one is (the whole usage otherwise).
    if (err instanceof UsageError) console.error(`mailroom: ${err.message}\n\n${usageOf(process.argv.slice(2).find((a) => !a.startsWith('-')) ?? '')}`);
    else if (err instanceof ConfigError || err instanceof AppError || err instanceof CommandFailed || err instanceof SecretMismatchError || err instanceof NewerStoreError) {
      console.error(`mailroom: ${err.message}`);
    }
    else console.error(err);
    process.exitCode = err instanceof UsageError ? 64 : 1;
  },
);
