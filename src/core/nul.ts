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
