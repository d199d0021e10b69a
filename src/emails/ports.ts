import type { Tx } from '../store/db.js';
import type { AppError } from '../core/errors.js';

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
  /** Whether the domain's last DNS check found its DMARC record; unknown when never checked. */
  dmarc?: 'published' | 'missing' | 'unknown';
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

/** The template a send names, as the request gives it. */
export interface TemplateRef {
  /** Id or alias. */
  id: string;
  /** Without it, the published version. */
  version?: number;
  variables?: Record<string, unknown>;
}

export interface TemplateSend {
  template: TemplateRef;
  /** The address of the one `to` recipient, when there is exactly one: its contact fills `contact`. */
  to?: string;
  /** The recipient's unsubscribe link for `unsubscribe_url`, when the email has one recipient. */
  unsubscribeUrl?: string;
}

/** A send's template rendered for its recipient, with the version's defaults. */
export interface RenderedTemplate {
  templateId: string;
  version: number;
  subject: string;
  html: string | null;
  /** The version's text, or text derived from the rendered html. */
  text: string;
  from: string | null;
  replyTo: string[] | null;
}

export interface TemplatesPort {
  /**
   * Renders the template of each send, in order: the content, or the error
   * (422) that send gets. Sends naming the same version share one compiled
   * form, and the whole call one render time budget.
   */
  renderForSends(workspaceId: string, sends: TemplateSend[]): Promise<Array<RenderedTemplate | AppError>>;
  /** The id of the template an id or alias names, if the workspace has it. */
  templateId(workspaceId: string, idOrAlias: string): Promise<string | undefined>;
}
