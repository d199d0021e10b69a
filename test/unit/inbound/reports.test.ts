import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fieldsOf, readHere } from '../../../src/inbound/parse-message.js';
import { bounceDetails, parseDeliveryStatus, parseFeedbackReport, readReport, type DeliveryStatusReport, type FeedbackReport } from '../../../src/inbound/reports.js';

// The DSN and ARF fixtures are shaped like what Postfix, Gmail, Exchange
// Online and the big mailbox providers' feedback loops send.

const fixture = (name: string) => readFileSync(new URL(`../../fixtures/${name}`, import.meta.url));
const parseMessage = async (raw: Buffer) => fieldsOf((await readHere(raw)).parts);
const reportOf = async (name: string) => readReport((await parseMessage(fixture(name))).report);

describe('delivery status notifications (RFC 3464)', () => {
  it('reads a Postfix bounce for an unknown user as a hard bounce', async () => {
    const report = (await reportOf('dsn-postfix-user-unknown.eml')) as DeliveryStatusReport;
    expect(report).toEqual({
      kind: 'dsn', reportingMta: 'mail.remote.test',
      recipients: [{
        action: 'failed', finalRecipient: 'nobody@remote.test', originalRecipient: 'nobody@remote.test', status: '5.1.1',
        remoteMta: 'mx.remote.test',
        diagnostic: '550 5.1.1 <nobody@remote.test>: Recipient address rejected: User unknown in local recipient table',
      }],
    });
    expect(bounceDetails(report.recipients[0], report.reportingMta)).toEqual({
      bounce_type: 'hard', bounce_subtype: 'no_mailbox', recommended_action: 'suppress_recipient',
      smtp_code: 550, enhanced_status_code: '5.1.1', provider: 'unknown',
      original_error: '550 5.1.1 <nobody@remote.test>: Recipient address rejected: User unknown in local recipient table',
    });
  });

  it('reads a Gmail bounce with a folded multi-line reply and a delivered recipient beside it', async () => {
    const report = (await reportOf('dsn-gmail-no-such-user.eml')) as DeliveryStatusReport;
    expect(report.recipients.map((r) => [r.finalRecipient, r.action])).toEqual([['ghost@gmail.test', 'failed'], ['friend@gmail.test', 'delivered']]);
    const details = bounceDetails(report.recipients[0], report.reportingMta);
    expect(details).toMatchObject({
      bounce_type: 'hard', bounce_subtype: 'no_mailbox', smtp_code: 550, enhanced_status_code: '5.1.1', provider: 'Google',
    });
    expect(details.original_error).toMatch(/^550-5\.1\.1 The email account that you tried to reach does not exist\. .* - gsmtp$/);
  });

  it('reads a full Exchange Online mailbox as a soft bounce', async () => {
    const report = (await reportOf('dsn-exchange-mailbox-full.eml')) as DeliveryStatusReport;
    expect(bounceDetails(report.recipients[0], report.reportingMta)).toMatchObject({
      bounce_type: 'soft', bounce_subtype: 'mailbox_full', recommended_action: 'retry_later',
      smtp_code: 554, enhanced_status_code: '5.2.2', provider: 'Microsoft',
    });
  });

  it('reads a delay warning as no failure', async () => {
    const report = (await reportOf('dsn-delayed.eml')) as DeliveryStatusReport;
    expect(report.recipients).toEqual([expect.objectContaining({ action: 'delayed', status: '4.4.1', finalRecipient: 'slow@remote.test' })]);
  });

  it('reads a NUL in a report as U+FFFD, which every store can keep', async () => {
    const raw = Buffer.from([
      'From: MAILER-DAEMON@remote.test', 'To: bounce@acme.test', 'Subject: Undelivered', 'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type=delivery-status; boundary="b"', '', '--b', 'Content-Type: text/plain', '', 'Gone.',
      '--b', 'Content-Type: message/delivery-status', '', 'Reporting-MTA: dns; mx.remote.test', '',
      'Final-Recipient: rfc822; gone@remote.test', 'Action: failed', 'Status: 5.1.1', 'Diagnostic-Code: smtp; 550 5.1.1 no\u0000such user', '--b--', '',
    ].join('\r\n'));
    const report = readReport((await parseMessage(raw)).report) as DeliveryStatusReport;
    expect(report.recipients[0]).toMatchObject({ action: 'failed', diagnostic: '550 5.1.1 no\uFFFDsuch user' });
  });

  it('classifies a block without a diagnostic from its status alone', () => {
    const report = parseDeliveryStatus('Reporting-MTA: dns; mx.yahoodns.net\n\nFinal-Recipient: rfc822;<gone@x.test>\nAction: failed\nStatus: 5.1.1 (unknown user)\n');
    expect(report.recipients[0]).toEqual({ action: 'failed', finalRecipient: 'gone@x.test', status: '5.1.1' });
    expect(bounceDetails(report.recipients[0], report.reportingMta)).toMatchObject({
      bounce_type: 'hard', bounce_subtype: 'no_mailbox', smtp_code: null, enhanced_status_code: '5.1.1', provider: 'Yahoo', original_error: '5.1.1',
    });
  });

  it('gives a failed block with no code at all the undefined permanent status', () => {
    const report = parseDeliveryStatus('Reporting-MTA: dns; a.test\n\nFinal-Recipient: rfc822; x@y.test\nAction: failed\n');
    expect(bounceDetails(report.recipients[0], report.reportingMta)).toMatchObject({
      bounce_type: 'undetermined', smtp_code: null, enhanced_status_code: '5.0.0', original_error: '',
    });
  });

  it('skips blocks without an action and survives an empty report', () => {
    expect(parseDeliveryStatus('Reporting-MTA: dns; a.test\n\nFinal-Recipient: rfc822; x@y.test\n').recipients).toEqual([]);
    expect(parseDeliveryStatus('')).toEqual({ kind: 'dsn', recipients: [] });
  });
});

describe('feedback reports (RFC 5965)', () => {
  it('reads the feedback type, the reporter\'s software and the original recipient', async () => {
    expect(await reportOf('arf-abuse.eml')).toEqual({
      kind: 'arf', feedbackType: 'abuse', userAgent: 'Yahoo!-Mail-Feedback/2.0', originalRcptTo: ['reader@yahoo.test'],
    });
  });

  it('reads a report whose recipient is redacted', async () => {
    const report = (await reportOf('arf-redacted.eml')) as FeedbackReport;
    expect(report).toMatchObject({ kind: 'arf', feedbackType: 'abuse', userAgent: 'Hotmail FBL', originalRcptTo: [] });
  });

  it('needs a Feedback-Type', () => {
    expect(parseFeedbackReport('User-Agent: x\nVersion: 1\n')).toBeUndefined();
  });
});

describe('readReport', () => {
  it('ignores messages that are not reports, and reports of other types', async () => {
    expect(readReport({ contentType: 'text/plain', parts: [] })).toBeUndefined();
    expect(readReport({ contentType: 'multipart/report', reportType: 'disposition-notification', parts: [] })).toBeUndefined();
    expect(readReport({ contentType: 'multipart/report', reportType: 'delivery-status', parts: [] })).toBeUndefined();
    const auto = await parseMessage(Buffer.from('From: a@b.test\r\nSubject: Out of office\r\n\r\nAway until Monday.\r\n'));
    expect(readReport(auto.report)).toBeUndefined();
  });
});
