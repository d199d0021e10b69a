import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/core/errors.js';
import {
  checkScheduleTime, listUnsubscribeOf, MAX_RECIPIENTS, normaliseEmail, type ContentBody,
} from '../../../src/emails/email-input.js';

const NOW = Date.parse('2026-11-21T09:00:00Z');
const base: ContentBody = { from: 'Ann <ann@example.com>', to: 'bob@example.org', subject: 'Hi', text: 'Hello' };

function failure(body: ContentBody): { param?: string; message: string } {
  try {
    normaliseEmail(body, NOW);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('validation_error');
    return { param: (err as AppError).param, message: (err as AppError).message };
  }
  throw new Error('expected a validation error');
}

describe('normaliseEmail', () => {
  it('derives the domain from from and collects unique recipients across to, cc and bcc', () => {
    const d = normaliseEmail({ ...base, from: 'Ann <Ann@Example.COM>', to: ['bob@b.test', 'Carol <carol@c.test>'], cc: 'BOB@b.test', bcc: ['dan@d.test'] }, NOW);
    expect(d.fromDomain).toBe('example.com');
    expect(d.recipients).toEqual([
      { email: 'bob@b.test', kind: 'to', domain: 'b.test' },
      { email: 'carol@c.test', kind: 'to', domain: 'c.test' },
      { email: 'dan@d.test', kind: 'bcc', domain: 'd.test' },
    ]);
    expect(d.to).toEqual(['bob@b.test', 'Carol <carol@c.test>']);
    expect(d.cc).toEqual(['BOB@b.test']);
  });

  it('names the field at fault', () => {
    expect(failure({ ...base, from: 'nobody' }).param).toBe('from');
    expect(failure({ ...base, to: ['ok@x.test', 'broken'] }).param).toBe('to.1');
    expect(failure({ ...base, to: [] }).param).toBe('to');
    expect(failure({ ...base, cc: 'a@x.test, b@x.test' }).param).toBe('cc');
    expect(failure({ ...base, text: undefined }).param).toBe('html');
    expect(failure({ ...base, subject: 'a\r\nBcc: x@y.test' }).param).toBe('subject');
    expect(failure({ ...base, tags: ['ok', ' '] }).param).toBe('tags.1');
  });

  it(`allows ${MAX_RECIPIENTS} recipients, not more`, () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => `r${i}@x.test`);
    expect(normaliseEmail({ ...base, to: many(30), bcc: many(50).slice(30) }, NOW).recipients).toHaveLength(50);
    expect(failure({ ...base, to: many(30), bcc: many(51).slice(30) }).message).toMatch(/at most 50 recipients/);
  });

  it('refuses structural, malformed and doubled headers', () => {
    expect(failure({ ...base, headers: { Subject: 'x' } }).param).toBe('headers.Subject');
    expect(failure({ ...base, headers: { 'content-type': 'text/plain' } }).param).toBe('headers.content-type');
    expect(failure({ ...base, headers: { 'Bad Name': 'x' } }).param).toBe('headers.Bad Name');
    expect(failure({ ...base, headers: { 'X-A': 'one\r\nBcc: x@y.test' } }).param).toBe('headers.X-A');
    expect(failure({ ...base, headers: { 'X-A': '1', 'x-a': '2' } }).param).toBe('headers.x-a');
    expect(normaliseEmail({ ...base, headers: { 'X-Campaign': 'fall' } }, NOW).headers).toEqual({ 'X-Campaign': 'fall' });
  });

  it('checks attachments: exactly one source, a name with inline content, base64', () => {
    expect(failure({ ...base, attachments: [{ filename: 'a.txt' }] }).param).toBe('attachments.0');
    expect(failure({ ...base, attachments: [{ content: 'aGk=', attachment_id: 'att_x', filename: 'a.txt' }] }).param).toBe('attachments.0');
    expect(failure({ ...base, attachments: [{ content: 'aGk=' }] }).param).toBe('attachments.0.filename');
    expect(failure({ ...base, attachments: [{ content: 'not base64!', filename: 'a.txt' }] }).param).toBe('attachments.0.content');
    expect(failure({ ...base, attachments: [{ content: 'aGk=', filename: '../etc/passwd' }] }).param).toBe('attachments.0.filename');
    expect(failure({ ...base, attachments: [{ content: 'aGk=', filename: 'a', content_type: 'nonsense' }] }).param).toBe('attachments.0.content_type');
    const d = normaliseEmail({ ...base, attachments: [{ content: 'aGk=', filename: 'report.pdf' }, { attachment_id: 'att_1', content_id: 'logo' }] }, NOW);
    expect(d.attachments[0]).toMatchObject({ kind: 'inline', filename: 'report.pdf', contentType: 'application/pdf' });
    expect(d.attachments[0].kind === 'inline' && d.attachments[0].content.toString()).toBe('hi');
    expect(d.attachments[1]).toMatchObject({ kind: 'upload', attachmentId: 'att_1', contentId: 'logo', param: 'attachments.1.attachment_id' });
  });
});

describe('listUnsubscribeOf', () => {
  it('reads RFC 2369 URIs and RFC 8058 one-click', () => {
    expect(listUnsubscribeOf({})).toBeUndefined();
    expect(listUnsubscribeOf({ 'List-Unsubscribe': '<mailto:u@x.test>, <https://x.test/u/1>' }))
      .toEqual({ url: 'https://x.test/u/1', mailto: 'mailto:u@x.test', oneClick: false });
    expect(listUnsubscribeOf({ 'List-Unsubscribe': '<https://x.test/u/1>', 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' }))
      .toEqual({ url: 'https://x.test/u/1', oneClick: true });
  });

  it('refuses what receivers would not honour', () => {
    expect(() => listUnsubscribeOf({ 'List-Unsubscribe': 'https://x.test/u' })).toThrow(/comma list/);
    expect(() => listUnsubscribeOf({ 'List-Unsubscribe': '<http://x.test/u>', 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' })).toThrow(/https/);
    expect(() => listUnsubscribeOf({ 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' })).toThrow(/needs a List-Unsubscribe/);
    expect(() => listUnsubscribeOf({ 'List-Unsubscribe': '<https://a.test/>, <https://b.test/>' })).toThrow(/at most one/);
  });
});

describe('checkScheduleTime', () => {
  it('takes a time within the skew allowance as now, refuses the past and the far future', () => {
    expect(checkScheduleTime('in 5 minutes', NOW)).toBe(NOW + 300_000);
    expect(checkScheduleTime(new Date(NOW - 30_000).toISOString(), NOW)).toBeUndefined();
    expect(() => checkScheduleTime(new Date(NOW - 120_000).toISOString(), NOW)).toThrow(/in the past/);
    expect(() => checkScheduleTime('in 31 days', NOW)).toThrow(/more than 30 days/);
    expect(() => checkScheduleTime('next tuesday', NOW)).toThrow(/ISO 8601/);
  });
});
