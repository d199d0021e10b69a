// The tag=value list syntax shared by DKIM key records (RFC 6376 §3.2) and
// DMARC records (RFC 7489 §6.4).

/**
 * Parses `v=DKIM1; k=rsa; p=...` into a map of lower-cased tag names to
 * trimmed values, or null when the text is not a tag list. Tag names are
 * case-sensitive in RFC 6376, but DNS control panels and users re-type them,
 * so comparing them case-insensitively avoids false mismatches; a duplicate
 * tag invalidates the whole list (RFC 6376 §3.2).
 */
export function parseTagList(text: string): Map<string, string> | null {
  const tags = new Map<string, string>();
  for (const spec of text.split(';')) {
    if (spec.trim() === '') continue; // a trailing ";" is allowed
    const eq = spec.indexOf('=');
    if (eq < 0) return null;
    const name = spec.slice(0, eq).trim().toLowerCase();
    if (!/^[a-z][a-z0-9_]*$/.test(name) || tags.has(name)) return null;
    tags.set(name, spec.slice(eq + 1).trim());
  }
  return tags;
}
