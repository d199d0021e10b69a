
// The rows of the tables this area writes (times are epoch milliseconds, JSON
// columns TEXT holding JSON, `pos` the internal position behind order and
// cursors), added to the store's Database type.

declare module '../store/tables.js' {
  interface Database {
    idempotency_keys: IdempotencyKeysTable;
  }
}

export interface IdempotencyKeysTable {
  workspace_id: string;
  idem_key: string;
  /** The API key whose request took the key; null on rows older than migration 0040. */
  api_key_id: string | null;
  operation_id: string;
  request_hash: string;
  status: number;
  response_body: string;
  created_at: number;
  expires_at: number;
}
