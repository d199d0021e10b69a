import { describe, expect, it } from 'vitest';
// @ts-expect-error: the dashboard's modules are plain JavaScript checked on their own (tsconfig.dashboard.json).
import { formatTime } from '../../../src/dashboard/assets/ui.js';

// Times in the dashboard's lists: the year only where it is not this half-year's,
// so a list's time column stays narrow enough for a tablet.

const DAY = 86_400_000;
const at = (msFromNow: number) => new Date(Date.now() + msFromNow).toISOString();
const year = (msFromNow: number) => String(new Date(Date.now() + msFromNow).getFullYear());

describe('formatTime', () => {
  it('leaves the year out within six months of now, either way', () => {
    for (const offset of [0, -3 * DAY, 5 * DAY, -150 * DAY, 150 * DAY]) {
      const shown = formatTime(at(offset)) as string;
      expect(shown).not.toContain(year(offset));
      expect(shown).toMatch(/\d{1,2}:\d{2}/);
    }
  });

  it('shows the year further off, and the seconds when asked', () => {
    expect(formatTime(at(-300 * DAY))).toContain(year(-300 * DAY));
    expect(formatTime(at(400 * DAY))).toContain(year(400 * DAY));
    expect(formatTime(at(0), true)).toMatch(/\d{1,2}:\d{2}:\d{2}/);
    expect(formatTime(at(0))).not.toMatch(/\d{1,2}:\d{2}:\d{2}/);
  });

  it('gives back what it cannot read as a time', () => {
    expect(formatTime('not a time')).toBe('not a time');
  });
});
