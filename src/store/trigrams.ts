/** The distinct trigrams of a text, as FTS5's trigram tokenizer cuts it (by character). */
export function trigramsOf(text: string): string[] {
  const chars = Array.from(text);
  const out = new Set<string>();
  for (let i = 0; i + 3 <= chars.length; i++) out.add(chars.slice(i, i + 3).join(''));
  return [...out];
}
