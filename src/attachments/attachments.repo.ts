import { sql, type Selectable } from 'kysely';
import type { Db, Tx } from '../store/db.js';
import type { AttachmentsTable } from './attachments.tables.js';
import { toIso } from '../core/clock.js';

export interface Attachment {
  id: string;
  object: 'attachment';
  attachment_id: string;
  filename: string;
  content_type: string;
  size: number;
  created_at: string;
  expires_at: string;
}

export interface AttachmentContent {
  id: string;
  filename: string;
  contentType: string;
  content: Buffer;
}

const toAttachment = (r: Omit<Selectable<AttachmentsTable>, 'pos' | 'content' | 'workspace_id'>): Attachment => ({
  id: r.id, object: 'attachment', attachment_id: r.id, filename: r.filename, content_type: r.content_type,
  size: Number(r.size), created_at: toIso(r.created_at), expires_at: toIso(r.expires_at),
});

export async function insertAttachment(tx: Tx, row: Omit<Selectable<AttachmentsTable>, 'pos'>): Promise<Attachment> {
  await tx.insertInto('attachments').values(row).execute();
  return toAttachment(row);
}

/** The unexpired uploads among `ids`, with their bytes, keyed by id. */
export async function findLiveAttachments(db: Db, ws: string, ids: string[], now: number): Promise<Map<string, AttachmentContent>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('attachments').select(['id', 'filename', 'content_type', 'content'])
    .where('workspace_id', '=', ws).where('id', 'in', [...new Set(ids)]).where('expires_at', '>', now)
    .execute();
  return new Map(rows.map((r) => [r.id, { id: r.id, filename: r.filename, contentType: r.content_type, content: r.content }]));
}

/** Deletes up to `limit` expired uploads; returns how many. */
export async function deleteExpiredAttachments(tx: Tx, now: number, limit: number): Promise<number> {
  const res = await tx.deleteFrom('attachments')
    .where('id', 'in', (eb) => eb.selectFrom('attachments').select('id').where('expires_at', '<=', now).limit(sql.lit(limit)))
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}
