import { randomBytes } from 'node:crypto';
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Logger } from 'pino';

// A lease owner names the process that holds the lease: where it runs, its
// pid, and a random part, since a pid is handed out again once its process is
// gone (a restarted container is pid 1 again). A process starting in the same
// place can then tell a predecessor's leases, left by a crash, from the
// leases of a process still running, and free them at once instead of
// waiting for them to run out.

/**
 * Where pids mean the same process: the host name and, on Linux, the boot
 * of the kernel and its pid namespace. The pid namespace keeps two containers
 * that share a data directory (and perhaps a host name) from taking each
 * other's pids for their own; the boot id keeps two machines apart whose
 * containers have the same host name and, as the numbers of namespaces are
 * handed out alike on machines set up alike, the same pid namespace number.
 */
const PLACE = (() => {
  try {
    const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    return `${hostname()}/${bootId}/${/\d+/.exec(readlinkSync('/proc/self/ns/pid'))?.[0] ?? ''}`;
  } catch {
    return hostname();
  }
})();

/** The owners this process has made: its own, whatever their pid says. */
const issued = new Set<string>();

/** The owner name for a process of this place; `tag` is 8 hex digits. */
export function localOwner(pid: number, tag: string): string {
  return `${PLACE}:${pid}:${tag}`;
}

/** A new lease owner of this process. */
export function newLeaseOwner(): string {
  const owner = localOwner(process.pid, randomBytes(4).toString('hex'));
  issued.add(owner);
  return owner;
}

/**
 * Whether `owner` names a process of this place that is no longer running.
 * False whenever that cannot be known: another host or container, an owner
 * of another form, or a pid that is running (maybe a stranger reusing it:
 * its leases then run out as usual).
 */
export function isGoneLocalOwner(owner: string): boolean {
  const match = /^(.+):(\d+):[0-9a-f]{8}$/.exec(owner);
  if (!match || match[1] !== PLACE) return false;
  const pid = Number(match[2]);
  if (pid === process.pid) return !issued.has(owner);
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * Frees the leases that owners of this place, now gone, still hold on `what`:
 * `owners` lists who holds leases, `release` frees those of the owners given
 * and says how many it freed. Returns that count; a failure is logged, and
 * the leases then run out as usual.
 */
export async function releaseGoneOwners(what: string, logger: Logger, owners: () => Promise<string[]>,
  release: (gone: string[]) => Promise<number>): Promise<number> {
  try {
    const gone = (await owners()).filter(isGoneLocalOwner);
    const freed = gone.length === 0 ? 0 : await release(gone);
    if (freed > 0) logger.info({ freed }, `${what} leased by stopped processes are taken up again`);
    return freed;
  } catch (err) {
    logger.error({ err }, `could not free the leases of stopped processes on ${what}`);
    return 0;
  }
}
