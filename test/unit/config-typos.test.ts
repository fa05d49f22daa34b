/**
 * misspelledVariables computes its edit distance in a band and stops early (start-up cost, see
 * src/config/config.ts editDistance); it must find exactly what the full optimal-string-alignment table finds.
 */
import fc from 'fast-check';
import { describeVariables, FOREIGN_VARIABLES, misspelledVariables } from '../../src/config/config';

/** The full table: the distance the banded walk must agree with wherever it is 2 or less. */
function fullDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 0; j <= b.length; j++) (d[0] as number[])[j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i] as number[];
      const prev = d[i - 1] as number[];
      row[j] = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1);
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}

function reference(env: Record<string, string>, known: readonly string[]): string[] {
  return Object.keys(env).flatMap((name) => {
    // Other software's well-known names (LOGLEVEL is one typo from LOG_LEVEL) are not typos.
    if (known.includes(name) || FOREIGN_VARIABLES.has(name)) return [];
    const near = known.find((k) => fullDistance(name, k) <= (k.length <= 6 ? 1 : 2));
    return near === undefined ? [] : [`${name}: unknown variable; did you mean ${near}?`];
  });
}

// A small alphabet makes near misses (and swaps) common; names up to 40 characters exercise row reuse.
const name = fc.string({ unit: fc.constantFrom('A', 'B', 'C', '_'), minLength: 1, maxLength: 40 });
/** A known name with a few random edits: most land within two edits, some further. */
const edited = (k: string) =>
  fc.array(fc.tuple(fc.nat(), fc.constantFrom('swap', 'drop', 'add', 'change')), { maxLength: 4 }).map((edits) => {
    let s = k;
    for (const [at, kind] of edits) {
      const i = s.length === 0 ? 0 : at % s.length;
      if (kind === 'swap' && i + 1 < s.length) s = s.slice(0, i) + s[i + 1] + s[i] + s.slice(i + 2);
      else if (kind === 'drop') s = s.slice(0, i) + s.slice(i + 1);
      else if (kind === 'add') s = `${s.slice(0, i)}B${s.slice(i)}`;
      else s = `${s.slice(0, i)}C${s.slice(i + 1)}`;
    }
    return s === '' ? 'A' : s;
  });

test('the banded distance finds exactly the typos the full table finds', () => {
  fc.assert(
    fc.property(
      fc
        .uniqueArray(name, { minLength: 1, maxLength: 6 })
        .chain((known) => fc.tuple(fc.constant(known), fc.array(fc.oneof(name, fc.constantFrom(...known).chain(edited)), { minLength: 1, maxLength: 12 }))),
      ([known, names]) => {
        const env = Object.fromEntries(names.map((n) => [n, 'x']));
        expect(misspelledVariables(env, known)).toEqual(reference(env, known));
      },
    ),
    { numRuns: 500 },
  );
});

test('the character filter before the distance drops no typo (the real names, environments over A-Z, 0-9 and _)', () => {
  const known = describeVariables().map((d) => d.name);
  const any = fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_'), minLength: 1, maxLength: 32 });
  fc.assert(
    fc.property(fc.array(fc.oneof(any, fc.constantFrom(...known).chain(edited)), { minLength: 1, maxLength: 12 }), (names) => {
      const env = Object.fromEntries(names.map((n) => [n, 'x']));
      expect(misspelledVariables(env, known)).toEqual(reference(env, known));
    }),
    { numRuns: 200 },
  );
});
