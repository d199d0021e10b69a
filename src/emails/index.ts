export { emailsService, type BroadcastItem, type BroadcastProgress, type EmailsService, type EmailsDeps, type Sender } from './emails.service.js';
export { emailsRoutes } from './emails.routes.js';
export { outboundEmails, type OutboundEmailsDeps } from './outbound-emails.js';
export { aggregateStatus, recordRecipientOutcomes, type Complaint, type EmailOutcomes, type RecipientOutcome } from './outcomes.js';
export type {
  HtmlRewriter, RenderedTemplate, TemplateRef, TemplateSend, TemplatesPort,
} from './ports.js';
export { mailDomain, parseMailbox } from './addresses.js';
export { checkScheduleTime, MAX_CONTENT_BYTES, MAX_RECIPIENTS, MAX_SUBJECT_CHARS, type EmailCreateBody } from './email-input.js';
export type { BroadcastEmailCounts, Email, EmailSummary } from './emails.repo.js';
export { deleteEmails, expiredEmails, fillPostgresEmailsSearch, type ExpiredEmail } from './emails.repo.js';
