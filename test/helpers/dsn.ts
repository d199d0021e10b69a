/**
 * A delivery status notification (RFC 3464) as a receiving MTA writes it: a
 * multipart/report whose machine-readable part says that mail to `recipient`
 * failed with `diagnostic`.
 */
export function failureReport(o: { mta: string; recipient: string; diagnostic: string; to?: string }): string {
  return [
    `From: MAILER-DAEMON@${o.mta} (Mail Delivery System)`,
    ...(o.to ? [`To: ${o.to}`] : []),
    'Subject: Undelivered Mail Returned to Sender',
    'Date: Wed, 25 Nov 2026 10:00:00 +0000',
    `Message-ID: <dsn-1@${o.mta}>`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="b1"',
    '',
    '--b1',
    'Content-Type: text/plain',
    '',
    'Your message could not be delivered.',
    '',
    '--b1',
    'Content-Type: message/delivery-status',
    '',
    `Reporting-MTA: dns; ${o.mta}`,
    '',
    `Final-Recipient: rfc822; ${o.recipient}`,
    'Action: failed',
    `Status: ${/\b[245]\.\d{1,3}\.\d{1,3}\b/.exec(o.diagnostic)?.[0] ?? '5.0.0'}`,
    `Remote-MTA: dns; ${o.mta}`,
    `Diagnostic-Code: smtp; ${o.diagnostic}`,
    '',
    '--b1--',
    '',
  ].join('\r\n');
}
