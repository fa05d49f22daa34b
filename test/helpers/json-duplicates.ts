/** Generated JSON values and texts with a member written twice: shared by the tests of the duplicate-member scans (src/aos/duplicate-keys.ts). */
import fc from 'fast-check';

/** Names with the characters that matter to a scanner: quotes, backslashes, colons, braces, non-ASCII. */
export const name = fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom('a', '"', '\\', ':', '{', '}', '[', ']', '\\"', 'é', '\u2028', '__proto__'));
export const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.string({ maxLength: 8 }),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    tie('object'),
  ),
  object: fc.dictionary(name, tie('value'), { maxKeys: 5 }),
})) as { value: fc.Arbitrary<unknown>; object: fc.Arbitrary<Record<string, unknown>> };

/** A spelling of `s` as a JSON string: plain, or with some characters written as \u escapes. */
export const spell = (s: string, mask: number): string => {
  let out = '"';
  [...s].forEach((ch, i) => {
    const plain = JSON.stringify(ch).slice(1, -1);
    out += (mask >> i) & 1 && ch.length === 1 ? `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}` : plain;
  });
  return `${out}"`;
};

/** Every object of `v` (depth first), with the text path to it. */
export function objects(v: unknown, out: Record<string, unknown>[] = []): Record<string, unknown>[] {
  if (Array.isArray(v)) for (const e of v) objects(e, out);
  else if (typeof v === 'object' && v !== null) {
    out.push(v as Record<string, unknown>);
    for (const e of Object.values(v)) objects(e, out);
  }
  return out;
}

/** `v` serialised with one object's member `key` written a second time (after the others), spelt by `mask`. */
export function withDuplicate(v: unknown, target: Record<string, unknown>, key: string, mask: number): string {
  const MARK = '\u0000dup-mark\u0000';
  const replacer = function (this: unknown, k: string, x: unknown): unknown {
    if (x === target) return { ...target, [MARK]: null };
    return x;
  };
  const text = JSON.stringify(v, replacer);
  const marker = `${JSON.stringify(MARK)}:null`;
  return text.replace(marker, () => `${spell(key, mask)}:${JSON.stringify(target[key])}`);
}
