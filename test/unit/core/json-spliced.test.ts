import fc from 'fast-check';
import { SplicedJson } from '../../../src/core/json-spliced';
import { parseJsonInPieces, type LongString } from '../../../src/core/json-pieces';
import { piecesOf } from '../../helpers/json-pieces';

const now = (): Promise<void> => Promise.resolve();
const made = (s: SplicedJson): Buffer => Buffer.concat([...s.slices()]);

/** Characters whose tokens differ from their text: escapes, multi-byte characters, surrogates paired and alone. */
const UNITS = ['a', 'A', '/', ' ', '"', '\\', '\n', '\u0001', '\u007f', 'é', '€', '\u2028', '🍰', '\ud83d', '\ude00', '\ud800'];

/** A string token: JSON.stringify's, or one with escapes JSON.stringify does not write (`\u0041`, `\/`). */
const token = fc
  .tuple(fc.array(fc.constantFrom(...UNITS), { maxLength: 60 }), fc.nat(3))
  .map(([units, odd]) => (odd === 0 ? JSON.stringify(units.join('')).replace(/A/g, '\\u0041').replace(/\//g, '\\/') : JSON.stringify(units.join(''))));

const space = fc.constantFrom('', '', '', ' ', '\n ');

/** JSON texts with strings anywhere (values, keys, the root), with or without spaces between tokens. */
const texts: fc.Arbitrary<string> = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    token,
    fc.constantFrom('1', '-2.5e3', 'true', 'null'),
    fc.tuple(fc.array(tie('v'), { maxLength: 4 }), space).map(([items, s]) => `[${s}${items.join(`${s},`)}]`),
    fc.tuple(fc.array(fc.tuple(token, tie('v')), { maxLength: 3 }), space).map(([m, s]) => `{${m.map(([k, v]) => `${s}${k}${s}:${v}`).join(',')}}`),
  ),
})).v;

/** A container with strings in it (a key, an element, a member's value) and any text inside. */
const bodies = fc.tuple(token, texts, token, space).map(([k, v, t, s]) => `${s}{${s}${k}:[${v},${s}${t}],"m":${t}}${s}`);

/** Piece sizes from a few bytes (nearly every string is long, in many pieces) up. */
const sizes = fc.record({ piece: fc.integer({ min: 1, max: 40 }), stringPiece: fc.integer({ min: 1, max: 32 }) });

describe('a JSON text held spliced (its long strings as their parsed pieces)', () => {
  it('makes the bytes of the text again, exactly, whenever every long string is canonical, and every time', async () => {
    let spliced = 0;
    await fc.assert(
      fc.asyncProperty(fc.oneof(bodies, texts), sizes, async (text, s) => {
        const bytes = Buffer.from(text, 'utf8');
        const parsed = await parseJsonInPieces(bytes, now, s);
        if (typeof parsed !== 'object') return;
        const held = await SplicedJson.from(bytes, parsed.longStrings, now);
        const canSplice = parsed.longStrings.length > 0 && parsed.longStrings.every((l) => l.canonical);
        expect(held !== undefined).toBe(canSplice);
        if (held === undefined) return;
        spliced++;
        expect(held.length).toBe(bytes.length);
        expect(made(held).equals(bytes)).toBe(true);
        expect(made(held).equals(bytes)).toBe(true);
      }),
      { numRuns: 3000 },
    );
    // Not vacuous (about a fifth: others have no long string at these sizes, a non-canonical one, or a character longer than a piece).
    expect(spliced).toBeGreaterThan(300);
  });

  it('makes a multi-MiB canonical message of escapes and multi-byte characters again, in slices no larger than a string piece', async () => {
    const text = JSON.stringify({
      jsonrpc: '2.0',
      id: 'x',
      method: 'message/send',
      params: { message: { parts: [{ text: 'é€🍰 "q" \\ \n\u0001 plain text '.repeat(100_000) }, { text: '\ud800 alone'.repeat(40_000) }] } },
    });
    const bytes = Buffer.from(text, 'utf8');
    const parsed = await piecesOf(bytes, now);
    const held = await SplicedJson.from(bytes, parsed?.longStrings ?? [], now);
    expect(held).toBeDefined();
    const slices = [...(held as SplicedJson).slices()];
    expect(Buffer.concat(slices).equals(bytes)).toBe(true);
    expect(Math.max(...slices.map((b) => b.length))).toBeLessThanOrEqual(256 * 1024);
  });

  it('refuses to write a piece that does not make its token again', async () => {
    const text = JSON.stringify({ text: 'x'.repeat(600_000) });
    const bytes = Buffer.from(text, 'utf8');
    const parsed = await piecesOf(bytes, now);
    const long = parsed?.longStrings[0] as LongString;
    const wrong: LongString = { ...long, pieces: long.pieces.map((p, i) => (i === 1 ? `${p}y` : p)) };
    const held = (await SplicedJson.from(bytes, [wrong], now)) as SplicedJson;
    expect(() => made(held)).toThrow(/did not make its own bytes/);
  });
});
