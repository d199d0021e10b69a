export { attachmentsService, ATTACHMENT_TTL_MS, MAX_ATTACHMENT_BYTES, type AttachmentsService } from './attachments.service.js';
export { attachmentsRoutes } from './attachments.routes.js';
export type { Attachment, AttachmentContent } from './attachments.repo.js';
export { checkContentType, checkFilename, decodeBase64, defaultContentType } from './attachment-input.js';
