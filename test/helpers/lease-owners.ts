import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';

/** The pid of a process that has come and gone. */
export const gonePid = (): number => spawnSync(process.execPath, ['-e', '']).pid!;

/** A lease owner of this host whose process has come and gone: what a crash leaves behind. */
export const goneLocalOwner = (): string => `${hostname()}:${gonePid()}:0badf00d`;
