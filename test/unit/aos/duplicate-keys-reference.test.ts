/**
 * duplicateKey against a reference reader (recursive descent, names unescaped by JSON.parse) on
 * generated JSON text with what a scanner can trip on: every whitespace JSON allows between tokens,
 * escapes at string ends (`\\`, `\"`), escaped and raw lone surrogates, structural characters
 * inside strings; and hostile shapes (deep nesting, long backslash runs, many members).
 */
import fc from 'fast-check';
import { duplicateKey } from '../../../src/aos/duplicate-keys';

/** The first name found twice in one object (any), read by a plain recursive-descent reader of valid JSON. */
function reference(text: string): boolean {
  let i = 0;
  let found = false;
  const ws = (): void => {
    while (i < text.length && ' \t\r\n'.includes(text[i] as string)) i++;
  };
  const str = (): string => {
    const start = i++;
    while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === '{' || c === '[') {
      i++;
      ws();
      const seen = new Set<string>();
      if (text[i] === (c === '{' ? '}' : ']')) return void i++;
      for (;;) {
        if (c === '{') {
          ws();
          const k = str();
          if (seen.has(k)) found = true;
          seen.add(k);
          ws();
          i++; // the colon
        }
        value();
        ws();
        if (text[i++] !== ',') return;
      }
    } else if (c === '"') str();
    else while (i < text.length && !',]} \t\r\n'.includes(text[i] as string)) i++;
  };
  value();
  return found;
}

const W = fc.constantFrom('', ' ', '\t', '\n', '\r\n', '  \t');
const piece = fc.constantFrom(
  '\\\\',
  '\\"',
  '\\/',
  '\\b',
  '\\n',
  '\\u0061',
  '\\ud800',
  '\\udc00',
  '\\ud83d\\ude00',
  '\\u0022',
  '\\u005c',
  'a',
  ':',
  '{',
  '}',
  '[',
  ']',
  ',',
  'é',
  '\u2028',
  '\ud800',
  '😀',
);
const str = fc.array(piece, { maxLength: 5 }).map((a) => `"${a.join('')}"`);
const names = fc.constantFrom('"a"', '"\\u0061"', '"b"', '"\\\\"', '"\\u005c"', '"\\""', '"\\u0022"', '"\\ud800"', '"\ud800"', '"a\\\\"', '"a\\\\\\\\"', '""');
const text = fc.letrec((tie) => ({
  v: fc.oneof({ depthSize: 'small' }, str, fc.constantFrom('1', '-0.5e3', 'true', 'null'), tie('arr'), tie('obj')),
  arr: fc.array(fc.tuple(W, tie('v'), W), { maxLength: 4 }).map((xs) => `[${xs.map(([a, v, b]) => a + v + b).join(',')}]`),
  obj: fc
    .array(fc.tuple(W, fc.oneof(names, str), W, W, tie('v'), W), { maxLength: 5 })
    .map((ms) => `{${ms.map(([a, k, b, c, v, d]) => `${a}${k}${b}:${c}${v}${d}`).join(',')}}`),
})) as { v: fc.Arbitrary<string> };

test('finds a duplicate exactly when a reference reader does, on odd but valid JSON', () => {
  fc.assert(
    fc.property(text.v, (t) => {
      JSON.parse(t);
      expect(duplicateKey(t) !== undefined).toBe(reference(t));
    }),
    { numRuns: 5000 },
  );
});

test('hostile shapes: deep nesting, long backslash runs, escaped quotes, many members', () => {
  expect(duplicateKey('['.repeat(200_000) + ']'.repeat(200_000))).toBeUndefined();
  expect(duplicateKey('{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000))).toBeUndefined();
  expect(duplicateKey(`{"a":"${'\\\\'.repeat(500_000)}","a":1}`)).toBe('a');
  expect(duplicateKey(`{"x":"${'\\"'.repeat(300_000)}"}`)).toBeUndefined();
  expect(duplicateKey(`{${Array.from({ length: 50_000 }, (_, k) => `"k${k}":1`).join(',')},"k7":2}`)).toBe('k7');
});
