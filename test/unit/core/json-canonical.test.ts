import fc from 'fast-check';
import { isCanonicalJson, stringifyInPieces } from '../../../src/core/json-canonical';
import { countedTurns, piecesOf, valuesWithLongStrings } from '../../helpers/json-pieces';

const now = (): Promise<void> => Promise.resolve();
const canonical = (text: string): Promise<boolean> => isCanonicalJson(Buffer.from(text), JSON.parse(text), now);
const byStringify = (text: string): boolean => JSON.stringify(JSON.parse(text)) === text;

describe('a JSON text compared with its canonical serialization a piece at a time', () => {
  it('agrees with JSON.stringify on any JSON value and on its serialization', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), async (v) => {
        const text = JSON.stringify(v);
        expect(await canonical(text)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('agrees with JSON.stringify on serializations changed at any place', async () => {
    const edits = [' ', '\n', '\\/', ',', '0', 'e1', '\\u0061', '"a":1,'];
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), fc.nat(), fc.constantFrom(...edits), async (v, where, edit) => {
        const base = JSON.stringify(v);
        const at = where % (base.length + 1);
        const text = base.slice(0, at) + edit + base.slice(at);
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          return;
        }
        expect(await isCanonicalJson(Buffer.from(text), parsed, now)).toBe(JSON.stringify(parsed) === text);
      }),
      { numRuns: 1000 },
    );
  });

  it('a value JSON.parse never gives (undefined, a function) is not canonical, and does not throw', async () => {
    expect(await isCanonicalJson(Buffer.from('{"a":1,"b":2}'), { a: 1, b: undefined }, now)).toBe(false);
    expect(await isCanonicalJson(Buffer.from('[1,2]'), [1, () => 2], now)).toBe(false);
  });

  it('agrees with JSON.stringify on texts that are not canonical or only look it', async () => {
    const texts = [
      '{"a":1,"a":2}',
      '{"b":1,"1":2}',
      '{"1":2,"b":1}',
      '{ "a":1}',
      '[1,2 ]',
      '"\\/"',
      '"\\u0041"',
      '"\\ud800"',
      '"\\ud83d\\ude00"',
      '"\ud83d\ude00"',
      '"\\u001f"',
      '"\\n"',
      '1.0',
      '1e2',
      '-0',
      '1e400',
      '0.1',
      '{"__proto__":{"x":1}}',
      '{"toJSON":"x"}',
      '[]',
      '{}',
      '[[],{}]',
      '"\u2028"',
      'null',
      'true',
    ];
    for (const t of texts) expect([t, await canonical(t)]).toEqual([t, byStringify(t)]);
  });

  it('compares long strings in slices without cutting a surrogate pair, and turns between pieces', async () => {
    let turns = 0;
    const count = (): Promise<void> => {
      turns++;
      return Promise.resolve();
    };
    for (const unit of ['1 ', 'é', '😀', 'a"\\\n', '\ud800x']) {
      const s = unit.repeat(Math.ceil(300_000 / unit.length));
      for (const text of [JSON.stringify({ text: s }), JSON.stringify([s, s.slice(1)]), JSON.stringify({ [s]: { [s.slice(2)]: s }, z: 1 })]) {
        expect(await isCanonicalJson(Buffer.from(text), JSON.parse(text), count)).toBe(true);
        // One character changed at the end: not canonical (the text does not match).
        const other = `${text.slice(0, -3)}${text.at(-3) === 'x' ? 'y' : 'x'}${text.slice(-2)}`;
        expect(await isCanonicalJson(Buffer.from(other), JSON.parse(text), count)).toBe(false);
      }
    }
    expect(turns).toBeGreaterThan(0);
  });

  it('many small values: each compared, with turns between pieces', async () => {
    let turns = 0;
    const rows = Array.from({ length: 50_000 }, (_, i) => ({ i, s: `row ${i}`, ok: i % 2 === 0, n: null, f: i / 7 }));
    const text = JSON.stringify({ rows });
    expect(
      await isCanonicalJson(Buffer.from(text), JSON.parse(text), () => {
        turns++;
        return Promise.resolve();
      }),
    ).toBe(true);
    expect(turns).toBeGreaterThan(5);
    const spaced = text.replace('"row 49999"', '"row 49999" ');
    expect(await canonical(spaced)).toBe(false);
  });

  it('agrees with JSON.stringify when the long strings were compared by the piecewise parser', async () => {
    // Longer than the walk's string slice: only those are looked up among the parser's.
    const value = valuesWithLongStrings(['ab', 'é', '😀', '"\\', '\ud83d', '\u2028', '/'], 4);
    const edits = ['', ' ', '\\/', '\\u0061', '\\ud83d\\ude00', '😀'];
    let agreed = 0;
    await fc.assert(
      fc.asyncProperty(value, fc.nat(), fc.constantFrom(...edits), fc.integer({ min: 1, max: 12 }), async (v, where, edit, k) => {
        const base = JSON.stringify(v);
        const at = where % (base.length + 1);
        // As the proxy reads it: valid UTF-8 (an edit that cut a surrogate pair reads as U+FFFD).
        const bytes = Buffer.from(base.slice(0, at) + edit + base.slice(at));
        const text = bytes.toString();
        const parsed = await piecesOf(bytes, now, { piece: 4096 * k, stringPiece: 1024 * k });
        if (parsed === undefined) return;
        const got = await isCanonicalJson(bytes, parsed.value, now, parsed.longStrings);
        const expected = JSON.stringify(JSON.parse(text)) === text;
        expect([text.length, at, edit, got]).toEqual([text.length, at, edit, expected]);
        agreed++;
      }),
      { numRuns: 300 },
    );
    expect(agreed).toBeGreaterThan(50);
  });
});

describe('a JSON value serialized a piece at a time', () => {
  const check = async (v: unknown): Promise<void> => {
    const made = await stringifyInPieces(v, now);
    const expected = JSON.stringify(v);
    expect(made?.toString()).toBe(expected);
    expect(made?.equals(Buffer.from(expected))).toBe(true);
  };

  it('is JSON.stringify to the byte on any JSON value, and with members JSON.stringify leaves out', async () => {
    await fc.assert(fc.asyncProperty(fc.jsonValue(), check), { numRuns: 500 });
    const odd = fc.oneof(
      fc.constant(undefined),
      fc.constant(() => 1),
      fc.constant(Symbol('s')),
      fc.constant(Number.NaN),
      fc.constant(-0),
      fc.constant(Infinity),
    );
    const value = fc.letrec((tie) => ({
      v: fc.oneof({ depthSize: 'small' }, fc.jsonValue(), odd, fc.array(tie('v'), { maxLength: 4 }), fc.dictionary(fc.string(), tie('v'), { maxKeys: 4 })),
    })).v;
    await fc.assert(
      fc.asyncProperty(value, async (v) => {
        if (typeof v === 'object' && v !== null) await check(v);
      }),
      { numRuns: 500 },
    );
  });

  it('long strings and keys in slices, a surrogate pair never cut, with turns between pieces', async () => {
    const turns = countedTurns();
    for (const unit of ['1 ', 'é', '😀', 'a"\\\n', '\ud800x', 'x\udc00']) {
      const s = unit.repeat(Math.ceil(300_000 / unit.length));
      const v = { [s.slice(3)]: [s, { t: s.slice(1) }], z: 1 };
      const made = await stringifyInPieces(v, turns.turn);
      expect(made?.equals(Buffer.from(JSON.stringify(v)))).toBe(true);
    }
    expect(turns.count).toBeGreaterThan(20);
  });

  it("writes the parser's long strings from their pieces, as JSON.stringify writes them whole", async () => {
    const value = valuesWithLongStrings(['ab', 'é', '😀', '"\\', '\ud83d', '\udc00', '\u2028'], 3);
    let fromPieces = 0;
    await fc.assert(
      fc.asyncProperty(value, fc.integer({ min: 1, max: 9 }), fc.boolean(), fc.boolean(), async (v, k, spaced, escapedPairs) => {
        // Not canonical (spaces, escaped pairs that a slice may cut): the proxy serializes it again.
        let text = spaced ? JSON.stringify(v, null, 1) : JSON.stringify(v);
        if (escapedPairs) text = text.replaceAll('😀', '\\ud83d\\ude00');
        const parsed = await piecesOf(Buffer.from(text), now, { piece: 4096 * k, stringPiece: 997 * k });
        if (parsed === undefined) return;
        fromPieces += parsed.longStrings.length;
        const made = await stringifyInPieces(parsed.value, now, parsed.longStrings);
        const expected = JSON.stringify(parsed.value);
        expect(made?.equals(Buffer.from(expected))).toBe(true);
      }),
      { numRuns: 150 },
    );
    expect(fromPieces).toBeGreaterThan(50);
    // A duplicate key: the value kept is the last one's.
    const dup = `{"a": ${JSON.stringify('x'.repeat(40_000))}, "a": ${JSON.stringify('y'.repeat(40_000))}}`;
    const parsed = await piecesOf(Buffer.from(dup), now, { piece: 4096, stringPiece: 1000 });
    expect((await stringifyInPieces(parsed?.value, now, parsed?.longStrings))?.toString()).toBe(JSON.stringify(JSON.parse(dup)));
  });

  it('leaves to JSON.stringify what it serializes its own way', async () => {
    for (const v of [{ d: new Date(0) }, [new String('s')], { n: 1n }, { toJSON: () => 1 }, new Map(), undefined]) {
      expect(await stringifyInPieces(v, now)).toBeUndefined();
    }
  });
});
