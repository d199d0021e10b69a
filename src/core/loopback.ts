import { isIP } from 'node:net';

/** Whether an IP address is this machine's own (127.0.0.0/8 or ::1, also as an IPv4-mapped IPv6 address). */
export function isLoopbackAddress(address: string): boolean {
  const bare = address.replace(/^::ffff:/i, '');
  if (isIP(bare) === 4) return bare.startsWith('127.');
  return bare === '::1';
}
