import { isUtf8 } from 'node:buffer';

/**
 * `value` with every U+0000 in its strings as U+FFFD, as mail readers show
 * it: text from a peer (a message, a server's reply) may carry one anywhere,
 * and PostgreSQL's text and jsonb cannot hold it. Plain data only: strings,
 * arrays and objects of them.
 */
export function withoutNul<T>(value: T): T {
  if (typeof value === 'string') return (value.includes('\0') ? value.replaceAll('\0', '\uFFFD') : value) as T;
  if (Array.isArray(value)) return value.map(withoutNul) as T;
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [withoutNul(k), withoutNul(v)])) as T;
}

/**
 * Text a peer sent as bytes that Node handed over one byte a character (an
 * SMTP reply read as latin1, a TXT record): UTF-8 when the bytes are valid
 * UTF-8, as they are otherwise, a NUL as U+FFFD.
 */
export function peerText(latin1: string): string {
  if (!/[\x80-\xff]/.test(latin1)) return withoutNul(latin1);
  const bytes = Buffer.from(latin1, 'latin1');
  return withoutNul(isUtf8(bytes) ? bytes.toString('utf8') : latin1);
}
