// Remembered answers of a pure function of one key, for keys that come from
// input (mail domains, MX host names, header names): the memory is bounded,
// and emptied when full, since the keys that repeat fill it again at once.

export function memoize<K, V>(compute: (key: K) => V, maxEntries: number): (key: K) => V {
  const answers = new Map<K, V>();
  return (key) => {
    const known = answers.get(key);
    if (known !== undefined || answers.has(key)) return known as V;
    const answer = compute(key);
    if (answers.size >= maxEntries) answers.clear();
    answers.set(key, answer);
    return answer;
  };
}
