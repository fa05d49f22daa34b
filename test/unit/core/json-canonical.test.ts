import fc from 'fast-check';
import { isCanonicalJson } from '../../../src/core/json-canonical';

const now = (): Promise<void> => Promise.resolve();
const canonical = (text: string): Promise<boolean> => isCanonicalJson(text, JSON.parse(text), now);
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
        expect(await isCanonicalJson(text, parsed, now)).toBe(JSON.stringify(parsed) === text);
      }),
      { numRuns: 1000 },
    );
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
        expect(await isCanonicalJson(text, JSON.parse(text), count)).toBe(true);
        // One character changed at the end: not canonical (the text does not match).
        const other = `${text.slice(0, -3)}${text.at(-3) === 'x' ? 'y' : 'x'}${text.slice(-2)}`;
        expect(await isCanonicalJson(other, JSON.parse(text), count)).toBe(false);
      }
    }
    expect(turns).toBeGreaterThan(0);
  });

  it('many small values: each compared, with turns between pieces', async () => {
    let turns = 0;
    const rows = Array.from({ length: 50_000 }, (_, i) => ({ i, s: `row ${i}`, ok: i % 2 === 0, n: null, f: i / 7 }));
    const text = JSON.stringify({ rows });
    expect(
      await isCanonicalJson(text, JSON.parse(text), () => {
        turns++;
        return Promise.resolve();
      }),
    ).toBe(true);
    expect(turns).toBeGreaterThan(5);
    const spaced = text.replace('"row 49999"', '"row 49999" ');
    expect(await canonical(spaced)).toBe(false);
  });
});
