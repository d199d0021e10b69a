// A process with a Mailroom store open, as a server has it: opens the store
// of the environment (MAILROOM_DATA_DIR, MAILROOM_DATABASE_URL, the master
// secret), creates the workspace named by argv[2], says "written", and keeps
// the store open, idle, until it is killed. Killed with SIGKILL, it leaves
// the store as a crash does: its -wal and -shm files beside it.
import { loadConfig } from '../../src/config.js';
import { openStoreServices } from '../../src/store-services.js';

const services = await openStoreServices(loadConfig(process.env));
await services.workspaces.create({ name: process.argv[2] });
process.send!('written');
setInterval(() => undefined, 60_000);
