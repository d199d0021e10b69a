import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { requestHash } from '../../../src/http/idempotency.js';

const send = { operationId: 'createEmailBatch', params: {}, body: { emails: [{ subject: 'Hi' }] } };

describe('requestHash', () => {
  it('hashes a live request with default headers as requests were hashed before modes and headers counted', () => {
    // A key taken before an upgrade, retried after it, must still name the same request.
    const before = createHash('sha256').update(JSON.stringify([send.operationId, send.params, send.body])).digest('base64url');
    expect(requestHash({ ...send, mode: 'live', headers: {} })).toBe(before);
  });

  it('tells apart a test key\'s request and one with a header other than its default', () => {
    const hashes = new Set([
      requestHash({ ...send, mode: 'live', headers: {} }),
      requestHash({ ...send, mode: 'test', headers: {} }),
      requestHash({ ...send, mode: 'live', headers: { 'Mailroom-Batch-Validation': 'strict' } }),
      requestHash({ ...send, mode: 'test', headers: { 'Mailroom-Batch-Validation': 'strict' } }),
    ]);
    expect(hashes.size).toBe(4);
  });
});
