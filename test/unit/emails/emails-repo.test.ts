import { describe, expect, it } from 'vitest';
import { useTempStore } from '../../helpers/store.js';
import { eventRows } from '../../../src/events/index.js';
import { getEmail, insertEmails, type NewEmail } from '../../../src/emails/emails.repo.js';

const temp = useTempStore();

function newEmail(id: string, fields: Partial<NewEmail> = {}): NewEmail {
  return {
    id, workspaceId: 'ws_repo', domainId: null, mode: 'live', from: 'Ann <ann@acme.test>', fromDomain: 'acme.test',
    to: ['reader@remote.test'], cc: [], bcc: [], replyTo: [], subject: 'Hi', html: null, text: 'Hello.', headers: {}, tags: [],
    status: 'pending', scheduledAt: null, messageId: `<${id}@acme.test>`, shownRecipients: null, templateId: null, templateVersion: null,
    resentFrom: null, broadcastId: null, contactId: null, attachments: [], now: 1_700_000_000_000,
    recipients: [{ id: `rcpt_${id}`, email: 'reader@remote.test', kind: 'to', domain: 'remote.test', status: 'queued', detail: null }],
    ...fields,
  };
}

describe('insertEmails', () => {
  it('writes each email with its content, recipients, tags and the rows alongside, every position where it belongs', async () => {
    const es = [
      newEmail('em_a', { tags: ['one', 'two'], html: '<p>a</p>' }),
      newEmail('em_b', { to: ['x@remote.test', 'y@other.test'], recipients: [
        { id: 'rcpt_b1', email: 'x@remote.test', kind: 'to', domain: 'remote.test', status: 'queued', detail: null },
        { id: 'rcpt_b2', email: 'y@other.test', kind: 'to', domain: 'other.test', status: 'suppressed', detail: 'suppressed: bounced' },
      ] }),
    ];
    const events = eventRows(es.map((e) => ({ workspaceId: e.workspaceId, emailId: e.id, domainId: null, kind: 'queued', from: e.from, subject: e.subject, data: {}, now: e.now })));
    await temp.store.write((tx) => insertEmails(tx, es, [{ table: 'events', rows: events }, { table: 'outbound_queue', rows: [] }]));

    const a = await getEmail(temp.store.db, 'ws_repo', 'em_a');
    expect(a).toMatchObject({ html: '<p>a</p>', text: 'Hello.', tags: ['one', 'two'] });
    const b = await getEmail(temp.store.db, 'ws_repo', 'em_b');
    expect(b?.recipients.map((r) => [r.email, r.status])).toEqual([['x@remote.test', 'queued'], ['y@other.test', 'suppressed']]);
    const positions = new Map((await temp.store.db.selectFrom('emails').select(['id', 'pos']).execute()).map((r) => [r.id, Number(r.pos)]));
    const tagged = await temp.store.db.selectFrom('email_tags').select(['email_id', 'email_pos', 'tag']).orderBy('tag').execute();
    expect(tagged.map((r) => [r.email_id, Number(r.email_pos), r.tag])).toEqual([['em_a', positions.get('em_a'), 'one'], ['em_a', positions.get('em_a'), 'two']]);
    const written = await temp.store.db.selectFrom('events').select(['email_id', 'type']).orderBy('pos').execute();
    expect(written).toEqual([{ email_id: 'em_a', type: 'email.queued' }, { email_id: 'em_b', type: 'email.queued' }]);
  });

  it('writes text that holds half of a surrogate pair alone (text Mailroom itself cut), with U+FFFD in its place', async () => {
    await temp.store.write((tx) => insertEmails(tx, [newEmail('em_s', { subject: 'a\ud800b', html: '<p>\udc00</p>', tags: ['t\ud83d'] })]));
    const stored = await getEmail(temp.store.db, 'ws_repo', 'em_s');
    // SQLite keeps the bytes its driver wrote for the half, which read back as three U+FFFD; PostgreSQL one.
    expect(stored!.subject).toMatch(/^a\ufffd+b$/);
    expect(stored!.html).toMatch(/^<p>\ufffd+<\/p>$/);
    // A column of JSON text keeps the escape as JSON wrote it.
    expect(stored!.tags).toEqual(['t\ud83d']);
  });
});
