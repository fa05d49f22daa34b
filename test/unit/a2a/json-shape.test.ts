/**
 * The scan of a JSON body's shape (depth, values, members of one object) read on its bytes: the same
 * verdict as the parsed value's own shape, whether it reads the bytes at once or a slice at a time (a
 * large body), with escaped quotes and backslashes in strings.
 */
import fc from 'fast-check';
import { JsonShapeScan, jsonTooComplex, surelyWithinBounds, type JsonLimits } from '../../../src/a2a/json-shape';

/** Depth, values (a member counts twice) and widest object of a parsed value, as the scan counts them. */
function shapeOf(v: unknown, depth = 0): { depth: number; values: number; widest: number } {
  if (typeof v !== 'object' || v === null) return { depth, values: 0, widest: 0 };
  const entries = Array.isArray(v) ? v.map((x) => ['', x] as const) : Object.entries(v);
  const own = Array.isArray(v) ? Math.max(0, v.length - 1) : Math.max(0, entries.length * 2 - 1);
  let out = { depth: depth + 1, values: 1 + own, widest: Array.isArray(v) ? 0 : entries.length };
  for (const [, x] of entries) {
    const s = shapeOf(x, depth + 1);
    out = { depth: Math.max(out.depth, s.depth), values: out.values + s.values, widest: Math.max(out.widest, s.widest) };
  }
  return out;
}

const within = (v: unknown, l: JsonLimits): boolean => {
  const s = shapeOf(v);
  return s.depth <= l.depth && s.values <= l.values && s.widest <= l.objectMembers;
};

function sliced(b: Buffer, l: JsonLimits, slice: number): string | undefined {
  const scan = new JsonShapeScan(l);
  for (let at = 0; at < b.length;) {
    const r = scan.run(b, at + slice);
    if (typeof r === 'string') return r;
    at = r;
  }
  return undefined;
}

// Strings full of quotes and backslashes, so the scan's string skipping is exercised.
const tricky = fc.string({ unit: fc.constantFrom('"', '\\', ':', ',', '{', '[', 'a', 'é') });
const value = fc.letrec((tie) => ({
  v: fc.oneof({ depthSize: 'small' }, tricky, fc.integer(), fc.array(tie('v'), { maxLength: 6 }), fc.dictionary(tricky, tie('v'), { maxKeys: 6 })),
})).v;
const limits = fc.record({ depth: fc.integer({ min: 1, max: 6 }), values: fc.integer({ min: 1, max: 40 }), objectMembers: fc.integer({ min: 1, max: 6 }) });

test('the scan refuses exactly the bodies whose parsed shape crosses a bound, at once or a slice at a time', () => {
  fc.assert(
    fc.property(value, limits, fc.integer({ min: 1, max: 16 }), (v, l, slice) => {
      const text = JSON.stringify(v);
      const b = Buffer.from(text, 'utf8');
      const whole = jsonTooComplex(b, l);
      expect(whole === undefined).toBe(within(v, l));
      expect(sliced(b, l, slice) === undefined).toBe(whole === undefined);
      // The quick check never passes a body the scan refuses.
      if (surelyWithinBounds(text, b.length, l)) expect(whole).toBeUndefined();
    }),
    { numRuns: 2000 },
  );
});

test('the member bound is per object: many narrow objects pass where one wide object is refused', () => {
  const l = { depth: 8, values: 1000, objectMembers: 10 };
  const narrow = Buffer.from(JSON.stringify(Array.from({ length: 20 }, () => Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, i])))));
  const wide = Buffer.from(JSON.stringify(Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, i]))));
  expect(jsonTooComplex(narrow, l)).toBeUndefined();
  expect(jsonTooComplex(wide, l)).toBe('JSON object with more than 10 members');
});
