import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { isGoneLocalOwner, localOwner, newLeaseOwner, releaseGoneOwners } from '../../src/core/lease-owner.js';
import { newId } from '../../src/core/ids.js';
import { goneLocalOwner, gonePid } from '../helpers/lease-owners.js';

// Leases name their process (host, pid, a random part), so a process starting
// on the same host can free at once what a crashed predecessor left leased.

const silent = pino({ level: 'silent' });

describe('lease owners', () => {
  it('tells the owners of gone processes of this host from every other', () => {
    expect(isGoneLocalOwner(newLeaseOwner())).toBe(false);
    expect(isGoneLocalOwner(goneLocalOwner())).toBe(true);
    // This pid, but not made by this process: an earlier process with the same pid (a restarted container).
    expect(isGoneLocalOwner(localOwner(process.pid, '12345678'))).toBe(true);
    // A running process.
    expect(isGoneLocalOwner(localOwner(process.ppid, '12345678'))).toBe(false);
    // Another host, another container (pid namespace) under the same host name, or another form:
    // nothing can be known, the lease runs out as usual.
    expect(isGoneLocalOwner(`elsewhere.example:${gonePid()}:12345678`)).toBe(false);
    if (process.platform === 'linux') expect(isGoneLocalOwner(`${hostname()}/1:${gonePid()}:12345678`)).toBe(false);
    expect(isGoneLocalOwner(newId('job'))).toBe(false);
  });

  it.skipIf(process.platform !== 'linux')('does not take the owners of another machine with this host name and pid namespace number for its own', () => {
    // Containers given the same host name on machines set up alike often get the same pid namespace number too.
    const pidNamespace = /\d+/.exec(readlinkSync('/proc/self/ns/pid'))![0];
    const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const otherBoot = bootId.replace(/^./, (c) => (c === '0' ? '1' : '0'));
    // Named by host name and pid namespace alone, the other machine's leases looked like this host's.
    expect(isGoneLocalOwner(`${hostname()}/${pidNamespace}:${gonePid()}:12345678`)).toBe(false);
    expect(isGoneLocalOwner(`${hostname()}/${pidNamespace}:${process.pid}:12345678`)).toBe(false);
    expect(isGoneLocalOwner(`${hostname()}/${bootId}/${pidNamespace}:${gonePid()}:12345678`)).toBe(true);
    expect(isGoneLocalOwner(`${hostname()}/${otherBoot}/${pidNamespace}:${gonePid()}:12345678`)).toBe(false);
    expect(isGoneLocalOwner(`${hostname()}/${otherBoot}/${pidNamespace}:${process.pid}:12345678`)).toBe(false);
  });

  it('frees only the gone owners, and counts what it freed', async () => {
    const gone = goneLocalOwner();
    const live = newLeaseOwner();
    const released: string[][] = [];
    const freed = await releaseGoneOwners('rows', silent, async () => [gone, live], async (owners) => (released.push(owners), 3));
    expect(freed).toBe(3);
    expect(released).toEqual([[gone]]);
    expect(await releaseGoneOwners('rows', silent, async () => [live], async () => { throw new Error('not called'); })).toBe(0);
    // A failure leaves the leases to run out.
    expect(await releaseGoneOwners('rows', silent, async () => { throw new Error('store closed'); }, async () => 1)).toBe(0);
  });
});
