// Text limits are stated in characters, as JSON Schema's maxLength counts
// them (code points), while String.length counts UTF-16 units: an emoji is
// one character and two units. A service checking a limit the schema also
// states must count the same way, or it refuses what the schema accepts.

const SURROGATE = /[\ud800-\udfff]/;

/** The number of characters (code points) in `text`. */
export function characterCount(text: string): number {
  if (!SURROGATE.test(text)) return text.length;
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/** The first `max` characters of `text`, never half of one. */
export function firstCharacters(text: string, max: number): string {
  if (!SURROGATE.test(text)) return text.slice(0, max);
  return Array.from(text).slice(0, max).join('');
}
