// Messages built to cost a MIME parser far more than their size: each one is
// a few megabytes at most, and well-formed enough that a parser tries.

const head = (subject: string) => `From: bomb@outside.test\r\nTo: desk@inbound.test\r\nSubject: ${subject}\r\n`;

/** `lines` header fields of a few bytes each (200,000 of them make about 2.7 MB). */
export function headerLines(lines = 200_000): Buffer {
  const field = 'X-Filler: abcd\r\n';
  return Buffer.from(`${head('header lines')}${field.repeat(lines)}\r\nbody\r\n`);
}

/** One header field of `bytes` bytes. */
export function hugeHeader(bytes = 10 * 1024 * 1024): Buffer {
  return Buffer.from(`${head('huge header')}X-Huge: ${'h'.repeat(bytes)}\r\n\r\nbody\r\n`);
}

/** `depth` multiparts, each the only part of the one around it. */
export function nestedMultiparts(depth = 10_000): Buffer {
  let text = head('nested');
  for (let i = 0; i < depth; i++) text += `Content-Type: multipart/mixed; boundary="n${i}"\r\n\r\n--n${i}\r\n`;
  return Buffer.from(`${text}Content-Type: text/plain\r\n\r\ncore\r\n`);
}

/** One multipart of `parts` small parts side by side. */
export function siblingParts(parts = 100_000): Buffer {
  return Buffer.from(`${head('siblings')}Content-Type: multipart/mixed; boundary="s"\r\n\r\n${'--s\r\n\r\nx\r\n'.repeat(parts)}--s--\r\n`);
}

/** The bombs of the kinds the MX has to turn away, by name. */
export const MIME_BOMBS: Record<string, () => Buffer> = {
  '200,000 header lines': () => headerLines(),
  'a 10 MB header': () => hugeHeader(),
  '10,000 nested multiparts': () => nestedMultiparts(),
  '100,000 sibling parts': () => siblingParts(),
};
