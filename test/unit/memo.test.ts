import { describe, expect, it } from 'vitest';
import { memoize } from '../../src/core/memo.js';

describe('memoize', () => {
  it('computes each key once, an undefined answer included', () => {
    const asked: string[] = [];
    const lengthOfLong = memoize((key: string) => {
      asked.push(key);
      return key.length > 3 ? key.length : undefined;
    }, 10);
    expect([lengthOfLong('abcd'), lengthOfLong('ab'), lengthOfLong('abcd'), lengthOfLong('ab')]).toEqual([4, undefined, 4, undefined]);
    expect(asked).toEqual(['abcd', 'ab']);
  });

  it('forgets everything once full, then remembers again', () => {
    const asked: number[] = [];
    const double = memoize((n: number) => {
      asked.push(n);
      return n * 2;
    }, 2);
    double(1);
    double(2);
    double(3); // the memory is full: it empties before 3 goes in
    double(3);
    double(1);
    expect(asked).toEqual([1, 2, 3, 1]);
    expect(double(1)).toBe(2);
  });
});
