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
