import { writeFileSync } from 'node:fs';
import { fmt } from './lib.js';

// The figures of a run side by side with their ceilings and targets: printed
// as the last table of `npm run bench`, and written to bench/last-run.json
// (git-ignored) for whoever compares runs.

export interface Figure {
  name: string;
  unit: string;
  value: number;
  /** The ceiling measured in the same run; for a latency, the ceiling's own latency. */
  ceiling: number;
  /** The least ratio of value to ceiling asked for, or null where none is set. */
  target: number | null;
  note?: string;
}

export const LAST_RUN_FILE = new URL('./last-run.json', import.meta.url);

export function writeFigures(figures: Figure[]): void {
  const rows = figures.map((f) => ({ ...f, ratio: f.ceiling > 0 ? f.value / f.ceiling : NaN }));
  console.log('targets: each figure as a ratio to its ceiling in this run');
  for (const r of rows) {
    const verdict = r.target === null ? '' : r.ratio >= r.target ? `  target ${fmt(r.target * 100)}%: met` : `  target ${fmt(r.target * 100)}%: not met`;
    console.log(`  ${r.name}: ${fmt(r.value, r.unit === 'ms' ? 1 : 0)} ${r.unit} against ${fmt(r.ceiling, r.unit === 'ms' ? 1 : 0)}, ${fmt(r.ratio * 100, 1)}%${verdict}${r.note ? ` (${r.note})` : ''}`);
  }
  writeFileSync(LAST_RUN_FILE, `${JSON.stringify(rows.map(({ name, value, ceiling, ratio, target, unit, note }) => ({ name, value, ceiling, ratio, target, unit, ...(note && { note }) })), null, 2)}\n`);
  console.log(`\nwritten to ${LAST_RUN_FILE.pathname}`);
}
