import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import { hostname as machineName } from 'node:os';
import { join } from 'node:path';

// The server's own postmaster mailbox, for mail to "postmaster" without a
// domain (RFC 5321 §4.5.1) when no domain of the server's name receives mail
// here: a Maildir in the data directory, which any mail reader opens
// (`mutt -f data/postmaster`), as a Postfix host keeps root's mail in a local
// mailbox. It belongs to no workspace, so no API key can read it.

export interface PostmasterMailbox {
  /** Whether one more message fits. */
  hasRoom(): Promise<boolean>;
  /** Writes the message durably (synced, then moved into new/); returns its file name. */
  deliver(message: { raw: Buffer }): Promise<string>;
  /** Deletes messages that arrived before `before` (ms); returns how many. */
  purgeBefore(before: number): Promise<number>;
}

/** Messages kept at most; beyond, RCPT is answered 452 (mailbox full) until some are read or purged. */
export const POSTMASTER_MAX_MESSAGES = 1_000;

export function postmasterMaildir(dir: string, opts: { clock: { now(): number }; maxMessages?: number }): PostmasterMailbox {
  const maxMessages = opts.maxMessages ?? POSTMASTER_MAX_MESSAGES;
  const folders = ['tmp', 'new', 'cur'] as const;
  let made: Promise<void> | undefined;
  const ensureFolders = () => (made ??= (async () => {
    for (const f of folders) await mkdir(join(dir, f), { recursive: true, mode: 0o700 });
  })().catch((err: unknown) => {
    made = undefined;
    throw err;
  }));
  // A Maildir name is unique on its own: time, process, a random part, host.
  const host = machineName().replace(/[/:]/g, '_');
  const uniqueName = (now: number) => `${Math.floor(now / 1000)}.M${(now % 1000) * 1000}P${process.pid}R${randomBytes(8).toString('hex')}.${host}`;

  async function syncDir(path: string): Promise<void> {
    const handle = await open(path, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  const countIn = async (folder: string) => (await readdir(join(dir, folder))).length;

  return {
    async hasRoom() {
      await ensureFolders();
      return (await countIn('new')) + (await countIn('cur')) < maxMessages;
    },

    async deliver({ raw }) {
      await ensureFolders();
      const name = uniqueName(opts.clock.now());
      const tmpPath = join(dir, 'tmp', name);
      // The listener's trace fields carry the envelope sender; a local delivery agent adds the mailbox.
      const head = Buffer.from('Delivered-To: postmaster\r\n');
      const file = await open(tmpPath, 'wx', 0o600);
      try {
        await file.writeFile(Buffer.concat([head, raw]));
        await file.sync();
      } finally {
        await file.close();
      }
      await rename(tmpPath, join(dir, 'new', name));
      await syncDir(join(dir, 'new'));
      return name;
    },

    async purgeBefore(before) {
      await ensureFolders();
      let purged = 0;
      for (const folder of folders) {
        for (const name of await readdir(join(dir, folder))) {
          const path = join(dir, folder, name);
          const info = await stat(path).catch(() => undefined);
          if (info && info.mtimeMs < before) {
            await unlink(path).catch(() => undefined);
            purged++;
          }
        }
      }
      return purged;
    },
  };
}
