import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newSecret, signatureHeader } from '../../../src/webhooks/signature.js';
import { retryDelayMs, RETRY_JITTER, RETRY_SCHEDULE_MS } from '../../../src/webhooks/retry-schedule.js';

describe('webhook signatures', () => {
  it('matches the Standard Webhooks reference vector', () => {
    // The example of the Standard Webhooks specification (and of its reference libraries).
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const id = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
    const ts = 1614265330;
    const body = '{"test": 2432232314}';
    expect(signatureHeader([secret], id, ts, body)).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('signs with every secret given, space-separated', () => {
    const a = newSecret();
    const b = newSecret();
    const header = signatureHeader([a, b], 'evt_1', 100, '{}');
    const parts = header.split(' ');
    expect(parts).toHaveLength(2);
    const mac = (s: string) => createHmac('sha256', Buffer.from(s.slice(6), 'base64')).update('evt_1.100.{}').digest('base64');
    expect(parts).toEqual([`v1,${mac(a)}`, `v1,${mac(b)}`]);
  });

  it('makes secrets of 32 random bytes', () => {
    const s = newSecret();
    expect(s).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(s.slice(6), 'base64')).toHaveLength(32);
    expect(newSecret()).not.toBe(s);
  });
});

describe('webhook retry schedule', () => {
  it('tries at once, then 9 more times over about 3 days', () => {
    expect(RETRY_SCHEDULE_MS).toHaveLength(10);
    expect(RETRY_SCHEDULE_MS[0]).toBe(0);
    const total = RETRY_SCHEDULE_MS.reduce((a, b) => a + b, 0);
    expect(total).toBe(((3 * 24 + 3) * 60 + 35) * 60_000 + 5_000);
  });

  it('spreads each wait by the jitter and stops when the schedule is used up', () => {
    expect(retryDelayMs(1, () => 0.5)).toBe(5_000);
    expect(retryDelayMs(1, () => 0)).toBe(5_000 * (1 - RETRY_JITTER));
    expect(retryDelayMs(2, () => 0.999999)).toBeCloseTo(300_000 * (1 + RETRY_JITTER), -1);
    expect(retryDelayMs(9, () => 0.5)).toBe(24 * 3_600_000);
    expect(retryDelayMs(10)).toBeUndefined();
  });
});
