import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Rules of the code's shape that a reader could break without noticing,
// checked on the sources themselves.

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    return e.isDirectory() ? sources(path) : e.name.endsWith('.ts') ? [path] : [];
  });
}

const files = sources(SRC).map((path) => ({ path: relative(SRC, path), text: readFileSync(path, 'utf8') }));

/** A statement that writes the events table. */
const WRITES_EVENTS = /(?:insertInto|updateTable|deleteFrom)\(\s*'events'\s*\)|insertRows\([^,]+,\s*'events'/;
/** An import of the events area's repos from another folder. */
const IMPORTS_EVENTS_REPO = /from '(?:\.\.\/)+events\/events(?:-query)?\.repo\.js'/;

describe('the events table', () => {
  const outside = files.filter((f) => !f.path.startsWith('events/') && !f.path.startsWith('store/migrations/'));

  it('is written by src/events alone: every other area appends through its index', () => {
    expect(outside.filter((f) => WRITES_EVENTS.test(f.text)).map((f) => f.path)).toEqual([]);
  });

  it('has its repos imported by no other area', () => {
    expect(outside.filter((f) => IMPORTS_EVENTS_REPO.test(f.text)).map((f) => f.path)).toEqual([]);
  });

  it('is guarded by rules that do see a writer and an import', () => {
    expect(WRITES_EVENTS.test(files.find((f) => f.path === 'events/events.repo.ts')!.text)).toBe(true);
    expect(IMPORTS_EVENTS_REPO.test("import { appendEvents } from '../events/events.repo.js';")).toBe(true);
    expect(WRITES_EVENTS.test("await tx.deleteFrom('events').where('pos', '<', 1).execute();")).toBe(true);
  });
});

describe('the followers of the events table', () => {
  it('keep their positions through one module: nothing else reads or writes event_watermarks', () => {
    const touching = files.filter((f) => /'event_watermarks'|engagement_watermark/.test(f.text)
      && f.path !== 'store/event-log.ts' && !f.path.startsWith('store/migrations/') && f.path !== 'store/tables.ts');
    expect(touching.map((f) => f.path)).toEqual([]);
  });
});

/** Leasing SQL: a claim's row locks, an owner's release, or a lease handed to an owner by an update. */
const LEASE_SQL = /skipLocked\(|forUpdate\(|'lease_owner',\s*'in'|updateTable\([^)]*\)\s*\.set\(\{[^}]*lease_owner: (?!null)(?![^,]* as null)/;

describe('leases', () => {
  it('are claimed, renewed and released by store/lease.ts alone', () => {
    const elsewhere = files.filter((f) => f.path !== 'store/lease.ts' && LEASE_SQL.test(f.text));
    expect(elsewhere.map((f) => f.path)).toEqual([]);
  });

  it('are guarded by a rule that does see a claim and a release', () => {
    expect(LEASE_SQL.test(files.find((f) => f.path === 'store/lease.ts')!.text)).toBe(true);
    expect(LEASE_SQL.test("tx.updateTable('broadcasts').set({ locked_until: c.until, lease_owner: c.owner })")).toBe(true);
    expect(LEASE_SQL.test("q.where('lease_owner', 'in', owners)")).toBe(true);
    expect(LEASE_SQL.test("tx.updateTable('broadcasts').set({ locked_until: 0, lease_owner: null })")).toBe(false);
  });
});

describe('engine loops', () => {
  it('are all core/work-loop.ts: no engine writes its own loop over a stop signal', () => {
    const loops = files.filter((f) => f.path !== 'core/work-loop.ts' && /while \(!\w+\.aborted\)/.test(f.text));
    expect(loops.map((f) => f.path)).toEqual([]);
  });
});

/** Every statement in `text` that writes a table, by the table's name. */
function tablesWritten(text: string): string[] {
  const kysely = /(?:insertInto|updateTable|deleteFrom)\(\s*'(\w+)'|insertRows\([^,]+,\s*'(\w+)'/g;
  const rawSql = /\b(?:insert\s+into|delete\s+from)\s+(\w+)|\bupdate\s+(\w+)\s+set\b/gi;
  // The lease primitive writes the table its caller names.
  const leases = /\b(?:claimLeases|extendLeases|releaseOwners|freeGoneLeases|freed)\(\s*(?:[\w.]+,\s*)?'(\w+)'/g;
  return [...text.matchAll(kysely), ...text.matchAll(rawSql), ...text.matchAll(leases)].map((m) => m.slice(1).find((g) => g !== undefined)!);
}

/** The folder whose `*.tables.ts` declares each table (store/tables.ts for the store's own). */
const DECLARED_IN = new Map(files.filter((f) => f.path.endsWith('tables.ts')).flatMap((f) => {
  const database = /interface Database \{([^}]*)\}/.exec(f.text)?.[1] ?? '';
  return [...database.matchAll(/(\w+): \w+;/g)].map((m) => [m[1], f.path.split('/')[0]] as const);
}));

/** Tables only the database's own triggers write (declared in a migration), for the areas to read. */
const KEPT_BY_TRIGGERS = ['broadcast_stats'];

describe('the tables', () => {
  const writers = new Map<string, Set<string>>();
  for (const f of files) {
    if (f.path.startsWith('store/migrations/') || f.path === 'store/lease.ts') continue;
    for (const table of tablesWritten(f.text)) {
      if (!DECLARED_IN.has(table)) continue; // A word after "update" in prose, or a search index's virtual table.
      writers.set(table, (writers.get(table) ?? new Set()).add(f.path.split('/')[0]));
    }
  }

  it('each have one writer: the folder that declares the table', () => {
    const strays = [...writers].filter(([table, folders]) => folders.size !== 1 || !folders.has(DECLARED_IN.get(table)!))
      .map(([table, folders]) => `${table}: declared in ${DECLARED_IN.get(table)}, written by ${[...folders].join(', ')}`);
    expect(strays).toEqual([]);
  });

  it('are all declared and all written', () => {
    expect(DECLARED_IN.size).toBeGreaterThan(35);
    const unwritten = [...DECLARED_IN.keys()].filter((t) => !writers.has(t) && !KEPT_BY_TRIGGERS.includes(t));
    expect(unwritten).toEqual([]);
  });

  it('are seen written by every form of write', () => {
    expect(tablesWritten("tx.updateTable('emails').set({})")).toEqual(['emails']);
    expect(tablesWritten("await insertRows(tx, 'outbound_queue', rows)")).toEqual(['outbound_queue']);
    expect(tablesWritten('sql`update contacts set engagement_tier = 1`')).toEqual(['contacts']);
    expect(tablesWritten("claimLeases(tx, 'broadcasts', next, c)")).toEqual(['broadcasts']);
    expect(tablesWritten("freeGoneLeases(store, 'inbound_messages', logger, now)")).toEqual(['inbound_messages']);
  });
});

/** An import of the HTTP layer, from a file one or more folders below src/. */
const IMPORTS_HTTP = /from '(?:\.\.\/)+http\/[^']*'/;

describe('SMTP submission', () => {
  it('imports nothing from src/http: scope, rate and body checks come from core/ and contract/, as op() takes them', () => {
    expect(files.filter((f) => f.path.startsWith('smtp/') && IMPORTS_HTTP.test(f.text)).map((f) => f.path)).toEqual([]);
  });

  it('shares those checks with op(), whose own imports the rule does see', () => {
    expect(IMPORTS_HTTP.test("import type { RateLimiter } from '../http/rate-limit.js';")).toBe(true);
    const op = files.find((f) => f.path === 'http/op.ts')!.text;
    const pipeline = files.find((f) => f.path === 'smtp/submission.pipeline.ts')!.text;
    for (const check of ['requireScope', 'rateLimitExceeded', 'checkRequestBody']) {
      expect(op, `http/op.ts calls ${check}`).toContain(`${check}(`);
      expect(pipeline, `smtp/submission.pipeline.ts calls ${check}`).toContain(`${check}(`);
    }
  });
});

describe('the neutral modules', () => {
  it('core/ and contract/ import nothing from the transports', () => {
    const neutral = files.filter((f) => f.path.startsWith('core/') || f.path.startsWith('contract/'));
    expect(neutral.filter((f) => IMPORTS_HTTP.test(f.text) || /from '(?:\.\.\/)+smtp\//.test(f.text)).map((f) => f.path)).toEqual([]);
  });
});

describe('the engines', () => {
  const ENGINES = ['engines/', 'delivery/', 'scheduler/'];
  /** The src/ folders a file's relative imports reach, other than its own. */
  const foldersImported = (f: { path: string; text: string }) => {
    const own = f.path.split('/')[0];
    return [...f.text.matchAll(/from '(\.\.?\/[^']*)'/g)]
      .map((m) => join(f.path, '..', m[1]).split('/')[0])
      .filter((folder) => folder !== own);
  };

  it('import no area: they get ports, and use only core/, store/ and contract/', () => {
    const strays = files.filter((f) => ENGINES.some((e) => f.path.startsWith(e)))
      .flatMap((f) => foldersImported(f).filter((d) => !['core', 'store', 'contract'].includes(d)).map((d) => `${f.path} imports ${d}/`));
    expect(strays).toEqual([]);
  });

  it('are seen importing by the rule', () => {
    expect(foldersImported({ path: 'engines/x.ts', text: "import { a } from '../emails/index.js';\nimport { b } from './y.js';" })).toEqual(['emails']);
  });
});
