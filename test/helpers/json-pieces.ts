/** Shared by the tests of the piecewise JSON parser and of the canonical walk (src/core/json-pieces.ts, json-canonical.ts). */
import fc from 'fast-check';
import { parseJsonInPieces, type PiecewiseJson } from '../../src/core/json-pieces';

/** The parse of a JSON text (never 'not json'). */
export async function piecesOf(...args: Parameters<typeof parseJsonInPieces>): Promise<PiecewiseJson | undefined> {
  const r = await parseJsonInPieces(...args);
  return typeof r === 'object' ? r : undefined;
}

/** A turn that resolves at once and counts itself. */
export function countedTurns(): { turn: () => Promise<void>; readonly count: number } {
  const c = {
    count: 0,
    turn: (): Promise<void> => {
      c.count++;
      return Promise.resolve();
    },
  };
  return c;
}

/**
 * JSON values holding strings longer than the canonical walk's slice (32 Ki characters), made of `units`
 * (escapes, surrogates, multi-byte characters), nested in arrays and objects of up to `width` members.
 */
export function valuesWithLongStrings(units: readonly string[], width: number): fc.Arbitrary<unknown> {
  const long = fc.array(fc.constantFrom(...units), { minLength: 1, maxLength: 40 }).map((a) => a.join('').repeat(Math.ceil(33_000 / a.join('').length)));
  return fc.letrec((tie) => ({
    v: fc.oneof({ depthSize: 'small' }, long, fc.jsonValue(), fc.array(tie('v'), { maxLength: width }), fc.dictionary(fc.string(), tie('v'), { maxKeys: 3 })),
  })).v;
}
