import fc from 'fast-check';
import { parseJsonInPieces, type PieceSizes } from '../../../src/core/json-pieces';
import { countedTurns, piecesOf } from '../../helpers/json-pieces';

const now = (): Promise<void> => Promise.resolve();
const SMALL: PieceSizes = { piece: 24, stringPiece: 7 };

/** Equal as JSON.parse makes values: same types, prototypes, key order, numbers by Object.is. */
function same(a: unknown, b: unknown): boolean {
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (typeof a === 'object' && a !== null) {
    if (typeof b !== 'object' || b === null || Array.isArray(b) || Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k, i) => k === kb[i] && same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
  }
  return Object.is(a, b);
}

/** What parseJsonInPieces returns for `text` must be what JSON.parse returns, or nothing when JSON.parse throws. */
async function agrees(text: string, sizes: PieceSizes): Promise<'pieces' | 'whole'> {
  const bytes = Buffer.from(text);
  let expected: unknown;
  let valid = true;
  try {
    expected = JSON.parse(bytes.toString());
  } catch {
    valid = false;
  }
  const got = await parseJsonInPieces(bytes, now, sizes);
  if (!valid) {
    // Told not JSON only for a text that begins with `[` or `{` (what the proxy refuses as not strict JSON).
    expect([text, got === undefined || (got === 'not json' && /^[ \t\r\n]*[[{]/.test(text))]).toEqual([text, true]);
    return 'whole';
  }
  // A JSON text is never told not JSON.
  expect([text, got]).not.toEqual([text, 'not json']);
  if (got === undefined || got === 'not json') return 'whole';
  expect([text, same(got.value, expected)]).toEqual([text, true]);
  for (const s of got.longStrings) {
    const token = bytes.toString('utf8', s.start, s.end);
    expect(JSON.parse(token)).toBe(s.str);
    // Canonical is a claim that may only be made when true (false is always safe: the text is serialized again).
    if (s.canonical) expect(JSON.stringify(s.str)).toBe(token);
  }
  return 'pieces';
}

const sizes = fc.record({ piece: fc.integer({ min: 1, max: 64 }), stringPiece: fc.integer({ min: 1, max: 16 }) });

describe('a large JSON text parsed a piece at a time gives what JSON.parse gives', () => {
  it('any JSON value, serialized plainly or with spaces, at any piece sizes', async () => {
    let parsedInPieces = 0;
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), sizes, fc.boolean(), async (v, s, spaced) => {
        const text = spaced ? JSON.stringify(v, null, 1) : JSON.stringify(v);
        if ((await agrees(text, s)) === 'pieces') parsedInPieces++;
      }),
      { numRuns: 600 },
    );
    // Scalars at the top, and numbers or keys longer than a tiny piece, are left to JSON.parse.
    expect(parsedInPieces).toBeGreaterThan(200);
  });

  it('texts changed at any place: the same value, or none where JSON.parse refuses', async () => {
    const edits = [' ', '\n', '\\', '"', ',', ':', '[', ']', '{', '}', '0', '-', 'e1', '\\u0061', '\\ud83d', '\\', '\u0001', '"a":1,', '1,', ',]', '\ufeff'];
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), fc.nat(), fc.constantFrom(...edits), sizes, fc.boolean(), async (v, where, edit, s, cut) => {
        const base = JSON.stringify(v);
        const at = where % (base.length + 1);
        await agrees(base.slice(0, at) + edit + base.slice(cut ? at + 1 : at), s);
      }),
      { numRuns: 3000 },
    );
  });

  it('any spelling (spaces and escapes anywhere, duplicate, index-like and __proto__ keys), edited at up to three places', async () => {
    // A value written as a tree of tokens, so that it can be spelled in all the ways JSON allows.
    const key = fc.constantFrom('a', 'b', '__proto__', '0', '7', '4294967294', '4294967295', '-1', 'constructor', '', 'é😀"\\');
    const text = fc.string({
      unit: fc.constantFrom('a', ' ', '[', '}', ',', '"', '\\', '/', 'é', '😀', '\u2028', '\u0001', '\ud83d', '\ude00'),
      maxLength: 12,
    });
    const scalar = fc.oneof(
      text.map((t) => ({ s: t })),
      fc.constantFrom('0', '-0', '1e400', '1E+2', '0.10', '-12.5e-3', 'true', 'false', 'null'),
    );
    const tree = fc.letrec<{ v: unknown }>((tie) => ({
      v: fc.oneof(
        { depthSize: 'small' },
        scalar,
        fc.array(tie('v'), { maxLength: 5 }),
        fc.array(fc.tuple(key, tie('v')), { maxLength: 5 }).map((m) => ({ m })),
      ),
    })).v;
    const spell = (v: unknown, r: () => number): string => {
      const sp = (): string => (r() < 0.3 ? (' \n\r\t'[Math.floor(r() * 4)] as string).repeat(1 + Math.floor(r() * 2)) : '');
      const str = (t: string): string =>
        `"${[...t].map((c) => (r() < 0.3 || c < ' ' || c === '"' || c === '\\' || /[\ud800-\udfff]/.test(c) ? [...c].map((u) => `\\u${u.charCodeAt(0).toString(16).padStart(4, '0')}`).join('') : c)).join('')}"`;
      if (typeof v === 'string') return v;
      if (Array.isArray(v)) return `[${sp()}${v.map((x) => spell(x, r) + sp()).join(`,${sp()}`)}]`;
      const o = v as { s?: string; m?: [string, unknown][] };
      if (o.s !== undefined) return str(o.s);
      return `{${sp()}${(o.m ?? []).map(([k, x]) => `${str(k)}${sp()}:${sp()}${spell(x, r)}${sp()}`).join(`,${sp()}`)}}`;
    };
    const edits = [' ', '\u00a0', '\v', '\f', '\ufeff', '\\', '"', ',', ':', '[', ']', '{', '}', '0', '-', 'e', '\\u', '\\ud83d', '1,', ',]', ',}', '"a":'];
    const edit = fc.tuple(fc.nat(), fc.constantFrom(...edits), fc.boolean());
    let parsedInPieces = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(tree, { maxLength: 6 }), fc.nat(), fc.array(edit, { maxLength: 3 }), sizes, async (top, seed, changes, s) => {
        let x = seed || 1;
        const r = (): number => (x = (x * 48271) % 2147483647) / 2147483647;
        let t = spell(top, r);
        for (const [where, e, replace] of changes) {
          const at = where % (t.length + 1);
          t = t.slice(0, at) + e + t.slice(replace ? at + 1 : at);
        }
        if ((await agrees(t, s)) === 'pieces') parsedInPieces++;
      }),
      { numRuns: 3000 },
    );
    expect(parsedInPieces).toBeGreaterThan(300);
  });

  it('texts that are tricky for a parser that splits them', async () => {
    const texts = [
      '{"a":1,"a":2}',
      '{"a":[1,2,3,4,5,6,7,8,9,10],"a":{"b":1}}',
      '{"b":1,"1":2,"0":[1,2,3,4,5,6,7,8],"c":3}',
      '{"__proto__":{"x":1},"y":[1,2,3,4,5,6,7,8,9]}',
      '{"__proto__":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]}',
      '[{"constructor":1,"toString":2,"hasOwnProperty":[1,2,3,4,5,6,7,8,9]}]',
      '["\\ud83d\\ude00\\ud83d\\ude00\\ud83d\\ude00\\ud83d\\ude00"]',
      '["😀😀😀😀😀😀😀😀😀😀😀😀", "ééééééééééééééééé", "\\\\\\\\\\\\\\\\\\\\\\"\\""]',
      '["abc\\u00e9\\u0041\\/\\b\\f\\n\\r\\t\\"\\\\xyz0123456789"]',
      '[1e400,-0,0.1,1E2,-1.5e-7,123456789012345678901234567890]',
      '[true,false,null,true,false,null,true,false,null]',
      '[[[[[[[[[["deep"]]]]]]]]]]',
      '[1,2,]',
      '[,1]',
      '{"a":1,}',
      '{,"a":1}',
      '{"a" 1}',
      '{"a":}',
      '[1 2]',
      '["a" "b"]',
      '{"a":1}x',
      '\ufeff[1]',
      '  [1, 2 ,3 ]  ',
      '["unterminated',
      '["bad \\x escape in a long string"]',
      '["raw \u0001 control in a long string"]',
      '{"k":"v"}{"k":"v"}',
    ];
    for (const t of texts) for (const s of [SMALL, { piece: 1, stringPiece: 1 }, { piece: 5, stringPiece: 3 }]) await agrees(t, s);
  });

  it('a long string is decoded in slices, joined, with turns between them', async () => {
    const turns = countedTurns();
    for (const unit of ['1 ', 'é', '😀', 'a"\\\n', '\ud800x', '\u2028']) {
      const s = unit.repeat(Math.ceil(3000 / unit.length));
      const text = JSON.stringify({ jsonrpc: '2.0', params: { parts: [{ text: s }] }, id: 1 });
      const got = await piecesOf(Buffer.from(text), turns.turn, { piece: 512, stringPiece: 100 });
      expect(got?.value).toEqual(JSON.parse(text));
      expect(got?.longStrings.map((l) => l.str === s)).toEqual([true]);
      expect(got?.longStrings[0]?.canonical).toBe(true);
    }
    expect(turns.count).toBeGreaterThan(30);
  });

  it("a lone surrogate escaped at a slice's edge is canonical; an escaped pair cut there is not (JSON.stringify writes the pair as it is)", async () => {
    const sizes = { piece: 4, stringPiece: 8 };
    // The first slice is `ab\ud800` (8 bytes): it ends in a high surrogate, the next begins with `c`.
    const lone = await piecesOf(Buffer.from('["ab\\ud800cdefghij"]'), now, sizes);
    expect(lone?.longStrings.map((l) => [l.pieces[0], l.canonical])).toEqual([['ab\ud800', true]]);
    const pair = await piecesOf(Buffer.from('["ab\\ud83d\\ude00cdefgh"]'), now, sizes);
    expect(pair?.longStrings.map((l) => [l.pieces[0], l.canonical])).toEqual([['ab\ud83d', false]]);
  });

  it('many small values: parsed in runs, a turn every piece', async () => {
    let turns = 0;
    const rows = Array.from({ length: 20_000 }, (_, i) => ({ i, s: `row ${i}`, ok: i % 2 === 0, n: null, f: i / 7 }));
    const text = JSON.stringify({ rows });
    const got = await piecesOf(
      Buffer.from(text),
      () => {
        turns++;
        return Promise.resolve();
      },
      { piece: 16 * 1024, stringPiece: 16 * 1024 },
    );
    expect(same(got?.value, JSON.parse(text))).toBe(true);
    expect(turns).toBeGreaterThan(text.length / (16 * 1024) - 2);
  });

  it('containers nested inside ones larger than a piece are scanned once, not a piece per level', async () => {
    // Each level is larger than a piece, so deciding whether it fits scans to the piece's end.
    for (const text of [
      `${'[1,'.repeat(60)}${JSON.stringify('x'.repeat(20_000))}${']'.repeat(60)}`,
      `${'{"k":'.repeat(60)}${JSON.stringify('x'.repeat(20_000))}${'}'.repeat(60)}`,
      `${'[[1],'.repeat(60)}[${'"a\\\\b\\"c",'.repeat(2_000)}1]${']'.repeat(60)}`,
    ]) {
      const bytes = Buffer.from(text);
      let reads = 0;
      const counted = new Proxy(bytes, {
        get(target, key) {
          if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
          const v: unknown = Reflect.get(target, key);
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      });
      const got = await piecesOf(counted, now, { piece: 4096, stringPiece: 4096 });
      expect(same(got?.value, JSON.parse(text))).toBe(true);
      // Scanned, parsed and decoded: a few reads a byte, whatever the depth.
      expect(reads).toBeLessThan(4 * bytes.length);
    }
  });

  it('tells a text that begins as an array or object and is not JSON, without parsing it whole again', async () => {
    const long = 'x'.repeat(100);
    for (const t of [`[1,2] x`, `{"a":1} {`, ` [1,"${long}" 2]`, `{"a":"${long}`, `{"a" 1}`, `[1,2,]`, `{"${long}" 1}`, `["${long}"]`]) {
      expect([t, await parseJsonInPieces(Buffer.from(t), now, SMALL)]).toEqual([t, 'not json']);
    }
    // A text whose value is a string or a scalar, or one that begins with a BOM, is left to JSON.parse.
    for (const t of [`"${long}" x`, `\ufeff[1]`, `1 2`]) expect([t, await parseJsonInPieces(Buffer.from(t), now, SMALL)]).toEqual([t, undefined]);
  });

  it('gives up (the whole text is parsed instead) on a number longer than a piece; a longer key is decoded in slices', async () => {
    expect(await parseJsonInPieces(Buffer.from(`[${'1'.repeat(100)}]`), now, SMALL)).toBeUndefined();
    const longKey = `{"${'k'.repeat(100)}":[1,2,3],"${'é'.repeat(50)}":"${'v'.repeat(40)}"}`;
    const got = await piecesOf(Buffer.from(longKey), now, SMALL);
    expect(got !== undefined && same(got.value, JSON.parse(longKey))).toBe(true);
  });
});
