import { join } from 'node:path';
import { ConfigError, describeConfig, flagsToEnv, loadConfig, type Config } from './config.js';
import { openServices, startMailroom } from './main.js';
import { AppError } from './core/errors.js';
import { isScope } from './core/scopes.js';

const USAGE = `mailroom — self-hosted email platform

Usage:
  mailroom [serve] [--http-port 3000 …]        run the API, SMTP listeners and engines
  mailroom keys create --name NAME [--workspace NAME_OR_ID] [--test] [--scopes a,b] [--json]
  mailroom workspaces create --name NAME [--plan PLAN] [--json]
  mailroom workspaces list [--json]
  mailroom workspaces set-plan NAME_OR_ID PLAN [--json]   change plan; clears the send quota counts
  mailroom migrate                             apply database migrations
  mailroom backup FILE                         a consistent copy of the database, also while the server runs
  mailroom config                              print the effective configuration (secrets masked)

Every MAILROOM_* variable can also be given as a flag: MAILROOM_HTTP_PORT -> --http-port.`;

const COMMAND_FLAGS = ['name', 'workspace', 'test', 'scopes', 'json', 'plan', 'help'];

const BOOLEAN_FLAGS = new Set(['test', 'json', 'help']);

/** `--flag value`, `--flag=value` and the boolean flags; unknown flags become config overrides. */
function splitArgs(argv: string[]) {
  const positionals: string[] = [];
  const own: Record<string, string | boolean> = {};
  const configFlags: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) {
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq === -1 ? undefined : eq);
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

const print = (json: boolean, value: unknown, text: string) => console.log(json ? JSON.stringify(value) : text);

async function run(argv: string[]): Promise<number> {
  const { positionals, own, configFlags } = splitArgs(argv);
  const [command = 'serve', sub] = positionals;
  if (own.help || command === 'help') {
    console.log(USAGE);
    return 0;
  }
  const config = loadConfig(process.env, flagsToEnv(configFlags));
  const json = own.json === true;
  const requireName = () => {
    if (typeof own.name !== 'string' || own.name.trim() === '') throw new UsageError('--name NAME is required');
    return own.name;
  };

  switch (command) {
    case 'serve':
      return serve(config);
    case 'config':
      for (const { env, value, doc } of describeConfig(config)) console.log(`${env}=${value}\n    # ${doc}`);
      return 0;
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
      try {
        await services.store.backup(target);
      } finally {
        await services.store.close();
      }
      const secret = config.secret ? 'MAILROOM_SECRET, as you give it' : join(config.dataDir, 'master.key');
      console.log(`Backed up the database to ${target}.\n` +
        `Keep the master secret with it (${secret}): API key hashes, cursors, DKIM keys and webhook secrets need it.\n` +
        'To restore: stop Mailroom, put the file in place of the database (with the master secret beside it), start Mailroom.');
      return 0;
    }
    case 'workspaces': {
      const services = await openServices(config);
      try {
        if (sub === 'create') {
          const ws = await services.workspaces.create({ name: requireName(), plan: typeof own.plan === 'string' ? own.plan : undefined });
          print(json, ws, `Created workspace ${ws.name} (${ws.id}) on plan ${ws.plan}.`);
        } else if (sub === 'list') {
          const list = await services.workspaces.list();
          print(json, list, list.map((w) => `${w.id}  ${w.name}  ${w.plan}`).join('\n') || 'No workspaces yet.');
        } else if (sub === 'set-plan') {
          const [, , target, plan] = positionals;
          if (!target || !plan) throw new UsageError('workspaces set-plan takes NAME_OR_ID PLAN');
          const { workspace, previousPlan } = await services.workspaces.setPlan(target, plan);
          print(json, workspace, `Workspace ${workspace.name} moved from plan ${previousPlan} to ${workspace.plan}; its daily and monthly send counts start again from zero.`);
        } else throw new UsageError('workspaces takes create, list or set-plan');
      } finally {
        await services.store.close();
      }
      return 0;
    }
    case 'keys': {
      if (sub !== 'create') throw new UsageError('keys takes create');
      const name = requireName();
      const scopes = typeof own.scopes === 'string' ? own.scopes.split(',').map((s) => s.trim()).filter(Boolean) : undefined;
      const bad = scopes?.find((s) => !isScope(s));
      if (bad) throw new UsageError(`unknown scope '${bad}'`);
      const services = await openServices(config);
      try {
        const ws = typeof own.workspace === 'string'
          ? await services.workspaces.find(own.workspace)
          : await services.workspaces.ensureDefault();
        if (!ws) throw new UsageError(`no workspace '${own.workspace}'`);
        const key = await services.apiKeys.create({ workspaceId: ws.id, name, scopes, mode: own.test ? 'test' : 'live' });
        print(json, { ...key, workspace_id: ws.id },
          `Created ${key.mode} key ${key.id} in workspace ${ws.name} with scopes ${key.scopes.join(', ')}.\n` +
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

async function serve(config: Config): Promise<number> {
  const mailroom = await startMailroom(config);
  console.log(`Mailroom is running at ${mailroom.httpUrl} (data in ${config.dataDir}).`);
  console.log(`Create an API key with:  npx mailroom keys create --name my-first-key`);
  console.log(`Then open the dashboard: ${mailroom.httpUrl}/dashboard/`);
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      console.log(`${signal}: shutting down`);
      void mailroom.close().then(resolve);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  return 0;
}

run(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (err) => {
    if (err instanceof UsageError) console.error(`mailroom: ${err.message}\n\n${USAGE}`);
    else if (err instanceof ConfigError || err instanceof AppError) console.error(`mailroom: ${err.message}`);
    else console.error(err);
    process.exitCode = err instanceof UsageError ? 64 : 1;
  },
);
