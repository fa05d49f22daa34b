/**
 * A memo with a share per caller: a caller that fills its share recycles its own entries, never another
 * caller's; the number of callers kept is bounded too. Used by the card judge's remembered decisions and
 * the card signatures the proxy remembers.
 */
import { CallerShares } from '../../../src/core/caller-shares';

test('one caller filling many entries evicts only its own', () => {
  const memo = new CallerShares<string>(4, 16);
  memo.set('victim', 'card-1', 'allow');
  memo.set('victim', 'card-2', 'deny');
  for (let i = 0; i < 10_000; i++) memo.set('flooder', `card-${i}`, 'allow');
  expect(memo.get('victim', 'card-1')).toBe('allow');
  expect(memo.get('victim', 'card-2')).toBe('deny');
  expect(memo.size('flooder')).toBe(4);
  expect(memo.get('flooder', 'card-9999')).toBe('allow');
  expect(memo.get('flooder', 'card-0')).toBeUndefined();
});

test("a caller's entry is its own: another caller does not read it", () => {
  const memo = new CallerShares<string>(4, 16);
  memo.set('a', 'card', 'allow');
  expect(memo.get('b', 'card')).toBeUndefined();
});

test('callers are bounded: the one unseen longest is forgotten whole', () => {
  const memo = new CallerShares<number>(2, 3);
  for (const c of ['a', 'b', 'c']) memo.set(c, 'k', 1);
  memo.get('a', 'k');
  memo.set('d', 'k', 1);
  expect(memo.get('b', 'k')).toBeUndefined();
  expect(memo.get('a', 'k')).toBe(1);
  expect(memo.get('d', 'k')).toBe(1);
});
