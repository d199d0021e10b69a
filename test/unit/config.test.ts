import { describe, expect, it } from 'vitest';
import { ConfigError, describeConfig, flagsToEnv, loadConfig } from '../../src/config.js';
import { DEFAULT_POSTGRES_TIMEOUTS } from '../../src/store/postgres.js';

describe('configuration', () => {
  it('has working defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ httpPort: 3000, smtpPort: 25, submissionPort: 587, delivery: 'direct', sendDelaySeconds: 10, allowPrivateMx: false, defaultPlan: 'self_hosted' });
    expect(c.smtpChunking).toBe(true);
    expect(loadConfig({ MAILROOM_SMTP_CHUNKING: 'false' }).smtpChunking).toBe(false);
    expect(c.databaseUrl).toMatch(/^sqlite:.*data\/mailroom\.db$/);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('lets flags override variables', () => {
    const c = loadConfig({ MAILROOM_HTTP_PORT: '4000' }, flagsToEnv({ 'http-port': '5000', 'dns-servers': '127.0.0.1:5353, [::1]:53' }));
    expect(c.httpPort).toBe(5000);
    expect(c.dnsServers).toEqual(['127.0.0.1:5353', '[::1]:53']);
  });

  it('collects every problem into one clear error', () => {
    let err: ConfigError | undefined;
    try {
      loadConfig({ MAILROOM_HTTP_PORT: 'x', MAILROOM_DELIVERY: 'pigeon', MAILROOM_ALLOW_PRIVATE_MX: 'maybe', MAILROOM_SECRET: 'short',
        MAILROOM_DATABASE_URL: 'mysql://x', MAILROOM_PUBLIC_URL: 'ftp://x', MAILROOM_DNS_SERVERS: 'dns.google', MAILROOM_PLANS: '{' });
    } catch (e) {
      err = e as ConfigError;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect(err!.problems).toHaveLength(8);
    expect(err!.message).toContain('MAILROOM_DELIVERY must be one of direct, relay, sink');
  });

  it('requires a relay URL in relay mode and merges plans', () => {
    expect(() => loadConfig({ MAILROOM_DELIVERY: 'relay' })).toThrow(/MAILROOM_RELAY_URL/);
    const c = loadConfig({ MAILROOM_PLANS: '{"team":{"burst":50,"requestsPerSecond":5}}', MAILROOM_DEFAULT_PLAN: 'team' });
    expect(c.plans.team).toMatchObject({ burst: 50, requestsPerSecond: 5, dailySendQuota: 1_000_000 });
    expect(() => loadConfig({ MAILROOM_PLANS: '{"bad":{"burst":-1}}' })).toThrow(/bad.burst/);
  });

  it('refuses a plan whose bucket is smaller than one full batch, which could then never pass', () => {
    expect(() => loadConfig({ MAILROOM_PLANS: '{"trickle":{"burst":5}}' }))
      .toThrow(/trickle\.burst is 5, less than the 10 requests a batch of 100 emails costs/);
    expect(() => loadConfig({ MAILROOM_PLANS: '{"trickle":{"testBurst":9}}' })).toThrow(/trickle\.testBurst is 9/);
    expect(loadConfig({ MAILROOM_PLANS: '{"small":{"burst":10,"testBurst":10,"requestsPerSecond":1}}' }).plans.small.burst).toBe(10);
  });

  it('takes a PostgreSQL URL, a pool size and whether to prepare statements for it', () => {
    const c = loadConfig({ MAILROOM_DATABASE_URL: 'postgres://mail:pw@db.internal:5432/mailroom', MAILROOM_DATABASE_POOL_SIZE: '25' });
    expect(c).toMatchObject({ databaseUrl: 'postgres://mail:pw@db.internal:5432/mailroom', databasePoolSize: 25 });
    expect(loadConfig({}).databasePoolSize).toBe(10);
    expect(() => loadConfig({ MAILROOM_DATABASE_POOL_SIZE: '0' })).toThrow(/MAILROOM_DATABASE_POOL_SIZE/);
    expect(loadConfig({}).databasePreparedStatements).toBe(true);
    expect(loadConfig({ MAILROOM_DATABASE_PREPARED_STATEMENTS: 'false' }).databasePreparedStatements).toBe(false);
    expect(() => loadConfig({ MAILROOM_DATABASE_PREPARED_STATEMENTS: 'sometimes' })).toThrow(/MAILROOM_DATABASE_PREPARED_STATEMENTS must be true or false/);
    const shown = Object.fromEntries(describeConfig(c).map((e) => [e.env, e.value]));
    expect(shown.MAILROOM_DATABASE_URL).toBe('postgres://mail:****@db.internal:5432/mailroom');
  });

  it('takes how long to wait for PostgreSQL, in seconds, with the store\'s defaults', () => {
    const defaults = loadConfig({});
    expect(defaults.databaseConnectTimeout * 1000).toBe(DEFAULT_POSTGRES_TIMEOUTS.connectMs);
    expect(defaults.databaseQueryTimeout * 1000).toBe(DEFAULT_POSTGRES_TIMEOUTS.queryMs);
    expect(loadConfig({ MAILROOM_DATABASE_CONNECT_TIMEOUT: '2', MAILROOM_DATABASE_QUERY_TIMEOUT: '120' }))
      .toMatchObject({ databaseConnectTimeout: 2, databaseQueryTimeout: 120 });
    expect(() => loadConfig({ MAILROOM_DATABASE_QUERY_TIMEOUT: '0' })).toThrow(/MAILROOM_DATABASE_QUERY_TIMEOUT must be a whole number from 1 to 3600/);
    expect(() => loadConfig({ MAILROOM_DATABASE_CONNECT_TIMEOUT: '0.5' })).toThrow(/MAILROOM_DATABASE_CONNECT_TIMEOUT must be a whole number from 1 to 600/);
  });

  it('keeps sent email forever unless told a number of days, a week at the least', () => {
    expect(loadConfig({}).emailRetentionDays).toBe(0);
    expect(loadConfig({ MAILROOM_EMAIL_RETENTION_DAYS: '7' }).emailRetentionDays).toBe(7);
    expect(loadConfig({ MAILROOM_EMAIL_RETENTION_DAYS: '0' }).emailRetentionDays).toBe(0);
    expect(() => loadConfig({ MAILROOM_EMAIL_RETENTION_DAYS: '3' })).toThrow(/MAILROOM_EMAIL_RETENTION_DAYS must be 0 \(keep forever\) or at least 7, got '3'/);
    expect(() => loadConfig({ MAILROOM_EMAIL_RETENTION_DAYS: 'month' })).toThrow(/MAILROOM_EMAIL_RETENTION_DAYS must be a whole number from 0 to 36500/);
  });

  it('masks secrets when described', () => {
    const c = loadConfig({ MAILROOM_SECRET: 'x'.repeat(32), MAILROOM_DELIVERY: 'relay', MAILROOM_RELAY_URL: 'smtps://me:pw@relay.test' });
    const shown = Object.fromEntries(describeConfig(c).map((e) => [e.env, e.value]));
    expect(shown.MAILROOM_SECRET).toBe('****');
    expect(shown.MAILROOM_RELAY_URL).toBe('smtps://me:****@relay.test');
  });

  it('describes each value as its variable takes it, so a line printed can be set again', () => {
    const env = { MAILROOM_DNS_SERVERS: '127.0.0.1:5353,[::1]:53', MAILROOM_PLANS: JSON.stringify({ tiny: { burst: 20 } }) };
    const shown = Object.fromEntries(describeConfig(loadConfig(env)).map((e) => [e.env, e.value]));
    expect(shown.MAILROOM_DNS_SERVERS).toBe('127.0.0.1:5353,[::1]:53');
    expect(Object.fromEntries(describeConfig(loadConfig({})).map((e) => [e.env, e.value])).MAILROOM_DNS_SERVERS).toBe('');
    const again = Object.fromEntries(describeConfig(loadConfig(shown)).map((e) => [e.env, e.value]));
    expect(again).toEqual(shown);
  });
});
