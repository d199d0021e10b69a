import type { Generated } from 'kysely';

// The rows of the tables this area writes (times are epoch milliseconds, JSON
// columns TEXT holding JSON, `pos` the internal position behind order and
// cursors), added to the store's Database type.

declare module '../store/tables.js' {
  interface Database {
    attachments: AttachmentsTable;
  }
}

export interface AttachmentsTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  filename: string;
  content_type: string;
  size: number;
  content: Buffer;
  created_at: number;
  expires_at: number;
}
