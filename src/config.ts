import { hostname as osHostname } from 'node:os';
import { resolve } from 'node:path';

// The whole configuration of a Mailroom process: read once from environment
// variables (CLI flags override them), validated with clear messages, frozen,
// and passed in. Nothing imports it as a global.

export type DeliveryMode = 'direct' | 'relay' | 'sink';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Plan {
  /** Sustained live requests per second; the bucket refills at this rate. */
  requestsPerSecond: number;
  /** Live requests allowed in one burst (bucket size). */
  burst: number;
  testRequestsPerSecond: number;
  testBurst: number;
  /** Emails per UTC day; resets at midnight UTC. */
  dailySendQuota: number;
  /** Emails per calendar month (UTC). */
  monthlySendQuota: number;
}

/** The shortest time sent emails may be kept, when not forever. */
export const MIN_EMAIL_RETENTION_DAYS = 7;

/** What the variables (and their flags) set; Config adds what follows from them. */
export interface Settings {
  dataDir: string;
  databaseUrl: string;
  databasePoolSize: number;
  databasePreparedStatements: boolean;
  databaseConnectTimeout: number;
  databaseQueryTimeout: number;
  httpHost: string;
  httpPort: number;
  publicUrl: string;
  hostname: string;
  smtpPort: number;
  submissionPort: number;
  smtpHost: string;
  smtpMaxMessageBytes: number;
  submissionRequireTls: boolean;
  tlsCertFile: string | null;
  tlsKeyFile: string | null;
  inboundRetentionDays: number;
  emailRetentionDays: number;
  dnsServers: string[];
  delivery: DeliveryMode;
  relayUrl: string | null;
  outboundPort: number;
  smtpChunking: boolean;
  metricsToken: string | null;
  destinationConcurrency: number;
  sendDelaySeconds: number;
  allowPrivateMx: boolean;
  webhookAllowPrivate: boolean;
  logLevel: LogLevel;
  /** Master secret; when absent one is generated into the data dir. */
  secret: string | null;
  defaultPlan: string;
  plans: Record<string, Plan>;
}

/** Where the SMTP listeners go when their default ports need a privilege this process lacks. */
export const UNPRIVILEGED_SMTP_PORT = 2525;
export const UNPRIVILEGED_SUBMISSION_PORT = 2587;

export interface Config extends Settings {
  /**
   * Where the MX listener listens instead when its port was left at the
   * default (25) and binding it is refused for want of privilege, as for
   * `npm start` by an ordinary user; null when the port was set.
   */
  unprivilegedSmtpPort: number | null;
  /** The same for the submission listener (587). */
  unprivilegedSubmissionPort: number | null;
}

/** Plans a workspace can be on. Self-hosted installs default to a generous one. */
/** The most emails in one batch send (the spec's limit). */
export const MAX_BATCH_EMAILS = 100;
/** A batch send costs one request of the rate allowance per started this many emails: 10 for a full batch, against 100 single sends. */
export const BATCH_EMAILS_PER_REQUEST = 10;

export const DEFAULT_PLANS: Record<string, Plan> = {
  free: { requestsPerSecond: 2, burst: 10, testRequestsPerSecond: 2, testBurst: 10, dailySendQuota: 100, monthlySendQuota: 3_000 },
  pro: { requestsPerSecond: 50, burst: 100, testRequestsPerSecond: 10, testBurst: 50, dailySendQuota: 50_000, monthlySendQuota: 1_000_000 },
  self_hosted: {
    requestsPerSecond: 1_000, burst: 2_000, testRequestsPerSecond: 100, testBurst: 200,
    dailySendQuota: 1_000_000, monthlySendQuota: 30_000_000,
  },
  unlimited: {
    requestsPerSecond: 1_000_000, burst: 1_000_000, testRequestsPerSecond: 1_000_000, testBurst: 1_000_000,
    dailySendQuota: Number.MAX_SAFE_INTEGER, monthlySendQuota: Number.MAX_SAFE_INTEGER,
  },
};

export interface ConfigKeyDoc {
  env: string;
  doc: string;
  secret?: boolean;
}

/** Every key, documented; `mailroom config` prints them in this order. */
export const CONFIG_KEYS: Record<keyof Settings, ConfigKeyDoc> = {
  dataDir: { env: 'MAILROOM_DATA_DIR', doc: 'Directory for the SQLite file, keys and generated certificates (default ./data).' },
  databaseUrl: {
    env: 'MAILROOM_DATABASE_URL',
    doc: 'sqlite:PATH (default: sqlite file mailroom.db in the data dir), or postgres://user:pass@host:5432/db for PostgreSQL.',
    secret: true,
  },
  databasePoolSize: { env: 'MAILROOM_DATABASE_POOL_SIZE', doc: 'Connections to PostgreSQL this process keeps at most (default 10; SQLite uses one).' },
  databasePreparedStatements: {
    env: 'MAILROOM_DATABASE_PREPARED_STATEMENTS',
    doc: 'PostgreSQL: prepare the fixed statements once per connection (default true). false behind a pooler in transaction mode that cannot keep them (PgBouncer before 1.21, or without max_prepared_statements).',
  },
  databaseConnectTimeout: {
    env: 'MAILROOM_DATABASE_CONNECT_TIMEOUT',
    doc: 'PostgreSQL: seconds to open a connection, or to wait for a free one of the pool, before the store counts as unavailable (default 5).',
  },
  databaseQueryTimeout: {
    env: 'MAILROOM_DATABASE_QUERY_TIMEOUT',
    doc: 'PostgreSQL: seconds to wait for the answer to one statement before the store counts as unavailable and the connection is closed (default 30; migrations wait as long as they take).',
  },
  httpHost: { env: 'MAILROOM_HTTP_HOST', doc: 'Address the HTTP server binds (default 127.0.0.1; 0.0.0.0 for all).' },
  httpPort: { env: 'MAILROOM_HTTP_PORT', doc: 'HTTP port (default 3000; 0 picks a free one).' },
  publicUrl: { env: 'MAILROOM_PUBLIC_URL', doc: 'Public base address without /v1, used in tracking and unsubscribe links.' },
  hostname: { env: 'MAILROOM_HOSTNAME', doc: 'Name in the SMTP banner and EHLO, and the MX target for bounces.' },
  smtpPort: { env: 'MAILROOM_SMTP_PORT', doc: 'Inbound MX listener port (default 25, or 2525 when this user may not bind 25; 0 = off).' },
  submissionPort: { env: 'MAILROOM_SUBMISSION_PORT', doc: 'SMTP submission port, API key as password (default 587, or 2587 when this user may not bind 587; 0 = off).' },
  smtpHost: { env: 'MAILROOM_SMTP_HOST', doc: 'Address the MX and submission listeners bind (default 127.0.0.1, like HTTP; 0.0.0.0 for all).' },
  smtpMaxMessageBytes: { env: 'MAILROOM_SMTP_MAX_MESSAGE_BYTES', doc: 'Largest message the SMTP listeners take, advertised with SIZE (default 26214400, 25 MiB).' },
  submissionRequireTls: {
    env: 'MAILROOM_SUBMISSION_REQUIRE_TLS',
    doc: 'Require STARTTLS before AUTH on the submission port from loopback clients too (default false; other clients always need it).',
  },
  tlsCertFile: { env: 'MAILROOM_TLS_CERT', doc: 'PEM certificate (chain) for SMTP STARTTLS; default: none when the listeners bind loopback only, else a self-signed one generated into the data dir.' },
  tlsKeyFile: { env: 'MAILROOM_TLS_KEY', doc: 'PEM private key of MAILROOM_TLS_CERT.' },
  inboundRetentionDays: { env: 'MAILROOM_INBOUND_RETENTION_DAYS', doc: 'Days received messages are kept (default 30, 0 = forever).' },
  emailRetentionDays: {
    env: 'MAILROOM_EMAIL_RETENTION_DAYS',
    doc: 'Days sent emails are kept, with their events and tracked links (default 0 = forever; otherwise at least 7).',
  },
  dnsServers: { env: 'MAILROOM_DNS_SERVERS', doc: 'Comma list of host:port resolvers (default: the system resolvers).' },
  delivery: { env: 'MAILROOM_DELIVERY', doc: 'direct (MX lookup), relay (smarthost) or sink (keep, never send). Default direct.' },
  relayUrl: { env: 'MAILROOM_RELAY_URL', doc: 'Smarthost for relay mode: smtp://user:pass@host:587 or smtps://…', secret: true },
  outboundPort: { env: 'MAILROOM_OUTBOUND_PORT', doc: 'Port used to reach MX hosts (default 25).' },
  smtpChunking: {
    env: 'MAILROOM_SMTP_CHUNKING',
    doc: 'Send a message with BDAT to a server that offers CHUNKING, RFC 3030 (default true; false sends DATA to every server).',
  },
  metricsToken: { env: 'MAILROOM_METRICS_TOKEN', doc: 'Bearer token for GET /metrics; without one the metrics answer loopback clients only.', secret: true },
  destinationConcurrency: { env: 'MAILROOM_DESTINATION_CONCURRENCY', doc: 'Deliveries under way at once to one destination domain, or to the smarthost (default 20).' },
  sendDelaySeconds: { env: 'MAILROOM_SEND_DELAY', doc: 'Seconds a new email waits as pending, cancellable (default 10, 0 = none).' },
  allowPrivateMx: { env: 'MAILROOM_ALLOW_PRIVATE_MX', doc: 'Allow MX hosts on private or loopback addresses (default false).' },
  webhookAllowPrivate: { env: 'MAILROOM_WEBHOOK_ALLOW_PRIVATE', doc: 'Allow webhook URLs on private or loopback addresses (default false).' },
  logLevel: { env: 'MAILROOM_LOG_LEVEL', doc: 'fatal, error, warn, info (default), debug, trace or silent.' },
  secret: { env: 'MAILROOM_SECRET', doc: 'Master secret (32+ characters); default: generated into DATA_DIR/master.key.', secret: true },
  defaultPlan: { env: 'MAILROOM_DEFAULT_PLAN', doc: 'Plan of new workspaces (default self_hosted).' },
  plans: { env: 'MAILROOM_PLANS', doc: 'JSON object of plans merged over the built-in free, pro, self_hosted, unlimited.' },
};

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/**
 * Turns `--http-port 3001` / `--http-port=3001` into MAILROOM_HTTP_PORT=3001,
 * so every variable has a flag without a second list to maintain.
 */
export function flagsToEnv(flags: Record<string, string>): Env {
  const env: Env = {};
  for (const [name, value] of Object.entries(flags)) env[`MAILROOM_${name.replace(/-/g, '_').toUpperCase()}`] = value;
  return env;
}

export function loadConfig(env: Env = process.env, overrides: Env = {}): Readonly<Config> {
  const source: Env = { ...env, ...overrides };
  const problems: string[] = [];
  const get = (key: keyof Settings) => {
    const v = source[CONFIG_KEYS[key].env];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  const int = (key: keyof Settings, fallback: number, min: number, max: number): number => {
    const raw = get(key);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      problems.push(`${CONFIG_KEYS[key].env} must be a whole number from ${min} to ${max}, got '${raw}'`);
      return fallback;
    }
    return n;
  };
  const bool = (key: keyof Settings, fallback = false): boolean => {
    const raw = get(key)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
    if (['0', 'false', 'no', 'off'].includes(raw)) return false;
    problems.push(`${CONFIG_KEYS[key].env} must be true or false, got '${raw}'`);
    return fallback;
  };
  const oneOf = <T extends string>(key: keyof Settings, allowed: readonly T[], fallback: T): T => {
    const raw = get(key);
    if (raw === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(raw)) {
      problems.push(`${CONFIG_KEYS[key].env} must be one of ${allowed.join(', ')}, got '${raw}'`);
      return fallback;
    }
    return raw as T;
  };

  // Bounces and complaints come back days after a message, and are matched
  // to its email: an email kept less than a week would lose them.
  const emailRetentionDays = (): number => {
    const days = int('emailRetentionDays', 0, 0, 36_500);
    if (days > 0 && days < MIN_EMAIL_RETENTION_DAYS) {
      problems.push(`MAILROOM_EMAIL_RETENTION_DAYS must be 0 (keep forever) or at least ${MIN_EMAIL_RETENTION_DAYS}, got '${days}': bounces and complaints arrive days after a message and need its email`);
    }
    return days;
  };

  const dataDir = resolve(get('dataDir') ?? './data');
  const databaseUrl = get('databaseUrl') ?? `sqlite:${resolve(dataDir, 'mailroom.db')}`;
  if (!/^(sqlite:|postgres(ql)?:\/\/)/.test(databaseUrl)) {
    problems.push('MAILROOM_DATABASE_URL must be a sqlite: URL (sqlite:/path/to/file.db) or a postgres:// URL (postgres://user:pass@host:5432/db)');
  }
  const httpHost = get('httpHost') ?? '127.0.0.1';
  const httpPort = int('httpPort', 3000, 0, 65535);
  const publicUrl = (get('publicUrl') ?? `http://${httpHost === '0.0.0.0' ? 'localhost' : httpHost}:${httpPort}`).replace(/\/+$/, '');
  try {
    const u = new URL(publicUrl);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
    if (/\/v1$/.test(u.pathname)) problems.push('MAILROOM_PUBLIC_URL is the base address without /v1');
  } catch {
    problems.push(`MAILROOM_PUBLIC_URL must be an http(s) URL, got '${publicUrl}'`);
  }

  const dnsServers = (get('dnsServers') ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  for (const s of dnsServers) {
    if (!/^(\[[0-9a-fA-F:.]+\]|[0-9.]+|[0-9a-fA-F:]+)(:\d{1,5})?$/.test(s)) problems.push(`MAILROOM_DNS_SERVERS entry '${s}' is not an IP address with an optional :port`);
  }

  const delivery = oneOf('delivery', ['direct', 'relay', 'sink'] as const, 'direct');
  const relayUrl = get('relayUrl') ?? null;
  if (delivery === 'relay') {
    if (!relayUrl) problems.push('MAILROOM_DELIVERY=relay needs MAILROOM_RELAY_URL');
    else if (!/^smtps?:\/\/[^/]+/.test(relayUrl)) problems.push('MAILROOM_RELAY_URL must look like smtp://user:pass@host:587 or smtps://host:465');
  }

  const tlsCertFile = get('tlsCertFile') ?? null;
  const tlsKeyFile = get('tlsKeyFile') ?? null;
  if ((tlsCertFile === null) !== (tlsKeyFile === null)) problems.push('MAILROOM_TLS_CERT and MAILROOM_TLS_KEY go together: set both or neither');

  const secret = get('secret') ?? null;
  if (secret !== null && secret.length < 32) problems.push('MAILROOM_SECRET must be at least 32 characters');

  let plans = { ...DEFAULT_PLANS };
  const fullBatchCost = Math.ceil(MAX_BATCH_EMAILS / BATCH_EMAILS_PER_REQUEST);
  const plansRaw = get('plans');
  if (plansRaw) {
    try {
      const parsed = JSON.parse(plansRaw) as Record<string, Partial<Plan>>;
      for (const [name, p] of Object.entries(parsed)) {
        const merged = { ...(plans[name] ?? DEFAULT_PLANS.self_hosted), ...p };
        for (const [k, v] of Object.entries(merged)) {
          if (typeof v !== 'number' || !(v > 0)) problems.push(`MAILROOM_PLANS: ${name}.${k} must be a positive number`);
        }
        // A bucket smaller than one full batch would answer every such batch 429 with Retry-After: 1, for ever.
        for (const k of ['burst', 'testBurst'] as const) {
          if (merged[k] > 0 && merged[k] < fullBatchCost) {
            problems.push(`MAILROOM_PLANS: ${name}.${k} is ${merged[k]}, less than the ${fullBatchCost} requests a batch of ${MAX_BATCH_EMAILS} emails costs, so such a batch could never pass`);
          }
        }
        plans[name] = merged;
      }
    } catch {
      problems.push('MAILROOM_PLANS must be a JSON object of plans');
    }
  }
  plans = Object.freeze(plans);
  const defaultPlan = get('defaultPlan') ?? 'self_hosted';
  if (!plans[defaultPlan]) problems.push(`MAILROOM_DEFAULT_PLAN '${defaultPlan}' is not a known plan (${Object.keys(plans).join(', ')})`);

  const config: Config = {
    dataDir,
    databaseUrl,
    databasePoolSize: int('databasePoolSize', 10, 1, 1000),
    databasePreparedStatements: bool('databasePreparedStatements', true),
    databaseConnectTimeout: int('databaseConnectTimeout', 5, 1, 600),
    databaseQueryTimeout: int('databaseQueryTimeout', 30, 1, 3600),
    httpHost,
    httpPort,
    publicUrl,
    hostname: get('hostname') ?? osHostname(),
    smtpPort: int('smtpPort', 25, 0, 65535),
    submissionPort: int('submissionPort', 587, 0, 65535),
    unprivilegedSmtpPort: get('smtpPort') === undefined ? UNPRIVILEGED_SMTP_PORT : null,
    unprivilegedSubmissionPort: get('submissionPort') === undefined ? UNPRIVILEGED_SUBMISSION_PORT : null,
    smtpHost: get('smtpHost') ?? '127.0.0.1',
    // RFC 5321 §4.5.3.1.7 asks for at least 64 KB.
    smtpMaxMessageBytes: int('smtpMaxMessageBytes', 25 * 1024 * 1024, 65_536, 1024 * 1024 * 1024),
    submissionRequireTls: bool('submissionRequireTls'),
    tlsCertFile: tlsCertFile === null ? null : resolve(tlsCertFile),
    tlsKeyFile: tlsKeyFile === null ? null : resolve(tlsKeyFile),
    inboundRetentionDays: int('inboundRetentionDays', 30, 0, 36_500),
    emailRetentionDays: emailRetentionDays(),
    dnsServers,
    delivery,
    relayUrl,
    outboundPort: int('outboundPort', 25, 1, 65535),
    smtpChunking: bool('smtpChunking', true),
    metricsToken: get('metricsToken') ?? null,
    destinationConcurrency: int('destinationConcurrency', 20, 1, 1000),
    sendDelaySeconds: int('sendDelaySeconds', 10, 0, 86_400),
    allowPrivateMx: bool('allowPrivateMx'),
    webhookAllowPrivate: bool('webhookAllowPrivate'),
    logLevel: oneOf('logLevel', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    secret,
    defaultPlan,
    plans,
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

/** The effective configuration with secrets masked, for `mailroom config`. */
export function describeConfig(config: Config): Array<{ env: string; value: string; doc: string }> {
  return (Object.keys(CONFIG_KEYS) as Array<keyof Settings>).map((key) => {
    const { env, doc, secret } = CONFIG_KEYS[key];
    const raw = config[key];
    // Written as the variable takes it, so a printed line can be set again as it is: lists as comma lists.
    let value = raw === null ? '' : Array.isArray(raw) ? raw.join(',') : typeof raw === 'object' ? JSON.stringify(raw) : String(raw);
    if (secret && value) value = key === 'databaseUrl' || key === 'relayUrl' ? value.replace(/\/\/([^:/@]+):([^@]+)@/, '//$1:****@') : '****';
    return { env, value, doc };
  });
}
