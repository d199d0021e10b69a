import { createHmac, timingSafeEqual } from 'node:crypto';

// Tracking URLs carry only an id and its MAC: the id names a row stored when
// the message was sent, so a URL can never point the redirect anywhere new.

export type TokenKind = 'open' | 'click';
const MAC_BYTES = 16;

const mac = (key: Buffer, kind: TokenKind, id: string) =>
  createHmac('sha256', key).update(`${kind}:${id}`).digest().subarray(0, MAC_BYTES);

export function signToken(key: Buffer, kind: TokenKind, id: string): string {
  return `${id}.${mac(key, kind, id).toString('base64url')}`;
}

/** The id inside a genuine token of this kind, else undefined. */
export function verifyToken(key: Buffer, kind: TokenKind, token: string): string | undefined {
  const dot = token.lastIndexOf('.');
  if (dot <= 0 || token.length > 200) return undefined;
  const id = token.slice(0, dot);
  if (!/^[a-z]+_[0-9a-z]{26}$/.test(id)) return undefined;
  // Compared as text: base64url's last character carries bits decoding
  // ignores, so comparing decoded bytes would accept an altered token.
  const given = Buffer.from(token.slice(dot + 1), 'latin1');
  const expected = Buffer.from(mac(key, kind, id).toString('base64url'), 'latin1');
  return given.length === expected.length && timingSafeEqual(given, expected) ? id : undefined;
}
