export { emailsService, type EmailsService, type EmailsDeps, type Sender } from './emails.service.js';
export { emailsRoutes } from './emails.routes.js';
export { emailsLedger, aggregateStatus, type LedgerDeps } from './emails.ledger.js';
export { runDuePoller } from './due-poller.js';
export type { HtmlRewriter, SenderDomain, SendersPort, SuppressionsPort } from './ports.js';
export type { Email, EmailSummary } from './emails.repo.js';
