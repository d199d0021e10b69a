import { AppError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import type { Clock } from '../core/clock.js';
import { writeInBatches, type Store } from '../store/db.js';
import { checkContentType, checkFilename, decodeBase64, defaultContentType } from './attachment-input.js';
import { deleteExpiredAttachments, findLiveAttachments, insertAttachment, type Attachment, type AttachmentContent } from './attachments.repo.js';
import type { RequestBody } from '../contract/operations.js';

// Uploads referenced later from sends by attachment_id. An upload lives 24
// hours (the spec's validity); a send copies the bytes into the email, so a
// scheduled email does not depend on the upload outliving it.

export const ATTACHMENT_TTL_MS = 24 * 3600_000;
/** Decoded size of one upload. */
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
/** Request body limit of the upload: room for base64 of a file well over the limit, so most oversize uploads get the 422 that names the limit. */
export const MAX_UPLOAD_BODY_BYTES = 32 * 1024 * 1024;
/** Rows deleted per transaction by the purge, so one run cannot hold the write connection for long. */
const PURGE_BATCH = 500;
const PURGE_MAX_BATCHES = 100;

export type UploadInput = RequestBody<'createAttachment'>;

export interface AttachmentsService {
  upload(workspaceId: string, input: UploadInput): Promise<Attachment>;
  /** The unexpired uploads among `ids`, keyed by id (missing and expired ids are absent). */
  fetchLive(workspaceId: string, ids: string[]): Promise<Map<string, AttachmentContent>>;
  purgeExpired(): Promise<number>;
}

export function attachmentsService(deps: { store: Store; clock: Clock }): AttachmentsService {
  const { store, clock } = deps;
  return {
    async upload(ws, input) {
      const filename = checkFilename(input.filename, 'filename');
      const contentType = input.content_type !== undefined ? checkContentType(input.content_type, 'content_type') : defaultContentType(filename);
      const content = decodeBase64(input.content);
      if (!content) throw new AppError('validation_error', "'content' is not valid base64.", { param: 'content' });
      if (content.length === 0) throw new AppError('validation_error', "'content' is empty.", { param: 'content' });
      if (content.length > MAX_ATTACHMENT_BYTES) {
        throw new AppError('validation_error', `The attachment is ${content.length} bytes; the limit is ${MAX_ATTACHMENT_BYTES} bytes (10 MiB).`, { param: 'content' });
      }
      const now = clock.now();
      return store.write((tx) => insertAttachment(tx, {
        id: newId('att', now), workspace_id: ws, filename, content_type: contentType, size: content.length, content,
        created_at: now, expires_at: now + ATTACHMENT_TTL_MS,
      }));
    },

    fetchLive: (ws, ids) => findLiveAttachments(store.db, ws, ids, clock.now()),

    purgeExpired: () => writeInBatches(store, { size: PURGE_BATCH, maxBatches: PURGE_MAX_BATCHES }, (tx, size) => deleteExpiredAttachments(tx, clock.now(), size)),
  };
}
