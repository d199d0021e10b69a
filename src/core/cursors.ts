import { createHmac, timingSafeEqual } from 'node:crypto';
import { AppError } from './errors.js';

// A cursor names a position in one list of one workspace. It is opaque to
// clients and tamper-checked: the MAC covers the list and the workspace too, so
// a cursor forged, edited, or carried over from another list or workspace is
// rejected instead of silently paging through the wrong data.

export interface CursorCodec {
  encode(list: string, workspaceId: string, position: number): string;
  /** Returns the position, or throws 400 invalid_cursor naming `param`. */
  decode(list: string, workspaceId: string, cursor: string, param: string): number;
}

const MAC_BYTES = 12;

export function cursorCodec(key: Buffer): CursorCodec {
  const mac = (list: string, ws: string, pos: string) =>
    createHmac('sha256', key).update(`${list}\n${ws}\n${pos}`).digest().subarray(0, MAC_BYTES);

  return {
    encode(list, ws, position) {
      const pos = position.toString(36);
      const body = Buffer.concat([Buffer.from([1]), mac(list, ws, pos), Buffer.from(pos, 'latin1')]);
      return body.toString('base64url');
    },
    decode(list, ws, cursor, param) {
      const invalid = () => new AppError('invalid_cursor', `The cursor in '${param}' is not valid for this list.`, { param });
      if (cursor.length === 0 || cursor.length > 64 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid();
      const raw = Buffer.from(cursor, 'base64url');
      // Only the canonical spelling: base64url's last character has bits decoding ignores.
      if (raw.toString('base64url') !== cursor) throw invalid();
      if (raw.length <= 1 + MAC_BYTES || raw[0] !== 1) throw invalid();
      const pos = raw.subarray(1 + MAC_BYTES).toString('latin1');
      if (!/^[0-9a-z]{1,12}$/.test(pos)) throw invalid();
      if (!timingSafeEqual(raw.subarray(1, 1 + MAC_BYTES), mac(list, ws, pos))) throw invalid();
      return parseInt(pos, 36);
    },
  };
}
