import type { AppError } from '../core/errors.js';
import type { SendingDomain } from '../domains/index.js';

// What the emails area asks of others in its own terms, as ports the
// composition root wires: the HTML rewriter of tracking and the templates'
// rendering. The sending domains and the suppression list are the domains'
// and suppressions' own ports (their index.ts).

/**
 * Rewrites an email's HTML as it is built for delivery (open and click
 * tracking): given the domain, so it can follow the domain's settings; it
 * must give the same result every time it is called for the same email, as a
 * message is built again on each attempt and for each destination domain.
 */
export type HtmlRewriter = (r: { workspaceId: string; emailId: string; html: string; domain: SendingDomain }) => Promise<string>;

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
  /**
   * The id of the template an id or alias names, for filtering emails: an
   * alias only while a template of the workspace holds it, an id as given
   * (the emails of a deleted template are still found by its id).
   */
  templateId(workspaceId: string, idOrAlias: string): Promise<string | undefined>;
}
