import { randomBytes, randomFillSync } from 'node:crypto';

// Public ids are a readable type prefix plus 26 Crockford base32 characters:
// 10 of millisecond time (so ids sort by creation, like ULIDs) and 16 random.
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

export type IdPrefix =
  | 'ws' | 'key' | 'act' | 'em' | 'rcpt' | 'evt' | 'dom' | 'att' | 'ct' | 'tag' | 'sup'
  | 'wh' | 'whd' | 'lnk' | 'in' | 'tpl' | 'bc' | 'job' | 'req' | 'msg';

// Asking the CSPRNG for 16 bytes per id costs more than everything else in
// making one; one refill serves 256 ids.
const POOL_IDS = 256;
const pool = Buffer.alloc(16 * POOL_IDS);
let poolOffset = pool.length;

function randomBytes16(): number {
  if (poolOffset === pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  poolOffset += 16;
  return poolOffset - 16;
}

export function newId(prefix: IdPrefix, now = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const at = randomBytes16();
  let rand = '';
  for (let i = 0; i < 16; i++) rand += ALPHABET[pool[at + i] & 31];
  return `${prefix}_${time}${rand}`;
}

/** Random string from an alphabet without modulo bias (rejection sampling). */
export function randomString(length: number, alphabet: string): string {
  const limit = 256 - (256 % alphabet.length);
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < limit) out += alphabet[b % alphabet.length];
      if (out.length === length) break;
    }
  }
  return out;
}

export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
