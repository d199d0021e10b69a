import { describe, expect, it } from 'vitest';
import { replyText, smtpError } from '../../../src/smtp/listener.js';

describe('SMTP reply text', () => {
  it('is one line of printable ASCII whatever the message holds', () => {
    expect(replyText('The domain ‘bücher.test’ of “Zoë” (RFC 5322 §2.1.1)')).toBe('The domain \'bucher.test\' of "Zoe" (RFC 5322 section 2.1.1)');
    expect(replyText('漢字 and\r\nBcc: evil@x.test\ttab')).toBe('?? and Bcc: evil@x.test?tab');
    expect(replyText('x'.repeat(500))).toHaveLength(400);
    expect(smtpError(550, '5.1.1', 'Naïve ✓').message).toBe('5.1.1 Naive ?');
  });
});
