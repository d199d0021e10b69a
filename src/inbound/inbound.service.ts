import type { Logger } from 'pino';
import type { DNSResolver } from 'mailauth';
import { AppError, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import type { Clock } from '../core/clock.js';
import { writeInBatches, type Db, type Store, type Tx } from '../store/db.js';
import { coalescedWrite } from '../store/coalesced-write.js';
import { freeGoneLeases, releaseOwners } from '../store/lease.js';
import type { Page, PageQuery } from '../store/paging.js';
import { appendEvent, appendReceivedEvents, type ReceivedEvent } from '../events/index.js';
import type { SuppressionsPort } from '../suppressions/index.js';
import { mailDomain, recordRecipientOutcomes, type RecipientOutcome } from '../emails/index.js';
import {
  anyClaimable, claimPending, domainExists, findInbound, findInboundRaw, findAnsweredEmail, findReturnedEmail, inboundDomains, insertInbound, keyedReturnPathsSince,
  listInbound, markAttemptFailed, markReady, markReportDone, purgeReceivedBefore, returnPathDomains,
  type InboundEmail, type InboundEmailSummary, type InboundFilter, type NewInbound, type PendingInbound, type ReceivingDomain, type ReturnedEmail,
} from './inbound.repo.js';
import { attachmentContent, fieldsOf, readHere, type MessageFields } from './parse-message.js';
import { withoutNul } from '../core/nul.js';
import { UnreadableMessage, type MessageReader } from './parse-pool.js';
import { scanMimeStructure } from '../core/mime-structure.js';
import { isLegacyTag, parseReturnPath, tagNames, type ReturnPath } from './return-path.js';
import { bounceDetails, feedbackProvider, readReport, type DeliveryStatusReport, type FeedbackReport } from './reports.js';
import type { MxPort, RecipientRefusal } from '../smtp/mx.listener.js';
import type { PostmasterMailbox } from './postmaster-maildir.js';
import type { QueryParams } from '../contract/operations.js';

// The rules of receiving: which recipients are ours, storing a message before
// it is acknowledged, turning it into API fields afterwards, and reading the
// bounces and complaints that come back to a return path.

/** The filters of GET /inbound, as the API names them. */
export type InboundListQuery = QueryParams<'listInboundEmails'>;

export interface InboundAttachment {
  content: Buffer;
  contentType: string;
  filename: string | null;
}

/** Implements the MX listener's port: checkRecipient and accept. */
export interface InboundService extends MxPort {
  /**
   * Claims up to `limit` pending messages and starts parsing and checking
   * them with `reader` (the processor's threads; this thread by default).
   */
  claimBatch(owner: string, limit: number, reader?: MessageReader): Promise<ClaimedBatch>;
  /**
   * Makes `owner` the processor of the messages this process accepts: they
   * are leased to it as they are stored and its claims take them from memory
   * rather than reading them back. `wake` is called after each accept.
   */
  attachProcessor(owner: string, wake: () => void): void;
  /** Ends that, and frees the leases of the messages that were still waiting for the processor. */
  detachProcessor(): Promise<void>;
  /** Frees the leases that processes of this host, now gone, held when they stopped (a crash); returns how many. */
  releaseGoneLeases(): Promise<number>;
  list(workspaceId: string, query: InboundListQuery, page: PageQuery): Promise<Page<InboundEmailSummary>>;
  get(workspaceId: string, id: string): Promise<InboundEmail>;
  raw(workspaceId: string, id: string): Promise<Buffer>;
  attachment(workspaceId: string, id: string, index: number): Promise<InboundAttachment>;
  /** Deletes messages older than the retention period; returns how many. */
  purgeExpired(): Promise<number>;
}

/** Messages claimed by a processor. */
export interface ClaimedBatch {
  /** How many rows the claim took (those given up on included); 0 when nothing was pending. */
  claimed: number;
  /** The size of the messages being read. */
  bytes: number;
  /** Settles once every message has been read or has failed (failures are recorded by then). */
  read: Promise<void>;
  /** Stores the outcomes of the messages read; after `read`. */
  store(): Promise<void>;
}

export interface InboundDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** This server's host name, named in Authentication-Results. */
  hostname: string;
  /** The resolver SPF, DKIM and DMARC look-ups go through. */
  resolver: DNSResolver;
  suppressions: Pick<SuppressionsPort, 'addFromBounce'>;
  /** 0 keeps messages forever. */
  retentionDays: number;
  /** Where mail to the server's own postmaster goes when no domain of the server's name receives mail here. */
  postmaster: PostmasterMailbox;
  /** The keyring's returnPathKey: checks the recipient tags of return paths. */
  returnPathKey: Buffer;
}

const DAY_MS = 86_400_000;
/** How long a processor holds a claimed message; a crash frees it after this. */
export const PROCESS_LEASE_MS = 120_000;
/**
 * Delay before attempt n+1 after n failed ones: for a thread that died or a
 * store that failed, not a passing condition, so few attempts. A message the
 * parser refuses is not tried again (UnreadableMessage).
 */
const RETRY_AFTER_MS = [10_000, 60_000, 600_000, 3_600_000];
export const MAX_PROCESS_ATTEMPTS = RETRY_AFTER_MS.length + 1;
/**
 * While the listener has messages on their way to a commit, the processor's
 * writes wait up to this long to share one (each commit writes its pages to
 * the WAL on the event loop the listener answers on). Nobody waits on them,
 * and the wait ends as soon as the listener's write goes.
 */
const PROCESS_GATHER_MS = 20;
/**
 * Accepted messages handed to the processor wait in memory up to these
 * bounds; beyond them they are stored unleased and claimed from the store.
 */
export const HANDOFF_MAX_MESSAGES = 256;
const HANDOFF_MAX_BYTES = 16 * 1024 * 1024;
/**
 * While messages are handed over, the store is still claimed from this
 * often, for retries that came due and for messages other processes stored.
 */
const STORE_CLAIM_EVERY_MS = 1_000;
/** Rows deleted per retention transaction, and transactions per run. */
const PURGE_BATCH = 1_000;
const PURGE_BATCHES_PER_RUN = 100;

interface Target extends ReceivingDomain {
  kind: 'message' | 'report';
}

interface HostTargets {
  returnPaths: ReceivingDomain[];
  inbound: ReceivingDomain[];
  known: boolean;
}

/** How long what a host receives for is remembered, and for how many hosts at most. */
export const DOMAIN_CACHE_MS = 5_000;
const DOMAIN_CACHE_MAX = 10_000;

/** The domain as domains are kept, in its ASCII form: the SMTP server hands an IDN over in Unicode. */
const domainOf = (address: string) => mailDomain(address) ?? address.slice(address.lastIndexOf('@') + 1).toLowerCase();
const sameAddress = (a: string, b: string) => a.trim().toLowerCase() === b.trim().toLowerCase();

export function inboundService(deps: InboundDeps): InboundService {
  const { store, clock, logger } = deps;
  const insertAccepted = coalescedWrite(store, insertInbound);
  let processor: { owner: string; wake: () => void } | undefined;
  /** Accepted messages leased to the processor that no claim has taken yet, oldest first. */
  let handedOff: PendingInbound[] = [];
  let handedOffBytes = 0;
  /**
   * Whether pending messages may be waiting in the store: from before this
   * process started, or stored unleased while the hand-off was full. New
   * messages then go to the store too, behind them, until a claim drains it.
   */
  let backlog = true;
  let lastStoreClaim = 0;
  /** Inserts of accepted messages not yet committed (a detach waits for them). */
  const inserting = new Set<Promise<void>>();
  /** The processor's writes: alone when the listener is quiet, else with its next commit. */
  const processorWrite = <T>(work: (tx: Tx) => Promise<T>) =>
    store.write(work, inserting.size > 0 ? { gatherMs: PROCESS_GATHER_MS } : undefined);

  /**
   * What mail to a host is for: the domains whose return path it is, the
   * active inbound domains of that name, and whether we know the name at
   * all. Every RCPT and every accepted message asks, so answers are kept for
   * DOMAIN_CACHE_MS: a domain turned on or off takes effect within that.
   */
  const hosts = new Map<string, { until: number; answer: Promise<HostTargets> }>();
  function hostTargets(host: string): Promise<HostTargets> {
    const now = clock.now();
    const hit = hosts.get(host);
    if (hit && hit.until > now) return hit.answer;
    if (hosts.size >= DOMAIN_CACHE_MAX) hosts.clear();
    const answer = (async (): Promise<HostTargets> => {
      const returnPaths = await returnPathDomains(store.db, host);
      const inbound = returnPaths.length > 0 ? [] : await inboundDomains(store.db, host);
      const known = returnPaths.length > 0 || inbound.length > 0 || (await domainExists(store.db, host));
      return { returnPaths, inbound, known };
    })();
    hosts.set(host, { until: now + DOMAIN_CACHE_MS, answer });
    answer.catch(() => hosts.delete(host));
    return answer;
  }

  /**
   * RFC 5321 §4.5.1: "postmaster" without a domain is this server's own
   * postmaster, and its mail must be taken. It goes where mail to postmaster@
   * the server's name would: the domain named MAILROOM_HOSTNAME, else the
   * nearest parent of it (mx.acme.test, then acme.test) that receives mail
   * here; none means the server's own mailbox (an empty list).
   */
  async function postmasterTargets(): Promise<Target[]> {
    const labels = deps.hostname.toLowerCase().split('.');
    for (let i = 0; i < labels.length - 1; i++) {
      const { inbound } = await hostTargets(labels.slice(i).join('.'));
      if (inbound.length > 0) return inbound.map((d) => ({ ...d, kind: 'message' as const }));
    }
    return [];
  }

  /**
   * The server's own postmaster: "postmaster" without a domain, or at the
   * server's name (MAILROOM_HOSTNAME), whose mail RFC 5321 §4.5.1 asks the
   * server to take even where no domain of that name receives mail here.
   */
  const serverName = deps.hostname.toLowerCase();
  const isServerPostmaster = (address: string) => {
    const at = address.lastIndexOf('@');
    return at < 0 ? address.toLowerCase() === 'postmaster' : address.slice(0, at).toLowerCase() === 'postmaster' && domainOf(address) === serverName;
  };

  /**
   * The recipient a tagged return path names, or undefined when its tag is
   * none of the email's: made up, or a legacy tag of an email created since
   * keyed tags began. `db` is the transaction the caller is in, if any.
   */
  async function taggedRecipient(db: Db | Tx, email: ReturnedEmail, tag: string): Promise<string | undefined> {
    const legacyAllowed = isLegacyTag(tag) && email.createdAt < (await keyedReturnPathsSince(db));
    return email.recipients.find((r) => tagNames(deps.returnPathKey, tag, email.id, r, legacyAllowed));
  }

  /** Whether a return path is one we handed out to one of these domains' workspaces. */
  async function isOurReturnPath(path: ReturnPath, domains: ReceivingDomain[]): Promise<boolean> {
    // The untagged form names no recipient: a report to it must name one itself (see recordBounces).
    if (path.recipientTag === undefined) return true;
    for (const workspaceId of new Set(domains.map((d) => d.workspaceId))) {
      const email = await findReturnedEmail(store.db, workspaceId, path.emailId);
      if (email && (await taggedRecipient(store.db, email, path.recipientTag)) !== undefined) return true;
    }
    return false;
  }

  /** The receiving domains mail to this address goes to, or why there are none. */
  async function targetsOf(address: string): Promise<Target[] | RecipientRefusal> {
    if (isServerPostmaster(address)) return postmasterTargets();
    const { returnPaths, inbound, known } = await hostTargets(domainOf(address));
    if (returnPaths.length > 0) {
      // Only addresses we hand out are taken; the rest of the bounce domain is nobody's mailbox.
      const path = parseReturnPath(address);
      return path && (await isOurReturnPath(path, returnPaths)) ? returnPaths.map((d) => ({ ...d, kind: 'report' as const })) : 'no_such_bounce_address';
    }
    if (inbound.length > 0) return inbound.map((d) => ({ ...d, kind: 'message' as const }));
    // A domain we know but that takes no mail here is a bad destination
    // (RFC 3463 X.1.2); any other is a request to relay.
    return known ? 'no_such_domain' : 'relay_denied';
  }

  /**
   * A claimed message's write, once the work outside the database is done;
   * returns the event it calls for, which the batch writes with the others'.
   */
  type Apply = (tx: Tx) => Promise<ReceivedEvent | undefined>;

  /** Parses (and for mail, checks) a claimed message; the returned write stores the outcome. */
  async function prepare(row: PendingInbound, owner: string, reader: MessageReader): Promise<Apply> {
    // The listener refuses such messages at DATA; one stored before a limit was lowered is never parsed.
    const violation = scanMimeStructure(row.raw);
    if (violation) throw new UnreadableMessage(`not processed: ${violation.message}`);
    // Network I/O (the checks' DNS look-ups): outside the transaction.
    const read = await reader(row.raw, row.kind === 'message'
      ? { remoteIp: row.remoteIp, helo: row.helo, mailFrom: row.mailFrom, mta: deps.hostname, resolver: deps.resolver }
      : undefined);
    const fields = fieldsOf(read.parts);
    if (row.kind === 'report') {
      return async (tx) => {
        const detail = await applyReport(tx, row, fields);
        await markReportDone(tx, row.id, owner, detail, clock.now());
        return undefined;
      };
    }
    // The checks quote the message's own header fields (a DKIM signature's d=, say).
    const auth = withoutNul(read.auth);
    if (!auth) throw new Error('the message was parsed but not checked');
    return async (tx) => {
      const now = clock.now();
      const answered = fields.answers.length ? await findAnsweredEmail(tx, row.workspaceId, fields.answers) : undefined;
      const ready = await markReady(tx, row.id, owner, {
        from: fields.from, to: fields.to, cc: fields.cc, replyTo: fields.replyTo, subject: fields.subject,
        text: fields.text, html: fields.html, messageId: fields.messageId, headers: fields.headers,
        attachments: fields.attachments, auth, inReplyToEmailId: answered?.id ?? null,
        searchTo: [...row.rcptTo, ...fields.recipientAddresses],
        searchFrom: [row.mailFrom, ...fields.fromAddresses],
      }, now);
      if (!ready) return undefined;
      if (answered) await recordReply(tx, row, answered, fields, now);
      return {
        workspaceId: row.workspaceId, inboundId: row.id, domainId: row.domainId, from: fields.from, subject: fields.subject, now,
        data: {
          from: fields.from, to: row.rcptTo, subject: fields.subject, message_id: fields.messageId,
          attachment_count: fields.attachments.length, spf: auth.spf.result, dkim: auth.dkim.map((d) => d.result),
          dmarc: auth.dmarc.result,
        },
      };
    };
  }

  /**
   * Records a failed attempt: retried after a pause, or given up after
   * MAX_PROCESS_ATTEMPTS, or at once when the message itself cannot be read.
   */
  async function failed(row: PendingInbound, owner: string, err: unknown): Promise<void> {
    const giveUp = err instanceof UnreadableMessage || row.attempts >= MAX_PROCESS_ATTEMPTS;
    const log = { err, inbound_id: row.id, workspace_id: row.workspaceId, attempt: row.attempts };
    if (giveUp) logger.error(log, 'inbound message could not be processed; giving up');
    else logger.warn(log, 'inbound message could not be processed; will retry');
    const now = clock.now();
    await store.write((tx) => markAttemptFailed(tx, row.id, owner, (err as Error).message ?? String(err),
      giveUp ? null : now + RETRY_AFTER_MS[row.attempts - 1], now))
      .catch((e: unknown) => logger.error({ err: e, inbound_id: row.id }, 'could not record a failed processing attempt'));
  }

  /** Writes the events and suppressions a report to a return path amounts to; returns what came of it. */
  async function applyReport(tx: Tx, row: PendingInbound, fields: MessageFields): Promise<string> {
    const report = readReport(fields.report);
    if (!report) return 'not a delivery status or feedback report: nothing recorded';
    const outcomes: string[] = [];
    const seen = new Set<string>();
    for (const address of row.rcptTo) {
      const path = parseReturnPath(address);
      if (!path || seen.has(address.toLowerCase())) continue;
      seen.add(address.toLowerCase());
      const email = await findReturnedEmail(tx, row.workspaceId, path.emailId);
      if (!email) {
        outcomes.push(`${path.emailId}: no such email in this workspace`);
        continue;
      }
      const tagged = path.recipientTag === undefined ? undefined : await taggedRecipient(tx, email, path.recipientTag);
      if (path.recipientTag !== undefined && tagged === undefined) {
        // Refused at RCPT time already; checked again, as what the report is recorded against.
        outcomes.push(`${email.id}: the return path's tag names none of the email's recipients`);
        continue;
      }
      const recorded = report.kind === 'dsn'
        ? await recordBounces(tx, row, email, tagged, report)
        : await recordComplaint(tx, row, email, tagged, report, fields);
      outcomes.push(`${email.id}: ${recorded}`);
    }
    return outcomes.join('; ') || 'no return path address among the recipients';
  }

  /**
   * The recipients a report to the untagged return path may name: those sent
   * in a transaction of several recipients. Any other was sent under its own
   * tagged return path, so a report naming it here is not from its MX.
   */
  const untaggedCandidates = (email: ReturnedEmail) => email.recipients.filter((r) => email.sharingDestination.has(r));

  /** `tagged` is the recipient the return path names, if it names one. */
  async function recordBounces(tx: Tx, row: PendingInbound, email: ReturnedEmail, tagged: string | undefined, report: DeliveryStatusReport): Promise<string> {
    const bounced = new Map<string, ReturnType<typeof bounceDetails>>();
    for (const block of report.recipients.filter((r) => r.action === 'failed')) {
      // A return path naming one recipient settles who it was, even when the
      // report names an alias or a forwarding address; otherwise the report's
      // own recipient fields must name one of the email's recipients.
      const to = tagged ?? untaggedCandidates(email).find((r) =>
        [block.finalRecipient, block.originalRecipient].some((a) => a !== undefined && sameAddress(a, r)));
      if (to !== undefined && !bounced.has(to)) bounced.set(to, bounceDetails(block, report.reportingMta));
    }
    await recordRecipientOutcomes(tx, deps.suppressions, [{
      emailId: email.id,
      outcomes: [...bounced].map(([to, d]): RecipientOutcome => ({
        kind: 'bounced', recipientId: email.recipientIds.get(to)!, address: to, smtpCode: d.smtp_code, enhancedStatusCode: d.enhanced_status_code,
        bounce: { bounce_type: d.bounce_type, bounce_subtype: d.bounce_subtype, recommended_action: d.recommended_action },
        provider: d.provider, response: d.original_error,
      })),
    }], clock.now());
    return bounced.size === 0 ? 'no failed recipient of this email in the report' : `bounced ${[...bounced.keys()].join(', ')}`;
  }

  async function recordComplaint(tx: Tx, row: PendingInbound, email: ReturnedEmail, tagged: string | undefined, report: FeedbackReport,
    fields: MessageFields): Promise<string> {
    // RFC 6430: a not-spam report takes a complaint back; it is not one.
    if (report.feedbackType === 'not-spam') return 'not-spam report: nothing recorded';
    // Reporters often redact the recipient (RFC 6590): the tagged return path names it then.
    const to = tagged ?? untaggedCandidates(email).find((r) => report.originalRcptTo.some((a) => sameAddress(a, r)));
    if (to === undefined) return 'complaint names none of the email\'s recipients';
    await recordRecipientOutcomes(tx, deps.suppressions, [{
      emailId: email.id,
      outcomes: [{
        kind: 'complained', recipientId: email.recipientIds.get(to)!, address: to, feedbackType: report.feedbackType,
        provider: feedbackProvider(fields.fromAddresses[0], row.helo),
      }],
    }], clock.now());
    return `complaint (${report.feedbackType}${report.userAgent ? `, ${report.userAgent}` : ''}) from ${to}`;
  }

  /** The answered email's timeline gains email.replied, which also counts as the replier's engagement. */
  async function recordReply(tx: Tx, row: PendingInbound, email: ReturnedEmail, fields: MessageFields, now: number): Promise<void> {
    const replier = fields.fromAddresses[0] ?? row.mailFrom;
    const to = email.recipients.find((r) => sameAddress(r, replier)) ?? replier.toLowerCase();
    await appendEvent(tx, {
      workspaceId: row.workspaceId, emailId: email.id, domainId: email.domainId, kind: 'replied', recipient: to,
      from: email.from, subject: email.subject, now,
      data: { to, from: email.from, subject: email.subject, reply_from: fields.from, reply_subject: fields.subject, inbound_id: row.id },
    });
  }

  async function mustFindRaw(ws: string, id: string) {
    const found = await findInboundRaw(store.db, ws, id);
    if (!found) throw notFound('inbound email', id);
    return found;
  }

  return {
    async checkRecipient(address) {
      const targets = await targetsOf(address);
      if (typeof targets === 'string') return targets;
      if (targets.length === 0 && !(await deps.postmaster.hasRoom())) return 'postmaster_mailbox_full';
      return undefined;
    },

    async accept(message) {
      const now = clock.now();
      const byTarget = new Map<string, NewInbound>();
      let forServerPostmaster = false;
      for (const address of message.rcptTo) {
        const targets = await targetsOf(address);
        // Refused at RCPT time already; a domain removed since then drops out here.
        if (typeof targets === 'string') continue;
        if (targets.length === 0 && isServerPostmaster(address)) forServerPostmaster = true;
        for (const t of targets) {
          const key = `${t.kind} ${t.id}`;
          const existing = byTarget.get(key);
          if (existing) existing.rcptTo.push(address);
          else {
            byTarget.set(key, {
              id: newId('in', now), workspaceId: t.workspaceId, domainId: t.id, kind: t.kind, mailFrom: message.mailFrom,
              rcptTo: [address], remoteIp: message.remoteIp, helo: message.helo, tls: message.tls, raw: message.raw, receivedAt: now,
            });
          }
        }
      }
      // Synced to disk before the answer, like the rows below.
      const kept = forServerPostmaster ? [await deps.postmaster.deliver(message)] : [];
      if (kept.length > 0) logger.info({ file: kept[0], mail_from: message.mailFrom, remote_ip: message.remoteIp }, 'mail for postmaster kept in the server\'s postmaster Maildir');
      const rows = [...byTarget.values()];
      if (rows.length === 0) return kept;
      const to = processor;
      const handOff = to !== undefined && !backlog && handedOff.length < HANDOFF_MAX_MESSAGES && handedOffBytes < HANDOFF_MAX_BYTES;
      if (to && !handOff) backlog = true;
      if (handOff) for (const r of rows) r.lease = { owner: to.owner, until: now + PROCESS_LEASE_MS };
      const inserted = insertAccepted(rows);
      inserting.add(inserted);
      try {
        await inserted;
      } finally {
        inserting.delete(inserted);
      }
      if (handOff && processor === to) {
        for (const r of rows) {
          handedOff.push({ ...r, attempts: 1 });
          handedOffBytes += r.raw.length;
        }
      }
      processor?.wake();
      return [...rows.map((r) => r.id), ...kept];
    },

    async claimBatch(owner, limit, reader = readHere) {
      const storeTurn = handedOff.length === 0 || clock.now() - lastStoreClaim >= STORE_CLAIM_EVERY_MS;
      if (storeTurn) lastStoreClaim = clock.now();
      // A read first, so an idle processor's rounds never queue a write.
      const fromStore = !storeTurn || !(await anyClaimable(store.db, clock.now())) ? { claimed: [], total: 0 } : await processorWrite(async (tx) => {
        const now = clock.now();
        const rows = await claimPending(tx, { now, leaseMs: PROCESS_LEASE_MS, owner, limit });
        // A message whose every attempt ended with its processor gone (one
        // that crashes the process, say) is not taken again and again.
        const exhausted = rows.filter((r) => r.attempts > MAX_PROCESS_ATTEMPTS);
        for (const r of exhausted) {
          await markAttemptFailed(tx, r.id, owner, `gave up after ${MAX_PROCESS_ATTEMPTS} attempts that did not finish`, null, now);
        }
        if (exhausted.length > 0) logger.error({ inbound_ids: exhausted.map((r) => r.id) }, 'inbound messages given up: every processing attempt was cut short');
        return { claimed: rows.filter((r) => r.attempts <= MAX_PROCESS_ATTEMPTS), total: rows.length };
      });
      if (storeTurn && fromStore.total < limit) backlog = false;
      // The rest of the batch from the messages handed over, which are this owner's already.
      const handed = processor?.owner === owner ? handedOff.splice(0, limit - fromStore.total) : [];
      for (const row of handed) handedOffBytes -= row.raw.length;
      const claimed = [...fromStore.claimed, ...handed];
      const total = fromStore.total + handed.length;
      const prepared = Promise.all(claimed.map((row) => prepare(row, owner, reader).then(
        (apply) => ({ row, apply }),
        async (err: unknown) => void (await failed(row, owner, err)),
      )));
      return {
        claimed: total,
        bytes: claimed.reduce((sum, row) => sum + row.raw.length, 0),
        read: prepared.then(() => undefined),
        store: async () => {
          const ready = (await prepared).filter((p): p is { row: PendingInbound; apply: Apply } => p !== undefined);
          if (ready.length === 0) return;
          // The whole batch in one unit of the group commit. Should it fail, each
          // message is written alone, so one bad message cannot hold up the others.
          try {
            await processorWrite(async (tx) => {
              const events: ReceivedEvent[] = [];
              for (const p of ready) {
                const event = await p.apply(tx);
                if (event) events.push(event);
              }
              await appendReceivedEvents(tx, events);
            });
          } catch (batchErr) {
            logger.warn({ err: batchErr, count: ready.length }, 'inbound batch could not be stored; storing its messages one by one');
            await Promise.all(ready.map((p) => store.write(async (tx) => {
              const event = await p.apply(tx);
              if (event) await appendReceivedEvents(tx, [event]);
            }).catch((err: unknown) => failed(p.row, owner, err))));
          }
        },
      };
    },

    releaseGoneLeases: () => freeGoneLeases(store, 'inbound_messages', logger, () => clock.now()),

    attachProcessor(owner, wake) {
      processor = { owner, wake };
    },

    async detachProcessor() {
      const owner = processor?.owner;
      processor = undefined;
      if (owner === undefined) return;
      handedOff = [];
      handedOffBytes = 0;
      backlog = true;
      await Promise.allSettled([...inserting]);
      await store.write((tx) => releaseOwners(tx, 'inbound_messages', [owner], clock.now()));
    },

    list(ws, q, page) {
      const filter: InboundFilter = {
        ...(q.to !== undefined && { to: q.to }),
        ...(q.from !== undefined && { from: q.from }),
        ...(q.domain_id !== undefined && { domainId: q.domain_id }),
        ...(q.in_reply_to_email_id !== undefined && { inReplyToEmailId: q.in_reply_to_email_id }),
        ...(q.received_after !== undefined && { receivedAfter: Date.parse(q.received_after) }),
        ...(q.received_before !== undefined && { receivedBefore: Date.parse(q.received_before) }),
      };
      return listInbound(store.db, ws, filter, page, clock.now());
    },

    async get(ws, id) {
      const found = await findInbound(store.db, ws, id);
      if (!found) throw notFound('inbound email', id);
      return found;
    },

    raw: async (ws, id) => (await mustFindRaw(ws, id)).raw,

    async attachment(ws, id, index) {
      const { raw, status } = await mustFindRaw(ws, id);
      // Only a processed message has passed the structural limits and the parser.
      if (status !== 'processed') {
        throw new AppError('not_found', `Inbound email '${id}' is ${status === 'failed' ? 'failed' : 'not processed yet'}: its attachments are not known.`, { param: 'index' });
      }
      const found = await attachmentContent(raw, index);
      if (!found) throw new AppError('not_found', `Inbound email '${id}' has no attachment ${index}.`, { param: 'index' });
      return found;
    },

    async purgeExpired() {
      if (deps.retentionDays === 0) return 0;
      const before = clock.now() - deps.retentionDays * DAY_MS;
      const purged = await writeInBatches(store, { size: PURGE_BATCH, maxBatches: PURGE_BATCHES_PER_RUN }, (tx, size) => purgeReceivedBefore(tx, before, size));
      return purged + await deps.postmaster.purgeBefore(before);
    },
  };
}
