import type { Logger } from 'pino';
import { characterCount } from '../core/characters.js';
import { AppError, notFound } from '../core/errors.js';
import { escapeHtml } from '../core/html.js';
import { newId } from '../core/ids.js';
import type { Clock } from '../core/clock.js';
import { fitsTextFormat } from '../contract/contract.js';
import type { RequestBody, Schema } from '../contract/operations.js';
import { freeGoneLeases } from '../store/lease.js';
import { appendWorkspaceEvent, type WorkspaceEventType } from '../events/index.js';
import type { Store, Tx } from '../store/db.js';
import type { Page, PageQuery } from '../store/paging.js';
import type { BroadcastStatus, SkipCode } from './broadcasts.tables.js';
import type { AudienceContact, AudienceFilter } from '../contacts/index.js';
import { checkScheduleTime, mailDomain, MAX_CONTENT_BYTES, MAX_SUBJECT_CHARS, parseMailbox, type BroadcastEmailCounts, type BroadcastItem, type BroadcastProgress, type EmailCreateBody, type Sender } from '../emails/index.js';
import type { CompiledContent, ContactFacts, ContentSource } from '../templates/index.js';
import { contactData, emptyFields, RenderOverTime } from '../templates/index.js';
import {
  claimSending, deleteBroadcast, dueBroadcasts, findBroadcast, findBroadcastForUpdate, insertBroadcast, insertSkips, listBroadcasts, listSkips,
  nextBroadcastWork, recordChunk, releaseBroadcast, toFields, transitionBroadcast, updateContent,
  type Audience, type BroadcastContent, type BroadcastSkip, type BroadcastWork, type BroadcastFields, type NewSkip, type StoredBroadcast,
} from './broadcasts.repo.js';

// The rules of broadcasts: a draft a person edits; sending, which fixes the
// audience and turns it into ordinary emails (one per contact) in chunks at
// a pace, each chunk in the transaction that records how far it got; and
// pausing, resuming and cancelling on the way.
//
//   draft --(send)--> scheduled --(due)--> sending --(last chunk)--> sent
//   sending --(pause, or the quota used up)--> paused --(resume, or the quota reset)--> sending
//   draft, scheduled, sending, paused --(cancel)--> cancelled

/** What became of a broadcast's emails, as the contract defines it. */
export type BroadcastStats = Schema<'BroadcastStats'>;

export interface Broadcast extends BroadcastFields {
  stats: BroadcastStats;
}

type AudienceInput = Schema<'BroadcastAudienceInput'>;
type BroadcastCreateBody = RequestBody<'createBroadcast'>;
/** A field given as null is cleared; one left out keeps its value. */
type BroadcastUpdateBody = RequestBody<'updateBroadcast'>;

export interface BroadcastRender {
  object: 'broadcast_render';
  contact_id: string;
  to: string;
  subject: string;
  html: string | null;
  text: string;
  /** The contact fields the content writes out with no fallback that this contact lacks or has blank, as `contact.first_name`. */
  empty_fields: string[];
}


export interface BroadcastsService {
  list(workspaceId: string, query: { status?: BroadcastStatus }, page: PageQuery): Promise<Page<Broadcast>>;
  create(workspaceId: string, body: BroadcastCreateBody): Promise<Broadcast>;
  get(workspaceId: string, id: string): Promise<Broadcast>;
  /** The broadcast's contacts that got no email, and why. */
  skipped(workspaceId: string, id: string, page: PageQuery): Promise<Page<BroadcastSkip>>;
  update(workspaceId: string, id: string, body: BroadcastUpdateBody): Promise<Broadcast>;
  remove(workspaceId: string, id: string): Promise<void>;
  audience(workspaceId: string, id: string, body: RequestBody<'previewBroadcastAudience'>): Promise<{ object: 'broadcast_audience'; count: number; data: unknown[] }>;
  preview(workspaceId: string, id: string, contactId: string): Promise<BroadcastRender>;
  test(sender: Sender, id: string, to: string[]): Promise<{ data: Array<{ to: string; email_id: string }> }>;
  send(sender: Sender, id: string, body: RequestBody<'sendBroadcast'>): Promise<Broadcast>;
  pause(workspaceId: string, id: string): Promise<Broadcast>;
  resume(workspaceId: string, id: string): Promise<Broadcast>;
  cancel(workspaceId: string, id: string): Promise<Broadcast>;
  /** Starts scheduled broadcasts whose time has come and resumes those whose quota has reset; returns how many. */
  startDue(): Promise<number>;
  /** Makes the next chunk of one sending broadcast, as `owner`; false when none was due. */
  sendNextChunk(owner: string): Promise<boolean>;
  /** When a broadcast is next due to start or resume, and when a chunk is next due, as far as the broadcasts say now. */
  nextWork(): Promise<BroadcastWork>;
  /** Frees the broadcasts that senders of this host, now gone, held when they stopped (a crash); returns how many. */
  releaseGoneLeases(): Promise<number>;
}

export interface BroadcastsDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  emails: {
    create(sender: Sender, body: EmailCreateBody): Promise<{ id: string }>;
    sendForBroadcast(sender: Sender, broadcastId: string, items: BroadcastItem[], progress: BroadcastProgress):
      Promise<{ made: number; refused: Array<{ contactId: string; error: AppError }> }>;
    broadcastCounts(broadcastId: string): Promise<BroadcastEmailCounts>;
    quotaLeft(sender: Sender): Promise<number>;
    checkMessage(sender: Sender, body: EmailCreateBody): void;
    cancelBroadcastEmails(workspaceId: string, broadcastId: string): Promise<number>;
  };
  templates: {
    checkSources(source: { subject: string | null; html: string | null; text: string | null }): void;
    compileContent(workspaceId: string, source: ContentSource): Promise<CompiledContent>;
    exists(workspaceId: string, idOrAlias: string, tx?: Tx): Promise<boolean>;
  };
  audience: {
    page(workspaceId: string, filter: AudienceFilter, p: { afterPos: number; maxPos?: number; limit: number }): Promise<AudienceContact[]>;
    count(workspaceId: string, filter: AudienceFilter, maxPos?: number): Promise<number>;
    lastPos(workspaceId: string): Promise<number>;
  };
  contacts: {
    byId(workspaceId: string, id: string): Promise<ContactFacts | undefined>;
    /** By address as contacts normalise it (trimmed, lower-cased). */
    byEmails(workspaceId: string, emails: string[]): Promise<Map<string, ContactFacts>>;
  };
  /** Which of these tag ids the workspace has; in a transaction, they cannot be removed until it ends. */
  existingTags(workspaceId: string, ids: string[], tx?: Tx): Promise<Set<string>>;
  /** Whether a live key of the workspace may send from this domain: an active domain of its own (any, in sink mode). */
  maySendFrom(workspaceId: string, domainName: string): Promise<boolean>;
  planOf(workspaceId: string): Promise<string>;
  unsubscribeUrl(workspaceId: string, address: string): string;
}

/** The address a broadcast's content is checked with when it has no contact to check it for. */
const SAMPLE_ADDRESS = 'sample@example.com';

/** Contacts a chunk turns into emails at most: one transaction each. */
export const CHUNK_SIZE = 200;
/**
 * Characters of html and text a chunk's messages hold at most (past its
 * first message): the transaction writing them runs on the event loop, and
 * every request waits meanwhile, so big newsletters go in smaller chunks.
 */
export const CHUNK_CHARS = 2_000_000;
/** Contacts a chunk renders first, to see how big its messages are. */
const MEASURED_RENDERS = 8;
/** How long a sender holds a broadcast while it makes a chunk. */
const CHUNK_LEASE_MS = 60_000;
/** Chunks of a broadcast sent as fast as they can be made that one claim makes, one after another, before others get a turn. */
const CHUNKS_PER_CLAIM = 8;
/** After a chunk that failed for a passing reason, the next try waits this long. */
const RETRY_CHUNK_MS = 5_000;
/** Renders of one contact's message a chunk tries, each out of time, before it stops. */
const RENDER_TRIES = 3;
const AUDIENCE_SAMPLE = 25;

const EDITABLE: BroadcastStatus[] = ['draft', 'scheduled'];

/** A broadcast.* event for webhooks, in the transaction of the move it reports. */
const broadcastEvent = (tx: Tx, b: Pick<StoredBroadcast, 'id' | 'workspaceId' | 'name'>, type: Extract<WorkspaceEventType, `broadcast.${string}`>,
  data: Record<string, unknown>, now: number) =>
  appendWorkspaceEvent(tx, { workspaceId: b.workspaceId, type, now, data: { broadcast_id: b.id, name: b.name, ...data } });

const asList = (v: string | string[] | undefined | null): string[] => (v === undefined || v === null ? [] : Array.isArray(v) ? v : [v]);

function audienceOf(input: AudienceInput | undefined): Audience {
  return {
    tag_ids: input?.tag_ids ?? [], exclude_tag_ids: input?.exclude_tag_ids ?? [],
    engagement_tiers: input?.engagement_tiers ?? null,
  };
}

const MIB = 1024 * 1024;

/**
 * The skip of a contact whose email the email path refused, said for a
 * person: what is wrong with this contact's message and what to change. Of
 * the fields an email is refused for, the address, the subject and the size
 * are the contact's own (its address, its data rendered); the rest are the
 * broadcast's, the same for every contact, so such a refusal stops the
 * chunk with a 422 that pauses the broadcast rather than skipping everyone.
 */
function refusal(contact: { id: string; email: string }, body: EmailCreateBody, err: AppError): NewSkip {
  const skip = (code: SkipCode, message: string): NewSkip => ({ contactId: contact.id, email: contact.email, code, message });
  switch (err.param?.split('.')[0]) {
    case 'to': {
      // Contacts are checked as sending checks them now; one saved before may have a domain with no ASCII (IDNA) form.
      const why = mailDomain(contact.email) === undefined
        ? 'its domain has no valid ASCII form (IDNA: labels of letters, digits and hyphens, at most 63 characters each once converted)'
        : 'it is not a valid email address';
      return skip('invalid_address', `No email can be sent to ${contact.email}: ${why}. Correct the contact's address.`);
    }
    case 'subject': {
      const refused = [...(body.subject ?? '')].find((ch) => !fitsTextFormat('header-value', ch));
      const which = refused === undefined ? '' : ` U+${refused.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
      return skip('invalid_subject', `The subject rendered for this contact holds the control character${which}, which an email header cannot carry. `
        + "Change the subject, or the contact's data it shows, so that it renders without one.");
    }
    case 'attachments': {
      // Rounded up, so that a message just over the limit does not read as at it.
      const mib = Math.ceil((Buffer.byteLength(body.html ?? '') + Buffer.byteLength(body.text ?? '')) / (MIB / 10)) / 10;
      return skip('message_too_large', `The message rendered for this contact is ${mib.toFixed(1)} MiB of html and text, over the `
        + `${MAX_CONTENT_BYTES / MIB} MiB an email can have. Shorten the content, or the contact's data it repeats.`);
    }
    default:
      throw new AppError(err.code, `The email for contact ${contact.id} (${contact.email}) was refused for a reason every contact shares: ${err.message}`,
        { status: 422, ...(err.param !== undefined && { param: err.param }) });
  }
}

const filterOf = (a: Audience): AudienceFilter => ({ tagIds: a.tag_ids, excludeTagIds: a.exclude_tag_ids, engagementTiers: a.engagement_tiers });

/** The start of the next UTC month, when a monthly quota resets. */
function nextUtcMonth(now: number): number {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** Puts the preview text at the top of the body, hidden, where mail clients show it beside the subject. */
function withPreviewText(html: string, previewText: string): string {
  const hidden = `<div style="display:none;max-height:0;overflow:hidden;mso-hide:all">${escapeHtml(previewText)}</div>`;
  const body = /<body[^>]*>/i.exec(html);
  return body ? html.slice(0, body.index + body[0].length) + hidden + html.slice(body.index + body[0].length) : hidden + html;
}

/** A visible unsubscribe link, added when the content has none (Gmail's and Yahoo's bulk-sender rules). */
function withUnsubscribeFooter(part: { html: string | null; text: string }, url: string): { html: string | null; text: string } {
  const html = part.html === null || part.html.includes(url) ? part.html
    : (() => {
      const footer = `<p style="font-size:12px;color:#6b7280;margin-top:24px">Don't want these emails? <a href="${escapeHtml(url)}">Unsubscribe</a>.</p>`;
      const end = part.html.search(/<\/body>/i);
      return end >= 0 ? part.html.slice(0, end) + footer + part.html.slice(end) : part.html + footer;
    })();
  const text = part.text.includes(url) ? part.text : `${part.text.replace(/\s+$/, '')}\n\n--\nUnsubscribe: ${url}\n`;
  return { html, text };
}

export function broadcastsService(deps: BroadcastsDeps): BroadcastsService {
  const { store, clock, logger } = deps;

  async function mustFind(db: Store['db'] | Tx, ws: string, id: string): Promise<StoredBroadcast> {
    const found = await findBroadcast(db, ws, id);
    if (!found) throw notFound('broadcast', id);
    return found;
  }

  /** The broadcast, to change it: locked until the transaction ends, so the state checked is the state changed. */
  async function mustFindForUpdate(tx: Tx, ws: string, id: string): Promise<StoredBroadcast> {
    const found = await findBroadcastForUpdate(tx, ws, id);
    if (!found) throw notFound('broadcast', id);
    return found;
  }

  async function withStats(b: StoredBroadcast): Promise<Broadcast> {
    const counts = await deps.emails.broadcastCounts(b.id);
    const audienceSize = b.audienceSize ?? (b.status === 'draft' || b.status === 'scheduled' || b.status === 'cancelled'
      ? await deps.audience.count(b.workspaceId, filterOf(b.audience)) : 0);
    return {
      ...toFields(b),
      stats: { audience_size: audienceSize, ...counts },
    };
  }

  /** Checks what a person gave; throws 422 naming the field. */
  async function checkContent(ws: string, c: BroadcastContent): Promise<void> {
    if (c.name.trim().length === 0) throw new AppError('validation_error', 'A broadcast name cannot be blank.', { param: 'name' });
    if (c.from !== null) {
      const parsed = parseMailbox(c.from);
      if (!parsed.ok) throw new AppError('validation_error', `'from' ${parsed.reason}.`, { param: 'from' });
    }
    c.replyTo.forEach((entry, i) => {
      const parsed = parseMailbox(entry);
      if (!parsed.ok) throw new AppError('validation_error', `'reply_to.${i}' ${parsed.reason}.`, { param: `reply_to.${i}` });
    });
    if (c.template !== null && (c.html !== null || c.text !== null)) {
      throw new AppError('validation_error', "Give either 'template' or 'html'/'text', not both.", { param: 'template' });
    }
    if (c.template !== null && !(await deps.templates.exists(ws, c.template.id))) {
      throw new AppError('validation_error', `No template with id or alias '${c.template.id}' in this workspace.`, { param: 'template.id' });
    }
    if (c.template === null) deps.templates.checkSources({ subject: c.subject, html: c.html, text: c.text });
    await checkAudience(ws, c.audience);
  }

  async function checkAudience(ws: string, audience: Audience, tx?: Tx): Promise<void> {
    for (const key of ['tag_ids', 'exclude_tag_ids'] as const) {
      const ids = audience[key];
      const known = await deps.existingTags(ws, ids, tx);
      const missing = ids.findIndex((id) => !known.has(id));
      if (missing >= 0) throw new AppError('validation_error', `No tag '${ids[missing]}' in this workspace.`, { param: `audience.${key}.${missing}` });
    }
  }

  /**
   * What sending fixes as it is now, read before the write that starts it:
   * the audience (contacts up to the newest one, and how many they are) and
   * the template, by id and the version published now, so that a publish or
   * an alias moved meanwhile changes nothing of what the rest of the
   * audience gets.
   */
  async function fixAtStart(b: StoredBroadcast, now: number) {
    const maxPos = await deps.audience.lastPos(b.workspaceId);
    const size = await deps.audience.count(b.workspaceId, filterOf(b.audience), maxPos);
    // Content that no longer compiles (its alias moved since it was scheduled) is left as it is: the first chunk pauses the broadcast, saying why.
    const template = b.template === null ? null : await compile(b).catch((err: unknown) => {
      if (err instanceof AppError && err.status === 422) return null;
      throw err;
    });
    return {
      audience_max_pos: maxPos, audience_size: size, expanded_pos: 0, started_at: now, next_chunk_at: 0, status_reason: null,
      ...(template !== null && { template_id: template.templateId, template_version: template.version }),
    };
  }

  /** The content, compiled; a broadcast that cannot go out yet is 422 broadcast_incomplete. */
  async function compile(b: StoredBroadcast): Promise<CompiledContent> {
    if (b.template === null && b.html === null && b.text === null) {
      throw new AppError('broadcast_incomplete', 'The broadcast has no content: give html, text or a template.', { param: 'html' });
    }
    if (b.template === null && b.subject === null) {
      throw new AppError('broadcast_incomplete', 'The broadcast has no subject.', { param: 'subject' });
    }
    return deps.templates.compileContent(b.workspaceId, {
      ...(b.template !== null && { template: { id: b.template.id, ...(b.template.version !== null && { version: b.template.version }) } }),
      subject: b.subject, html: b.html, text: b.text,
    });
  }

  /** One contact's email: rendered for it, with the preview text and, when the content has none, an unsubscribe link. */
  async function messageFor(b: StoredBroadcast, content: CompiledContent, contact: ContactFacts | undefined, to: string, untilMs?: number) {
    const url = deps.unsubscribeUrl(b.workspaceId, to);
    const rendered = await content.render({ contact: contactData(contact), unsubscribe_url: url }, untilMs);
    const html = rendered.html !== null && b.previewText !== null ? withPreviewText(rendered.html, b.previewText) : rendered.html;
    return { subject: rendered.subject, ...withUnsubscribeFooter({ html, text: rendered.text }, url) };
  }

  /**
   * A contact's message in a chunk. A render whose time runs out is tried
   * again: the time may have gone to the process not running (a loaded
   * machine, a pause of it), not to the render. Out of time on every try,
   * the chunk stops with a 422 that pauses the broadcast for a person to
   * look: a contact is never left out for want of time.
   */
  async function chunkMessage(b: StoredBroadcast, content: CompiledContent, c: AudienceContact) {
    for (let tries = 1; ; tries++) {
      try {
        return await messageFor(b, content, c, c.email);
      } catch (err) {
        if (!(err instanceof RenderOverTime)) throw err;
        if (tries === RENDER_TRIES) {
          throw new RenderOverTime('template_render_failed', `The message for contact ${c.id} (${c.email}) ran out of render time on each of `
            + `${RENDER_TRIES} tries: ${err.message} Resume the broadcast to try again.`, { param: err.param, details: err.details });
        }
      }
    }
  }

  function fromOf(b: StoredBroadcast, content: CompiledContent): string {
    const from = b.from ?? content.from;
    if (from === null) throw new AppError('broadcast_incomplete', "The broadcast has no 'from' address.", { param: 'from' });
    return from;
  }

  function emailBody(b: StoredBroadcast, content: CompiledContent, from: string, to: string, message: Awaited<ReturnType<typeof messageFor>>) {
    const replyTo = b.replyTo.length > 0 ? b.replyTo : content.replyTo ?? [];
    return {
      from, to, subject: message.subject, ...(message.html !== null && { html: message.html }), text: message.text,
      ...(replyTo.length > 0 && { reply_to: replyTo }), unsubscribe: true,
    };
  }

  /**
   * Throws the 422 that keeps `b` from going out as it is: no from, a from
   * domain a live key may not send from, no content or a subject, content
   * that does not render for a contact (a sample of the audience, or an empty
   * one), or renders into an email that would be refused: what the content
   * alone makes wrong fails here once, rather than skipping every contact.
   */
  async function checkSendable(sender: Sender, b: StoredBroadcast): Promise<void> {
    const content = await compile(b);
    const from = fromOf(b, content);
    const parsed = parseMailbox(from);
    if (!parsed.ok) throw new AppError('validation_error', `'from' ${parsed.reason}.`, { param: 'from' });
    if (sender.mode === 'live' && !(await deps.maySendFrom(b.workspaceId, mailDomain(parsed.mailbox.email) ?? ''))) {
      throw new AppError('domain_not_verified', `The domain of '${from}' is not an active domain of this workspace; verify it first, or send with a test key.`, { param: 'from' });
    }
    const [sample] = await deps.audience.page(b.workspaceId, filterOf(b.audience), { afterPos: 0, limit: 1 });
    const message = await messageFor(b, content, sample && { id: sample.id, email: sample.email, name: sample.name }, sample?.email ?? SAMPLE_ADDRESS);
    try {
      // The address is the contact's, not the content's.
      deps.emails.checkMessage(sender, emailBody(b, content, from, SAMPLE_ADDRESS, message));
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      throw new AppError(err.code, `The message this content makes would be refused: ${err.message}`, { ...(err.param !== undefined && { param: err.param }) });
    }
  }

  /** A broadcast paused with the reason; a quota pause says when it goes on by itself. */
  async function pauseFor(b: StoredBroadcast, owner: string, reason: string, resumeAt: number | null): Promise<void> {
    const now = clock.now();
    await store.write(async (tx) => {
      if (await transitionBroadcast(tx, b.id, ['sending'], { status: 'paused', status_reason: reason, resume_at: resumeAt }, now)) {
        await broadcastEvent(tx, b, 'broadcast.paused', { reason, resume_at: resumeAt === null ? null : new Date(resumeAt).toISOString() }, now);
      }
      await releaseBroadcast(tx, b.id, owner, now);
    });
    logger.warn({ broadcast_id: b.id, workspace_id: b.workspaceId, reason }, 'broadcast paused');
  }

  async function senderOf(b: StoredBroadcast): Promise<Sender> {
    return { workspaceId: b.workspaceId, plan: await deps.planOf(b.workspaceId), mode: b.mode ?? 'live' };
  }

  /**
   * Reads and renders the next chunk of a claimed broadcast: the contacts
   * after `b`'s position, each a message, or a skip when its message does not
   * render. `quotaLeft`, when known, is the workspace's quota left once the
   * chunk before this one is written.
   */
  async function renderChunk(b: StoredBroadcast, mayKeepLease: boolean, quotaLeft?: number): Promise<RenderedChunk> {
    const startedAt = clock.now();
    const rate = b.sendRatePerMinute;
    const sender = await senderOf(b);
    // A chunk takes its quota all at once: no bigger than what is left, so the quota is used to the last email.
    const quota = quotaLeft ?? await deps.emails.quotaLeft(sender);
    const limit = Math.min(rate === null ? CHUNK_SIZE : Math.max(1, Math.min(CHUNK_SIZE, Math.ceil(rate / 60))), Math.max(1, quota));
    const page = await deps.audience.page(b.workspaceId, filterOf(b.audience), { afterPos: b.expandedPos, maxPos: b.audienceMaxPos ?? 0, limit });
    const chunk = (taken: number, items: BroadcastItem[], unrendered: NewSkip[]): RenderedChunk => {
      const last = taken === page.length && page.length < limit;
      return {
        b, startedAt, sender, quotaLeft: quota, contacts: page.slice(0, taken), items, unrendered, last,
        endPos: taken > 0 ? page[taken - 1].pos : b.expandedPos, keepsLease: mayKeepLease && rate === null && !last,
      };
    };
    if (page.length === 0) return chunk(0, [], []);
    const content = await compile(b);
    const from = fromOf(b, content);
    const render = async (c: AudienceContact): Promise<BroadcastItem | NewSkip> => {
      try {
        const message = await chunkMessage(b, content, c);
        const subjectChars = characterCount(message.subject);
        if (subjectChars > MAX_SUBJECT_CHARS) {
          return { contactId: c.id, email: c.email, code: 'invalid_subject', message: `The subject rendered for this contact is `
            + `${subjectChars.toLocaleString('en-US')} characters, over the ${MAX_SUBJECT_CHARS} an email's subject can have. Shorten the subject, or the contact's data it shows.` };
        }
        return { contactId: c.id, body: emailBody(b, content, from, c.email, message) };
      } catch (err) {
        if (!(err instanceof AppError) || err instanceof RenderOverTime) throw err;
        const message = `${err.message} Change the content, or the contact's data it reads, so that it renders.`;
        return { contactId: c.id, email: c.email, code: 'render_failed', message };
      }
    };
    // Rendered side by side (a text part derived from long html is made on a
    // thread meanwhile): a few first, then as many as the chunk has room for
    // at their size, so that few renders are made for nothing.
    const items: BroadcastItem[] = [];
    const unrendered: NewSkip[] = [];
    let taken = 0;
    let chars = 0;
    let full = false;
    let next = MEASURED_RENDERS;
    while (taken < page.length && !full) {
      const rendered = await Promise.all(page.slice(taken, taken + next).map(render));
      for (const made of rendered) {
        const size = 'body' in made ? (made.body.html?.length ?? 0) + (made.body.text?.length ?? 0) : 0;
        if (taken > 0 && chars + size > CHUNK_CHARS) {
          full = true;
          break;
        }
        chars += size;
        taken++;
        if ('body' in made) items.push(made);
        else unrendered.push(made);
      }
      next = chars === 0 ? page.length : Math.max(1, Math.floor(((CHUNK_CHARS - chars) * taken) / chars));
    }
    return chunk(taken, items, unrendered);
  }

  /**
   * Writes a rendered chunk: its emails, its skips and the broadcast's new
   * position, in one transaction. A chunk that keeps the lease (a broadcast
   * sent as fast as its emails can be made) renews it in that transaction and
   * returns the broadcast as the chunk left it, to go on with, with no
   * claim's commit to wait for in between.
   */
  async function writeChunk(chunk: RenderedChunk, owner: string): Promise<StoredBroadcast | undefined> {
    const { b, contacts, last } = chunk;
    const rate = b.sendRatePerMinute;
    /** What recording the chunk writes, in the transaction of its emails. */
    const progress: BroadcastProgress = async (tx, made, refused) => {
      const nextChunkAt = rate === null ? chunk.startedAt : chunk.startedAt + Math.ceil((contacts.length * 60_000) / rate);
      const at = clock.now();
      const keepLeaseUntil = chunk.keepsLease ? at + CHUNK_LEASE_MS : undefined;
      if (!(await recordChunk(tx, b.id, owner, { expandedPos: chunk.endPos, made, nextChunkAt, done: last, now: at, keepLeaseUntil }))) {
        // Paused, cancelled or taken over since the claim: none of this chunk is made.
        throw new ChunkAbandoned();
      }
      const refusedSkips = refused.map((r) => refusal(contacts.find((c) => c.id === r.contactId)!, chunk.items.find((i) => i.contactId === r.contactId)!.body, r.error));
      await insertSkips(tx, b, [...chunk.unrendered, ...refusedSkips], at);
      if (last) await broadcastEvent(tx, b, 'broadcast.sent', { emails_created: b.emailsCreated + made }, at);
    };
    /** A chunk whose broadcast stopped sending under it is rolled back, and the lease given up. */
    const unlessAbandoned = async (err: unknown): Promise<undefined> => {
      if (!(err instanceof ChunkAbandoned)) throw err;
      await store.write((tx) => releaseBroadcast(tx, b.id, owner, clock.now()));
      return undefined;
    };
    const result = contacts.length === 0
      ? await store.write((tx) => progress(tx, 0, [])).then(() => ({ made: 0, refused: [] }), unlessAbandoned)
      : await deps.emails.sendForBroadcast(chunk.sender, b.id, chunk.items, progress).catch(unlessAbandoned);
    if (!result) return undefined;
    if (chunk.unrendered.length > 0 || result.refused.length > 0) {
      logger.warn({ broadcast_id: b.id, unrendered: chunk.unrendered.length, refused: result.refused.length }, 'broadcast: contacts skipped, listed in its skips');
    }
    if (last) logger.info({ broadcast_id: b.id, emails: b.emailsCreated + result.made }, 'broadcast sent');
    return chunk.keepsLease ? { ...b, expandedPos: chunk.endPos, emailsCreated: b.emailsCreated + result.made } : undefined;
  }

  /**
   * Makes the chunks of a claimed broadcast, one after another, while it
   * keeps its lease (up to CHUNKS_PER_CLAIM). The next chunk's contacts start
   * where this one's end, whatever its transaction records, so they are read
   * and rendered while this one's emails are written and synced; should this
   * chunk not go on (paused, cancelled, failed), the next is dropped unwritten.
   */
  async function makeChunks(b: StoredBroadcast, owner: string): Promise<void> {
    let chunk = await renderChunk(b, CHUNKS_PER_CLAIM > 1);
    for (let made = 1; ; made++) {
      const writing = writeChunk(chunk, owner);
      const ahead = chunk.keepsLease
        ? renderChunk({ ...chunk.b, expandedPos: chunk.endPos }, made + 1 < CHUNKS_PER_CLAIM, chunk.quotaLeft - chunk.items.length)
        : undefined;
      // Its failure matters only if this chunk goes on; it is awaited then, or let go below.
      ahead?.catch(() => undefined);
      try {
        const held = await writing;
        if (!held || !ahead) return;
        chunk = { ...(await ahead), b: held };
      } finally {
        // Never left running past the claim: what it reads may be gone once this returns.
        await ahead?.catch(() => undefined);
      }
    }
  }

  const service: BroadcastsService = {
    async list(ws, query, page) {
      const found = await listBroadcasts(store.db, ws, query, page);
      return { ...found, data: await Promise.all(found.data.map(withStats)) };
    },

    async create(ws, body) {
      const content: BroadcastContent = {
        name: body.name.trim(), from: body.from?.trim() ?? null, replyTo: asList(body.reply_to), subject: body.subject ?? null,
        previewText: body.preview_text ?? null, html: body.html ?? null, text: body.text ?? null,
        template: body.template ? { id: body.template.id, version: body.template.version ?? null } : null,
        audience: audienceOf(body.audience), sendRatePerMinute: body.send_rate_per_minute ?? null,
      };
      await checkContent(ws, content);
      const now = clock.now();
      const id = newId('bc', now);
      await store.write((tx) => insertBroadcast(tx, { id, workspaceId: ws, content, now }));
      return withStats((await findBroadcast(store.db, ws, id))!);
    },

    async get(ws, id) {
      return withStats(await mustFind(store.db, ws, id));
    },

    async skipped(ws, id, page) {
      await mustFind(store.db, ws, id);
      return listSkips(store.db, ws, id, page);
    },

    async update(ws, id, body) {
      const b = await mustFind(store.db, ws, id);
      if (!EDITABLE.includes(b.status)) {
        throw new AppError('broadcast_not_editable', `Only a draft or scheduled broadcast can change; this one is ${b.status}.`);
      }
      const given = <K extends keyof BroadcastUpdateBody>(k: K) => k in body;
      const givesSources = given('html') || given('text');
      const content: BroadcastContent = {
        name: body.name?.trim() ?? b.name,
        from: given('from') ? body.from?.trim() ?? null : b.from,
        replyTo: given('reply_to') ? asList(body.reply_to) : b.replyTo,
        subject: given('subject') ? body.subject ?? null : b.subject,
        previewText: given('preview_text') ? body.preview_text ?? null : b.previewText,
        // Sources of its own and a template exclude each other: giving one clears the other.
        html: given('html') ? body.html ?? null : given('template') && body.template ? null : b.html,
        text: given('text') ? body.text ?? null : given('template') && body.template ? null : b.text,
        template: given('template') ? (body.template ? { id: body.template.id, version: body.template.version ?? null } : null)
          : givesSources ? null : b.template,
        audience: given('audience') ? audienceOf(body.audience ?? undefined) : b.audience,
        sendRatePerMinute: given('send_rate_per_minute') ? body.send_rate_per_minute ?? null : b.sendRatePerMinute,
      };
      await checkContent(ws, content);
      // A scheduled broadcast passed sending's checks, and an edit keeps it one that can go out.
      if (b.status === 'scheduled') {
        await checkSendable({ workspaceId: ws, plan: await deps.planOf(ws), mode: b.mode ?? 'live' }, { ...b, ...content });
      }
      await store.write(async (tx) => {
        const now = clock.now();
        // A send that started meanwhile wins: nothing changes under it.
        const current = await mustFindForUpdate(tx, ws, id);
        if (!EDITABLE.includes(current.status)) {
          throw new AppError('broadcast_not_editable', `Only a draft or scheduled broadcast can change; this one is ${current.status}.`);
        }
        await updateContent(tx, id, content, now);
      });
      return withStats(await mustFind(store.db, ws, id));
    },

    async remove(ws, id) {
      await store.write(async (tx) => {
        const b = await mustFindForUpdate(tx, ws, id);
        if (b.status !== 'draft') {
          throw new AppError('broadcast_not_editable', `Only a draft can be deleted; this one is ${b.status}${b.status === 'scheduled' ? ' (cancel it first)' : ''}.`);
        }
        await deleteBroadcast(tx, id);
      });
    },

    async audience(ws, id, body) {
      const b = await mustFind(store.db, ws, id);
      const started = b.audienceMaxPos !== null;
      if (started && body.audience !== undefined) {
        throw new AppError('broadcast_not_editable', `The audience of a broadcast that has started sending is fixed; this one is ${b.status}.`, { param: 'audience' });
      }
      const audience = body.audience !== undefined ? audienceOf(body.audience) : b.audience;
      if (body.audience !== undefined) await checkAudience(ws, audience);
      const filter = filterOf(audience);
      const maxPos = b.audienceMaxPos ?? undefined;
      const [count, sample] = await Promise.all([
        started ? Promise.resolve(b.audienceSize ?? 0) : deps.audience.count(ws, filter, maxPos),
        deps.audience.page(ws, filter, { afterPos: 0, ...(maxPos !== undefined && { maxPos }), limit: AUDIENCE_SAMPLE }),
      ]);
      return {
        object: 'broadcast_audience', count,
        data: sample.map((c) => ({ id: c.id, email: c.email, name: c.name, engagement_tier: c.engagementTier })),
      };
    },

    async preview(ws, id, contactId) {
      const b = await mustFind(store.db, ws, id);
      const contact = await deps.contacts.byId(ws, contactId);
      if (!contact) throw new AppError('validation_error', `No contact '${contactId}' in this workspace.`, { param: 'contact_id' });
      const content = await compile(b);
      const message = await messageFor(b, content, contact, contact.email);
      return {
        object: 'broadcast_render', contact_id: contact.id, to: contact.email, ...message,
        empty_fields: emptyFields(content.contactFields(), { contact: contactData(contact) }),
      };
    },

    async test(sender, id, to) {
      // All or none: an address refused after others were sent would leave the person unsure which went.
      to.forEach((address, i) => {
        const parsed = parseMailbox(address);
        if (!parsed.ok) throw new AppError('validation_error', `'to.${i}' (${address}) ${parsed.reason}; no test was sent.`, { param: `to.${i}` });
      });
      const b = await mustFind(store.db, sender.workspaceId, id);
      const content = await compile(b);
      const from = fromOf(b, content);
      const contacts = await deps.contacts.byEmails(sender.workspaceId, to);
      const data: Array<{ to: string; email_id: string }> = [];
      for (const address of to) {
        const contact = contacts.get(address.trim().toLowerCase());
        const message = await messageFor(b, content, contact, address);
        const email = await deps.emails.create(sender, {
          ...emailBody(b, content, from, address, { ...message, subject: `[Test] ${message.subject}` }), tags: ['broadcast_test'],
        });
        data.push({ to: address, email_id: email.id });
      }
      return { data };
    },

    async send(sender, id, body) {
      const ws = sender.workspaceId;
      const b = await mustFind(store.db, ws, id);
      if (!EDITABLE.includes(b.status)) {
        throw new AppError('broadcast_not_editable', `Only a draft or scheduled broadcast can be sent; this one is ${b.status}.`);
      }
      const now = clock.now();
      const at = body.scheduled_at === undefined ? undefined : checkScheduleTime(body.scheduled_at, now);
      // A draft may have lost a tag since it was saved: without it the audience would be other contacts than the ones chosen.
      await checkAudience(ws, b.audience);
      await checkSendable(sender, b);
      const set = at === undefined
        ? { status: 'sending' as const, scheduled_at: null, mode: sender.mode, ...(await fixAtStart(b, now)) }
        : { status: 'scheduled' as const, scheduled_at: at, mode: sender.mode };
      // Sent now to no one, the draft would be used up for nothing; a scheduled one is counted when it starts.
      if (set.status === 'sending' && set.audience_size === 0) {
        throw new AppError('broadcast_audience_empty', 'No contact is in the audience now, so sending would make no email: change the audience, or add contacts first.', { param: 'audience' });
      }
      await store.write(async (tx) => {
        // Again where it counts: a tag or template removed since the checks above is refused here, and one not yet
        // removed cannot be until the broadcast has moved, when removing it is refused (tag_in_use, template_in_use).
        await checkAudience(ws, b.audience, tx);
        if (b.template !== null) {
          // The version fixed at start, by id; a scheduled one, by the id or alias it will be read by then.
          const fixed = (set as { template_id?: string }).template_id ?? b.template.id;
          if (!(await deps.templates.exists(ws, fixed, tx))) {
            throw new AppError('validation_error', `No template with id or alias '${b.template.id}' in this workspace: it was deleted meanwhile.`, { param: 'template.id' });
          }
        }
        if (!(await transitionBroadcast(tx, id, EDITABLE, set, now))) {
          const current = await mustFind(tx, ws, id);
          throw new AppError('broadcast_not_editable', `Only a draft or scheduled broadcast can be sent; this one is ${current.status}.`);
        }
        if (set.status === 'sending') await broadcastEvent(tx, b, 'broadcast.sending', { audience_size: set.audience_size, resumed: false }, now);
      });
      return withStats(await mustFind(store.db, ws, id));
    },

    async pause(ws, id) {
      await store.write(async (tx) => {
        const b = await mustFindForUpdate(tx, ws, id);
        if (b.status !== 'sending') throw new AppError('broadcast_not_sending', `Only a sending broadcast can be paused; this one is ${b.status}.`);
        const now = clock.now();
        await transitionBroadcast(tx, id, ['sending'], { status: 'paused', status_reason: 'paused by request', resume_at: null }, now);
        await broadcastEvent(tx, b, 'broadcast.paused', { reason: 'paused by request', resume_at: null }, now);
      });
      return withStats(await mustFind(store.db, ws, id));
    },

    async resume(ws, id) {
      await store.write(async (tx) => {
        const b = await mustFindForUpdate(tx, ws, id);
        if (b.status !== 'paused') throw new AppError('broadcast_not_paused', `Only a paused broadcast can be resumed; this one is ${b.status}.`);
        const now = clock.now();
        await transitionBroadcast(tx, id, ['paused'], { status: 'sending', status_reason: null, resume_at: null, next_chunk_at: 0 }, now);
        await broadcastEvent(tx, b, 'broadcast.sending', { audience_size: b.audienceSize, resumed: true }, now);
      });
      return withStats(await mustFind(store.db, ws, id));
    },

    async cancel(ws, id) {
      await store.write(async (tx) => {
        const b = await mustFindForUpdate(tx, ws, id);
        if (b.status === 'sent' || b.status === 'cancelled') {
          throw new AppError('broadcast_not_cancellable', `A ${b.status} broadcast cannot be cancelled.`);
        }
        const now = clock.now();
        await transitionBroadcast(tx, id, ['draft', 'scheduled', 'sending', 'paused'], { status: 'cancelled', cancelled_at: now, status_reason: null, resume_at: null }, now);
        await broadcastEvent(tx, b, 'broadcast.cancelled', { previous_status: b.status, emails_created: b.emailsCreated }, now);
      });
      // After the move, no chunk can record itself: the emails made are all there are.
      const cancelled = await deps.emails.cancelBroadcastEmails(ws, id);
      logger.info({ broadcast_id: id, workspace_id: ws, emails_cancelled: cancelled }, 'broadcast cancelled');
      return withStats(await mustFind(store.db, ws, id));
    },

    async startDue() {
      const now = clock.now();
      const due = await dueBroadcasts(store.db, now);
      let started = 0;
      for (const d of due) {
        const b = await findBroadcast(store.db, d.workspaceId, d.id);
        const due = b !== undefined && (b.status === 'scheduled' ? b.scheduledAt !== null && b.scheduledAt <= now
          : b.status === 'paused' && b.resumeAt !== null && b.resumeAt <= now);
        if (!b || !due) continue;
        // Each move checks the state it starts from: a person's cancel or pause meanwhile wins.
        const set = b.status === 'scheduled'
          ? { status: 'sending' as const, ...(await fixAtStart(b, now)) }
          : { status: 'sending' as const, status_reason: null, resume_at: null, next_chunk_at: 0 };
        const moved = await store.write(async (tx) => {
          if (!(await transitionBroadcast(tx, b.id, [b.status], set, now))) return false;
          await broadcastEvent(tx, b, 'broadcast.sending', { audience_size: 'audience_size' in set ? set.audience_size : b.audienceSize, resumed: b.status === 'paused' }, now);
          return true;
        });
        if (moved) started++;
      }
      return started;
    },

    async sendNextChunk(owner) {
      const now = clock.now();
      const b = await store.write((tx) => claimSending(tx, { now, until: now + CHUNK_LEASE_MS, owner }));
      if (!b) return false;
      try {
        // The last chunk of the claim frees the broadcast, so that other broadcasts (and nodes) get their turn.
        await makeChunks(b, owner);
      } catch (err) {
        const overQuota = err instanceof AppError && (err.code === 'daily_quota_exceeded' || err.code === 'monthly_quota_exceeded');
        if (overQuota && await deps.emails.quotaLeft(await senderOf(b)) > 0) {
          // The workspace's own sends took part of the quota while the chunk was made, and it was refused whole: the
          // next chunk, sized to what is left, goes at once, so that the quota is still used to the last email.
          await store.write((tx) => releaseBroadcast(tx, b.id, owner, clock.now()));
        } else if (err instanceof AppError && err.code === 'daily_quota_exceeded') {
          const wait = Number(err.headers?.['Retry-After'] ?? 3600);
          const resumeAt = clock.now() + wait * 1000;
          await pauseFor(b, owner, `The workspace's daily send quota is used up; sending resumes at ${new Date(resumeAt).toISOString()}.`, resumeAt);
        } else if (err instanceof AppError && err.code === 'monthly_quota_exceeded') {
          const resumeAt = nextUtcMonth(clock.now());
          await pauseFor(b, owner, `The workspace's monthly send quota is used up; sending resumes at ${new Date(resumeAt).toISOString()}.`, resumeAt);
        } else if (err instanceof AppError && err.status === 422) {
          // The content or the sending domain no longer allows it: a person must look.
          await pauseFor(b, owner, err.message, null);
        } else {
          logger.error({ err, broadcast_id: b.id }, 'broadcast chunk failed; trying again shortly');
          await store.write((tx) => releaseBroadcast(tx, b.id, owner, clock.now() + RETRY_CHUNK_MS));
        }
      }
      return true;
    },

    nextWork: () => nextBroadcastWork(store.db, clock.now()),

    releaseGoneLeases: () => freeGoneLeases(store, 'broadcasts', logger, () => clock.now()),
  };

  return service;
}

/** A chunk whose broadcast stopped sending under it: rolled back, not an error. */
class ChunkAbandoned extends Error {}

/** A chunk's contacts, read and rendered, ready to be written. */
interface RenderedChunk {
  /** The broadcast as the chunk found it. */
  b: StoredBroadcast;
  /** When its contacts were read: a paced broadcast's next chunk is due a pace after. */
  startedAt: number;
  sender: Sender;
  /**
   * The workspace's quota left before the chunk. The next chunk, rendered
   * while this one is written, counts on this less this chunk's emails: sends
   * of the workspace meanwhile may leave less, and its write then finds the
   * quota used up, as a chunk after them would.
   */
  quotaLeft: number;
  /** The chunk's contacts: an email or a skip each. */
  contacts: AudienceContact[];
  items: BroadcastItem[];
  /** Contacts whose message did not render; those whose email is refused come back from the write. */
  unrendered: NewSkip[];
  /** Whether the chunk is the broadcast's last. */
  last: boolean;
  /** The audience position the broadcast is at once the chunk is written. */
  endPos: number;
  /** Whether the chunk renews the claim for the next one. */
  keepsLease: boolean;
}
