import type { Tx } from '../store/db.js';

// What the emails area needs from other areas, as narrow ports the
// composition root wires: the sending domains (domains area) and the
// suppression list (audience area).

export interface SenderDomain {
  id: string;
  name: string;
  status: 'unverified' | 'verifying' | 'active';
  /** The bounce subdomain the per-message return-path (MAIL FROM) lives on. */
  returnPathDomain: string;
  dkim: Array<{ selector: string; algorithm: 'rsa' | 'ed25519'; privateKeyPem: string }>;
  /** Tracking settings, passed on to the HTML rewriter. */
  openTracking?: boolean;
  clickTracking?: boolean;
  /** The verified tracking host of the domain, if any. */
  trackingHost?: string | null;
}

/**
 * Rewrites an email's HTML as it is built for delivery (open and click
 * tracking): given the domain, so it can follow the domain's settings; it
 * must give the same result every time it is called for the same email, as a
 * message is built again on each attempt and for each destination domain.
 */
export type HtmlRewriter = (r: { workspaceId: string; emailId: string; html: string; domain: SenderDomain }) => Promise<string>;

export interface SendersPort {
  /** The workspace's domain of that name (ASCII, lower case), if it has one. */
  find(workspaceId: string, domainName: string): Promise<SenderDomain | undefined>;
}

export interface SuppressionsPort {
  /** The suppressed ones among `addresses` (lower-cased), keyed by address, with the reason. */
  check(workspaceId: string, addresses: string[]): Promise<Map<string, string>>;
  /** Inside the transaction that records the bounce or complaint. */
  addFromBounce(tx: Tx, workspaceId: string, address: string, reason: 'hard_bounce' | 'complaint'): Promise<void>;
}
