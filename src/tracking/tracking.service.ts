import type { Logger } from 'pino';
import { createHash } from 'node:crypto';
import type { Clock } from '../core/clock.js';
import type { Store } from '../store/db.js';
import { appendEvent } from '../events/index.js';
import { instrumentHtml } from './tracking.html.js';
import { classifyClick, classifyOpen } from './machine-opens.js';
import { signToken, verifyToken } from './tracking.tokens.js';
import { bumpCount, findLink, findTrackedEmail, insertLinks } from './tracking.repo.js';

export interface InstrumentRequest {
  workspaceId: string;
  emailId: string;
  html: string;
  openTracking: boolean;
  clickTracking: boolean;
  /** https://track.example.com or MAILROOM_PUBLIC_URL: where /t/ is served. */
  baseUrl: string;
  /** URL prefixes never rewritten (our unsubscribe pages). */
  keepPrefixes?: string[];
}

export interface Visit {
  ip: string;
  userAgent: string;
}

export interface TrackingService {
  /**
   * Rewrites the HTML of an email and stores its links. Link ids derive from
   * the email and the URL, so building the message again (a retry, another
   * destination domain) reuses the same rows and tokens.
   */
  instrument(r: InstrumentRequest): Promise<string>;
  /**
   * Records an open; false when the token is not genuine. A genuine one of
   * an email no longer kept (see MAILROOM_EMAIL_RETENTION_DAYS) is true,
   * counted nowhere.
   */
  recordOpen(token: string, visit: Visit): Promise<boolean>;
  /**
   * Returns where to send the visitor: the link's URL; null when the token
   * is genuine but its link is no longer kept (its email was deleted after
   * the retention period); undefined when the token is not genuine. Records
   * the click unless `record` is false (HEAD requests).
   */
  recordClick(token: string, visit: Visit, record?: boolean): Promise<string | null | undefined>;
}

const ID_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

function linkId(emailId: string, url: string): string {
  const digest = createHash('sha256').update(`${emailId}\n${url}`).digest();
  let id = 'lnk_';
  for (let i = 0; i < 26; i++) id += ID_ALPHABET[digest[i] & 31];
  return id;
}

const recipientsOf = (toList: string): string => (JSON.parse(toList) as Array<string | { address: string }>)
  .map((r) => (typeof r === 'string' ? r : r.address)).join(', ');

export function trackingService(deps: { store: Store; clock: Clock; key: Buffer; logger: Logger }): TrackingService {
  const { store, clock, key } = deps;

  return {
    async instrument(r) {
      if (!r.openTracking && !r.clickTracking) return r.html;
      const base = r.baseUrl.replace(/\/+$/, '');
      const links: Array<{ id: string; workspace_id: string; email_id: string; url: string; created_at: number }> = [];
      const byUrl = new Map<string, string>();
      const html = instrumentHtml(r.html, {
        pixelUrl: r.openTracking ? `${base}/t/o/${signToken(key, 'open', r.emailId)}` : undefined,
        keepPrefixes: r.keepPrefixes,
        linkFor: r.clickTracking ? (url) => {
          let id = byUrl.get(url);
          if (!id) {
            id = linkId(r.emailId, url);
            byUrl.set(url, id);
            links.push({ id, workspace_id: r.workspaceId, email_id: r.emailId, url, created_at: clock.now() });
          }
          return `${base}/t/c/${signToken(key, 'click', id)}`;
        } : undefined,
      });
      if (links.length > 0) await store.write((tx) => insertLinks(tx, links));
      return html;
    },

    async recordOpen(token, visit) {
      const emailId = verifyToken(key, 'open', token);
      if (!emailId) return false;
      const machine = classifyOpen(visit.userAgent);
      return store.write(async (tx) => {
        const email = await findTrackedEmail(tx, emailId);
        if (!email) return true;
        const openCount = await bumpCount(tx, emailId, 'opens');
        await appendEvent(tx, {
          workspaceId: email.workspace_id, emailId, domainId: email.domain_id, kind: 'opened',
          from: email.from_address, subject: email.subject, now: clock.now(),
          data: { to: recipientsOf(email.to_list), ip_address: visit.ip, user_agent: visit.userAgent, open_count: openCount,
            machine: machine !== undefined, ...(machine && { machine_reason: machine }) },
        });
        return true;
      });
    },

    async recordClick(token, visit, record = true) {
      const linkId = verifyToken(key, 'click', token);
      if (!linkId) return undefined;
      const link = await findLink(store.db, linkId);
      if (!link) return null;
      if (!record) return link.url;
      await store.write(async (tx) => {
        const email = await findTrackedEmail(tx, link.email_id);
        if (!email) return;
        const now = clock.now();
        const machine = classifyClick(visit.userAgent, email.sent_at === null ? undefined : now - email.sent_at);
        const clickCount = await bumpCount(tx, email.id, 'clicks');
        await appendEvent(tx, {
          workspaceId: email.workspace_id, emailId: email.id, domainId: email.domain_id, kind: 'clicked',
          from: email.from_address, subject: email.subject, now,
          data: { to: recipientsOf(email.to_list), url: link.url, ip_address: visit.ip, user_agent: visit.userAgent,
            click_count: clickCount, machine: machine !== undefined, ...(machine && { machine_reason: machine }) },
        });
      });
      return link.url;
    },
  };
}
