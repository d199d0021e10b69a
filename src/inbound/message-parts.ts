import type { ParsedMail } from 'mailparser';
import type { authenticate } from 'mailauth';
import type { AuthResults } from './inbound.repo.js';
import type { ParsedParts } from './parse-pool.js';

// What a parsed message and mailauth's results come down to, on whichever
// thread did the work. The parsing threads run these same functions: the
// pool writes their source text into its worker, so each must stand alone,
// using nothing from outside its own body.

/** The parts of a parsed message the fields are made of, as data that can be posted between threads. */
export function partsOf(mail: ParsedMail): ParsedParts {
  return {
    headerLines: mail.headerLines,
    contentType: mail.headers.get('content-type') as ParsedParts['contentType'],
    from: mail.from, to: mail.to, cc: mail.cc, replyTo: mail.replyTo,
    subject: mail.subject, text: mail.text, html: mail.html, messageId: mail.messageId,
    attachments: mail.attachments.map((a) => ({
      filename: a.filename, contentType: a.contentType, size: a.size, cid: a.cid,
      contentDisposition: a.contentDisposition, content: a.content,
    })),
  };
}

type Authenticated = Awaited<ReturnType<typeof authenticate>>;

/** The results of mailauth's checks, as stored. */
export function authResultsOf(res: Pick<Authenticated, 'spf' | 'dkim' | 'dmarc' | 'headers'>): AuthResults {
  // mailauth spells a temporary error 'temperr' in places; RFC 8601 §2.7 says 'temperror'.
  const spelled = (r: string) => (r === 'temperr' ? 'temperror' : r);
  const authResults = /(?:^|\r?\n)Authentication-Results:\s*([\s\S]*?)(?=\r?\n(?![ \t])|$)/i.exec(res.headers)?.[1] ?? '';
  return {
    spf: res.spf ? { result: spelled(res.spf.status.result), domain: res.spf.domain ?? null } : { result: 'none', domain: null },
    dkim: res.dkim.results
      .filter((r) => Boolean(r.signingDomain))
      .map((r) => ({ result: spelled(r.status.result), domain: r.signingDomain, selector: r.selector ?? null, aligned: Boolean(r.status.aligned) })),
    dmarc: res.dmarc
      ? { result: spelled(res.dmarc.status.result), policy: res.dmarc.policy ?? null, domain: res.dmarc.domain ?? null }
      : { result: 'none', policy: null, domain: null },
    authentication_results: authResults.replace(/\r?\n[ \t]+/g, ' ').trim(),
  };
}
