import fc from 'fast-check';
import { fieldKey } from '../../../src/core/json';

describe('fieldKey: the ASCII shortcut folds as the Unicode fold does', () => {
  test('generated member names', () => {
    const reference = (k: string) => k.toUpperCase().toLowerCase().replace(/[_-]/g, '');
    const key = fc.oneof(
      fc.string({ unit: fc.constantFrom(...'aZ09_-ſKİßﬀ'.split('')) }),
      fc.stringMatching(/^[A-Za-z0-9]{0,12}$/),
      fc.string({ unit: 'binary' }),
    );
    fc.assert(
      fc.property(key, (k) => expect(fieldKey(k)).toBe(reference(k))),
      { numRuns: 20_000 },
    );
  });
});
