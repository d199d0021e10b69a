// How mail leaves this server (MAILROOM_DELIVERY). Straight to each
// recipient's MX, receivers judge this server's own addresses; through a
// smarthost, they judge the relay's, so what matters here is that the relay
// takes a session as the settings describe it: it answers, its TLS holds
// and it accepts the login. A mail catcher (sink) sends nothing at all.
import type { Config } from '../config.js';
import { RFC5321_TIMEOUTS, relayAddresses, relayOf, SmtpSession, SmtpSessionError } from '../delivery/index.js';
import { whyFailed } from './identity.js';
import { fail, ok, warn, type CheckResult } from './report.js';

/** How long the relay has to answer each step of the session (connect, greeting, EHLO, STARTTLS, AUTH). */
const RELAY_STEP_TIMEOUT_MS = 4_000;

export type DeliveryConfig = Pick<Config, 'delivery' | 'relayUrl' | 'hostname'>;

/** Whether receivers see this server's own addresses: only when it delivers to MX hosts itself. */
export const sendsFromOwnAddresses = (config: Pick<Config, 'delivery'>): boolean => config.delivery === 'direct';

export async function checkDelivery(config: DeliveryConfig): Promise<CheckResult[]> {
  if (config.delivery === 'sink') {
    return [warn('delivery', 'mode', 'sink: every message is kept here and none is sent (a mail catcher)',
      'set MAILROOM_DELIVERY=direct to deliver to each recipient\'s MX, or relay with MAILROOM_RELAY_URL to send through a smarthost')];
  }
  if (config.delivery === 'direct') return [ok('delivery', 'mode', 'direct: to each recipient\'s MX, from this server\'s addresses')];
  return [ok('delivery', 'mode', 'relay: through the smarthost of MAILROOM_RELAY_URL'), await checkRelay(config.relayUrl!, config.hostname)];
}

/** Opens a session with the relay as delivery would, logs in if the URL names a user, and says QUIT. */
async function checkRelay(relayUrl: string, heloName: string): Promise<CheckResult> {
  const { hostname, target } = relayOf(relayUrl);
  const check = `relay ${hostname}:${target.port}`;
  const fix = 'check MAILROOM_RELAY_URL (smtp://user:pass@host:587, or smtps://…:465) against what the relay\'s provider gives';
  let addresses: string[];
  try {
    addresses = await relayAddresses(hostname);
  } catch (err) {
    return fail('delivery', check, `${hostname} does not resolve: ${whyFailed(err)}`, fix);
  }
  const steps = { connectMs: RELAY_STEP_TIMEOUT_MS, greetingMs: RELAY_STEP_TIMEOUT_MS, commandMs: RELAY_STEP_TIMEOUT_MS };
  let session: SmtpSession;
  try {
    session = await SmtpSession.open({ ...target, address: addresses[0], hostname }, { heloName, timeouts: { ...RFC5321_TIMEOUTS, ...steps } });
  } catch (err) {
    const said = err instanceof SmtpSessionError && err.reply ? `${err.message} (${err.reply})` : (err as Error).message;
    return fail('delivery', check, `no session with [${addresses[0]}]: ${said}`, fix);
  }
  session.close();
  const as = target.auth ? `, logged in as ${target.auth.user}` : ', without a login (the URL names no user)';
  return ok('delivery', check, `[${addresses[0]}] takes a session${target.tls === 'implicit' ? ' over TLS' : ''}${as}`);
}
