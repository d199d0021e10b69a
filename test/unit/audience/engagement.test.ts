import { describe, expect, it } from 'vitest';
import { engagementTier } from '../../../src/contacts/engagement.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-06-01T12:00:00Z');
const ago = (days: number) => NOW - days * DAY;

describe('engagement tier rule', () => {
  it('has no data without sends or engagement', () => {
    expect(engagementTier({ firstSentAt: null, lastEngagedAt: null }, NOW)).toBe('no_data');
  });

  it('ranks by the last open or click when there is one', () => {
    const cases: Array<[number, string]> = [[0, 'engaged'], [30, 'engaged'], [30.001, 'at_risk'], [90, 'at_risk'], [90.001, 'inactive'], [180, 'inactive'], [180.001, 'cold'], [900, 'cold']];
    for (const [days, tier] of cases) {
      expect(engagementTier({ firstSentAt: ago(1000), lastEngagedAt: ago(days) }, NOW), `${days} days`).toBe(tier);
      // Engagement without a recorded send counts the same.
      expect(engagementTier({ firstSentAt: null, lastEngagedAt: ago(days) }, NOW), `${days} days, no send`).toBe(tier);
    }
  });

  it('ranks a never-engaged address by its first send, new for 30 days', () => {
    const cases: Array<[number, string]> = [[0, 'new'], [30, 'new'], [30.001, 'at_risk'], [90, 'at_risk'], [91, 'inactive'], [180, 'inactive'], [181, 'cold']];
    for (const [days, tier] of cases) {
      expect(engagementTier({ firstSentAt: ago(days), lastEngagedAt: null }, NOW), `${days} days`).toBe(tier);
    }
  });

  it('prefers recent engagement over a recent first send', () => {
    expect(engagementTier({ firstSentAt: ago(1), lastEngagedAt: ago(0) }, NOW)).toBe('engaged');
    expect(engagementTier({ firstSentAt: ago(1), lastEngagedAt: ago(60) }, NOW)).toBe('at_risk');
  });
});
