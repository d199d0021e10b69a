import { describe, expect, it } from 'vitest';
import { parseScheduleTime } from '../../../src/emails/schedule-time.js';

const NOW = Date.parse('2026-11-21T09:00:00Z');

describe('parseScheduleTime', () => {
  it.each([
    ['2026-11-21T09:30:00Z', '2026-11-21T09:30:00.000Z'],
    ['2026-11-21T09:30Z', '2026-11-21T09:30:00.000Z'],
    ['2026-11-21T10:30:00+01:00', '2026-11-21T09:30:00.000Z'],
    ['2026-11-21T10:30:00+0100', '2026-11-21T09:30:00.000Z'],
    ['2026-11-21 09:30:00.250z', '2026-11-21T09:30:00.250Z'],
  ])('reads the ISO 8601 date-time %s', (input, iso) => {
    expect(new Date(parseScheduleTime(input, NOW)!).toISOString()).toBe(iso);
  });

  it.each([
    ['in 1 hour', 3_600_000],
    ['in 30 minutes', 30 * 60_000],
    ['in an hour', 3_600_000],
    ['in a minute', 60_000],
    ['In 2 Days', 2 * 86_400_000],
    ['in 45s', 45_000],
    ['in 1 week', 7 * 86_400_000],
    ['  in   10   mins ', 10 * 60_000],
  ])('reads the relative form %j', (input, ms) => {
    expect(parseScheduleTime(input, NOW)).toBe(NOW + ms);
  });

  it.each([
    '2026-11-21T09:30:00', // no offset: the caller's zone is unknown
    '2026-02-30T09:30:00Z', // no such day
    '2026-11-21T24:00:00Z',
    '2026-11-21T09:61:00Z',
    'tomorrow',
    'in 3 fortnights',
    'in -5 minutes',
    '1 hour',
    '',
  ])('refuses %j', (input) => {
    expect(parseScheduleTime(input, NOW)).toBeUndefined();
  });
});
