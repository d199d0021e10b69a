import { characterCount, firstCharacters } from '../core/characters.js';
import { AppError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import type { Clock } from '../core/clock.js';
import { writeCheckingUnique, type Store, type Tx } from '../store/db.js';
import type { Page, PageQuery } from '../store/paging.js';
import { parseMailbox, type RenderedTemplate, type TemplatesPort } from '../emails/index.js';
import {
  CompiledCache, compileSource, renderSource, RenderFailure, type CompiledSource, type Part, type SourceProblem,
} from './template-engine.js';
import { htmlToPlainText } from './plain-text.js';
import { bindValues, checkDeclarations, contactFieldsWritten, namesOf, undeclaredUses, type DeclarationInput, type Problem, type VariableDeclaration } from './variables.js';
import {
  aliasOwner, deleteTemplate, findTemplateHead, findTemplateHeadForShare, findTemplateHeadForUpdate, findVersion, findVersionRow, getTemplate, insertTemplate, insertVersion,
  listTemplates, listVersions, markPublished, updateTemplate,
  type Template, type TemplateHead, type TemplateSummary, type TemplateVersion, type TemplateVersionSummary, type VersionRow,
} from './templates.repo.js';
import type { RequestBody } from '../contract/operations.js';

// The rules of the Templates area. A template is a name, an optional alias
// and numbered versions; a version is immutable, and a change of content
// makes a new one (a draft until published). Sources are Liquid
// (template-engine.ts), checked when saved: they must parse, and every
// variable they read must be declared, but for `contact` and
// `unsubscribe_url`, which Mailroom fills for each recipient.

export const MAX_NAME_LENGTH = 200;
/**
 * Render time one request may spend in all (a batch renders up to 100
 * messages, each within RENDER_LIMIT_MS): the event loop is never held longer.
 */
export const REQUEST_RENDER_BUDGET_MS = 1000;
/**
 * Characters the emails one request renders may have in all: subjects, html
 * and text, a text derived from html included. One part is bounded by
 * MAX_OUTPUT_CHARS, but a batch of 100 near that bound (10,000,000
 * characters each, html and text) held the event loop 18 s and grew the
 * process by 1.5 GB, measured; the same batch under this bound sends two of
 * them in 0.1 s and 30 MB. It is room for 100 emails of 200,000 characters each.
 */
export const MAX_REQUEST_RENDERED_CHARS = 20_000_000;
/** What is left of a request's MAX_REQUEST_RENDERED_CHARS. */
interface OutputBudget {
  chars: number;
}

/** Compiled versions kept, and the source characters they may hold together. */
const CACHE_ENTRIES = 1000;
const CACHE_SOURCE_CHARS = 50_000_000;

export type TemplateCreateBody = RequestBody<'createTemplate'>;
/** A field given as null is cleared; one left out keeps its value. */
export type TemplateUpdateBody = RequestBody<'updateTemplate'>;
export type TemplatePreviewBody = RequestBody<'previewTemplate'>;

export interface RenderResult {
  object: 'template_render';
  subject: string;
  html: string | null;
  text: string;
}

/** Content written once for many recipients (a broadcast's): its own sources, or a template's version. */
export interface ContentSource {
  /** Without `version`, the published one. */
  template?: { id: string; version?: number };
  /** Liquid; for a template, it replaces the version's subject. */
  subject?: string | null;
  html?: string | null;
  text?: string | null;
}

/** Content ready to render for each recipient. */
export interface CompiledContent {
  templateId: string | null;
  version: number | null;
  /** The version's defaults; null for content of its own. */
  from: string | null;
  replyTo: string[] | null;
  /** One recipient's message; a render that fails is 422 template_render_failed (a RenderOverTime when its time ran out). */
  render(data: { contact: Record<string, unknown>; unsubscribe_url: string }, untilMs?: number): Promise<{ subject: string; html: string | null; text: string }>;
  /** The contact fields it writes out with no fallback (contactFieldsWritten), worked out when asked. */
  contactFields(): string[];
}

export interface TemplatesService extends TemplatesPort {
  list(workspaceId: string, query: { name?: string }, page: PageQuery): Promise<Page<TemplateSummary>>;
  create(workspaceId: string, body: TemplateCreateBody): Promise<Template>;
  get(workspaceId: string, ref: string): Promise<Template>;
  update(workspaceId: string, ref: string, body: TemplateUpdateBody): Promise<Template>;
  publish(workspaceId: string, ref: string, version?: number): Promise<Template>;
  versions(workspaceId: string, ref: string, page: PageQuery): Promise<Page<TemplateVersionSummary>>;
  version(workspaceId: string, ref: string, version: number): Promise<TemplateVersion>;
  duplicate(workspaceId: string, ref: string, body: { name?: string; alias?: string }): Promise<Template>;
  /** 422 template_in_use while a scheduled or under-way broadcast names it (by id or alias). */
  remove(workspaceId: string, ref: string): Promise<void>;
  render(workspaceId: string, ref: string, body: { variables?: Record<string, unknown>; version?: number }): Promise<RenderResult>;
  preview(body: TemplatePreviewBody): Promise<RenderResult>;
  /**
   * Checks sources written for many recipients, which may read `contact` and
   * `unsubscribe_url` only (422 template_invalid, every problem listed).
   */
  checkSources(source: { subject: string | null; html: string | null; text: string | null }): void;
  /**
   * Compiles content for rendering per recipient: a template's declared
   * variables take their fallbacks, so one that is required without a
   * fallback is 422 template_variables_invalid. Sources of its own need a
   * subject and html or text.
   */
  compileContent(workspaceId: string, source: ContentSource): Promise<CompiledContent>;
  /** Whether the workspace has a template with this id or alias now. */
  /** Whether the template is there; in the caller's transaction (`tx`), it cannot be deleted until it ends. */
  exists(workspaceId: string, idOrAlias: string, tx?: Tx): Promise<boolean>;
}

/** What filling `contact` needs of a recipient's contact. */
export interface ContactFacts {
  id: string;
  email: string;
  name: string | null;
  properties?: Record<string, string | number | boolean>;
}

export interface TemplatesDeps {
  store: Store;
  clock: Clock;
  /** The live contacts among these addresses, keyed by address as contacts normalise it (trimmed, lower-cased). */
  contacts(workspaceId: string, emails: string[]): Promise<Map<string, ContactFacts>>;
  /** A scheduled, sending or paused broadcast that names the template by one of `refs` (its id, its alias), read in the caller's transaction. */
  broadcastUsing(tx: Tx, workspaceId: string, refs: string[]): Promise<{ id: string; status: string } | undefined>;
}

/** The content of a version, checked. */
interface Content {
  subject: string;
  html: string | null;
  text: string | null;
  from: string | null;
  replyTo: string[] | null;
  variables: VariableDeclaration[];
}

/** A version ready to render: compiled once, kept in the cache. */
interface Prepared {
  compiled: CompiledSource;
  declarations: VariableDeclaration[];
  from: string | null;
  replyTo: string[] | null;
}

const where = (p: { part: Part; line?: number; column?: number }) =>
  p.line === undefined ? p.part : `${p.part}, line ${p.line}, column ${p.column}`;

/** Where each source went wrong, as problems naming the part. */
const sourceProblems = (problems: SourceProblem[]): Problem[] => problems.map((p) => ({
  param: p.part, message: `${where(p)}: ${p.message}.`, ...(p.line !== undefined && { line: p.line, column: p.column }),
}));

/**
 * A render stopped by its time limit: the same 422 template_render_failed as
 * any render that fails, told apart for a caller that renders unattended.
 * Time ran out, which says as much about the process (load, a pause of it)
 * as about the content and its data: the same render may well finish when
 * tried again.
 */
export class RenderOverTime extends AppError {}

/** One 422 naming every problem: the message gives the first (with its place), `problems` all of them. */
function problemsError(code: 'template_invalid' | 'template_variables_invalid' | 'template_render_failed', problems: Problem[],
  kind: typeof AppError = AppError): AppError {
  const first = problems[0].message;
  const message = problems.length === 1 ? first : `${first} (and ${problems.length - 1} more: see problems)`;
  return new kind(code, message, { param: problems[0].param, details: { problems } });
}

const asList = (v: string | string[] | undefined | null): string[] | null => (v === undefined || v === null ? null : Array.isArray(v) ? v : [v]);

const normaliseSubject = (subject: string) => subject.replace(/\s*[\r\n]+\s*/g, ' ').trim();

/**
 * Checks a version's content: at least one of html and text, the default
 * addresses, the declarations, that each source parses, and that every
 * variable used is declared. Throws one 422 listing every problem.
 */
function checkContent(c: Content & { variablesInput?: DeclarationInput[] }): { content: Content; compiled: CompiledSource } {
  const problems: Problem[] = [];
  if (c.html === null && c.text === null) problems.push({ param: 'html', message: 'A version needs html, text or both.' });
  if (c.from !== null) {
    const parsed = parseMailbox(c.from);
    if (!parsed.ok) problems.push({ param: 'from', message: `'from' ${parsed.reason}.` });
  }
  (c.replyTo ?? []).forEach((entry, i) => {
    const parsed = parseMailbox(entry);
    if (!parsed.ok) problems.push({ param: `reply_to.${i}`, message: `'reply_to.${i}' ${parsed.reason}.` });
  });
  const declared = c.variablesInput ? checkDeclarations(c.variablesInput) : { declarations: c.variables, problems: [] };
  problems.push(...declared.problems);
  const parsed = compileSource(c);
  if (!parsed.ok) {
    problems.push(...sourceProblems(parsed.problems));
  } else if (declared.problems.length === 0) {
    problems.push(...undeclaredUses(parsed.compiled, declared.declarations));
  }
  if (problems.length > 0 || !parsed.ok) throw problemsError('template_invalid', problems);
  return {
    content: { subject: c.subject, html: c.html, text: c.text, from: c.from, replyTo: c.replyTo, variables: declared.declarations },
    compiled: parsed.compiled,
  };
}

function checkName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0 || characterCount(trimmed) > MAX_NAME_LENGTH) {
    throw new AppError('validation_error', `A template name is 1 to ${MAX_NAME_LENGTH} characters, not blank.`, { param: 'name' });
  }
  return trimmed;
}

function checkAlias(alias: string): string {
  // The form of a name tells an id from an alias.
  if (alias.startsWith('tpl_')) {
    throw new AppError('validation_error', "An alias cannot start with 'tpl_', the prefix of template ids.", { param: 'alias' });
  }
  // /templates/render is a path of its own (a preview), so a template named so could not be read or changed by it.
  if (alias === 'render') {
    throw new AppError('validation_error', "An alias cannot be 'render': /templates/render is the preview of a draft, not a template.", { param: 'alias' });
  }
  return alias;
}

const versionRow = (templateId: string, ws: string, version: number, c: Content, now: number): VersionRow => ({
  template_id: templateId, version, workspace_id: ws, subject: c.subject, html: c.html, text_body: c.text, from_address: c.from,
  reply_to_list: c.replyTo === null ? null : JSON.stringify(c.replyTo), variables: JSON.stringify(c.variables),
  created_at: now, published_at: null,
});

const contentOf = (v: TemplateVersion): Content => ({
  subject: v.subject, html: v.html, text: v.text, from: v.from, replyTo: v.reply_to, variables: v.variables,
});

const sameContent = (a: Content, b: Content) => JSON.stringify(a) === JSON.stringify(b);

/** `contact` for a recipient: the contact's fields, first and last name split from its name as Listmonk does. */
export function contactData(c: ContactFacts | undefined): Record<string, unknown> {
  if (!c) return {};
  return { id: c.id, email: c.email, name: c.name ?? '', ...namesOf(c.name ?? ''), properties: c.properties ?? {} };
}

export function templatesService(deps: TemplatesDeps): TemplatesService {
  const { store, clock } = deps;
  const cache = new CompiledCache<Prepared>(CACHE_ENTRIES, CACHE_SOURCE_CHARS);
  const compiling = new Map<string, Promise<Prepared | undefined>>();

  const noTemplate = (ref: string) => new AppError('not_found', `No template with id or alias '${ref}'.`);

  async function head(db: Store['db'] | Tx, ws: string, ref: string): Promise<TemplateHead> {
    const found = await findTemplateHead(db, ws, ref);
    if (!found) throw noTemplate(ref);
    return found;
  }

  /** The template, to change it: locked until the transaction ends, so two changes never start from the same version. */
  async function headForUpdate(tx: Tx, ws: string, ref: string): Promise<TemplateHead> {
    const found = await findTemplateHeadForUpdate(tx, ws, ref);
    if (!found) throw noTemplate(ref);
    return found;
  }

  /** A new template whose version 1 holds `content` (a draft); returns it as the API shows it. */
  async function createWithFirstVersion(tx: Tx, ws: string, name: string, alias: string | null, content: Content) {
    const now = clock.now();
    const id = newId('tpl', now);
    await insertTemplate(tx, {
      id, workspace_id: ws, name, search_name: name.toLowerCase(), alias, latest_version: 1, published_version: null,
      created_at: now, updated_at: now,
    });
    await insertVersion(tx, versionRow(id, ws, 1, content, now));
    return (await getTemplate(tx, ws, id))!;
  }

  async function takeAlias(tx: Tx, ws: string, alias: string, self?: string): Promise<void> {
    const owner = await aliasOwner(tx, ws, alias);
    if (owner !== undefined && owner !== self) {
      throw new AppError('already_exists', `The alias '${alias}' is taken by template ${owner}.`, { param: 'alias', details: { template_id: owner } });
    }
  }

  /**
   * The compiled form of a version, from the cache or compiled now (once,
   * however many sends of a batch ask at the same time); undefined when the
   * template was deleted since its head was read.
   */
  function prepared(templateId: string, version: number): Promise<Prepared | undefined> {
    const key = `${templateId}@${version}`;
    const hit = cache.get(key);
    if (hit) return Promise.resolve(hit);
    let pending = compiling.get(key);
    if (!pending) {
      pending = compile(key, templateId, version).finally(() => compiling.delete(key));
      compiling.set(key, pending);
    }
    return pending;
  }

  async function compile(key: string, templateId: string, version: number): Promise<Prepared | undefined> {
    const row = await findVersionRow(store.db, templateId, version);
    if (!row) return undefined;
    const parsed = compileSource({ subject: row.subject, html: row.html, text: row.text_body });
    // Versions were checked when saved; one saved before a limit it is over now is refused as it would be saved today.
    if (!parsed.ok) {
      throw problemsError('template_invalid', sourceProblems(parsed.problems).map((p) => ({ ...p,
        message: `Version ${version} of this template was saved before a limit it is over: ${p.message} Save a version within it.` })));
    }
    const entry: Prepared = {
      compiled: parsed.compiled, declarations: JSON.parse(row.variables) as VariableDeclaration[],
      from: row.from_address, replyTo: row.reply_to_list === null ? null : JSON.parse(row.reply_to_list) as string[],
    };
    cache.set(key, entry, row.subject.length + (row.html?.length ?? 0) + (row.text_body?.length ?? 0));
    return entry;
  }

  /**
   * Renders a prepared version; the text part is derived from the html when
   * the version has none. With `output`, what the email renders to is taken
   * from it, and an email it cannot hold is refused (before its text is
   * derived, when that is already clear).
   */
  async function render(compiled: CompiledSource, data: Record<string, unknown>, param: (part: Part) => string,
    untilMs?: number, output?: OutputBudget) {
    let out: ReturnType<typeof renderSource>;
    try {
      out = renderSource(compiled, data, untilMs);
    } catch (err) {
      if (!(err instanceof RenderFailure)) throw err;
      const at = { part: err.part, line: err.line, column: err.column };
      throw problemsError('template_render_failed', [{
        param: param(err.part), message: `Rendering ${where(at)} failed: ${err.message}.`,
        ...(err.line !== undefined && { line: err.line, column: err.column }),
      }], err.overTime ? RenderOverTime : AppError);
    }
    const refuseOver = (chars: number) => {
      if (output && chars > output.chars) {
        throw problemsError('template_render_failed', [{
          param: param('html'),
          message: `Rendering failed: with this email the emails of the request render to over ${MAX_REQUEST_RENDERED_CHARS.toLocaleString('en-US')} `
            + 'characters in all (subjects, html and text); send it in another request.',
        }]);
      }
    };
    const rendered = out.subject.length + (out.html?.length ?? 0) + (out.text?.length ?? 0);
    refuseOver(rendered);
    const text = out.text ?? await htmlToPlainText(out.html ?? '');
    // Taken once the text is known: other emails of the request may have taken some while it was derived.
    const chars = rendered + (out.text === null ? text.length : 0);
    refuseOver(chars);
    if (output) output.chars -= chars;
    return { subject: normaliseSubject(out.subject), html: out.html, text };
  }

  function bind(declarations: VariableDeclaration[], values: Record<string, unknown>, param: string, samples: boolean) {
    const bound = bindValues(declarations, values, param, samples);
    if (bound.problems.length > 0) throw problemsError('template_variables_invalid', bound.problems);
    return bound.data;
  }

  return {
    list: (ws, query, page) => listTemplates(store.db, ws, query, page),

    async create(ws, body) {
      const name = checkName(body.name);
      const alias = body.alias === undefined ? null : checkAlias(body.alias);
      const { content } = checkContent({
        subject: body.subject, html: body.html ?? null, text: body.text ?? null, from: body.from ?? null,
        replyTo: asList(body.reply_to), variables: [], variablesInput: body.variables ?? [],
      });
      return writeCheckingUnique(store, async (tx) => {
        if (alias !== null) await takeAlias(tx, ws, alias);
        return createWithFirstVersion(tx, ws, name, alias, content);
      });
    },

    async get(ws, ref) {
      const found = await getTemplate(store.db, ws, ref);
      if (!found) throw new AppError('not_found', `No template with id or alias '${ref}'.`);
      return found;
    },

    async update(ws, ref, body) {
      const name = body.name === undefined ? undefined : checkName(body.name);
      const alias = body.alias === undefined || body.alias === null ? body.alias : checkAlias(body.alias);
      const changesContent = ['subject', 'html', 'text', 'from', 'reply_to', 'variables'].some((k) => k in body);
      // One unit reads the latest version and writes the next, so two updates never take the same number.
      return writeCheckingUnique(store, async (tx) => {
        const t = await headForUpdate(tx, ws, ref);
        const now = clock.now();
        let latestVersion = t.latestVersion;
        if (changesContent) {
          const latest = contentOf((await findVersion(tx, t.id, t.latestVersion))!);
          const { content } = checkContent({
            subject: body.subject ?? latest.subject,
            html: body.html === undefined ? latest.html : body.html,
            text: body.text === undefined ? latest.text : body.text,
            from: body.from === undefined ? latest.from : body.from,
            replyTo: body.reply_to === undefined ? latest.replyTo : asList(body.reply_to),
            variables: latest.variables,
            ...(body.variables !== undefined && { variablesInput: body.variables }),
          });
          if (!sameContent(content, latest)) {
            latestVersion += 1;
            await insertVersion(tx, versionRow(t.id, ws, latestVersion, content, now));
          }
        }
        if (alias !== undefined && t.alias !== null && alias !== t.alias) {
          // A scheduled broadcast naming the template by this alias would find another template, or none, when it starts.
          const user = await deps.broadcastUsing(tx, ws, [t.alias]);
          if (user) {
            throw new AppError('template_in_use', `Broadcast ${user.id} (${user.status}) names template ${t.id} by its alias '${t.alias}'; `
              + 'name the template by its id there, or cancel the broadcast, first.', { param: 'alias', details: { broadcast_id: user.id } });
          }
        }
        if (alias) await takeAlias(tx, ws, alias, t.id);
        const changed = latestVersion !== t.latestVersion || (name !== undefined && name !== t.name) || (alias !== undefined && alias !== t.alias);
        if (changed) {
          await updateTemplate(tx, t.id, {
            latest_version: latestVersion,
            ...(name !== undefined && { name, search_name: name.toLowerCase() }),
            ...(alias !== undefined && { alias }),
          }, now);
        }
        return (await getTemplate(tx, ws, t.id))!;
      });
    },

    async publish(ws, ref, version) {
      return store.write(async (tx) => {
        const t = await headForUpdate(tx, ws, ref);
        const chosen = version ?? t.latestVersion;
        if (chosen > t.latestVersion) {
          throw new AppError('validation_error', `Template ${t.id} has versions 1 to ${t.latestVersion}; there is no version ${chosen}.`, { param: 'version' });
        }
        const now = clock.now();
        await updateTemplate(tx, t.id, { published_version: chosen }, now);
        await markPublished(tx, t.id, chosen, now);
        return (await getTemplate(tx, ws, t.id))!;
      });
    },

    async versions(ws, ref, page) {
      const t = await head(store.db, ws, ref);
      return listVersions(store.db, t.id, page);
    },

    async version(ws, ref, n) {
      const t = await head(store.db, ws, ref);
      const found = await findVersion(store.db, t.id, n);
      if (!found) throw new AppError('not_found', `Template ${t.id} has no version ${n} (its versions are 1 to ${t.latestVersion}).`);
      return found;
    },

    async duplicate(ws, ref, body) {
      const alias = body.alias === undefined ? null : checkAlias(body.alias);
      return writeCheckingUnique(store, async (tx) => {
        const t = await head(tx, ws, ref);
        const name = checkName(body.name ?? firstCharacters(`${t.name} (copy)`, MAX_NAME_LENGTH));
        if (alias !== null) await takeAlias(tx, ws, alias);
        const latest = contentOf((await findVersion(tx, t.id, t.latestVersion))!);
        return createWithFirstVersion(tx, ws, name, alias, latest);
      });
    },

    async remove(ws, ref) {
      await store.write(async (tx) => {
        const t = await headForUpdate(tx, ws, ref);
        // A broadcast reads its template for each chunk: gone, it could neither go on nor be edited.
        const user = await deps.broadcastUsing(tx, ws, t.alias === null ? [t.id] : [t.id, t.alias]);
        if (user) {
          throw new AppError('template_in_use', `Broadcast ${user.id} (${user.status}) sends template ${t.id}; cancel the broadcast, or let it finish, first.`,
            { details: { broadcast_id: user.id } });
        }
        await deleteTemplate(tx, t.id);
      });
    },

    async render(ws, ref, body) {
      const t = await head(store.db, ws, ref);
      const n = body.version ?? t.publishedVersion;
      if (n === null) {
        throw new AppError('template_not_published', `Template ${t.id} has no published version; publish one, or name a version.`, { param: 'version' });
      }
      if (n > t.latestVersion) {
        throw new AppError('validation_error', `Template ${t.id} has versions 1 to ${t.latestVersion}; there is no version ${n}.`, { param: 'version' });
      }
      const p = await prepared(t.id, n);
      if (!p) throw new AppError('not_found', `No template with id or alias '${ref}'.`);
      const data = { contact: {}, unsubscribe_url: '', ...bind(p.declarations, body.variables ?? {}, 'variables', true) };
      return { object: 'template_render', ...(await render(p.compiled, data, (part) => part)) };
    },

    async preview(body) {
      const { content, compiled } = checkContent({
        subject: body.subject ?? '', html: body.html ?? null, text: body.text ?? null, from: null, replyTo: null,
        variables: [], variablesInput: body.variables ?? [],
      });
      const data = { contact: {}, unsubscribe_url: '', ...bind(content.variables, body.data ?? {}, 'data', true) };
      return { object: 'template_render', ...(await render(compiled, data, (part) => part)) };
    },

    async renderForSends(ws, sends) {
      const untilMs = performance.now() + REQUEST_RENDER_BUDGET_MS;
      const output: OutputBudget = { chars: MAX_REQUEST_RENDERED_CHARS };
      // Each template a request names is looked up once.
      const heads = new Map<string, Promise<TemplateHead | undefined>>();
      const resolved = await Promise.all(sends.map(async (s): Promise<{ head: TemplateHead; version: number; prepared: Prepared } | AppError> => {
        const ref = s.template.id;
        if (!heads.has(ref)) heads.set(ref, findTemplateHead(store.db, ws, ref));
        const t = await heads.get(ref)!;
        const unknown = () => new AppError('validation_error', `No template with id or alias '${ref}' in this workspace.`, { param: 'template.id' });
        if (!t) return unknown();
        const n = s.template.version ?? t.publishedVersion;
        if (n === null) {
          return new AppError('template_not_published', `Template ${t.id} has no published version; publish one, or name a version.`, { param: 'template.id' });
        }
        if (n > t.latestVersion) {
          return new AppError('validation_error', `Template ${t.id} has versions 1 to ${t.latestVersion}; there is no version ${n}.`, { param: 'template.version' });
        }
        const p = await prepared(t.id, n);
        return p ? { head: t, version: n, prepared: p } : unknown();
      }));
      // Contacts only for the sends whose template reads `contact`: one query for all of them.
      const wanted = sends.flatMap((s, i) => {
        const r = resolved[i];
        return !(r instanceof AppError) && s.to !== undefined && r.prepared.compiled.globals.has('contact') ? [s.to] : [];
      });
      const contacts = wanted.length > 0 ? await deps.contacts(ws, wanted) : new Map<string, ContactFacts>();
      return Promise.all(sends.map(async (s, i): Promise<RenderedTemplate | AppError> => {
        const r = resolved[i];
        if (r instanceof AppError) return r;
        try {
          const data = {
            ...bind(r.prepared.declarations, s.template.variables ?? {}, 'template.variables', false),
            contact: contactData(s.to === undefined ? undefined : contacts.get(s.to.trim().toLowerCase())),
            unsubscribe_url: s.unsubscribeUrl ?? '',
          };
          const out = await render(r.prepared.compiled, data, () => 'template', untilMs, output);
          return { templateId: r.head.id, version: r.version, ...out, from: r.prepared.from, replyTo: r.prepared.replyTo };
        } catch (err) {
          if (err instanceof AppError) return err;
          throw err;
        }
      }));
    },

    checkSources(source) {
      const parsed = compileSource({ subject: source.subject ?? '', html: source.html, text: source.text });
      if (!parsed.ok) throw problemsError('template_invalid', sourceProblems(parsed.problems));
      const undeclared = undeclaredUses(parsed.compiled, []);
      if (undeclared.length > 0) throw problemsError('template_invalid', undeclared);
    },

    async compileContent(ws, source) {
      if (source.template === undefined) {
        const { compiled } = checkContent({
          subject: source.subject ?? '', html: source.html ?? null, text: source.text ?? null, from: null, replyTo: null, variables: [],
        });
        return {
          templateId: null, version: null, from: null, replyTo: null,
          render: (data, untilMs) => render(compiled, data, (part) => part, untilMs),
          contactFields: () => contactFieldsWritten(compiled),
        };
      }
      const ref = source.template.id;
      const t = await findTemplateHead(store.db, ws, ref);
      if (!t) throw new AppError('validation_error', `No template with id or alias '${ref}' in this workspace.`, { param: 'template.id' });
      const n = source.template.version ?? t.publishedVersion;
      if (n === null) {
        throw new AppError('template_not_published', `Template ${t.id} has no published version; publish one, or name a version.`, { param: 'template.id' });
      }
      if (n > t.latestVersion) {
        throw new AppError('validation_error', `Template ${t.id} has versions 1 to ${t.latestVersion}; there is no version ${n}.`, { param: 'template.version' });
      }
      const p = await prepared(t.id, n);
      if (!p) throw new AppError('validation_error', `No template with id or alias '${ref}' in this workspace.`, { param: 'template.id' });
      // No one gives a broadcast's variables: each takes its fallback.
      const values = bind(p.declarations, {}, 'template', false);
      let compiled = p.compiled;
      if (source.subject) {
        const subject = compileSource({ subject: source.subject, html: null, text: null });
        if (!subject.ok) throw problemsError('template_invalid', sourceProblems(subject.problems));
        const undeclared = undeclaredUses(subject.compiled, p.declarations);
        if (undeclared.length > 0) throw problemsError('template_invalid', undeclared);
        compiled = { ...p.compiled, subject: subject.compiled.subject };
      }
      return {
        templateId: t.id, version: n, from: p.from, replyTo: p.replyTo,
        render: (data, untilMs) => render(compiled, { ...values, ...data }, () => 'template', untilMs),
        contactFields: () => contactFieldsWritten(compiled),
      };
    },

    async templateId(ws, ref) {
      return ref.startsWith('tpl_') ? ref : (await findTemplateHead(store.db, ws, ref))?.id;
    },

    async exists(ws, ref, tx) {
      return (await (tx ? findTemplateHeadForShare(tx, ws, ref) : findTemplateHead(store.db, ws, ref))) !== undefined;
    },
  };
}
