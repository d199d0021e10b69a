import { describe, expect, it } from 'vitest';
import { aggregateStatus } from '../../../src/emails/outcomes.js';
import { sinkDeliver, sinkVerdict } from '../../../src/delivery/sink.js';
import { quotaPeriods, secondsToUtcMidnight } from '../../../src/workspaces/quota.js';

describe('aggregateStatus', () => {
  it('stays open while any recipient is queued or deferred', () => {
    expect(aggregateStatus(['delivered', 'deferred'])).toBeUndefined();
    expect(aggregateStatus(['queued'])).toBeUndefined();
  });

  it('is delivered when at least one recipient accepted, failed when none did', () => {
    expect(aggregateStatus(['delivered', 'bounced', 'suppressed'])).toBe('delivered');
    expect(aggregateStatus(['bounced', 'suppressed', 'failed'])).toBe('failed');
  });
});

describe('the sink simulation', () => {
  it('picks the outcome from the local part on the test domain, ignoring +tags and case', () => {
    expect(sinkVerdict('bounced@mailroom.test')).toBe('bounced');
    expect(sinkVerdict('Delayed+7@MailRoom.test')).toBe('delayed');
    expect(sinkVerdict('complained@mailroom.test')).toBe('complained');
    expect(sinkVerdict('bounced@example.com')).toBe('delivered');
    expect(sinkVerdict('anyone@mailroom.test')).toBe('delivered');
  });

  it('defers delayed@ on the first attempt only, and classifies the simulated bounce', () => {
    const first = sinkDeliver(['delayed@mailroom.test', 'bounced@mailroom.test', 'complained@mailroom.test'], 0);
    expect(first.outcomes.map((o) => [o.status, o.smtp_code])).toEqual([['deferred', 451], ['bounced', 550], ['delivered', 250]]);
    expect(first.outcomes[1].bounce).toMatchObject({ bounce_type: 'hard', bounce_subtype: 'no_mailbox' });
    expect([...first.complained]).toEqual(['complained@mailroom.test']);
    expect(sinkDeliver(['delayed@mailroom.test'], 1).outcomes[0].status).toBe('delivered');
  });
});

describe('send quota periods', () => {
  it('names the UTC day and month', () => {
    expect(quotaPeriods(Date.parse('2026-11-30T23:59:59Z'))).toEqual({ day: 'd:2026-11-30', month: 'm:2026-11' });
  });

  it('counts the seconds to the next UTC midnight, at least one', () => {
    expect(secondsToUtcMidnight(Date.parse('2026-11-21T23:00:00Z'))).toBe(3600);
    expect(secondsToUtcMidnight(Date.parse('2026-11-21T23:59:59.500Z'))).toBe(1);
    expect(secondsToUtcMidnight(Date.parse('2026-11-21T00:00:00Z'))).toBe(86_400);
  });
});
