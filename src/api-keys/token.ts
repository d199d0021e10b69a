import { createHmac, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { BASE62, randomString } from '../core/ids.js';

// Token format: svc_<mode>_<lookup:12><secret:28><check:6>, all base62.
// The lookup part finds the row without scanning; the secret carries ~166
// bits; the CRC32 checksum lets secret scanners (and our 401 path) recognise a
// Mailroom token, or a mistyped one, without touching the database.

export type KeyMode = 'live' | 'test';

const LOOKUP_LEN = 12;
const SECRET_LEN = 28;
const CHECK_LEN = 6;
const TOKEN_RE = /^svc_(live|test)_([0-9A-Za-z]{46})$/;

function checksum(s: string): string {
  let n = crc32(s);
  let out = '';
  for (let i = 0; i < CHECK_LEN; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/** A token body with its checksum appended. */
export function withChecksum(body: string): string {
  return body + checksum(body);
}

export interface MintedToken {
  token: string;
  lookup: string;
  masked: string;
}

export function mintToken(mode: KeyMode): MintedToken {
  const lookup = randomString(LOOKUP_LEN, BASE62);
  const token = withChecksum(`svc_${mode}_${lookup}${randomString(SECRET_LEN, BASE62)}`);
  return { token, lookup, masked: `svc_${mode}_${lookup.slice(0, 4)}…${token.slice(-4)}` };
}

/** The mode and lookup part of a well-formed token, or undefined. */
export function parseToken(token: string): { mode: KeyMode; lookup: string } | undefined {
  const m = TOKEN_RE.exec(token);
  if (!m) return undefined;
  const body = token.slice(0, -CHECK_LEN);
  if (checksum(body) !== token.slice(-CHECK_LEN)) return undefined;
  return { mode: m[1] as KeyMode, lookup: m[2].slice(0, LOOKUP_LEN) };
}

// A keyed hash, not a slow KDF: tokens are long random strings, so a fast
// HMAC is safe and keeps authentication off the event loop's critical path.
export function hashToken(pepper: Buffer, token: string): Buffer {
  return createHmac('sha256', pepper).update(token).digest();
}

export function tokenMatches(pepper: Buffer, token: string, stored: Buffer): boolean {
  const digest = hashToken(pepper, token);
  return stored.length === digest.length && timingSafeEqual(digest, stored);
}
