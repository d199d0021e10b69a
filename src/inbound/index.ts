export { inboundService, type InboundService, type InboundDeps } from './inbound.service.js';
export { inboundRoutes } from './inbound.routes.js';
export { cachedResolver } from './dns-cache.js';
export { postmasterMaildir } from './postmaster-maildir.js';
export { parseReturnPath, returnPathFor, recipientTag, type ReturnPath } from './return-path.js';
export type { InboundEmail, InboundEmailSummary } from './inbound.repo.js';
export { ParsePool } from './parse-pool.js';
