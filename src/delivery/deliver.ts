// Delivers one message to the recipients of one domain, straight to its MX
// hosts or through a smarthost, and says what became of each recipient.

import { lookup } from 'node:dns/promises';
import net from 'node:net';
import { classifyBounce, extractEnhancedStatus, parseReply, type BounceClassification } from './bounce-rules.js';
import { resolveDestination, type MxResolver } from './mx.js';
import { providerForMx } from './provider.js';
import { retryHintMs } from './retry-schedule.js';
import {
  MessageWithdrawn,
  RFC5321_TIMEOUTS,
  SmtpSessionError,
  type SessionOptions,
  type SmtpPool,
  type SmtpTarget,
  type SmtpTimeouts,
} from './smtp-client.js';

export type RecipientStatus = 'delivered' | 'deferred' | 'bounced';

export interface RecipientVerdict {
  recipient: string;
  status: RecipientStatus;
  smtp_code?: number;
  enhanced_status_code?: string;
  /** The server's reply, or what went wrong when there was none. */
  response: string;
  /** The host that gave the verdict. */
  mx_host?: string;
  /** For a deferred recipient whose reply asked for a wait ("try again in 5 minutes"). */
  retry_after_ms?: number;
  /** For a bounced recipient. */
  bounce?: BounceClassification & { provider?: string };
}

export interface OutboundMessage {
  /** Envelope sender (the bounce address); '' for the null sender. */
  mailFrom: string;
  recipients: string[];
  /** The signed RFC 5322 message, CRLF line ends. */
  raw: Buffer;
  /**
   * Asked just before the message would reach a server; when it says no
   * (the delivery's lease ran low, say), the delivery stops with
   * MessageWithdrawn, nothing of the message sent.
   */
  mayHandOver?: () => boolean;
}

export interface DomainDelivery extends OutboundMessage {
  domain: string;
}

interface CommonDeps {
  heloName: string;
  pool: SmtpPool;
  /** BDAT to a server that offers CHUNKING (default true); false sends DATA to every server. */
  chunking?: boolean;
  /** Overrides of the RFC 5321 timeouts (tests shorten them). */
  timeouts?: Partial<SmtpTimeouts>;
  localAddress?: string;
}

export interface DirectDeps extends CommonDeps {
  /** A resolver set to MAILROOM_DNS_SERVERS. */
  resolver: MxResolver;
  /** 25 in production (MAILROOM_OUTBOUND_PORT). */
  port: number;
  allowPrivate?: boolean;
  /** At most this many connection attempts per delivery, over all hosts; default 5 (Postfix's smtp_mx_address_limit). */
  maxConnectionAttempts?: number;
  rng?: () => number;
}

export type RelayDeps = CommonDeps;

interface Host {
  name: string;
  addresses: string[];
  provider?: string;
}

/**
 * Of a reply, what an outcome keeps (the recipient's detail, the event): a
 * server may answer with a megabyte, and every recipient it refuses would
 * keep it all. The code, the enhanced status and the reason come first.
 */
const MAX_KEPT_REPLY_CHARS = 2000;
const keptReply = (reply: string) => (reply.length > MAX_KEPT_REPLY_CHARS ? `${reply.slice(0, MAX_KEPT_REPLY_CHARS - 1)}…` : reply);

/** The fields every outcome has, from a reply (or a description of what failed). */
function base(recipient: string, reply: string, code: number | undefined, host: Host | undefined) {
  const enhanced = extractEnhancedStatus(reply);
  return {
    recipient,
    response: keptReply(reply),
    ...(code !== undefined && { smtp_code: code }),
    ...(enhanced && { enhanced_status_code: enhanced }),
    ...(host && { mx_host: host.name }),
  };
}

function deferred(recipient: string, reply: string, code: number | undefined, host: Host | undefined): RecipientVerdict {
  const retry = retryHintMs(reply);
  return { ...base(recipient, reply, code, host), status: 'deferred', ...(retry !== undefined && { retry_after_ms: retry }) };
}

/** A verdict by its class: the enhanced code when there is one, as it is the more specific (RFC 3463 §1). */
function outcome(recipient: string, reply: string, code: number | undefined, host: Host | undefined): RecipientVerdict {
  const cls = extractEnhancedStatus(reply)?.[0] ?? String(code ?? '')[0];
  if (cls === '2') return { ...base(recipient, reply, code, host), status: 'delivered' };
  if (cls !== '5') return deferred(recipient, reply, code, host);
  const provider = host?.provider;
  const bounce = { ...classifyBounce({ code, enhanced: extractEnhancedStatus(reply), text: reply }), ...(provider && { provider }) };
  return { ...base(recipient, reply, code, host), status: 'bounced', bounce };
}

function sessionOptions(deps: CommonDeps): SessionOptions {
  return {
    heloName: deps.heloName,
    timeouts: { ...RFC5321_TIMEOUTS, ...deps.timeouts },
    ...(deps.chunking === false && { chunking: false }),
    ...(deps.localAddress && { localAddress: deps.localAddress }),
  };
}

/**
 * Tries the hosts in order, each of their addresses in turn, until every
 * recipient has a verdict or the attempts run out. A host that cannot be
 * reached, greets with anything but 220 (Postfix skips such servers too) or
 * says 421 passes the recipients on to the next one. Stops with
 * MessageWithdrawn when the message's `mayHandOver` says no.
 */
async function deliverThrough(
  hosts: Host[],
  target: Omit<SmtpTarget, 'address' | 'hostname'>,
  message: OutboundMessage,
  deps: CommonDeps,
  maxAttempts: number,
): Promise<RecipientVerdict[]> {
  const options = sessionOptions(deps);
  const done: RecipientVerdict[] = [];
  let pending = [...new Set(message.recipients)];
  let lastFailure = 'no host could be reached';
  let lastHost: Host | undefined;
  let attempts = 0;

  for (const host of hosts) {
    for (const address of host.addresses) {
      if (!pending.length || attempts >= maxAttempts) break;
      attempts += 1;
      lastHost = host;
      // A pooled session the server has dropped shows only when the next transaction
      // starts on it; the same address then gets one new session.
      for (let fresh = false; ; fresh = true) {
        let session;
        try {
          session = await deps.pool.acquire({ ...target, address, hostname: host.name }, options, fresh);
        } catch (err) {
          lastFailure = err instanceof SmtpSessionError && err.reply ? err.reply : (err as Error).message;
          break;
        }
        const result = await session.send(message.mailFrom, pending, message.raw, message.mayHandOver);
        deps.pool.release(session, options);
        if (result.withdrawn) throw new MessageWithdrawn();
        done.push(...result.results.map((r) => outcome(r.recipient, r.reply, r.code, host)));
        pending = result.retryElsewhere;
        // The reply as it came (mx_host says from where), so its codes still parse.
        if (result.failure) lastFailure = result.failure;
        if (!result.staleSession || fresh) break;
      }
    }
  }
  // Whatever is left could not be handed to anyone this time: deferred, with the last reason
  // (even a 554 greeting: another host, or the same one later, may well take it).
  const code = parseReply(lastFailure).code;
  return [...done, ...pending.map((recipient) => deferred(recipient, lastFailure, code, lastHost))];
}

// RFC 3463 codes for the failures found before any server was asked.
const DNS_FAILURE_STATUS: Record<string, string> = {
  null_mx: '5.1.10', // RFC 7505 §4.2
  ENOTFOUND: '5.1.2', // bad destination system address
  invalid_domain: '5.1.2',
};

/** Delivers `raw` to `recipients`, all of `domain`, through the domain's MX hosts: one transaction per session. */
export async function deliverToDomain(delivery: DomainDelivery, deps: DirectDeps): Promise<RecipientVerdict[]> {
  const destination = await resolveDestination(delivery.domain, {
    resolver: deps.resolver,
    allowPrivate: deps.allowPrivate,
    rng: deps.rng,
  });
  if (!destination.ok) {
    // 5.4.4 "unable to route", 4.4.3 "directory server failure" (RFC 3463).
    const status = destination.permanent ? (DNS_FAILURE_STATUS[destination.code ?? ''] ?? '5.4.4') : '4.4.3';
    const reply = `${status} ${destination.reason}`;
    return [...new Set(delivery.recipients)].map((recipient) => outcome(recipient, reply, undefined, undefined));
  }
  const hosts = destination.hosts.map((h) => ({ name: h.exchange, addresses: h.addresses, provider: providerForMx(h.exchange) }));
  return deliverThrough(hosts, { port: deps.port, tls: 'opportunistic' }, delivery, deps, deps.maxConnectionAttempts ?? 5);
}

/** A smarthost as MAILROOM_RELAY_URL names it: where to connect, how, and as whom. */
export interface Relay {
  hostname: string;
  target: Omit<SmtpTarget, 'address' | 'hostname'>;
}

/**
 * A smarthost given as a URL: smtp://user:pass@host:port (STARTTLS when
 * offered, port 587 by default) or smtps://... (TLS from the start, RFC 8314,
 * port 465 by default, certificate checked).
 */
export function relayOf(relayUrl: string | URL): Relay {
  const url = new URL(relayUrl);
  const implicit = url.protocol === 'smtps:';
  if (!implicit && url.protocol !== 'smtp:') throw new Error(`relay URL must be smtp:// or smtps://, not ${url.protocol}`);
  const user = decodeURIComponent(url.username);
  return {
    hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    target: {
      port: Number(url.port || (implicit ? 465 : 587)),
      tls: implicit ? 'implicit' : 'opportunistic',
      verifyCertificate: implicit,
      ...(user && { auth: { user, pass: decodeURIComponent(url.password) } }),
    },
  };
}

/**
 * The relay's addresses, through the system resolver rather than
 * MAILROOM_DNS_SERVERS: a smarthost is often a name only the local network
 * knows (/etc/hosts, a container network).
 */
export async function relayAddresses(hostname: string): Promise<string[]> {
  return net.isIP(hostname) ? [hostname] : (await lookup(hostname, { all: true })).map((a) => a.address);
}

/** Delivers through the smarthost of `relayUrl` (relayOf). */
export async function deliverViaRelay(relayUrl: string | URL, message: OutboundMessage, deps: RelayDeps): Promise<RecipientVerdict[]> {
  const { hostname, target } = relayOf(relayUrl);
  let addresses: string[];
  try {
    addresses = await relayAddresses(hostname);
  } catch (err) {
    const reply = `4.4.3 cannot resolve relay ${hostname}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
    return [...new Set(message.recipients)].map((recipient) => outcome(recipient, reply, undefined, undefined));
  }
  return deliverThrough([{ name: hostname, addresses }], target, message, deps, addresses.length);
}
