import { mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { postmasterMaildir } from '../../../src/inbound/postmaster-maildir.js';

describe('the postmaster Maildir', () => {
  let dir: string;
  beforeEach(() => {
    dir = join(mkdtempSync(join(tmpdir(), 'mailroom-maildir-')), 'postmaster');
  });
  afterEach(() => rmSync(join(dir, '..'), { recursive: true, force: true }));

  it('keeps each message under a name of its own in new/, with nothing left in tmp/', async () => {
    const mailbox = postmasterMaildir(dir, { clock: { now: () => Date.now() } });
    const names = await Promise.all([1, 2, 3].map((n) => mailbox.deliver({ raw: Buffer.from(`Subject: ${n}\r\n\r\nbody\r\n`) })));
    expect(new Set(names).size).toBe(3);
    expect(readdirSync(join(dir, 'new')).sort()).toEqual([...names].sort());
    expect(readdirSync(join(dir, 'tmp'))).toEqual([]);
    expect(readdirSync(join(dir, 'cur'))).toEqual([]);
    expect(readFileSync(join(dir, 'new', names[1]!), 'latin1')).toBe('Delivered-To: postmaster\r\nSubject: 2\r\n\r\nbody\r\n');
  });

  it('has room up to its limit, counting read messages in cur/ too', async () => {
    const mailbox = postmasterMaildir(dir, { clock: { now: () => Date.now() }, maxMessages: 2 });
    expect(await mailbox.hasRoom()).toBe(true);
    const first = await mailbox.deliver({ raw: Buffer.from('Subject: a\r\n\r\n') });
    rmSync(join(dir, 'new', first));
    await mailbox.deliver({ raw: Buffer.from('Subject: b\r\n\r\n') });
    expect(await mailbox.hasRoom()).toBe(true);
    await mailbox.deliver({ raw: Buffer.from('Subject: c\r\n\r\n') });
    expect(await mailbox.hasRoom()).toBe(false);
  });

  it('purges the messages that arrived before the retention limit, read or not', async () => {
    const now = Date.now();
    const mailbox = postmasterMaildir(dir, { clock: { now: () => now } });
    const old = await mailbox.deliver({ raw: Buffer.from('Subject: old\r\n\r\n') });
    const fresh = await mailbox.deliver({ raw: Buffer.from('Subject: fresh\r\n\r\n') });
    const monthAgo = (now - 30 * 86_400_000) / 1000;
    utimesSync(join(dir, 'new', old), monthAgo, monthAgo);
    expect(await mailbox.purgeBefore(now - 86_400_000)).toBe(1);
    expect(readdirSync(join(dir, 'new'))).toEqual([fresh]);
  });
});
