import { AppError, notFound } from '../core/errors.js';
import { toIso, type Clock } from '../core/clock.js';
import type { Page, PageQuery } from '../store/paging.js';
import { normaliseDomainName } from '../domains/domain-name.js';
import type { DestinationSummary, QueueItemState, RetryOutcome, WaitingItem } from '../delivery/index.js';
import type { RequestBody } from '../contract/operations.js';

// The outbound queue as the people who run Mailroom see and steer it, per
// workspace and destination domain, as Postfix's mailq and postsuper do:
// what waits and why, retrying now, and holding a destination while
// something is wrong with it.

/** What this area needs of the queue's owner (the delivery area's store functions and worker). */
export interface QueuePort {
  summaries(workspaceId: string, now: number): Promise<DestinationSummary[]>;
  items(workspaceId: string, f: { domain: string; state?: QueueItemState }, page: PageQuery, now: number): Promise<Page<WaitingItem>>;
  retry(workspaceId: string, f: { domain?: string; emailId?: string }, now: number): Promise<RetryOutcome>;
  /** Since when the domain is held. */
  hold(workspaceId: string, domain: string, now: number): Promise<number>;
  release(workspaceId: string, domain: string, now: number): Promise<{ heldAt: number; rows: number } | undefined>;
  /** Tells the delivery worker that rows fell due now (a resting destination gets its probe). */
  wake(domain?: string): void;
  emailExists(workspaceId: string, emailId: string): Promise<boolean>;
}

export interface LastReply {
  code: number | null;
  text: string;
}

export interface QueueDestination {
  object: 'queue_destination';
  domain: string;
  queued: number;
  deferred: number;
  leased: number;
  lease_ends_at: string | null;
  emails: number;
  held: boolean;
  held_at: string | null;
  oldest_at: string;
  next_attempt_at: string | null;
  last_reply: LastReply | null;
}

export interface QueueItem {
  object: 'queue_item';
  email_id: string;
  domain: string;
  subject: string;
  recipients: string[];
  state: QueueItemState;
  attempts: number;
  next_attempt_at: string | null;
  expires_at: string;
  last_reply: LastReply | null;
  created_at: string;
}

export interface QueueService {
  destinations(workspaceId: string, page: { limit: number; offset: number; cursor(offset: number): string }): Promise<Page<QueueDestination>>;
  items(workspaceId: string, query: { domain: string; state?: QueueItemState }, page: PageQuery): Promise<Page<QueueItem>>;
  retry(workspaceId: string, body: RequestBody<'retryQueue'>): Promise<QueueRetryResult>;
  hold(workspaceId: string, domain: string): Promise<QueueDestinationHold>;
  release(workspaceId: string, domain: string): Promise<QueueDestinationHold>;
}

export interface QueueRetryResult {
  object: 'queue_retry';
  retried: number;
  /** Rows under a lease, left alone, and when the last lease ends. */
  leased: number;
  lease_ends_at: string | null;
}

export interface QueueDestinationHold {
  object: 'queue_hold';
  domain: string;
  held: boolean;
  held_at: string | null;
}

/** "451 4.7.1 Try later" as its code and text; a reply without a code (a connection that failed) has none. */
function lastReplyOf(text: string | null): LastReply | null {
  if (text === null) return null;
  const m = /^([2-5]\d\d)[ -]/.exec(text);
  return { code: m ? Number(m[1]) : null, text };
}

function checkDomain(input: string): string {
  const parsed = normaliseDomainName(input);
  if (!parsed.ok) throw new AppError('validation_error', `'${input}' is not a domain name: ${parsed.reason}`, { param: 'domain' });
  return parsed.name;
}

export function queueService(deps: { clock: Clock; queue: QueuePort }): QueueService {
  const { clock, queue } = deps;
  return {
    async destinations(ws, page) {
      const all = await queue.summaries(ws, clock.now());
      const slice = all.slice(page.offset, page.offset + page.limit);
      const more = page.offset + page.limit < all.length;
      return {
        data: slice.map((s) => ({
          object: 'queue_destination', domain: s.domain, queued: s.queuedRecipients, deferred: s.deferredRecipients,
          leased: s.leasedRecipients, lease_ends_at: s.leaseEndsAt === null ? null : toIso(s.leaseEndsAt), emails: s.emails,
          held: s.heldAt !== null, held_at: s.heldAt === null ? null : toIso(s.heldAt), oldest_at: toIso(s.oldestAt),
          // A held destination has no next attempt until it is released.
          next_attempt_at: s.heldAt === null ? toIso(s.nextAttemptAt) : null, last_reply: lastReplyOf(s.lastReply),
        })),
        has_more: more,
        ...(more && { next_cursor: page.cursor(page.offset + page.limit) }),
      };
    },

    async items(ws, q, page) {
      const domain = checkDomain(q.domain);
      const found = await queue.items(ws, { domain, ...(q.state !== undefined && { state: q.state }) }, page, clock.now());
      return {
        ...found,
        data: found.data.map((i) => ({
          object: 'queue_item', email_id: i.emailId, domain: i.domain, subject: i.subject, recipients: i.recipients, state: i.state,
          attempts: i.attempts, next_attempt_at: i.state === 'held' ? null : toIso(i.nextAttemptAt), expires_at: toIso(i.expiresAt),
          last_reply: lastReplyOf(i.lastReply), created_at: toIso(i.createdAt),
        })),
      };
    },

    async retry(ws, body) {
      const domain = body.domain === undefined ? undefined : checkDomain(body.domain);
      if (body.email_id !== undefined && !(await queue.emailExists(ws, body.email_id))) throw notFound('email', body.email_id);
      const done = await queue.retry(ws, { ...(domain !== undefined && { domain }), ...(body.email_id !== undefined && { emailId: body.email_id }) }, clock.now());
      queue.wake(domain);
      return { object: 'queue_retry', retried: done.retried, leased: done.leased, lease_ends_at: done.leaseEndsAt === null ? null : toIso(done.leaseEndsAt) };
    },

    async hold(ws, input) {
      const domain = checkDomain(input);
      const heldAt = await queue.hold(ws, domain, clock.now());
      return { object: 'queue_hold', domain, held: true, held_at: toIso(heldAt) };
    },

    async release(ws, input) {
      const domain = checkDomain(input);
      const released = await queue.release(ws, domain, clock.now());
      if (!released) throw new AppError('invalid_state', `Mail to ${domain} is not held.`, { param: 'domain' });
      queue.wake(domain);
      return { object: 'queue_hold', domain, held: false, held_at: null };
    },
  };
}
