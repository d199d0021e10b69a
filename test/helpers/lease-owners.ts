import { spawnSync } from 'node:child_process';
import { localOwner } from '../../src/core/lease-owner.js';

/** The pid of a process that has come and gone. */
export const gonePid = (): number => spawnSync(process.execPath, ['-e', '']).pid!;

/** A lease owner of this host whose process has come and gone: what a crash leaves behind. */
export const goneLocalOwner = (): string => localOwner(gonePid(), '0badf00d');
